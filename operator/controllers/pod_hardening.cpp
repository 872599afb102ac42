#include "operator/controllers/pod_hardening.h"

namespace sluice::controllers {
namespace {

using nlohmann::json;

// Sets object[key] = value unless the key is already there.
void Default(json& object, const char* key, const json& value) {
  if (!object.contains(key)) object[key] = value;
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
    for (json& c : pod_spec[list]) {
      json& sc = c["securityContext"];
      if (!sc.is_object()) sc = json::object();
      Default(sc, "allowPrivilegeEscalation", false);
      Default(sc, "capabilities", {{"drop", {"ALL"}}});
    }
  }
}

}  // namespace sluice::controllers
