// Decide: per-metric counts, tolerance, clamping, scale to and from zero, failing metrics and
// the HPA-style stabilisation windows over the recommendation history. Pure; time is a number.
#include "operator/autoscale/recommendation.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sluice::autoscale {
namespace recommendation_test {

using api::RolloutPoolSpecAutoscaling;
using api::RolloutPoolSpecAutoscalingMetric;

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A spec with one metric "pending-work" (target 100/replica), no stabilisation windows.
RolloutPoolSpecAutoscaling Spec(int64_t min, int64_t max) {
  RolloutPoolSpecAutoscaling spec;
  spec.min_replicas = min;
  spec.max_replicas = max;
  spec.scale_to_zero = min == 0;
  spec.scale_down_stabilization_seconds = 0;
  spec.scale_up_stabilization_seconds = 0;
  spec.tolerance = 0.1;
  spec.metrics.push_back({"pending-work", "sum(pending)", 100});
  return spec;
}

std::vector<MetricSample> Value(double v, const std::string& name = "pending-work") {
  return {MetricSample{name, v, ""}};
}

// One Decide with a fresh history.
ScaleDecision Once(const RolloutPoolSpecAutoscaling& spec, int64_t current,
                   const std::vector<MetricSample>& samples) {
  RecommendationHistory history;
  return Decide(spec, current, samples, history, 1000);
}

TEST(DecideTest, ScalesToCeilOfValueOverTarget) {
  const ScaleDecision d = Once(Spec(1, 100), 2, Value(420));
  EXPECT_EQ(d.desired, 5);
  EXPECT_TRUE(d.changed);
  EXPECT_TRUE(d.scaling_active);
  EXPECT_EQ(d.scaling_active_reason, "ValidMetricFound");
  EXPECT_TRUE(Contains(d.scaling_active_message, "pending-work"));
  EXPECT_FALSE(d.scaling_limited);
  EXPECT_EQ(d.scaling_limited_reason, "DesiredWithinRange");
  EXPECT_TRUE(Contains(d.reason, "New size: 5; reason: pending-work above target")) << d.reason;
  EXPECT_TRUE(Contains(d.reason, "pending-work=420 (target 100/replica) -> 5")) << d.reason;
}

TEST(DecideTest, ExactMultiplesAndFloatingPointNoise) {
  EXPECT_EQ(Once(Spec(1, 100), 1, Value(300)).desired, 3);
  RolloutPoolSpecAutoscaling spec = Spec(1, 100);
  spec.metrics[0].target_per_replica = 0.1;
  // 1.1 / 0.1 is 11.000000000000002 in doubles; it must not become 12.
  EXPECT_EQ(Once(spec, 1, Value(1.1)).desired, 11);
  EXPECT_EQ(Once(spec, 1, Value(0.7)).desired, 7);
}

TEST(DecideTest, ToleranceBoundaryIsInclusive) {
  const RolloutPoolSpecAutoscaling spec = Spec(1, 100);
  // Current 10 carries 1000 at target; +-10% keeps 10.
  ScaleDecision d = Once(spec, 10, Value(1100));
  EXPECT_EQ(d.desired, 10);
  EXPECT_FALSE(d.changed);
  EXPECT_TRUE(Contains(d.reason, "Size stays 10")) << d.reason;
  EXPECT_TRUE(Contains(d.reason, "(within tolerance)")) << d.reason;
  EXPECT_EQ(Once(spec, 10, Value(900)).desired, 10);
  // Just past the boundary scales.
  EXPECT_EQ(Once(spec, 10, Value(1101)).desired, 12);
  d = Once(spec, 10, Value(899));
  EXPECT_EQ(d.desired, 9);
  EXPECT_TRUE(Contains(d.reason, "New size: 9; reason: All metrics below target")) << d.reason;
  // Zero tolerance: any change counts.
  RolloutPoolSpecAutoscaling strict = spec;
  strict.tolerance = 0;
  EXPECT_EQ(Once(strict, 10, Value(1001)).desired, 11);
  EXPECT_EQ(Once(strict, 10, Value(1000)).desired, 10);
}

TEST(DecideTest, LargestMetricWins) {
  RolloutPoolSpecAutoscaling spec = Spec(1, 100);
  spec.metrics.push_back({"tokens", "sum(rate(tokens[1m]))", 10});
  const ScaleDecision d =
      Once(spec, 2, {MetricSample{"pending-work", 420, ""}, MetricSample{"tokens", 90, ""}});
  EXPECT_EQ(d.desired, 9);
  EXPECT_TRUE(Contains(d.reason, "reason: tokens above target")) << d.reason;
  EXPECT_TRUE(Contains(d.reason, "pending-work=420 (target 100/replica) -> 5")) << d.reason;
  EXPECT_TRUE(Contains(d.reason, "tokens=90 (target 10/replica) -> 9")) << d.reason;
  EXPECT_TRUE(Contains(d.scaling_active_message, "pending-work, tokens"));
}

TEST(DecideTest, ToleranceIsPerMetric) {
  RolloutPoolSpecAutoscaling spec = Spec(1, 100);
  spec.metrics.push_back({"tokens", "q", 10});
  // pending-work is within tolerance of 10 replicas, tokens wants 3: the larger (10) stays.
  const ScaleDecision d =
      Once(spec, 10, {MetricSample{"pending-work", 1050, ""}, MetricSample{"tokens", 30, ""}});
  EXPECT_EQ(d.desired, 10);
  EXPECT_FALSE(d.changed);
}

TEST(DecideTest, FailingMetricFreezesTheSize) {
  RolloutPoolSpecAutoscaling spec = Spec(1, 100);
  spec.metrics.push_back({"tokens", "q", 10});
  RecommendationHistory history;
  const ScaleDecision d = Decide(spec, 4,
                                 {MetricSample{"pending-work", 9000, ""},
                                  MetricSample{"tokens", std::nullopt, "connection refused"}},
                                 history, 1000);
  EXPECT_EQ(d.desired, 4);
  EXPECT_FALSE(d.changed);
  EXPECT_FALSE(d.scaling_active);
  EXPECT_EQ(d.scaling_active_reason, "FailedGetMetrics");
  EXPECT_TRUE(Contains(d.scaling_active_message, "tokens: connection refused"))
      << d.scaling_active_message;
  EXPECT_FALSE(Contains(d.scaling_active_message, "pending-work"));
  EXPECT_TRUE(Contains(d.reason, "Size stays 4")) << d.reason;
  EXPECT_FALSE(d.scaling_limited);
  EXPECT_TRUE(history.empty());
}

TEST(DecideTest, InvalidSamplesAndTargetsAreFailures) {
  RolloutPoolSpecAutoscaling spec = Spec(1, 100);
  spec.metrics[0].target_per_replica = 0;
  ScaleDecision d = Once(spec, 3, Value(500));
  EXPECT_EQ(d.desired, 3);
  EXPECT_FALSE(d.scaling_active);
  EXPECT_TRUE(Contains(d.scaling_active_message, "targetPerReplica must be positive"))
      << d.scaling_active_message;

  spec = Spec(1, 100);
  d = Once(spec, 3, {});  // No sample for the metric.
  EXPECT_EQ(d.scaling_active_reason, "FailedGetMetrics");
  EXPECT_TRUE(Contains(d.scaling_active_message, "pending-work: no sample"));
  d = Once(spec, 3, Value(-5));
  EXPECT_TRUE(Contains(d.scaling_active_message, "negative")) << d.scaling_active_message;
  d = Once(spec, 3, {MetricSample{"pending-work", std::nullopt, ""}});
  EXPECT_TRUE(Contains(d.scaling_active_message, "no value"));
  // Two failures are both named.
  spec.metrics.push_back({"tokens", "q", 10});
  d = Once(spec, 3, {MetricSample{"pending-work", std::nullopt, "timeout"}});
  EXPECT_TRUE(Contains(d.scaling_active_message, "pending-work: timeout; tokens: no sample"))
      << d.scaling_active_message;
}

TEST(DecideTest, FailingMetricsStillEnforceLimits) {
  RolloutPoolSpecAutoscaling spec = Spec(2, 5);
  ScaleDecision d = Once(spec, 8, {MetricSample{"pending-work", std::nullopt, "down"}});
  EXPECT_EQ(d.desired, 5);
  EXPECT_TRUE(d.changed);
  EXPECT_FALSE(d.scaling_active);
  EXPECT_TRUE(d.scaling_limited);
  EXPECT_EQ(d.scaling_limited_reason, "TooManyReplicas");
  d = Once(spec, 1, {MetricSample{"pending-work", std::nullopt, "down"}});
  EXPECT_EQ(d.desired, 2);
  EXPECT_EQ(d.scaling_limited_reason, "TooFewReplicas");
}

TEST(DecideTest, ClampsToMinAndMaxAndSaysSo) {
  const RolloutPoolSpecAutoscaling spec = Spec(3, 10);
  ScaleDecision d = Once(spec, 5, Value(5000));
  EXPECT_EQ(d.desired, 10);
  EXPECT_TRUE(d.scaling_limited);
  EXPECT_EQ(d.scaling_limited_reason, "TooManyReplicas");
  EXPECT_TRUE(Contains(d.scaling_limited_message, "maximum replica count (10)"));
  EXPECT_TRUE(d.scaling_active);

  d = Once(spec, 5, Value(100));
  EXPECT_EQ(d.desired, 3);
  EXPECT_TRUE(d.scaling_limited);
  EXPECT_EQ(d.scaling_limited_reason, "TooFewReplicas");

  // Current below the minimum: raised to it.
  d = Once(spec, 1, Value(100));
  EXPECT_EQ(d.desired, 3);
  EXPECT_TRUE(Contains(d.reason, "below minReplicas")) << d.reason;

  d = Once(spec, 5, Value(700));
  EXPECT_EQ(d.desired, 7);
  EXPECT_FALSE(d.scaling_limited);
  EXPECT_EQ(d.scaling_limited_reason, "DesiredWithinRange");
}

TEST(DecideTest, ScalesToZeroOnlyWhenEveryMetricIsZeroAndAllowed) {
  RolloutPoolSpecAutoscaling spec = Spec(0, 10);
  spec.metrics.push_back({"tokens", "q", 10});
  ScaleDecision d =
      Once(spec, 3, {MetricSample{"pending-work", 0, ""}, MetricSample{"tokens", 0, ""}});
  EXPECT_EQ(d.desired, 0);
  EXPECT_TRUE(Contains(d.reason, "New size: 0; reason: All metrics are zero")) << d.reason;
  EXPECT_FALSE(d.scaling_limited);

  // One metric with a little load keeps one replica.
  d = Once(spec, 3, {MetricSample{"pending-work", 0, ""}, MetricSample{"tokens", 0.5, ""}});
  EXPECT_EQ(d.desired, 1);

  // Not allowed: the floor is max(minReplicas, 1).
  RolloutPoolSpecAutoscaling no_zero = Spec(1, 10);
  d = Once(no_zero, 3, Value(0));
  EXPECT_EQ(d.desired, 1);
  EXPECT_EQ(d.scaling_limited_reason, "TooFewReplicas");
  no_zero.min_replicas = 0;  // minReplicas 0 without scaleToZero (the CRD rejects it).
  no_zero.scale_to_zero = false;
  EXPECT_EQ(Once(no_zero, 3, Value(0)).desired, 1);
  RolloutPoolSpecAutoscaling zero_flag_only = Spec(2, 10);
  zero_flag_only.scale_to_zero = true;  // scaleToZero with minReplicas 2 (also rejected).
  EXPECT_EQ(Once(zero_flag_only, 3, Value(0)).desired, 2);

  // Staying at zero.
  d = Once(Spec(0, 10), 0, Value(0));
  EXPECT_EQ(d.desired, 0);
  EXPECT_FALSE(d.changed);
}

TEST(DecideTest, AnyLoadScalesFromZeroToAtLeastOne) {
  ScaleDecision d = Once(Spec(0, 10), 0, Value(1));
  EXPECT_EQ(d.desired, 1);
  EXPECT_TRUE(d.changed);
  EXPECT_TRUE(Contains(d.reason, "New size: 1; reason: pending-work above target")) << d.reason;
  EXPECT_EQ(Once(Spec(0, 10), 0, Value(1e-12)).desired, 1);
  EXPECT_EQ(Once(Spec(0, 10), 0, Value(250)).desired, 3);
  // A pool at zero whose metrics fail stays at zero.
  EXPECT_EQ(Once(Spec(0, 10), 0, {MetricSample{"pending-work", std::nullopt, "x"}}).desired, 0);
}

TEST(DecideTest, ScaleUpWindowAppliesTheLowestRecentRecommendation) {
  RolloutPoolSpecAutoscaling spec = Spec(1, 100);
  spec.scale_up_stabilization_seconds = 60;
  RecommendationHistory h;
  int64_t current = 2;
  auto step = [&](int64_t t, double value) {
    const ScaleDecision d = Decide(spec, current, Value(value), h, t);
    current = d.desired;
    return d;
  };
  EXPECT_EQ(step(0, 200).desired, 2);
  ScaleDecision d = step(15, 800);  // Window holds 2 and 8: the lowest is 2.
  EXPECT_EQ(d.desired, 2);
  EXPECT_TRUE(d.scaling_limited);
  EXPECT_EQ(d.scaling_limited_reason, "ScaleUpStabilized");
  EXPECT_TRUE(Contains(d.reason, "Size stays 2")) << d.reason;
  EXPECT_EQ(step(30, 600).desired, 2);  // {2, 8, 6}.
  d = step(60, 800);                    // The 2 from t=0 is exactly 60 s old: gone. {8, 6, 8}.
  EXPECT_EQ(d.desired, 6);
  EXPECT_TRUE(d.changed);
  EXPECT_TRUE(Contains(d.reason, "New size: 6; reason: pending-work above target")) << d.reason;
  EXPECT_EQ(step(75, 800).desired, 6);  // {6, 8, 8}.
  d = step(90, 800);                    // {8, 8, 8}.
  EXPECT_EQ(d.desired, 8);
  EXPECT_FALSE(d.scaling_limited);
}

TEST(DecideTest, ScaleUpWithoutWindowIsImmediate) {
  RolloutPoolSpecAutoscaling spec = Spec(1, 100);
  spec.scale_down_stabilization_seconds = 300;
  RecommendationHistory h;
  EXPECT_EQ(Decide(spec, 2, Value(200), h, 0).desired, 2);
  EXPECT_EQ(Decide(spec, 2, Value(900), h, 1).desired, 9);
}

TEST(DecideTest, ScaleDownWindowAppliesTheHighestRecentRecommendation) {
  RolloutPoolSpecAutoscaling spec = Spec(1, 100);
  spec.scale_down_stabilization_seconds = 300;
  RecommendationHistory h;
  int64_t current = 10;
  auto step = [&](int64_t t, double value) {
    const ScaleDecision d = Decide(spec, current, Value(value), h, t);
    current = d.desired;
    return d;
  };
  EXPECT_EQ(step(0, 1000).desired, 10);
  ScaleDecision d = step(100, 400);  // {10, 4}: hold 10.
  EXPECT_EQ(d.desired, 10);
  EXPECT_FALSE(d.changed);
  EXPECT_EQ(d.scaling_limited_reason, "ScaleDownStabilized");
  EXPECT_TRUE(Contains(d.scaling_limited_message, "highest recent recommendation"));
  EXPECT_TRUE(Contains(d.reason, "pending-work=400 (target 100/replica) -> 4")) << d.reason;
  EXPECT_EQ(step(200, 600).desired, 10);  // {10, 4, 6}.
  d = step(300, 300);                     // The 10 is 300 s old: gone. {4, 6, 3} -> 6.
  EXPECT_EQ(d.desired, 6);
  EXPECT_TRUE(d.changed);
  EXPECT_EQ(d.scaling_limited_reason, "ScaleDownStabilized");
  EXPECT_TRUE(Contains(d.reason, "New size: 6; reason: All metrics below target")) << d.reason;
  EXPECT_EQ(step(400, 300).desired, 6);  // {6, 3, 3}.
  d = step(500, 300);                    // {3, 3, 3}.
  EXPECT_EQ(d.desired, 3);
  EXPECT_FALSE(d.scaling_limited);
  // Scaling up is not held back by the scale-down window.
  EXPECT_EQ(step(510, 2000).desired, 20);
}

TEST(DecideTest, LimitsHoldAfterStabilisation) {
  RolloutPoolSpecAutoscaling spec = Spec(1, 20);
  spec.scale_down_stabilization_seconds = 300;
  RecommendationHistory h;
  EXPECT_EQ(Decide(spec, 20, Value(2000), h, 0).desired, 20);
  spec.max_replicas = 8;  // Lowered within the window: the 20 in history may not win.
  const ScaleDecision d = Decide(spec, 20, Value(2000), h, 15);
  EXPECT_EQ(d.desired, 8);
  EXPECT_EQ(d.scaling_limited_reason, "TooManyReplicas");
  EXPECT_TRUE(Contains(d.reason, "above maxReplicas")) << d.reason;
}

TEST(DecideTest, HistoryKeepsOnlyTheLongerWindow) {
  RolloutPoolSpecAutoscaling spec = Spec(1, 100);
  spec.scale_up_stabilization_seconds = 60;
  spec.scale_down_stabilization_seconds = 120;
  RecommendationHistory h;
  for (int64_t t = 0; t <= 200; t += 50) (void)Decide(spec, 3, Value(300), h, t);
  ASSERT_EQ(h.size(), 3u);  // 100, 150, 200: those younger than 120 s, and the new one.
  EXPECT_EQ(h.front().time_seconds, 100);
  EXPECT_EQ(h.back().time_seconds, 200);
  EXPECT_EQ(h.back().replicas, 3);

  // A failing sync prunes but records nothing.
  (void)Decide(spec, 3, {MetricSample{"pending-work", std::nullopt, "x"}}, h, 300);
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h.front().time_seconds, 200);

  // Without windows only the latest recommendation is kept.
  RolloutPoolSpecAutoscaling none = Spec(1, 100);
  RecommendationHistory h2;
  for (int64_t t = 0; t < 5; ++t) (void)Decide(none, 3, Value(300), h2, t);
  ASSERT_EQ(h2.size(), 1u);
  EXPECT_EQ(h2.front().time_seconds, 4);
}

TEST(DecideTest, RecordsTheClampedRecommendation) {
  RolloutPoolSpecAutoscaling spec = Spec(2, 5);
  spec.scale_down_stabilization_seconds = 300;
  RecommendationHistory h;
  (void)Decide(spec, 3, Value(9000), h, 0);
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h.back().replicas, 5);
  (void)Decide(spec, 5, Value(0), h, 15);
  EXPECT_EQ(h.back().replicas, 2);
}

}  // namespace recommendation_test
}  // namespace sluice::autoscale
