#include "localcluster/node/workload_objects.h"

#include <algorithm>
#include <cctype>
#include <chrono>

#include "common/json/fields.h"
#include "common/time_format.h"

namespace sluice::node {

using nlohmann::json;

bool IsTerminalPod(const json& pod) {
  const std::string phase = StringAt(pod, "/status/phase");
  return phase == "Succeeded" || phase == "Failed";
}

bool IsBeingDeleted(const json& object) {
  const json::json_pointer ptr("/metadata/deletionTimestamp");
  return object.is_object() && object.contains(ptr) && !object.at(ptr).is_null();
}

std::string ControllerUid(const json& object) {
  const json::json_pointer ptr("/metadata/ownerReferences");
  if (!object.is_object() || !object.contains(ptr) || !object.at(ptr).is_array()) return {};
  for (const json& ref : object.at(ptr)) {
    if (ref.is_object() && ref.value("controller", false) && ref.contains("uid") &&
        ref["uid"].is_string()) {
      return ref["uid"].get<std::string>();
    }
  }
  return {};
}

json ControllerReference(const json& owner, const std::string& api_version,
                         const std::string& kind) {
  return {{"apiVersion", api_version},
          {"kind", kind},
          {"name", StringAt(owner, "/metadata/name")},
          {"uid", StringAt(owner, "/metadata/uid")},
          {"controller", true},
          {"blockOwnerDeletion", true}};
}

json WithOwnerReference(json object, const json& reference) {
  json& refs = object["metadata"]["ownerReferences"];
  if (!refs.is_array()) refs = json::array();
  refs.push_back(reference);
  return object;
}

json WithoutOwnerReference(json object, const std::string& owner_uid) {
  json& meta = object["metadata"];
  if (!meta.contains("ownerReferences") || !meta["ownerReferences"].is_array()) return object;
  json kept = json::array();
  for (const json& ref : meta["ownerReferences"]) {
    if (!ref.is_object() || ref.value("uid", "") != owner_uid) kept.push_back(ref);
  }
  if (kept.empty()) {
    meta.erase("ownerReferences");
  } else {
    meta["ownerReferences"] = kept;
  }
  return object;
}

namespace {

bool StringArray(const json& v) {
  return v.is_array() &&
         std::all_of(v.begin(), v.end(), [](const json& e) { return e.is_string(); });
}

bool ExpressionValid(const json& e) {
  if (!e.is_object() || !e.contains("key") || !e["key"].is_string() ||
      e["key"].get<std::string>().empty() || !e.contains("operator") ||
      !e["operator"].is_string()) {
    return false;
  }
  const std::string op = e["operator"].get<std::string>();
  const json values = e.value("values", json::array());
  if (!values.is_null() && !StringArray(values)) return false;
  const size_t n = values.is_array() ? values.size() : 0;
  if (op == "In" || op == "NotIn") return n > 0;
  if (op == "Exists" || op == "DoesNotExist") return n == 0;
  return false;
}

bool ExpressionHolds(const json& e, const json& labels) {
  const std::string key = e["key"].get<std::string>();
  const std::string op = e["operator"].get<std::string>();
  const bool has = labels.is_object() && labels.contains(key) && labels[key].is_string();
  if (op == "Exists") return has;
  if (op == "DoesNotExist") return !has;
  bool in = false;
  if (has) {
    const std::string value = labels[key].get<std::string>();
    for (const json& v : e["values"]) in = in || v.get<std::string>() == value;
  }
  return op == "In" ? in : !in;
}

Clock::WallTime ParseOrZero(const std::string& text) { return ParseTimeOrEpoch(text); }

}  // namespace

bool LabelSelectorValid(const json& selector) {
  if (!selector.is_object()) return false;
  if (selector.contains("matchLabels") && !selector["matchLabels"].is_null()) {
    const json& ml = selector["matchLabels"];
    if (!ml.is_object()) return false;
    for (const auto& [k, v] : ml.items()) {
      if (k.empty() || !v.is_string()) return false;
    }
  }
  if (selector.contains("matchExpressions") && !selector["matchExpressions"].is_null()) {
    const json& me = selector["matchExpressions"];
    if (!me.is_array()) return false;
    for (const json& e : me) {
      if (!ExpressionValid(e)) return false;
    }
  }
  return true;
}

bool LabelSelectorEmpty(const json& selector) {
  if (!selector.is_object()) return true;
  const json ml = selector.value("matchLabels", json::object());
  const json me = selector.value("matchExpressions", json::array());
  return (ml.is_null() || ml.empty()) && (me.is_null() || me.empty());
}

bool LabelSelectorMatches(const json& selector, const json& labels) {
  if (!LabelSelectorValid(selector)) return false;
  if (selector.contains("matchLabels") && selector["matchLabels"].is_object()) {
    for (const auto& [k, v] : selector["matchLabels"].items()) {
      if (!labels.is_object() || !labels.contains(k) || labels[k] != v) return false;
    }
  }
  if (selector.contains("matchExpressions") && selector["matchExpressions"].is_array()) {
    for (const json& e : selector["matchExpressions"]) {
      if (!ExpressionHolds(e, labels)) return false;
    }
  }
  return true;
}

namespace {

const json* ReadyCondition(const json& pod) {
  const json::json_pointer ptr("/status/conditions");
  if (!pod.is_object() || !pod.contains(ptr) || !pod.at(ptr).is_array()) return nullptr;
  for (const json& c : pod.at(ptr)) {
    if (c.is_object() && c.value("type", "") == "Ready") return &c;
  }
  return nullptr;
}

}  // namespace

bool PodReadyCondition(const json& pod) {
  const json* c = ReadyCondition(pod);
  return c != nullptr && c->value("status", "") == "True";
}

bool PodAvailable(const json& pod, int64_t min_ready_seconds, Clock::WallTime now) {
  const json* c = ReadyCondition(pod);
  if (c == nullptr || c->value("status", "") != "True") return false;
  if (min_ready_seconds <= 0) return true;
  const Clock::WallTime since = ParseOrZero(c->value("lastTransitionTime", ""));
  if (since == Clock::WallTime{}) return false;
  return since + std::chrono::seconds(min_ready_seconds) < now;
}

namespace {

// A copy with zero integers, empty arrays and nulls dropped at the top level.
json Normalized(const json& status) {
  json out = json::object();
  if (!status.is_object()) return out;
  for (const auto& [k, v] : status.items()) {
    if (v.is_null() || (v.is_number_integer() && v.get<int64_t>() == 0) ||
        (v.is_array() && v.empty())) {
      continue;
    }
    out[k] = v;
  }
  return out;
}

}  // namespace

bool SameWorkloadStatus(const json& a, const json& b) { return Normalized(a) == Normalized(b); }

std::optional<int64_t> ScaledIntOrPercent(const json& value, int64_t total, bool round_up) {
  if (value.is_number_integer()) {
    const int64_t v = value.get<int64_t>();
    if (v < 0) return std::nullopt;
    return v;
  }
  if (!value.is_string()) return std::nullopt;
  const std::string s = value.get<std::string>();
  if (s.size() < 2 || s.back() != '%' || s.size() > 10) return std::nullopt;
  int64_t percent = 0;
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return std::nullopt;
    percent = percent * 10 + (s[i] - '0');
  }
  const int64_t scaled = percent * total;
  return round_up ? (scaled + 99) / 100 : scaled / 100;
}

}  // namespace sluice::node
