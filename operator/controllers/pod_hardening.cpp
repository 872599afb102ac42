#include "operator/controllers/pod_hardening.h"

#include "common/json/fields.h"

namespace sluice::controllers {
namespace {

using nlohmann::json;

// Sets object[key] = value unless the key is already there.
void Default(json& object, const char* key, const json& value) {
  if (!object.contains(key)) object[key] = value;
}

// Whether the container's securityContext adds CAP_SYS_ADMIN (the spelling Kubernetes checks).
bool AddsSysAdmin(const json& sc) {
  const auto caps = sc.find("capabilities");
  if (caps == sc.end() || !caps->is_object()) return false;
  const auto add = caps->find("add");
  if (add == caps->end() || !add->is_array()) return false;
  for (const json& cap : *add) {
    if (cap == "CAP_SYS_ADMIN") return true;
  }
  return false;
}

void HardenContainer(json& container) {
  json& sc = container["securityContext"];
  if (!sc.is_object()) sc = json::object();
  // The API server refuses allowPrivilegeEscalation: false next to privileged: true or an added
  // CAP_SYS_ADMIN (both imply escalation), so a template that asks for either gets no default.
  if (!BoolField(sc, "privileged") && !AddsSysAdmin(sc)) {
    Default(sc, "allowPrivilegeEscalation", false);
  }
  json& caps = sc["capabilities"];
  if (!caps.is_object()) caps = json::object();
  // Field by field: a template that only adds a capability still drops the rest.
  Default(caps, "drop", json::array({"ALL"}));
  Default(sc, "readOnlyRootFilesystem", true);
}

}  // namespace

void HardenPodSpec(json& pod_spec) {
  Default(pod_spec, "automountServiceAccountToken", false);
  json& pod = pod_spec["securityContext"];
  if (!pod.is_object()) pod = json::object();
  Default(pod, "runAsNonRoot", true);
  Default(pod, "runAsUser", kWorkerUid);
  Default(pod, "runAsGroup", kWorkerUid);
  Default(pod, "fsGroup", kWorkerUid);
  Default(pod, "seccompProfile", {{"type", "RuntimeDefault"}});
  for (const char* list : {"initContainers", "containers"}) {
    if (!pod_spec.contains(list)) continue;
    for (json& c : pod_spec[list]) HardenContainer(c);
  }
}

void ApplyTemplateSecurityContexts(const json& pod_template, json& pod_spec) {
  if (!pod_template.is_object()) return;
  if (const auto pod = pod_template.find("securityContext");
      pod != pod_template.end() && pod->is_object()) {
    pod_spec["securityContext"] = *pod;
  }
  const auto container = pod_template.find("containerSecurityContext");
  if (container == pod_template.end() || !container->is_object()) return;
  if (!pod_spec.contains("containers")) return;
  for (json& c : pod_spec["containers"]) c["securityContext"] = *container;
}

}  // namespace sluice::controllers
