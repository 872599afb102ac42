// Decide: the autoscaler's replica count for one RolloutPool, from metric values, as a pure
// function of its inputs (time is a parameter; no I/O, no clock).
//
// The model is the Kubernetes HorizontalPodAutoscaler, with one difference: each metric here is
// a pool-wide TOTAL (pending work items, tokens per second), not a per-Pod average, so a
// metric's desired count is ceil(value / targetPerReplica) instead of HPA's
// ceil(current * average / target). Steps, in order:
//
//  1. Every metric of the spec needs a usable sample: a value, no error, finite and >= 0, and a
//     targetPerReplica > 0. If ANY metric fails, the size is frozen at the current count and
//     ScalingActive is False with reason FailedGetMetrics naming each failure. (HPA keeps
//     scaling UP on the metrics that still work; freezing is simpler and never shrinks a pool
//     on partial information.) The limits still hold: a current count outside
//     [floor, maxReplicas] (see 3; 0 is kept when scale-to-zero is allowed) moves to the
//     bound, as HPA enforces them before reading metrics. History is only pruned.
//  2. Per metric: proposal = ceil(value / targetPerReplica). Tolerance, per metric as in HPA:
//     with current > 0, when |value / (targetPerReplica * current) - 1| <= tolerance (inclusive,
//     with 1e-9 slack for floating point) the metric proposes the current count. A positive
//     value always proposes at least 1 (scale-from-zero). The largest proposal wins.
//  3. Scale to zero: only when EVERY metric value is exactly 0, minReplicas == 0 and
//     scaleToZero; then the recommendation is 0 regardless of tolerance. Otherwise the floor is
//     max(minReplicas, 1). The recommendation is clamped to [floor, maxReplicas]
//     (TooFewReplicas / TooManyReplicas).
//  4. The clamped recommendation is recorded in `history` (entries older than the longer
//     window are dropped first). Stabilisation, as HPA's behavior windows: a scale-down goes
//     only to the HIGHEST recommendation of the scale-down window, a scale-up only to the
//     LOWEST recommendation of the scale-up window. A window of W seconds holds the entries
//     with time > now - W plus the new one, so W = 0 acts at once and an entry exactly W
//     seconds old no longer counts. The result is clamped to [floor, maxReplicas] again, so
//     the limits hold even when they changed within a window.
//
// Call Decide once per sync period (spec.autoscaling.syncPeriodSeconds) with the same history
// object for the life of the pool; the history is the only state.
//
// Thread safety: pure; `history` is the caller's and must not be shared between threads.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "api/generated/rollout_pool_types.h"

namespace sluice::autoscale {

// The result of one metric's query, in the metric's own units (a total over the pool).
struct MetricSample {
  std::string name;             // spec.autoscaling.metrics[].name.
  std::optional<double> value;  // Set when the query succeeded.
  std::string error;            // Non-empty when the query failed (why).
};

// One recommendation: the (clamped) replica count the metrics asked for at a time.
struct Recommendation {
  int64_t time_seconds = 0;  // Caller's clock, seconds (monotonic or Unix; one kind per history).
  int64_t replicas = 0;
};

// Recommendations of past syncs, oldest first; owned by the caller, one per pool.
using RecommendationHistory = std::deque<Recommendation>;

// What Decide concluded. The condition fields follow HPA's conditions (ScalingActive,
// ScalingLimited) so they can be written to status.conditions as they are.
struct ScaleDecision {
  int64_t desired = 0;   // The replica count to write to spec.replicas.
  bool changed = false;  // desired != current.
  // Human text naming the metric values, HPA-event style, e.g. "New size: 5; reason:
  // pending-work above target; pending-work=420 (target 100/replica) -> 5". When unchanged it
  // starts "Size stays N; ...".
  std::string reason;

  // ScalingActive: True (ValidMetricFound) when every metric gave a count; False
  // (FailedGetMetrics) with the errors in the message when the size is frozen.
  bool scaling_active = false;
  std::string scaling_active_reason;
  std::string scaling_active_message;

  // ScalingLimited: True when the count the metrics asked for was not applied as is:
  // TooFewReplicas, TooManyReplicas (clamped to minReplicas / maxReplicas), ScaleDownStabilized,
  // ScaleUpStabilized (held by a stabilisation window). False: DesiredWithinRange. When the
  // metrics failed only TooFewReplicas/TooManyReplicas can be set; otherwise the reason is empty.
  bool scaling_limited = false;
  std::string scaling_limited_reason;
  std::string scaling_limited_message;
};

// Decides the replica count of a pool now. `current_replicas` is spec.replicas as it stands;
// `samples` holds one entry per spec metric (matched by name; a missing one is a failure,
// extra ones are ignored); `history` is updated in place; `now_seconds` is the caller's clock.
ScaleDecision Decide(const api::RolloutPoolSpecAutoscaling& spec, int64_t current_replicas,
                     const std::vector<MetricSample>& samples, RecommendationHistory& history,
                     int64_t now_seconds);

}  // namespace sluice::autoscale
