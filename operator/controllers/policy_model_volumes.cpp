#include "operator/controllers/policy_model_volumes.h"

#include <map>

#include "operator/controllers/labels.h"

namespace sluice::controllers {

using nlohmann::json;

std::string PolicyModelDir(const std::string& policy) {
  return std::string(kPolicyModelRoot) + "/" + policy;
}

PolicyModelVolumes PolicyModelVolumesFor(const std::vector<json>& policies) {
  // Keyed maps give the sorted, de-duplicated order.
  std::map<std::string, json> volumes;  // By volume name.
  std::map<std::string, json> mounts;   // By mount path.
  for (const json& policy : policies) {
    const std::string name = policy.value("/metadata/name"_json_pointer, "");
    const std::string claim =
        policy.value("/spec/model/source/pvc/claimName"_json_pointer, std::string());
    if (name.empty() || claim.empty()) continue;
    // The claim's name is a DNS label already, but "model-" + 63 characters is not.
    const std::string volume = "model-" + JsonHash(json(claim));
    volumes[volume] = {{"name", volume},
                       {"persistentVolumeClaim", {{"claimName", claim}, {"readOnly", true}}}};
    const std::string dir = PolicyModelDir(name);
    mounts[dir] = {{"name", volume}, {"mountPath", dir}, {"readOnly", true}};
  }
  PolicyModelVolumes out;
  for (auto& entry : volumes) out.volumes.push_back(std::move(entry.second));
  for (auto& entry : mounts) out.mounts.push_back(std::move(entry.second));
  return out;
}

}  // namespace sluice::controllers
