#include "localcluster/node/container_env.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "common/base64.h"
#include "common/go_quote.h"
#include "common/json/fields.h"
#include "localcluster/node/resource_quantity.h"

namespace sluice::node {
namespace {

using nlohmann::json;

std::string ContainerName(const json& container) { return StringField(container, "name"); }

// Ordered variable list with in-place overrides.
class EnvBuilder {
 public:
  void Set(const std::string& name, std::string value) {
    auto [it, inserted] = index_.try_emplace(name, list_.size());
    if (inserted) {
      list_.emplace_back(name, std::move(value));
    } else {
      list_[it->second].second = std::move(value);
    }
  }
  const EnvList& list() const { return list_; }
  EnvList Take() { return std::move(list_); }

 private:
  EnvList list_;
  std::unordered_map<std::string, size_t> index_;
};

std::optional<json> Lookup(const std::function<std::optional<json>(const std::string&)>& fn,
                           const std::string& name) {
  if (!fn) return std::nullopt;
  return fn(name);
}

std::string FormatMap(const json& map) {
  if (!map.is_object()) return {};
  std::map<std::string, std::string> sorted;
  for (auto it = map.begin(); it != map.end(); ++it) {
    sorted[it.key()] = it->is_string() ? it->get<std::string>() : it->dump();
  }
  std::string out;
  for (const auto& [k, v] : sorted) {
    if (!out.empty()) out += '\n';
    out += k + "=" + GoQuote(v);
  }
  return out;
}

// "metadata.labels['k']" -> ("metadata.labels", "k"); nullopt when not subscripted.
std::optional<std::pair<std::string, std::string>> SplitSubscript(std::string_view path) {
  auto open = path.find("['");
  if (open == std::string_view::npos || path.size() < open + 4 || !path.ends_with("']")) {
    return std::nullopt;
  }
  return std::make_pair(std::string(path.substr(0, open)),
                        std::string(path.substr(open + 2, path.size() - open - 4)));
}

std::string JoinIps(const json& list) {
  std::string out;
  if (!list.is_array()) return out;
  for (const auto& e : list) {
    std::string ip = StringField(e, "ip");
    if (ip.empty()) continue;
    if (!out.empty()) out += ',';
    out += ip;
  }
  return out;
}

// A quantity from JSON in milli-units (kube serialises quantities as strings; numbers are
// accepted).
Result<int64_t> MilliOf(const json& value) {
  std::string text;
  if (value.is_string()) {
    text = value.get<std::string>();
  } else if (value.is_number_integer() || value.is_number_unsigned()) {
    text = value.dump();
  } else if (value.is_number_float()) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.17g", value.get<double>());
    text = buf;
  } else {
    return Status::InvalidArgument("a quantity must be a string or a number, got " + value.dump());
  }
  SLUICE_ASSIGN_OR_RETURN(int64_t milli, ParseQuantityMilli(text));
  if (milli < 0) {
    return Status::InvalidArgument("negative quantity \"" + text + "\" is not supported");
  }
  return milli;
}

// The node's allocatable for `resource` (cpu, memory, ephemeral-storage) in milli-units: the
// host's capacity.
int64_t HostAllocatable(std::string_view resource) {
  if (resource == "cpu") {
    unsigned n = std::thread::hardware_concurrency();
    return static_cast<int64_t>(n == 0 ? 1 : n) * 1000;
  }
  if (resource == "memory") {
    long pages = ::sysconf(_SC_PHYS_PAGES);
    long page_size = ::sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page_size <= 0) return 0;
    return static_cast<int64_t>(pages) * page_size * 1000;
  }
  std::error_code ec;
  auto space = std::filesystem::space("/", ec);
  return ec ? 0 : static_cast<int64_t>(space.capacity) * 1000;
}

// Kube's DNS-free env var name rule.
bool EnvNameChar(char c, bool first) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '.' || c == '_') {
    return true;
  }
  return !first && c >= '0' && c <= '9';
}

// Data of a ConfigMap key (data, then binaryData decoded); nullopt when absent.
Result<std::optional<std::string>> ConfigMapKey(const json& cm, const std::string& key,
                                                bool binary_too) {
  const json& data = ObjectField(cm, "data");
  if (data.is_object()) {
    auto it = data.find(key);
    if (it != data.end() && it->is_string()) return std::optional(it->get<std::string>());
  }
  if (binary_too) {
    const json& bin = ObjectField(cm, "binaryData");
    if (bin.is_object()) {
      auto it = bin.find(key);
      if (it != bin.end() && it->is_string()) {
        SLUICE_ASSIGN_OR_RETURN(std::string v, DecodeBase64(it->get<std::string>()));
        return std::optional(std::move(v));
      }
    }
  }
  return std::optional<std::string>();
}

Result<std::optional<std::string>> SecretKey(const json& secret, const std::string& key) {
  const json& data = ObjectField(secret, "data");
  if (data.is_object()) {
    auto it = data.find(key);
    if (it != data.end() && it->is_string()) {
      auto decoded = DecodeBase64(it->get<std::string>());
      if (!decoded.ok()) {
        return Status::InvalidArgument("secret \"" +
                                       StringField(ObjectField(secret, "metadata"), "name") +
                                       "\" key " + key + ": " + decoded.status().message());
      }
      return std::optional(std::move(decoded).value());
    }
  }
  // stringData is write-only in kube; accept it in case an unstored object is passed.
  const json& sd = ObjectField(secret, "stringData");
  if (sd.is_object()) {
    auto it = sd.find(key);
    if (it != sd.end() && it->is_string()) return std::optional(it->get<std::string>());
  }
  return std::optional<std::string>();
}

Status AddEnvFrom(const json& pod, const json& container, const ObjectLookup& lookup,
                  EnvBuilder& env) {
  auto it = container.find("envFrom");
  if (it == container.end() || it->is_null()) return Status::Ok();
  if (!it->is_array()) return Status::InvalidArgument("envFrom: must be a list", "envFrom");
  size_t i = 0;
  for (const json& source : *it) {
    std::string field = "envFrom[" + std::to_string(i++) + "]";
    std::string prefix = StringField(source, "prefix");
    const json& cm_ref = ObjectField(source, "configMapRef");
    const json& secret_ref = ObjectField(source, "secretRef");
    if (cm_ref.is_object()) {
      std::string name = StringField(cm_ref, "name");
      auto cm = Lookup(lookup.config_map, name);
      if (!cm) {
        if (BoolField(cm_ref, "optional")) continue;
        return Status::NotFound("configmap \"" + name + "\" not found");
      }
      const json& data = ObjectField(*cm, "data");
      if (!data.is_object()) continue;
      for (auto d = data.begin(); d != data.end(); ++d) {
        std::string key = prefix + d.key();
        if (!IsEnvVarName(key) || !d->is_string()) continue;
        env.Set(key, d->get<std::string>());
      }
    } else if (secret_ref.is_object()) {
      std::string name = StringField(secret_ref, "name");
      auto secret = Lookup(lookup.secret, name);
      if (!secret) {
        if (BoolField(secret_ref, "optional")) continue;
        return Status::NotFound("secret \"" + name + "\" not found");
      }
      const json& data = ObjectField(*secret, "data");
      if (!data.is_object()) continue;
      for (auto d = data.begin(); d != data.end(); ++d) {
        std::string key = prefix + d.key();
        if (!IsEnvVarName(key) || !d->is_string()) continue;
        SLUICE_ASSIGN_OR_RETURN(auto value, SecretKey(*secret, d.key()));
        if (value) env.Set(key, std::move(*value));
      }
    } else {
      return Status::InvalidArgument(
          field + ": must specify one of configMapRef or secretRef (container \"" +
              ContainerName(container) + "\" of pod " + PodNamespace(pod) + "/" +
              StringField(ObjectField(pod, "metadata"), "name") + ")",
          field);
    }
  }
  return Status::Ok();
}

}  // namespace

bool IsEnvVarName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!EnvNameChar(name[i], i == 0)) return false;
  }
  return true;
}

Result<std::string> DecodeBase64(std::string_view text) { return Base64Decode(text); }

std::string PodNamespace(const json& pod) {
  std::string ns = StringField(ObjectField(pod, "metadata"), "namespace");
  return ns.empty() ? "default" : ns;
}

Result<std::string> PodFieldValue(const json& pod, std::string_view field_path,
                                  const PodFacts& facts) {
  const json& meta = ObjectField(pod, "metadata");
  const json& spec = ObjectField(pod, "spec");
  const json& status = ObjectField(pod, "status");
  if (auto sub = SplitSubscript(field_path)) {
    const auto& [base, key] = *sub;
    if (base == "metadata.labels" || base == "metadata.annotations") {
      const json& map = ObjectField(meta, base == "metadata.labels" ? "labels" : "annotations");
      return StringField(map, key.c_str());
    }
  } else if (field_path == "metadata.name") {
    return StringField(meta, "name");
  } else if (field_path == "metadata.namespace") {
    return PodNamespace(pod);
  } else if (field_path == "metadata.uid") {
    return StringField(meta, "uid");
  } else if (field_path == "metadata.labels") {
    return FormatMap(ObjectField(meta, "labels"));
  } else if (field_path == "metadata.annotations") {
    return FormatMap(ObjectField(meta, "annotations"));
  } else if (field_path == "spec.nodeName") {
    return facts.node_name.empty() ? StringField(spec, "nodeName") : facts.node_name;
  } else if (field_path == "spec.serviceAccountName") {
    std::string sa = StringField(spec, "serviceAccountName");
    if (sa.empty()) sa = StringField(spec, "serviceAccount");
    return sa.empty() ? std::string("default") : sa;
  } else if (field_path == "status.podIP") {
    return facts.pod_ip.empty() ? StringField(status, "podIP") : facts.pod_ip;
  } else if (field_path == "status.podIPs") {
    if (!facts.pod_ip.empty()) return facts.pod_ip;
    std::string ips = JoinIps(status.is_object() ? status.value("podIPs", json()) : json());
    return ips.empty() ? StringField(status, "podIP") : ips;
  } else if (field_path == "status.hostIP") {
    return facts.host_ip.empty() ? StringField(status, "hostIP") : facts.host_ip;
  } else if (field_path == "status.hostIPs") {
    if (!facts.host_ip.empty()) return facts.host_ip;
    std::string ips = JoinIps(status.is_object() ? status.value("hostIPs", json()) : json());
    return ips.empty() ? StringField(status, "hostIP") : ips;
  }
  return Status::InvalidArgument("unsupported fieldPath: " + std::string(field_path));
}

Result<std::string> ContainerResourceValue(const json& container, const json& ref) {
  std::string resource = StringField(ref, "resource");
  std::string kind;
  std::string name;
  if (auto dot = resource.find('.'); dot != std::string::npos) {
    kind = resource.substr(0, dot);
    name = resource.substr(dot + 1);
  }
  if ((kind != "limits" && kind != "requests") ||
      (name != "cpu" && name != "memory" && name != "ephemeral-storage")) {
    return Status::InvalidArgument("unsupported container resource : " + resource);
  }
  // Divisor, default 1. Value and divisor are both in milli-units, so their ratio is the
  // value in divisor units (cpu with divisor 1: whole cores, rounded up as kube does).
  int64_t div = 1000;
  if (ref.is_object() && ref.contains("divisor") && !ref["divisor"].is_null()) {
    SLUICE_ASSIGN_OR_RETURN(div, MilliOf(ref["divisor"]));
  }
  if (div <= 0) {
    return Status::InvalidArgument(
        "resourceFieldRef " + resource + ": divisor \"" +
        (ref["divisor"].is_string() ? ref["divisor"].get<std::string>() : ref["divisor"].dump()) +
        "\" must be positive");
  }
  const json& resources = ObjectField(container, "resources");
  auto quantity_in = [&](const char* section) -> const json* {
    const json& m = ObjectField(resources, section);
    if (!m.is_object()) return nullptr;
    auto it = m.find(name);
    if (it == m.end() || it->is_null()) return nullptr;
    return &*it;
  };
  const json* q = quantity_in(kind.c_str());
  if (q == nullptr && kind == "requests") q = quantity_in("limits");
  int64_t value = 0;
  if (q != nullptr) {
    SLUICE_ASSIGN_OR_RETURN(value, MilliOf(*q));
  } else if (kind == "limits") {
    value = HostAllocatable(name);
  }
  return std::to_string(value / div + (value % div != 0 ? 1 : 0));
}

std::string ExpandVariables(std::string_view text, const EnvList& env) {
  auto lookup = [&](std::string_view name) -> const std::string* {
    const std::string* found = nullptr;
    for (const auto& [k, v] : env) {
      if (k == name) found = &v;
    }
    return found;
  };
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (c != '$' || i + 1 >= text.size()) {
      out += c;
      ++i;
      continue;
    }
    char next = text[i + 1];
    if (next == '$') {  // Escaped operator.
      out += '$';
      i += 2;
    } else if (next == '(') {
      size_t close = text.find(')', i + 2);
      if (close == std::string_view::npos) {  // Incomplete reference: copied as written.
        out += "$(";
        i += 2;
        continue;
      }
      std::string_view name = text.substr(i + 2, close - i - 2);
      if (const std::string* v = lookup(name)) {
        out += *v;
      } else {
        out.append(text.substr(i, close - i + 1));
      }
      i = close + 1;
    } else {
      out += '$';
      out += next;
      i += 2;
    }
  }
  return out;
}

std::vector<std::string> ContainerArgv(const json& container, const EnvList& env) {
  std::vector<std::string> argv;
  for (const char* key : {"command", "args"}) {
    if (!container.is_object()) break;
    auto it = container.find(key);
    if (it == container.end() || !it->is_array()) continue;
    for (const json& e : *it) {
      if (e.is_string()) argv.push_back(ExpandVariables(e.get<std::string>(), env));
    }
  }
  return argv;
}

Result<EnvList> ResolveEnv(const json& pod, const json& container, const PodFacts& facts,
                           const ObjectLookup& lookup) {
  if (!container.is_object()) return Status::InvalidArgument("container: must be an object");
  EnvBuilder env;
  SLUICE_RETURN_IF_ERROR(AddEnvFrom(pod, container, lookup, env));
  auto it = container.find("env");
  if (it == container.end() || it->is_null()) return env.Take();
  if (!it->is_array()) return Status::InvalidArgument("env: must be a list", "env");
  const std::string ns = PodNamespace(pod);
  size_t i = 0;
  for (const json& var : *it) {
    std::string field = "env[" + std::to_string(i++) + "]";
    std::string name = StringField(var, "name");
    if (name.empty()) {
      return Status::InvalidArgument(field + ".name: Required value", field + ".name");
    }
    const json& from = ObjectField(var, "valueFrom");
    std::string value = StringField(var, "value");
    if (!value.empty() || !from.is_object()) {
      env.Set(name, ExpandVariables(value, env.list()));
      continue;
    }
    if (const json& ref = ObjectField(from, "fieldRef"); ref.is_object()) {
      SLUICE_ASSIGN_OR_RETURN(value, PodFieldValue(pod, StringField(ref, "fieldPath"), facts));
    } else if (const json& rref = ObjectField(from, "resourceFieldRef"); rref.is_object()) {
      SLUICE_ASSIGN_OR_RETURN(value, ContainerResourceValue(container, rref));
    } else if (const json& cref = ObjectField(from, "configMapKeyRef"); cref.is_object()) {
      std::string cm_name = StringField(cref, "name");
      std::string key = StringField(cref, "key");
      bool optional = BoolField(cref, "optional");
      auto cm = Lookup(lookup.config_map, cm_name);
      if (!cm) {
        if (optional) continue;
        return Status::NotFound("configmap \"" + cm_name + "\" not found");
      }
      SLUICE_ASSIGN_OR_RETURN(auto v, ConfigMapKey(*cm, key, /*binary_too=*/true));
      if (!v) {
        if (optional) continue;
        return Status::NotFound("couldn't find key " + key + " in ConfigMap " + ns + "/" + cm_name);
      }
      value = std::move(*v);
    } else if (const json& sref = ObjectField(from, "secretKeyRef"); sref.is_object()) {
      std::string secret_name = StringField(sref, "name");
      std::string key = StringField(sref, "key");
      bool optional = BoolField(sref, "optional");
      auto secret = Lookup(lookup.secret, secret_name);
      if (!secret) {
        if (optional) continue;
        return Status::NotFound("secret \"" + secret_name + "\" not found");
      }
      SLUICE_ASSIGN_OR_RETURN(auto v, SecretKey(*secret, key));
      if (!v) {
        if (optional) continue;
        return Status::NotFound("couldn't find key " + key + " in Secret " + ns + "/" +
                                secret_name);
      }
      value = std::move(*v);
    } else {
      return Status::InvalidArgument(
          field +
              ".valueFrom: must specify one of: `fieldRef`, `resourceFieldRef`, "
              "`configMapKeyRef` or `secretKeyRef`",
          field + ".valueFrom");
    }
    env.Set(name, std::move(value));
  }
  return env.Take();
}

}  // namespace sluice::node
