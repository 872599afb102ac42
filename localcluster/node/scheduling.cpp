#include "localcluster/node/scheduling.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/json/fields.h"

namespace sluice::node {
namespace {

using nlohmann::json;

constexpr int64_t kOnePod = 1000;

// 128-bit integers keep sums and cross-multiplied fractions of int64 amounts exact.
__extension__ typedef __int128 Int128;

// The member `key` of `obj`, or nullptr when `obj` is not an object or lacks it.
const json* Field(const json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

// Follows a path of object keys; nullptr when any step is missing.
const json* Path(const json& obj, std::initializer_list<std::string_view> keys) {
  const json* cur = &obj;
  for (std::string_view key : keys) {
    cur = Field(*cur, key);
    if (cur == nullptr) return nullptr;
  }
  return cur;
}

// The array at `v`, or an empty array when null or missing.
const json& ArrayOrEmpty(const json* v) {
  static const json kEmpty = json::array();
  return v != nullptr && v->is_array() ? *v : kEmpty;
}

std::optional<int64_t> ParseInt64(std::string_view s) {
  int64_t value = 0;
  const char* begin = s.data();
  const char* end = s.data() + s.size();
  if (begin != end && *begin == '+') ++begin;  // Go's strconv.ParseInt accepts a leading '+'.
  if (begin == end) return std::nullopt;
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

// The string entries of the `values` array of a requirement; nullopt when some entry is not a
// string or `values` is not an array.
std::optional<std::vector<std::string>> RequirementValues(const json& requirement) {
  std::vector<std::string> out;
  const json* values = Field(requirement, "values");
  if (values == nullptr || values->is_null()) return out;
  if (!values->is_array()) return std::nullopt;
  for (const json& v : *values) {
    if (!v.is_string()) return std::nullopt;
    out.push_back(v.get<std::string>());
  }
  return out;
}

bool Contains(const std::vector<std::string>& values, const std::string& s) {
  return std::find(values.begin(), values.end(), s) != values.end();
}

// One NodeSelectorRequirement against the node's labels (matchExpressions).
bool MatchesLabelRequirement(const json& requirement, const json& labels) {
  const std::string key = StringField(requirement, "key");
  const std::string op = StringField(requirement, "operator");
  std::optional<std::vector<std::string>> values = RequirementValues(requirement);
  if (key.empty() || !values) return false;
  const json* label = Field(labels, key);
  const bool present = label != nullptr && label->is_string();
  const std::string value = present ? label->get<std::string>() : std::string();
  if (op == "In") return !values->empty() && present && Contains(*values, value);
  if (op == "NotIn") return !values->empty() && (!present || !Contains(*values, value));
  if (op == "Exists") return values->empty() && present;
  if (op == "DoesNotExist") return values->empty() && !present;
  if (op == "Gt" || op == "Lt") {
    if (values->size() != 1 || !present) return false;
    std::optional<int64_t> bound = ParseInt64((*values)[0]);
    std::optional<int64_t> actual = ParseInt64(value);
    if (!bound || !actual) return false;
    return op == "Gt" ? *actual > *bound : *actual < *bound;
  }
  return false;  // Unknown operator.
}

// One NodeSelectorRequirement against the node's fields (matchFields): metadata.name only.
bool MatchesFieldRequirement(const json& requirement, const json& node) {
  if (StringField(requirement, "key") != "metadata.name") return false;
  const std::string op = StringField(requirement, "operator");
  std::optional<std::vector<std::string>> values = RequirementValues(requirement);
  if (!values || values->empty()) return false;
  const json* metadata = Field(node, "metadata");
  const std::string name = metadata != nullptr ? StringField(*metadata, "name") : std::string();
  if (op == "In") return Contains(*values, name);
  if (op == "NotIn") return !Contains(*values, name);
  return false;
}

// spec.nodeSelector plus required node affinity.
bool MatchesNodeAffinity(const json& pod, const json& node) {
  const json* labels = Path(node, {"metadata", "labels"});
  static const json kNoLabels = json::object();
  const json& node_labels = labels != nullptr && labels->is_object() ? *labels : kNoLabels;

  const json* selector = Path(pod, {"spec", "nodeSelector"});
  if (selector != nullptr && selector->is_object()) {
    for (const auto& [key, want] : selector->items()) {
      const json* have = Field(node_labels, key);
      if (have == nullptr || !have->is_string() || !want.is_string() || *have != want) {
        return false;
      }
    }
  }
  const json* required = Path(
      pod, {"spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution"});
  if (required == nullptr || required->is_null()) return true;
  for (const json& term : ArrayOrEmpty(Field(*required, "nodeSelectorTerms"))) {
    if (MatchesNodeSelectorTerm(term, node)) return true;
  }
  return false;  // A required node selector with no matching term (or no terms) matches nothing.
}

// The pod's tolerations array (or null).
const json& PodTolerations(const json& pod) {
  static const json kNull;
  const json* t = Path(pod, {"spec", "tolerations"});
  return t != nullptr ? *t : kNull;
}

// Adds `b` into `a`, saturating at the int64 range.
void AddInto(ResourceList& a, const ResourceList& b) {
  for (const auto& [name, amount] : b) {
    int64_t& slot = a[name];
    if (__builtin_add_overflow(slot, amount, &slot)) slot = std::numeric_limits<int64_t>::max();
  }
}

void MaxInto(ResourceList& a, const ResourceList& b) {
  for (const auto& [name, amount] : b) {
    auto [it, inserted] = a.emplace(name, amount);
    if (!inserted) it->second = std::max(it->second, amount);
  }
}

// A container's requests, with limits filling in for resources that have no request.
Result<ResourceList> ContainerRequests(const json& container) {
  const json* resources = Field(container, "resources");
  static const json kNull;
  const json* requests_json = resources != nullptr ? Field(*resources, "requests") : nullptr;
  const json* limits_json = resources != nullptr ? Field(*resources, "limits") : nullptr;
  Result<ResourceList> requests = ParseResourceList(requests_json ? *requests_json : kNull);
  if (!requests.ok()) return requests.status().WithContext("resources.requests");
  Result<ResourceList> limits = ParseResourceList(limits_json ? *limits_json : kNull);
  if (!limits.ok()) return limits.status().WithContext("resources.limits");
  for (const auto& [name, amount] : *limits) requests->emplace(name, amount);
  return requests;
}

std::string ContainerLabel(std::string_view list, size_t index, const json& container) {
  std::string name = StringField(container, "name");
  std::string label = std::string(list) + "[" + std::to_string(index) + "]";
  return name.empty() ? label : label + " (" + name + ")";
}

// The resource part of FitFailures, with the pod's requests already computed.
std::vector<std::string> ResourceFailures(const ResourceList& pod_requests, const json& node,
                                          const ResourceList& requested_on_node) {
  std::vector<std::string> reasons;
  const json* alloc_json = Path(node, {"status", "allocatable"});
  static const json kNull;
  Result<ResourceList> allocatable = ParseResourceList(alloc_json ? *alloc_json : kNull);
  if (!allocatable.ok()) {
    reasons.push_back("node(s) had invalid allocatable resources: " +
                      allocatable.status().message());
    return reasons;
  }
  auto amount = [](const ResourceList& list, const std::string& name) -> Int128 {
    auto it = list.find(name);
    return it == list.end() ? 0 : it->second;
  };
  const std::string pods = "pods";
  if (amount(requested_on_node, pods) + kOnePod > amount(*allocatable, pods)) {
    reasons.push_back(kReasonTooManyPods);
  }
  for (const auto& [name, request] : pod_requests) {
    if (name == pods || request <= 0) continue;
    if (amount(requested_on_node, name) + request > amount(*allocatable, name)) {
      reasons.push_back("Insufficient " + name);
    }
  }
  return reasons;
}

std::vector<std::string> FitFailuresWithRequests(const json& pod,
                                                 const Result<ResourceList>& pod_requests,
                                                 const json& node,
                                                 const ResourceList& requested_on_node) {
  const json& tolerations = PodTolerations(pod);
  const json* unschedulable = Path(node, {"spec", "unschedulable"});
  if (unschedulable != nullptr && unschedulable->is_boolean() && unschedulable->get<bool>()) {
    const json taint = {{"key", kUnschedulableTaintKey}, {"effect", "NoSchedule"}};
    if (!Tolerates(tolerations, taint)) return {kReasonUnschedulable};
  }
  for (const json& taint : ArrayOrEmpty(Path(node, {"spec", "taints"}))) {
    const std::string effect = StringField(taint, "effect");
    if (effect != "NoSchedule" && effect != "NoExecute") continue;
    if (!Tolerates(tolerations, taint)) {
      return {"node(s) had untolerated taint {" + StringField(taint, "key") + ": " +
              StringField(taint, "value") + "}"};
    }
  }
  if (!MatchesNodeAffinity(pod, node)) return {kReasonNodeAffinity};
  if (!pod_requests.ok()) {
    return {"Pod has invalid resource requests: " + pod_requests.status().message()};
  }
  return ResourceFailures(*pod_requests, node, requested_on_node);
}

// A non-negative fraction num/den; den == 0 stands for +infinity (usage against no capacity).
struct Fraction {
  Int128 num = 0;
  Int128 den = 1;
};

bool Less(const Fraction& a, const Fraction& b) { return a.num * b.den < b.num * a.den; }

// The largest fraction of allocatable in use among cpu, memory and nvidia.com/gpu once the pod
// is placed.
Fraction PeakUtilization(const ResourceList& pod_requests, const json& node,
                         const ResourceList& requested_on_node) {
  const json* alloc_json = Path(node, {"status", "allocatable"});
  static const json kNull;
  Result<ResourceList> allocatable = ParseResourceList(alloc_json ? *alloc_json : kNull);
  Fraction peak;
  for (const char* name : {"cpu", "memory", "nvidia.com/gpu"}) {
    auto get = [&](const ResourceList& list) -> Int128 {
      auto it = list.find(name);
      return it == list.end() ? 0 : it->second;
    };
    const Int128 used = get(requested_on_node) + get(pod_requests);
    const Int128 capacity = allocatable.ok() ? get(*allocatable) : 0;
    Fraction f;
    if (capacity > 0) {
      f = {used, capacity};
    } else if (used > 0) {
      f = {1, 0};
    } else {
      continue;
    }
    if (Less(peak, f)) peak = f;
  }
  return peak;
}

std::string NodeName(const json& node) {
  const json* metadata = Field(node, "metadata");
  return metadata != nullptr ? StringField(*metadata, "name") : std::string();
}

}  // namespace

Result<ResourceList> PodRequests(const nlohmann::json& pod) {
  const json* spec = Field(pod, "spec");
  ResourceList total;
  const json* containers = spec != nullptr ? Field(*spec, "containers") : nullptr;
  const json* init_containers = spec != nullptr ? Field(*spec, "initContainers") : nullptr;
  for (const auto& [list, field] : {std::pair{containers, "spec.containers"},
                                    std::pair{init_containers, "spec.initContainers"}}) {
    if (list != nullptr && !list->is_null() && !list->is_array()) {
      return Status::InvalidArgument(std::string(field) + " must be an array");
    }
  }
  const json& app = ArrayOrEmpty(containers);
  for (size_t i = 0; i < app.size(); ++i) {
    Result<ResourceList> r = ContainerRequests(app[i]);
    if (!r.ok()) return r.status().WithContext(ContainerLabel("spec.containers", i, app[i]));
    AddInto(total, *r);
  }
  ResourceList sidecars;   // Restartable init containers started so far.
  ResourceList init_peak;  // The most any init container phase needs.
  const json& init = ArrayOrEmpty(init_containers);
  for (size_t i = 0; i < init.size(); ++i) {
    Result<ResourceList> r = ContainerRequests(init[i]);
    if (!r.ok()) {
      return r.status().WithContext(ContainerLabel("spec.initContainers", i, init[i]));
    }
    if (StringField(init[i], "restartPolicy") == "Always") {
      AddInto(total, *r);
      AddInto(sidecars, *r);
      MaxInto(init_peak, sidecars);
    } else {
      ResourceList phase = *r;
      AddInto(phase, sidecars);
      MaxInto(init_peak, phase);
    }
  }
  MaxInto(total, init_peak);
  if (spec != nullptr) {
    if (const json* overhead = Field(*spec, "overhead"); overhead != nullptr) {
      Result<ResourceList> r = ParseResourceList(*overhead);
      if (!r.ok()) return r.status().WithContext("spec.overhead");
      AddInto(total, *r);
    }
  }
  total["pods"] = kOnePod;
  return total;
}

bool Tolerates(const nlohmann::json& tolerations, const nlohmann::json& taint) {
  if (!tolerations.is_array()) return false;
  const std::string taint_key = StringField(taint, "key");
  const std::string taint_value = StringField(taint, "value");
  const std::string taint_effect = StringField(taint, "effect");
  for (const json& t : tolerations) {
    const std::string effect = StringField(t, "effect");
    if (!effect.empty() && effect != taint_effect) continue;
    const std::string key = StringField(t, "key");
    if (!key.empty() && key != taint_key) continue;
    const std::string op = StringField(t, "operator");
    if (op == "Exists") return true;
    if ((op.empty() || op == "Equal") && StringField(t, "value") == taint_value) return true;
  }
  return false;
}

bool MatchesNodeSelectorTerm(const nlohmann::json& term, const nlohmann::json& node) {
  const json& expressions = ArrayOrEmpty(Field(term, "matchExpressions"));
  const json& fields = ArrayOrEmpty(Field(term, "matchFields"));
  if (expressions.empty() && fields.empty()) return false;
  const json* labels = Path(node, {"metadata", "labels"});
  static const json kNoLabels = json::object();
  const json& node_labels = labels != nullptr && labels->is_object() ? *labels : kNoLabels;
  for (const json& requirement : expressions) {
    if (!MatchesLabelRequirement(requirement, node_labels)) return false;
  }
  for (const json& requirement : fields) {
    if (!MatchesFieldRequirement(requirement, node)) return false;
  }
  return true;
}

std::vector<std::string> FitFailures(const nlohmann::json& pod, const nlohmann::json& node,
                                     const ResourceList& requested_on_node) {
  return FitFailuresWithRequests(pod, PodRequests(pod), node, requested_on_node);
}

int PreferredAffinityScore(const nlohmann::json& pod, const nlohmann::json& node) {
  const json* preferred = Path(
      pod, {"spec", "affinity", "nodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution"});
  int64_t score = 0;
  for (const json& entry : ArrayOrEmpty(preferred)) {
    const json* weight = Field(entry, "weight");
    const json* preference = Field(entry, "preference");
    if (weight == nullptr || !weight->is_number_integer() || preference == nullptr) continue;
    if (MatchesNodeSelectorTerm(*preference, node)) score += weight->get<int64_t>();
  }
  return static_cast<int>(
      std::clamp<int64_t>(score, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
}

ScheduleDecision SchedulePod(const nlohmann::json& pod, const std::vector<NodeState>& nodes) {
  const Result<ResourceList> pod_requests = PodRequests(pod);
  int total = 0;
  std::map<std::string, int> reason_counts;

  struct Candidate {
    int score;
    Fraction peak;
    std::string name;
  };
  std::optional<Candidate> best;
  auto better = [](const Candidate& a, const Candidate& b) {
    if (a.score != b.score) return a.score > b.score;
    if (Less(a.peak, b.peak)) return true;
    if (Less(b.peak, a.peak)) return false;
    return a.name < b.name;
  };

  for (const NodeState& state : nodes) {
    if (state.node == nullptr) continue;
    ++total;
    const json& node = *state.node;
    std::vector<std::string> failures =
        FitFailuresWithRequests(pod, pod_requests, node, state.requested);
    if (!failures.empty()) {
      std::sort(failures.begin(), failures.end());
      failures.erase(std::unique(failures.begin(), failures.end()), failures.end());
      for (const std::string& reason : failures) ++reason_counts[reason];
      continue;
    }
    Candidate c{PreferredAffinityScore(pod, node),
                PeakUtilization(*pod_requests, node, state.requested), NodeName(node)};
    if (!best || better(c, *best)) best = std::move(c);
  }

  if (best) return {best->name, ""};
  if (total == 0) return {"", "0/0 nodes are available: no nodes registered."};
  std::vector<std::string> parts;
  for (const auto& [reason, count] : reason_counts) {
    parts.push_back(std::to_string(count) + " " + reason);
  }
  std::sort(parts.begin(), parts.end());
  std::string message = "0/" + std::to_string(total) + " nodes are available:";
  for (size_t i = 0; i < parts.size(); ++i) message += (i == 0 ? " " : ", ") + parts[i];
  return {"", message + "."};
}

}  // namespace sluice::node
