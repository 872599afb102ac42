// The RolloutPool metrics: counts derived from a computed status, series set, replaced and
// removed (regions and metrics leaving the spec, autoscaling switched off, pool deleted, object
// destroyed), the controller removing a deleted pool's series, and promtool on the exposition.
#include "operator/controllers/rolloutpool/metrics.h"

#include <gtest/gtest.h>

#include <optional>

#include "common/metrics/exposition.h"
#include "kube/dynamic_client.h"
#include "kube/event_recorder.h"
#include "kube/informer.h"
#include "kube/rest_client.h"
#include "operator/controllers/rolloutpool/reconciler.h"
#include "tests/unit/common/promtool_check.h"
#include "tests/unit/common/scraped_metric.h"

namespace sluice::controllers {
namespace {

using nlohmann::json;

using sluice::test_support::Scraped;

// How many series of the registry carry label values `ns` and `pool` in first position.
int SeriesOfPool(const metrics::Registry& registry, const std::string& ns,
                 const std::string& pool) {
  int n = 0;
  for (const metrics::FamilySnapshot& f : registry.Collect()) {
    if (f.label_names.size() < 2 || f.label_names[0] != "namespace") continue;
    for (const metrics::ChildSnapshot& c : f.children) {
      if (c.label_values[0] == ns && c.label_values[1] == pool) ++n;
    }
  }
  return n;
}

PoolReplicaCounts TwoRegions() {
  PoolReplicaCounts c;
  c.desired = 5;
  c.current = 4;
  c.ready = 3;
  c.updated = 2;
  c.unplaced = 1;
  c.regions = {{"us-east", 3, 3, 2, 1}, {"eu-west", 1, 1, 1, 0}};
  return c;
}

autoscale::MetricSample Sample(const std::string& name, std::optional<double> value,
                               const std::string& error = "") {
  return {name, value, error};
}

TEST(ReplicaCountsOfTest, ReadsStatusAndMatchesRegionsToTargets) {
  const json pool = {{"spec", {{"replicas", 5}}}};
  const json status = {{"replicas", 4},
                       {"readyReplicas", 3},
                       {"updatedReplicas", 2},
                       {"regions",
                        {{{"name", "us-east"}, {"replicas", 3}, {"ready", 2}, {"pending", 1}},
                         {{"name", "eu-west"}, {"replicas", 1}, {"ready", 1}, {"pending", 0}},
                         {{"name", "ap-south"}, {"replicas", 0}, {"ready", 0}, {"pending", 0}}}}};
  const PoolReplicaCounts c =
      ReplicaCountsOf(pool, status, {{"eu-west", 1}, {"us-east", 3}, {"ap-south", 0}}, 1);
  PoolReplicaCounts want = TwoRegions();
  want.regions.push_back({"ap-south", 0, 0, 0, 0});
  EXPECT_EQ(c, want);
}

TEST(ReplicaCountsOfTest, WithoutPlacementTheDefaultRegionTakesTheUnnamedTarget) {
  const json pool = {{"spec", {{"replicas", 2}}}};
  const json status = {
      {"replicas", 2},
      {"readyReplicas", 1},
      {"updatedReplicas", 2},
      {"regions", {{{"name", "default"}, {"replicas", 2}, {"ready", 1}, {"pending", 1}}}}};
  const PoolReplicaCounts c = ReplicaCountsOf(pool, status, {{"", 2}}, 0);
  ASSERT_EQ(c.regions.size(), 1u);
  EXPECT_EQ(c.regions[0], (RegionReplicaCounts{"default", 2, 2, 1, 1}));
  EXPECT_EQ(c.desired, 2);
  EXPECT_EQ(c.ready, 1);
}

TEST(ReplicaCountsOfTest, MissingFieldsCountZero) {
  const PoolReplicaCounts c = ReplicaCountsOf({{"spec", {{"replicas", 3}}}}, json::object(), {}, 0);
  EXPECT_EQ(c, (PoolReplicaCounts{3, 0, 0, 0, 0, {}}));
  // A region without a target (it left the spec this round) wants 0.
  const PoolReplicaCounts d = ReplicaCountsOf(
      json::object(), {{"regions", {{{"name", "gone"}, {"replicas", 1}}}}}, {{"other", 4}}, 0);
  ASSERT_EQ(d.regions.size(), 1u);
  EXPECT_EQ(d.regions[0], (RegionReplicaCounts{"gone", 0, 1, 0, 0}));
}

TEST(RolloutPoolMetricsTest, ReplicaSeriesFollowTheCountsAndRegionsThatLeaveAreRemoved) {
  metrics::Registry registry;
  RolloutPoolMetrics m(registry);
  m.SetReplicas("ns", "p", TwoRegions());
  EXPECT_EQ(Scraped(registry, "sluice_rolloutpool_replicas", {"ns", "p"}), 5.0);
  EXPECT_EQ(Scraped(registry, "sluice_rolloutpool_current_replicas", {"ns", "p"}), 4.0);
  EXPECT_EQ(Scraped(registry, "sluice_rolloutpool_ready_replicas", {"ns", "p"}), 3.0);
  EXPECT_EQ(Scraped(registry, "sluice_rolloutpool_updated_replicas", {"ns", "p"}), 2.0);
  EXPECT_EQ(Scraped(registry, "sluice_rolloutpool_unplaced_replicas", {"ns", "p"}), 1.0);
  const std::string region = "sluice_rolloutpool_region_replicas";
  EXPECT_EQ(Scraped(registry, region, {"ns", "p", "us-east", "desired"}), 3.0);
  EXPECT_EQ(Scraped(registry, region, {"ns", "p", "us-east", "current"}), 3.0);
  EXPECT_EQ(Scraped(registry, region, {"ns", "p", "us-east", "ready"}), 2.0);
  EXPECT_EQ(Scraped(registry, region, {"ns", "p", "us-east", "pending"}), 1.0);
  EXPECT_EQ(Scraped(registry, region, {"ns", "p", "eu-west", "desired"}), 1.0);
  EXPECT_EQ(SeriesOfPool(registry, "ns", "p"), 5 + 2 * 4);

  PoolReplicaCounts next = TwoRegions();
  next.ready = 4;
  next.regions = {{"us-east", 4, 4, 4, 0}};  // eu-west left spec.placement.
  m.SetReplicas("ns", "p", next);
  EXPECT_EQ(Scraped(registry, "sluice_rolloutpool_ready_replicas", {"ns", "p"}), 4.0);
  EXPECT_EQ(Scraped(registry, region, {"ns", "p", "us-east", "pending"}), 0.0);
  EXPECT_EQ(Scraped(registry, region, {"ns", "p", "eu-west", "desired"}), std::nullopt);
  EXPECT_EQ(SeriesOfPool(registry, "ns", "p"), 5 + 4);
}

TEST(RolloutPoolMetricsTest, AutoscalerSyncsSetValuesCountErrorsAndScaleEvents) {
  metrics::Registry registry;
  RolloutPoolMetrics m(registry);
  const std::string value = "sluice_autoscaler_metric_value";
  const std::string events = "sluice_autoscaler_scale_events_total";
  const std::string errors = "sluice_autoscaler_query_errors_total";

  m.RecordAutoscalerSync("ns", "p", 3, {Sample("pending", 420.0), Sample("tps", 1.5e3)});
  EXPECT_EQ(Scraped(registry, "sluice_autoscaler_desired_replicas", {"ns", "p"}), 3.0);
  EXPECT_EQ(Scraped(registry, value, {"ns", "p", "pending"}), 420.0);
  EXPECT_EQ(Scraped(registry, value, {"ns", "p", "tps"}), 1500.0);
  // Counters exist from the first sync, at 0.
  EXPECT_EQ(Scraped(registry, events, {"ns", "p", "up"}), 0.0);
  EXPECT_EQ(Scraped(registry, events, {"ns", "p", "down"}), 0.0);
  EXPECT_EQ(Scraped(registry, errors, {"ns", "p"}), 0.0);

  m.RecordScaleEvent("ns", "p", ScaleDirection::kUp);
  m.RecordScaleEvent("ns", "p", ScaleDirection::kUp);
  m.RecordScaleEvent("ns", "p", ScaleDirection::kDown);
  EXPECT_EQ(Scraped(registry, events, {"ns", "p", "up"}), 2.0);
  EXPECT_EQ(Scraped(registry, events, {"ns", "p", "down"}), 1.0);

  // tps fails: its value is no longer exported (not a stale number), and the error is counted.
  m.RecordAutoscalerSync("ns", "p", 3,
                         {Sample("pending", 100.0), Sample("tps", std::nullopt, "tps: timeout")});
  EXPECT_EQ(Scraped(registry, value, {"ns", "p", "pending"}), 100.0);
  EXPECT_EQ(Scraped(registry, value, {"ns", "p", "tps"}), std::nullopt);
  EXPECT_EQ(Scraped(registry, errors, {"ns", "p"}), 1.0);
  // No Prometheus at all: every metric errs.
  m.RecordAutoscalerSync("ns", "p", 3,
                         {Sample("pending", std::nullopt, "no Prometheus"),
                          Sample("tps", std::nullopt, "no Prometheus")});
  EXPECT_EQ(Scraped(registry, errors, {"ns", "p"}), 3.0);
  EXPECT_EQ(Scraped(registry, value, {"ns", "p", "pending"}), std::nullopt);

  // A metric removed from the spec loses its series; an unnamed one is labelled by its index.
  m.RecordAutoscalerSync("ns", "p", 2, {Sample("", 7.0)});
  EXPECT_EQ(Scraped(registry, "sluice_autoscaler_desired_replicas", {"ns", "p"}), 2.0);
  EXPECT_EQ(Scraped(registry, value, {"ns", "p", "0"}), 7.0);
  EXPECT_EQ(Scraped(registry, value, {"ns", "p", "tps"}), std::nullopt);
  EXPECT_EQ(Scraped(registry, events, {"ns", "p", "up"}), 2.0);  // Counters keep counting.
}

TEST(RolloutPoolMetricsTest, ForgetAutoscalerRemovesOnlyTheAutoscalerSeries) {
  metrics::Registry registry;
  RolloutPoolMetrics m(registry);
  m.SetReplicas("ns", "p", TwoRegions());
  m.RecordAutoscalerSync("ns", "p", 5, {Sample("pending", 1.0)});
  m.RecordScaleEvent("ns", "p", ScaleDirection::kDown);
  m.ForgetAutoscaler("ns", "p");
  for (const metrics::FamilySnapshot& f : registry.Collect()) {
    if (f.name.rfind("sluice_autoscaler_", 0) == 0) {
      EXPECT_TRUE(f.children.empty()) << f.name;
    }
  }
  EXPECT_EQ(Scraped(registry, "sluice_rolloutpool_replicas", {"ns", "p"}), 5.0);
  m.ForgetAutoscaler("ns", "never-seen");  // No-op.
  // Switched on again: counters start over from 0.
  m.RecordAutoscalerSync("ns", "p", 5, {Sample("pending", 1.0)});
  EXPECT_EQ(Scraped(registry, "sluice_autoscaler_scale_events_total", {"ns", "p", "down"}), 0.0);
}

TEST(RolloutPoolMetricsTest, RemovePoolRemovesEverySeriesOfThatPoolOnly) {
  metrics::Registry registry;
  RolloutPoolMetrics m(registry);
  for (const std::string pool : {"a", "b"}) {
    m.SetReplicas("ns", pool, TwoRegions());
    m.RecordAutoscalerSync("ns", pool, 5, {Sample("pending", 1.0), Sample("x", std::nullopt, "e")});
    m.RecordScaleEvent("ns", pool, ScaleDirection::kUp);
  }
  m.SetReplicas("other", "a", TwoRegions());
  const int per_pool = SeriesOfPool(registry, "ns", "a");
  EXPECT_EQ(per_pool, 13 + 2 + 3);  // Replicas, desired + one value, three counters.
  m.RemovePool("ns", "a");
  EXPECT_EQ(SeriesOfPool(registry, "ns", "a"), 0);
  EXPECT_EQ(SeriesOfPool(registry, "ns", "b"), per_pool);
  EXPECT_EQ(SeriesOfPool(registry, "other", "a"), 13);
  const std::string text = metrics::ExposeText(registry);
  EXPECT_EQ(text.find("namespace=\"ns\",pool=\"a\""), std::string::npos) << text;
  EXPECT_NE(text.find("namespace=\"other\",pool=\"a\""), std::string::npos) << text;
  m.RemovePool("ns", "a");  // Again: no-op.
  // Recreated under the same name: starts from scratch.
  m.RecordAutoscalerSync("ns", "a", 1, {});
  EXPECT_EQ(Scraped(registry, "sluice_autoscaler_scale_events_total", {"ns", "a", "up"}), 0.0);
}

TEST(RolloutPoolMetricsTest, DestroyingTheMetricsRemovesTheirSeries) {
  metrics::Registry registry;
  {
    RolloutPoolMetrics m(registry);
    m.SetReplicas("ns", "p", TwoRegions());
    m.RecordAutoscalerSync("ns", "p", 5, {Sample("pending", 1.0)});
    EXPECT_GT(SeriesOfPool(registry, "ns", "p"), 0);
  }
  EXPECT_EQ(SeriesOfPool(registry, "ns", "p"), 0);
  (void)metrics::ExposeText(registry);  // No function of the destroyed object is left to run.
}

TEST(RolloutPoolMetricsTest, ExpositionPassesPromtool) {
  metrics::Registry registry;
  RolloutPoolMetrics m(registry);
  m.SetReplicas("ns", "p", TwoRegions());
  PoolReplicaCounts single;
  single.desired = 1;
  single.regions = {{"default", 1, 0, 0, 0}};
  m.SetReplicas("team \"b\"", "pool\\with\nodd-name", single);
  m.RecordAutoscalerSync("ns", "p", 5,
                         {Sample("pending-work", 420.0), Sample("wait", 0.25),
                          Sample("broken", std::nullopt, "bad query")});
  m.RecordScaleEvent("ns", "p", ScaleDirection::kUp);
  const std::string text = metrics::ExposeText(registry);
  for (const char* line :
       {"# TYPE sluice_rolloutpool_region_replicas gauge",
        "sluice_rolloutpool_region_replicas{namespace=\"ns\",pool=\"p\",region=\"us-east\","
        "state=\"desired\"} 3",
        "# TYPE sluice_autoscaler_scale_events_total counter",
        "sluice_autoscaler_scale_events_total{namespace=\"ns\",pool=\"p\",direction=\"up\"} 1",
        "sluice_autoscaler_query_errors_total{namespace=\"ns\",pool=\"p\"} 1",
        "sluice_autoscaler_metric_value{namespace=\"ns\",pool=\"p\",metric=\"pending-work\"} 420",
        "sluice_autoscaler_desired_replicas{namespace=\"ns\",pool=\"p\"} 5"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n--- in ---\n" << text;
  }
  const sluice::test_support::PromtoolCheck check =
      sluice::test_support::RunPromtoolCheckMetrics(text);
  ASSERT_TRUE(check.available)
      << "promtool is not on PATH (make deps installs Debian's prometheus)";
  EXPECT_TRUE(check.passed) << check.output << "\n--- input ---\n" << text;
}

// The controller, without a server: a reconcile of a pool that is gone from the cache removes
// its series (the informers are never started, so their stores are empty).
TEST(RolloutPoolControllerMetricsTest, AReconcileOfAGonePoolRemovesItsSeries) {
  kube::RestConfig cfg;
  cfg.host = "http://127.0.0.1:9";  // Never contacted.
  std::unique_ptr<kube::RestClient> rest = std::move(kube::RestClient::Create(cfg).value());
  kube::DynamicClient client(*rest);
  auto informer = [&](const kube::GroupVersionResource& gvr) {
    return std::make_unique<kube::Informer>(client.Resource(gvr, "ns"));
  };
  auto pools = informer({"sluice.dev", "v1alpha1", "rolloutpools", true});
  auto pods = informer({"", "v1", "pods", true});
  auto dataflows = informer({"sluice.dev", "v1alpha1", "dataflows", true});
  auto secrets = informer({"", "v1", "secrets", true});
  kube::EventRecorder events(client);

  RolloutPoolController without(client, {pools.get(), pods.get(), dataflows.get(), secrets.get()},
                                events, {});
  EXPECT_EQ(without.metrics(), nullptr);

  metrics::Registry registry;
  RolloutPoolControllerOptions options;
  options.registry = &registry;
  RolloutPoolController controller(
      client, {pools.get(), pods.get(), dataflows.get(), secrets.get()}, events, options);
  ASSERT_NE(controller.metrics(), nullptr);
  for (const std::string pool : {"gone", "kept"}) {
    controller.metrics()->SetReplicas("ns", pool, TwoRegions());
    controller.metrics()->RecordAutoscalerSync("ns", pool, 5, {Sample("pending", 1.0)});
  }
  Result<ReconcileResult> r = controller.Reconcile("ns/gone");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(SeriesOfPool(registry, "ns", "gone"), 0);
  EXPECT_GT(SeriesOfPool(registry, "ns", "kept"), 0);
}

}  // namespace
}  // namespace sluice::controllers
