#include "localcluster/apiserver/workload_admission.h"

#include <cctype>
#include <string>

#include "common/go_quote.h"
#include "localcluster/apiserver/label_selector.h"

namespace sluice::apiserver {

using nlohmann::json;

namespace {

constexpr char kPercentMessage[] =
    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or "
    "'93%', regex used for validation is '[0-9]+%')";

// map[string]string as %#v prints it (keys sorted; nlohmann objects already are).
std::string GoStringMap(const json& m) {
  if (!m.is_object()) return "map[string]string(nil)";
  std::string out = "map[string]string{";
  bool first = true;
  for (const auto& [k, v] : m.items()) {
    if (!first) out += ", ";
    first = false;
    out += GoQuote(k) + ":" + GoQuote(v.is_string() ? v.get<std::string>() : v.dump());
  }
  return out + "}";
}

std::string GoStrings(const json& values) {
  if (!values.is_array()) return "[]string(nil)";
  std::string out = "[]string{";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ", ";
    out += GoQuote(values[i].is_string() ? values[i].get<std::string>() : values[i].dump());
  }
  return out + "}";
}

// A metav1.LabelSelector as %#v prints it.
std::string GoLabelSelector(const json& s) {
  const json labels = s.is_object() ? s.value("matchLabels", json()) : json();
  const json exprs = s.is_object() ? s.value("matchExpressions", json()) : json();
  std::string out = "v1.LabelSelector{MatchLabels:" + GoStringMap(labels) + ", MatchExpressions:";
  if (!exprs.is_array()) {
    out += "[]v1.LabelSelectorRequirement(nil)";
  } else {
    out += "[]v1.LabelSelectorRequirement{";
    for (size_t i = 0; i < exprs.size(); ++i) {
      const json& e = exprs[i];
      if (i > 0) out += ", ";
      out += "v1.LabelSelectorRequirement{Key:" + GoQuote(e.value("key", "")) +
             ", Operator:" + GoQuote(e.value("operator", "")) +
             ", Values:" + GoStrings(e.value("values", json())) + "}";
    }
    out += "}";
  }
  return out + "}";
}

// An intstr.IntOrString as %#v prints it.
std::string GoIntOrString(const json& v) {
  if (v.is_string()) {
    return "intstr.IntOrString{Type:1, IntVal:0, StrVal:" + GoQuote(v.get<std::string>()) + "}";
  }
  return "intstr.IntOrString{Type:0, IntVal:" +
         std::to_string(v.is_number_integer() ? v.get<int64_t>() : 0) + ", StrVal:\"\"}";
}

// "N%" with N digits: N; otherwise -1.
int64_t PercentValue(const json& v) {
  if (!v.is_string()) return -1;
  const std::string s = v.get<std::string>();
  if (s.size() < 2 || s.back() != '%' || s.size() > 12) return -1;
  int64_t n = 0;
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return -1;
    n = n * 10 + (s[i] - '0');
  }
  return n;
}

// kube's getIntOrPercentValue: a percentage's number, else the integer (a string's Atoi).
int64_t IntOrPercentValue(const json& v) {
  if (int64_t p = PercentValue(v); p >= 0) return p;
  if (v.is_number_integer()) return v.get<int64_t>();
  return 0;
}

void NonNegative(const json& spec, const char* key, const std::string& path,
                 openapi::FieldErrors& errors) {
  if (!spec.contains(key) || !spec[key].is_number_integer()) return;
  const int64_t v = spec[key].get<int64_t>();
  if (v < 0) {
    errors.push_back(
        {path, "Invalid value: " + std::to_string(v) + ": must be greater than or equal to 0"});
  }
}

// What ReplicaSets and Deployments share: replicas, selector, template.
void ValidateWorkloadSpec(const json& spec, openapi::FieldErrors& errors) {
  NonNegative(spec, "replicas", "spec.replicas", errors);
  const json selector = spec.value("selector", json());
  if (selector.is_null()) {
    errors.push_back({"spec.selector", "Required value"});
  } else if (!selector.is_object()) {
    errors.push_back(
        {"spec.selector", "Invalid value: " + selector.dump() + ": must be an object"});
  } else {
    Result<LabelSelector> parsed = FromLabelSelectorJson(selector);
    if (!parsed.ok()) {
      const std::string field = parsed.status().field();
      errors.push_back(
          {field.empty() ? "spec.selector" : "spec.selector." + field, parsed.status().message()});
    } else if (parsed->Empty()) {
      errors.push_back({"spec.selector", "Invalid value: " + GoLabelSelector(selector) +
                                             ": empty selector is invalid for deployment"});
    } else {
      const json tmpl = spec.value("template", json::object());
      const json labels =
          tmpl.is_object() ? tmpl.value("/metadata/labels"_json_pointer, json()) : json();
      json object = {{"metadata", {{"labels", labels.is_object() ? labels : json::object()}}}};
      if (!parsed->MatchesObject(object)) {
        errors.push_back(
            {"spec.template.metadata.labels", "Invalid value: " + GoStringMap(labels) +
                                                  ": `selector` does not match template `labels`"});
      }
    }
  }
  const json pod_spec = spec.value("/template/spec"_json_pointer, json::object());
  if (pod_spec.is_object()) {
    const json policy = pod_spec.value("restartPolicy", json());
    if (policy.is_string() && policy.get<std::string>() != "Always") {
      errors.push_back({"spec.template.spec.restartPolicy",
                        "Unsupported value: " + GoQuote(policy.get<std::string>()) +
                            ": supported values: \"Always\""});
    }
    if (pod_spec.contains("activeDeadlineSeconds") &&
        !pod_spec["activeDeadlineSeconds"].is_null()) {
      errors.push_back({"spec.template.spec.activeDeadlineSeconds",
                        "Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported"});
    }
  }
}

void ValidateIntOrPercent(const json& v, const std::string& path, openapi::FieldErrors& errors) {
  if (v.is_string()) {
    if (PercentValue(v) < 0) {
      errors.push_back({path, "Invalid value: " + GoIntOrString(v) + ": " + kPercentMessage});
    }
  } else if (v.is_number_integer() && v.get<int64_t>() < 0) {
    errors.push_back({path, "Invalid value: " + std::to_string(v.get<int64_t>()) +
                                ": must be greater than or equal to 0"});
  }
}

void ValidateStrategy(const json& spec, openapi::FieldErrors& errors) {
  const json strategy = spec.value("strategy", json::object());
  if (!strategy.is_object()) return;
  const std::string type = strategy.value("type", std::string("RollingUpdate"));
  const json rolling = strategy.value("rollingUpdate", json());
  if (type == "Recreate") {
    if (!rolling.is_null()) {
      errors.push_back({"spec.strategy.rollingUpdate",
                        "Forbidden: may not be specified when strategy `type` is 'Recreate'"});
    }
    return;
  }
  if (type != "RollingUpdate") {
    errors.push_back({"spec.strategy.type", "Unsupported value: " + GoQuote(type) +
                                                ": supported values: \"Recreate\", "
                                                "\"RollingUpdate\""});
    return;
  }
  // Undefaulted fields are validated as their defaults.
  const json ru = rolling.is_object() ? rolling : json::object();
  const json unavailable = ru.value("maxUnavailable", json("25%"));
  const json surge = ru.value("maxSurge", json("25%"));
  const std::string path = "spec.strategy.rollingUpdate";
  ValidateIntOrPercent(unavailable, path + ".maxUnavailable", errors);
  ValidateIntOrPercent(surge, path + ".maxSurge", errors);
  if (IntOrPercentValue(unavailable) == 0 && IntOrPercentValue(surge) == 0) {
    errors.push_back({path + ".maxUnavailable", "Invalid value: " + GoIntOrString(unavailable) +
                                                    ": may not be 0 when `maxSurge` is 0"});
  }
  if (PercentValue(unavailable) > 100) {
    errors.push_back({path + ".maxUnavailable", "Invalid value: " + GoIntOrString(unavailable) +
                                                    ": must not be greater than 100%"});
  }
}

void ValidateSelectorUnchanged(const json& old_object, const json& updated,
                               openapi::FieldErrors& errors) {
  const json before = old_object.value("/spec/selector"_json_pointer, json());
  const json after = updated.value("/spec/selector"_json_pointer, json());
  if (before != after) {
    errors.push_back(
        {"spec.selector", "Invalid value: " + GoLabelSelector(after) + ": field is immutable"});
  }
}

}  // namespace

void DefaultDeployment(json& deployment) {
  if (!deployment.is_object()) return;
  json& spec = deployment["spec"];
  if (spec.is_null()) spec = json::object();
  if (!spec.is_object()) return;
  if (!spec.contains("replicas") || spec["replicas"].is_null()) spec["replicas"] = 1;
  json& strategy = spec["strategy"];
  if (strategy.is_null()) strategy = json::object();
  if (strategy.is_object()) {
    if (!strategy.contains("type") || strategy["type"].is_null() || strategy["type"] == "") {
      strategy["type"] = "RollingUpdate";
    }
    if (strategy["type"] == "RollingUpdate") {
      json& ru = strategy["rollingUpdate"];
      if (ru.is_null()) ru = json::object();
      if (ru.is_object()) {
        if (!ru.contains("maxUnavailable") || ru["maxUnavailable"].is_null()) {
          ru["maxUnavailable"] = "25%";
        }
        if (!ru.contains("maxSurge") || ru["maxSurge"].is_null()) ru["maxSurge"] = "25%";
      }
    }
  }
  if (!spec.contains("revisionHistoryLimit") || spec["revisionHistoryLimit"].is_null()) {
    spec["revisionHistoryLimit"] = 10;
  }
  if (!spec.contains("progressDeadlineSeconds") || spec["progressDeadlineSeconds"].is_null()) {
    spec["progressDeadlineSeconds"] = 600;
  }
}

void DefaultReplicaSet(json& replica_set) {
  if (!replica_set.is_object()) return;
  json& spec = replica_set["spec"];
  if (spec.is_null()) spec = json::object();
  if (!spec.is_object()) return;
  if (!spec.contains("replicas") || spec["replicas"].is_null()) spec["replicas"] = 1;
}

openapi::FieldErrors ValidateDeployment(const json& deployment) {
  openapi::FieldErrors errors;
  const json spec = deployment.is_object() ? deployment.value("spec", json::object()) : json();
  if (!spec.is_object()) {
    errors.push_back({"spec", "Required value"});
    return errors;
  }
  ValidateWorkloadSpec(spec, errors);
  ValidateStrategy(spec, errors);
  NonNegative(spec, "minReadySeconds", "spec.minReadySeconds", errors);
  NonNegative(spec, "revisionHistoryLimit", "spec.revisionHistoryLimit", errors);
  if (spec.contains("progressDeadlineSeconds") &&
      spec["progressDeadlineSeconds"].is_number_integer()) {
    NonNegative(spec, "progressDeadlineSeconds", "spec.progressDeadlineSeconds", errors);
    const int64_t deadline = spec["progressDeadlineSeconds"].get<int64_t>();
    const int64_t min_ready = spec.value("minReadySeconds", json(0)).is_number_integer()
                                  ? spec.value("minReadySeconds", int64_t{0})
                                  : 0;
    if (deadline <= min_ready) {
      errors.push_back(
          {"spec.progressDeadlineSeconds", "Invalid value: " + std::to_string(deadline) +
                                               ": must be greater than minReadySeconds"});
    }
  }
  return errors;
}

openapi::FieldErrors ValidateReplicaSet(const json& replica_set) {
  openapi::FieldErrors errors;
  const json spec = replica_set.is_object() ? replica_set.value("spec", json::object()) : json();
  if (!spec.is_object()) {
    errors.push_back({"spec", "Required value"});
    return errors;
  }
  ValidateWorkloadSpec(spec, errors);
  NonNegative(spec, "minReadySeconds", "spec.minReadySeconds", errors);
  return errors;
}

openapi::FieldErrors ValidateDeploymentUpdate(const json& old_deployment, const json& updated) {
  openapi::FieldErrors errors = ValidateDeployment(updated);
  ValidateSelectorUnchanged(old_deployment, updated, errors);
  return errors;
}

openapi::FieldErrors ValidateReplicaSetUpdate(const json& old_replica_set, const json& updated) {
  openapi::FieldErrors errors = ValidateReplicaSet(updated);
  ValidateSelectorUnchanged(old_replica_set, updated, errors);
  return errors;
}

}  // namespace sluice::apiserver
