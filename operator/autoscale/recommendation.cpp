#include "operator/autoscale/recommendation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/join_strings.h"

namespace sluice::autoscale {
namespace {

// Relative slack for floating-point noise: 1.1 / 0.1 is 11.000000000000002, which must propose
// 11, and 1100 / (100 * 10) - 1 is 0.10000000000000009, which must count as within 0.1.
constexpr double kSlack = 1e-9;
// Ratios beyond this are capped before the conversion to int64 (maxReplicas is at most 1024, so
// the cap never changes a decision; it keeps a huge or absurd value from overflowing).
constexpr double kMaxRatio = 1e9;

// A metric that gave a usable value, and the count it proposes.
struct Proposal {
  std::string name;
  double value = 0;
  double target = 0;
  int64_t replicas = 0;
  bool within_tolerance = false;
};

// "420", "0.25", "1.5e+09".
std::string FormatNumber(double v) {
  if (std::abs(v) < 1e15 && v == std::floor(v)) {
    return std::to_string(static_cast<int64_t>(v));
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// ceil(value / target) for value >= 0, target > 0; at least 1 for any positive value.
int64_t CeilCount(double value, double target) {
  if (value <= 0) return 0;
  const double ratio = value / target;
  if (ratio >= kMaxRatio) return static_cast<int64_t>(kMaxRatio);
  const auto count = static_cast<int64_t>(std::ceil(ratio - kSlack * std::max(1.0, ratio)));
  return std::max<int64_t>(count, 1);
}

// "pending-work=420 (target 100/replica) -> 5".
std::string Describe(const Proposal& p) {
  std::string s = p.name + "=" + FormatNumber(p.value) + " (target " + FormatNumber(p.target) +
                  "/replica) -> " + std::to_string(p.replicas);
  if (p.within_tolerance) s += " (within tolerance)";
  return s;
}

const MetricSample* FindSample(const std::vector<MetricSample>& samples, const std::string& name) {
  for (const MetricSample& s : samples) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

// Limits the count to [lower, upper]; names the bound that applied (upper wins when the spec
// has lower > upper, because maxReplicas is the cost cap).
int64_t Clamp(int64_t n, int64_t lower, int64_t upper, std::string* limit) {
  if (n > upper) {
    *limit = "TooManyReplicas";
    return upper;
  }
  if (n < lower) {
    *limit = "TooFewReplicas";
    return std::min(lower, upper);
  }
  limit->clear();
  return n;
}

std::string LimitMessage(const std::string& limit, int64_t lower, int64_t upper) {
  if (limit == "TooManyReplicas") {
    return "the desired replica count is more than the maximum replica count (" +
           std::to_string(upper) + ")";
  }
  if (limit == "TooFewReplicas") {
    return "the desired replica count is less than the minimum replica count (" +
           std::to_string(lower) + ")";
  }
  if (limit == "ScaleDownStabilized") {
    return "recent recommendations were higher than current one, applying the highest recent "
           "recommendation";
  }
  if (limit == "ScaleUpStabilized") {
    return "recent recommendations were lower than current one, applying the lowest recent "
           "recommendation";
  }
  return "the desired count is within the acceptable range";
}

void SetLimited(ScaleDecision& d, const std::string& limit, int64_t lower, int64_t upper) {
  d.scaling_limited = !limit.empty();
  d.scaling_limited_reason = limit.empty() ? "DesiredWithinRange" : limit;
  d.scaling_limited_message = LimitMessage(limit, lower, upper);
}

}  // namespace

ScaleDecision Decide(const api::RolloutPoolSpecAutoscaling& spec, int64_t current_replicas,
                     const std::vector<MetricSample>& samples, RecommendationHistory& history,
                     int64_t now_seconds) {
  const int64_t current = std::max<int64_t>(current_replicas, 0);
  const int64_t up_window = std::max<int64_t>(spec.scale_up_stabilization_seconds, 0);
  const int64_t down_window = std::max<int64_t>(spec.scale_down_stabilization_seconds, 0);
  const bool zero_allowed = spec.min_replicas <= 0 && spec.scale_to_zero;
  const int64_t floor = std::max<int64_t>(spec.min_replicas, 1);
  const int64_t upper = std::max<int64_t>(spec.max_replicas, 0);

  // Entries that no window can reach any more.
  const int64_t keep_after = now_seconds - std::max(up_window, down_window);
  std::erase_if(history, [&](const Recommendation& r) { return r.time_seconds <= keep_after; });

  // 1. Every metric must give a usable value.
  std::vector<std::string> errors;
  std::vector<Proposal> proposals;
  if (spec.metrics.empty()) errors.push_back("spec.autoscaling.metrics is empty");
  for (const api::RolloutPoolSpecAutoscalingMetric& m : spec.metrics) {
    const MetricSample* s = FindSample(samples, m.name);
    if (s == nullptr) {
      errors.push_back(m.name + ": no sample");
    } else if (!s->error.empty()) {
      errors.push_back(m.name + ": " + s->error);
    } else if (!s->value.has_value()) {
      errors.push_back(m.name + ": no value");
    } else if (!(m.target_per_replica > 0)) {
      errors.push_back(m.name + ": targetPerReplica must be positive (got " +
                       FormatNumber(m.target_per_replica) + ")");
    } else if (!std::isfinite(*s->value)) {
      errors.push_back(m.name + ": value " + FormatNumber(*s->value) + " is not finite");
    } else if (*s->value < 0) {
      errors.push_back(m.name + ": value " + FormatNumber(*s->value) +
                       " is negative; a metric must be a total >= 0");
    } else {
      proposals.push_back({m.name, *s->value, m.target_per_replica, 0, false});
    }
  }

  ScaleDecision d;
  if (!errors.empty()) {
    // Frozen, but the limits still hold (as HPA enforces them before reading metrics).
    std::string limit;
    d.desired = Clamp(current, zero_allowed ? 0 : floor, upper, &limit);
    d.changed = d.desired != current;
    d.scaling_active = false;
    d.scaling_active_reason = "FailedGetMetrics";
    d.scaling_active_message =
        "the autoscaler could not compute a replica count, keeping the size: " +
        JoinStrings(errors, "; ");
    if (!limit.empty()) SetLimited(d, limit, floor, upper);
    if (d.changed) {
      d.reason = "New size: " + std::to_string(d.desired) + "; reason: " +
                 (limit == "TooManyReplicas" ? "Current number of replicas above maxReplicas"
                                             : "Current number of replicas below minReplicas");
    } else {
      d.reason = "Size stays " + std::to_string(current);
    }
    d.reason += "; failed to get metrics: " + JoinStrings(errors, "; ");
    return d;
  }

  // 2. Per-metric proposals with tolerance; the largest wins.
  bool all_zero = true;
  const Proposal* driver = nullptr;
  for (Proposal& p : proposals) {
    all_zero = all_zero && p.value == 0;
    p.replicas = CeilCount(p.value, p.target);
    if (current > 0) {
      const double ratio = p.value / (p.target * static_cast<double>(current));
      if (std::abs(ratio - 1) <= spec.tolerance + kSlack) {
        p.replicas = current;
        p.within_tolerance = true;
      }
    }
    if (driver == nullptr || p.replicas > driver->replicas) driver = &p;
  }
  const bool to_zero = all_zero && zero_allowed;

  // 3. Scale to zero, or the floor; clamp.
  std::string first_limit;
  const int64_t raw = to_zero ? 0 : driver->replicas;
  const int64_t recommendation = Clamp(raw, to_zero ? 0 : floor, upper, &first_limit);

  // 4. Stabilisation over the windows, the new recommendation included.
  int64_t up_bound = recommendation;    // Lowest in the scale-up window.
  int64_t down_bound = recommendation;  // Highest in the scale-down window.
  for (const Recommendation& r : history) {
    if (r.time_seconds > now_seconds - up_window) up_bound = std::min(up_bound, r.replicas);
    if (r.time_seconds > now_seconds - down_window) down_bound = std::max(down_bound, r.replicas);
  }
  history.push_back({now_seconds, recommendation});
  int64_t stabilized = current;
  if (stabilized < up_bound) stabilized = up_bound;
  if (stabilized > down_bound) stabilized = down_bound;

  std::string final_limit;
  d.desired = Clamp(stabilized, zero_allowed ? 0 : floor, upper, &final_limit);
  d.changed = d.desired != current;

  std::string limit = final_limit;
  if (limit.empty() && d.desired > recommendation) limit = "ScaleDownStabilized";
  if (limit.empty() && d.desired < recommendation) limit = "ScaleUpStabilized";
  if (limit.empty()) limit = first_limit;
  SetLimited(d, limit, zero_allowed ? 0 : floor, upper);

  d.scaling_active = true;
  d.scaling_active_reason = "ValidMetricFound";
  std::vector<std::string> names;
  std::vector<std::string> described;
  for (const Proposal& p : proposals) {
    names.push_back(p.name);
    described.push_back(Describe(p));
  }
  d.scaling_active_message =
      "the autoscaler computed the replica count from " + JoinStrings(names, ", ");

  if (d.changed) {
    std::string cause;
    if (d.desired == 0 && to_zero) {
      cause = "All metrics are zero";
    } else if (d.desired > current) {
      cause = limit == "TooFewReplicas" ? "Current number of replicas below minReplicas"
                                        : driver->name + " above target";
    } else {
      cause = limit == "TooManyReplicas" ? "Current number of replicas above maxReplicas"
                                         : "All metrics below target";
    }
    d.reason = "New size: " + std::to_string(d.desired) + "; reason: " + cause;
  } else {
    d.reason = "Size stays " + std::to_string(current);
  }
  d.reason += "; " + JoinStrings(described, ", ");
  if (d.scaling_limited) d.reason += "; " + d.scaling_limited_reason;
  return d;
}

}  // namespace sluice::autoscale
