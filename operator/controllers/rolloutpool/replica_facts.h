// The facts Plan (plan.h) needs about a RolloutPool and its replica Pods, read from their objects.
//
// Pure functions: no I/O, no clocks (times are Unix seconds passed in). Thread safety: values
// only.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "operator/controllers/rolloutpool/plan.h"

namespace sluice::controllers::rolloutpool {

// Set on a replica pod when it was asked to drain (RFC 3339).
inline constexpr char kDrainingSinceAnnotation[] = "sluice.dev/draining-since";

// The facts of one replica `pod` (without its worker's report, which the reconciler asks for):
// `template_hash` is the pool's current PoolTemplateHash; `now_seconds` and
// `abandon_after_seconds` decide termination_abandoned (abandoned_termination.h).
Replica ReplicaFromPod(const nlohmann::json& pod, const std::string& template_hash,
                       int64_t now_seconds, int64_t abandon_after_seconds);

// spec.updateStrategy.maxUnavailable of a defaulted `pool`: an integer, or a percentage of
// spec.replicas (rounded down); at least 1, so an update always progresses.
int64_t MaxUnavailable(const nlohmann::json& pool);

}  // namespace sluice::controllers::rolloutpool
