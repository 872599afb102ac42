// Where a Policy's model claim (spec.model.source.pvc) appears in the worker Pods that load the
// Policy (docs/operator.md, "Policy"): the rollout replicas of every pool that hosts it and the
// rank Pods of the TrainerJob that trains it.
//
// The claim is mounted read-only, whole, at PolicyModelDir(<policy name>) =
// /var/lib/sluice/model/<policy name>: one directory per Policy, so a replica hosting several
// Policies on different claims (or on one claim at different paths) sees each at its own place.
// The workers find the model at that directory + spec.model.source.pvc.path
// (model::ResolveModelSource, which keeps the same root). Policies whose source is builtin,
// path or uri get no volume.
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sluice::controllers {

// The directory under which every Policy's claim is mounted.
inline constexpr char kPolicyModelRoot[] = "/var/lib/sluice/model";

// "/var/lib/sluice/model/<policy>".
std::string PolicyModelDir(const std::string& policy);

// What a Pod needs to mount its Policies' model claims.
struct PolicyModelVolumes {
  // Pod spec.volumes entries: one per distinct claim, {"name": "model-<10-hex JsonHash of the
  // claim name>", "persistentVolumeClaim": {"claimName": <claim>, "readOnly": true}}, sorted by
  // name (a valid DNS label whatever the claim's name).
  nlohmann::json volumes = nlohmann::json::array();
  // Container volumeMounts entries: one per Policy with a pvc source, {"name": <its claim's
  // volume>, "mountPath": PolicyModelDir(<policy>), "readOnly": true}, sorted by mountPath.
  nlohmann::json mounts = nlohmann::json::array();

  bool empty() const { return mounts.empty(); }
};

// The volumes and mounts for `policies` (Policy objects: metadata.name, spec.model.source). The
// result does not depend on their order; a Policy listed twice is mounted once.
PolicyModelVolumes PolicyModelVolumesFor(const std::vector<nlohmann::json>& policies);

}  // namespace sluice::controllers
