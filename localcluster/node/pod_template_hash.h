// The pod-template-hash of a Deployment's pod template: the suffix of its ReplicaSets' names and
// the label that keeps their pods apart (deployment_sync.h).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace sluice::node {

// The hash of a pod template (spec.template) and status.collisionCount (< 0: none): FNV-1a of
// the template's canonical JSON (keys sorted; normalized as TemplatesEqualIgnoringHash does, so
// equal templates hash alike however they were written), its decimal digits written with lowercase
// letters and digits (no vowels, as kube's, so no words appear), e.g. "5d8f7c9b4". Equal
// templates give equal hashes on every run; any change to the template changes it (barring a
// 32-bit collision, which collisionCount resolves).
std::string PodTemplateHash(const nlohmann::json& pod_template, int64_t collision_count = -1);

// Whether two pod templates are equal once the pod-template-hash label is removed from both.
// As in kube, where templates are compared as decoded structs, a null, an empty object and an
// empty array count as absent at any depth (kubectl rollout undo writes `resources: {}` and
// `creationTimestamp: null` into the template it restores).
bool TemplatesEqualIgnoringHash(const nlohmann::json& a, const nlohmann::json& b);

}  // namespace sluice::node
