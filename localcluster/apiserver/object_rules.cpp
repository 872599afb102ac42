#include "localcluster/apiserver/object_rules.h"

#include <ctime>
#include <random>
#include <regex>

#include "common/base64.h"
#include "common/time_format.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

std::mt19937_64& Rng() {
  thread_local std::mt19937_64 rng(std::random_device{}());
  return rng;
}

const std::regex& Dns1123Subdomain() {
  static const std::regex re(
      R"(^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$)");
  return re;
}
const std::regex& Dns1123Label() {
  static const std::regex re(R"(^[a-z0-9]([-a-z0-9]*[a-z0-9])?$)");
  return re;
}

json& Meta(json& object) {
  if (!object.contains("metadata") || !object["metadata"].is_object()) {
    object["metadata"] = json::object();
  }
  return object["metadata"];
}

void SetIfAbsent(json& object, const char* key, json value) {
  if (!object.contains(key) || object[key].is_null()) object[key] = std::move(value);
}

void DefaultPod(json& pod) {
  json& spec = pod["spec"];
  if (!spec.is_object()) return;
  SetIfAbsent(spec, "restartPolicy", "Always");
  SetIfAbsent(spec, "dnsPolicy", "ClusterFirst");
  SetIfAbsent(spec, "schedulerName", "default-scheduler");
  SetIfAbsent(spec, "terminationGracePeriodSeconds", 30);
  for (const char* list : {"containers", "initContainers"}) {
    if (!spec.contains(list) || !spec[list].is_array()) continue;
    for (json& c : spec[list]) {
      if (!c.is_object()) continue;
      const std::string image = c.value("image", "");
      const bool latest =
          image.find(':') == std::string::npos || image.substr(image.rfind(':')) == ":latest";
      SetIfAbsent(c, "imagePullPolicy", latest ? "Always" : "IfNotPresent");
      SetIfAbsent(c, "terminationMessagePath", "/dev/termination-log");
      SetIfAbsent(c, "terminationMessagePolicy", "File");
    }
  }
  json status = json::object();
  status["phase"] = "Pending";
  pod["status"] = std::move(status);
}

// stringData is write-only: its entries are merged into data (base64), over data's own, and the
// field is never stored, as kube-apiserver does.
void MergeSecretStringData(json& secret) {
  auto it = secret.find("stringData");
  if (it == secret.end()) return;
  if (it->is_object()) {
    json& data = secret["data"];
    if (!data.is_object()) data = json::object();
    for (const auto& [k, v] : it->items()) {
      if (v.is_string()) data[k] = Base64Encode(v.get<std::string>());
    }
  }
  secret.erase("stringData");
}

void DefaultService(json& service) {
  json& spec = service["spec"];
  if (!spec.is_object()) return;
  SetIfAbsent(spec, "type", "ClusterIP");
  SetIfAbsent(spec, "sessionAffinity", "None");
  if (spec.contains("ports") && spec["ports"].is_array()) {
    for (json& port : spec["ports"]) {
      if (!port.is_object()) continue;
      SetIfAbsent(port, "protocol", "TCP");
      if (port.contains("port")) SetIfAbsent(port, "targetPort", port["port"]);
    }
  }
}

}  // namespace

std::string NewUid() {
  std::uniform_int_distribution<int> nibble(0, 15);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string uid;
  for (int i = 0; i < 32; ++i) {
    if (i == 8 || i == 12 || i == 16 || i == 20) uid += '-';
    int v = nibble(Rng());
    if (i == 12) v = 4;            // Version 4.
    if (i == 16) v = 8 | (v & 3);  // RFC 4122 variant.
    uid += kHex[v];
  }
  return uid;
}

std::string RandomNameSuffix() {
  static constexpr std::string_view kAlphabet = "bcdfghjklmnpqrstvwxz2456789";
  std::uniform_int_distribution<size_t> pick(0, kAlphabet.size() - 1);
  std::string suffix;
  for (int i = 0; i < 5; ++i) suffix += kAlphabet[pick(Rng())];
  return suffix;
}

openapi::FieldErrors ValidateName(const ResourceInfo& info, const json& object) {
  openapi::FieldErrors errors;
  const json* meta = object.contains("metadata") ? &object["metadata"] : nullptr;
  const std::string name = meta != nullptr && meta->is_object() && (*meta)["name"].is_string()
                               ? (*meta)["name"].get<std::string>()
                               : "";
  if (name.empty()) {
    errors.push_back({"metadata.name", "Required value: name or generateName is required"});
    return errors;
  }
  const bool label = info.group.empty() && info.plural == "namespaces";
  const size_t max = label ? 63 : 253;
  if (name.size() > max) {
    errors.push_back({"metadata.name", "Invalid value: \"" + name + "\": must be no more than " +
                                           std::to_string(max) + " characters"});
  } else if (!std::regex_match(name, label ? Dns1123Label() : Dns1123Subdomain())) {
    errors.push_back(
        {"metadata.name",
         "Invalid value: \"" + name + "\": a lowercase RFC 1123 " +
             (label ? std::string("label must consist of lower case alphanumeric characters or "
                                  "'-', and must start and end with an alphanumeric character")
                    : std::string("subdomain must consist of lower case alphanumeric "
                                  "characters, '-' or '.', and must start and end with an "
                                  "alphanumeric character"))});
  }
  if (info.group == "apiextensions.k8s.io" && info.plural == "customresourcedefinitions" &&
      errors.empty()) {
    const std::string plural = object.contains("spec") && object["spec"].is_object()
                                   ? object["spec"].value("/names/plural"_json_pointer, "")
                                   : "";
    const std::string group = object.contains("spec") && object["spec"].is_object()
                                  ? object["spec"].value("group", "")
                                  : "";
    if (name != plural + "." + group) {
      errors.push_back({"metadata.name", "Invalid value: \"" + name +
                                             "\": must be spec.names.plural+\".\"+spec.group"});
    }
  }
  return errors;
}

bool SpecChanged(const json& before, const json& after) {
  auto strip = [](json o) {
    if (o.is_object()) {
      o.erase("metadata");
      o.erase("status");
      o.erase("apiVersion");
      o.erase("kind");
    }
    return o;
  };
  return strip(before) != strip(after);
}

Result<json> PrepareCreate(const ResourceInfo& info, json object, std::string_view path_namespace,
                           Clock::WallTime now) {
  if (!object.is_object()) return Status::InvalidArgument("the request body must be an object");
  const std::string api_version = object.value("apiVersion", "");
  if (!api_version.empty() && api_version != info.ApiVersion()) {
    return Status::InvalidArgument("the API version in the data (" + api_version +
                                   ") does not match the expected API version (" +
                                   info.ApiVersion() + ")");
  }
  const std::string kind = object.value("kind", "");
  if (!kind.empty() && kind != info.kind) {
    return Status::InvalidArgument("the kind in the data (" + kind +
                                   ") does not match the expected kind (" + info.kind + ")");
  }
  object["apiVersion"] = info.ApiVersion();
  object["kind"] = info.kind;
  json& meta = Meta(object);
  if (meta.contains("resourceVersion") && !meta["resourceVersion"].is_null() &&
      meta["resourceVersion"] != "") {
    return Status::InvalidArgument("resourceVersion should not be set on objects to be created");
  }
  if (info.namespaced) {
    const std::string body_ns = meta.value("namespace", "");
    if (!body_ns.empty() && body_ns != path_namespace) {
      return Status::InvalidArgument(
          "the namespace of the provided object does not match the namespace sent on the "
          "request");
    }
    meta["namespace"] = std::string(path_namespace);
  } else {
    meta.erase("namespace");
  }
  const std::string name = meta.value("name", "");
  const std::string generate = meta.value("generateName", "");
  if (name.empty() && !generate.empty()) meta["name"] = generate + RandomNameSuffix();
  meta.erase("resourceVersion");
  meta.erase("deletionTimestamp");
  meta.erase("deletionGracePeriodSeconds");
  meta.erase("managedFields");
  meta.erase("selfLink");
  meta["uid"] = NewUid();
  meta["creationTimestamp"] = FormatTime(now);
  meta["generation"] = 1;
  if (info.has_status) object.erase("status");

  if (info.group.empty() && info.plural == "namespaces") {
    object["spec"] = {{"finalizers", json::array({"kubernetes"})}};
    object["status"] = {{"phase", "Active"}};
  } else if (info.group.empty() && info.plural == "pods") {
    DefaultPod(object);
  } else if (info.group.empty() && info.plural == "services") {
    DefaultService(object);
  } else if (info.group.empty() && info.plural == "secrets") {
    MergeSecretStringData(object);
  }
  return object;
}

Result<json> PrepareUpdate(const ResourceInfo& info, const json& current, json updated,
                           WriteTarget target) {
  if (!updated.is_object()) return Status::InvalidArgument("the request body must be an object");
  const json& cur_meta = current.at("metadata");
  if (target == WriteTarget::kStatus) {
    json result = current;
    if (updated.contains("status")) {
      result["status"] = updated["status"];
    } else {
      result.erase("status");
    }
    return result;
  }
  json& meta = Meta(updated);
  const std::string name = meta.value("name", "");
  if (!name.empty() && name != cur_meta.value("name", "")) {
    return Status::InvalidArgument("the name of the object (" + name +
                                   ") does not match the name on the URL (" +
                                   cur_meta.value("name", "") + ")");
  }
  if (info.namespaced) {
    const std::string ns = meta.value("namespace", "");
    if (!ns.empty() && ns != cur_meta.value("namespace", "")) {
      return Status::InvalidArgument(
          "the namespace of the provided object does not match the namespace sent on the "
          "request");
    }
  }
  if (cur_meta.contains("deletionTimestamp")) {
    const json old_finalizers = cur_meta.value("finalizers", json::array());
    const json new_finalizers = meta.value("finalizers", json::array());
    for (const json& f : new_finalizers) {
      if (std::find(old_finalizers.begin(), old_finalizers.end(), f) == old_finalizers.end()) {
        return Status::Unprocessable(
            "Forbidden: no new finalizers can be added if the object is being deleted, found "
            "new finalizers [" +
                f.dump() + "]",
            "metadata.finalizers");
      }
    }
  }
  for (const char* key : {"uid", "name", "namespace", "creationTimestamp", "deletionTimestamp",
                          "deletionGracePeriodSeconds", "generation", "resourceVersion"}) {
    if (cur_meta.contains(key)) {
      meta[key] = cur_meta[key];
    } else {
      meta.erase(key);
    }
  }
  meta.erase("managedFields");
  updated["apiVersion"] = current.value("apiVersion", info.ApiVersion());
  updated["kind"] = info.kind;
  if (info.has_status) {
    if (current.contains("status")) {
      updated["status"] = current["status"];
    } else {
      updated.erase("status");
    }
  }
  if (info.group.empty() && info.plural == "namespaces") {
    // spec.finalizers is the namespace controller's (the finalize subresource in kube).
    if (current.contains("spec")) updated["spec"] = current["spec"];
    if (current.contains("status")) updated["status"] = current["status"];
  }
  if (info.group.empty() && info.plural == "secrets") MergeSecretStringData(updated);
  if (SpecChanged(current, updated)) {
    meta["generation"] = cur_meta.value("generation", int64_t{1}) + 1;
  }
  return updated;
}

json ForOutput(const ResourceInfo& info, json object) {
  object["apiVersion"] = info.ApiVersion();
  object["kind"] = info.kind;
  return object;
}

}  // namespace sluice::apiserver
