// The RolloutPool controller's own metrics: each pool's replica counts (overall and per region)
// and its autoscaler's decisions, labelled by namespace and pool, for operator dashboards
// (docs/operator.md, "Metrics").
//
//   sluice_rolloutpool_replicas{namespace,pool}            spec.replicas (after this round's
//                                                          autoscaling): the replicas wanted
//   sluice_rolloutpool_current_replicas{namespace,pool}    status.replicas (not draining)
//   sluice_rolloutpool_ready_replicas{namespace,pool}      status.readyReplicas
//   sluice_rolloutpool_updated_replicas{namespace,pool}    status.updatedReplicas
//   sluice_rolloutpool_unplaced_replicas{namespace,pool}   replicas no region can take
//   sluice_rolloutpool_region_replicas{namespace,pool,region,state}
//       per status.regions entry (spec regions, or "default" without placement); state
//       "desired" (the placement target), "current", "ready", "pending" (phase Pending)
//   sluice_autoscaler_desired_replicas{namespace,pool}     the last decision's replica count
//   sluice_autoscaler_metric_value{namespace,pool,metric}  each spec.autoscaling metric's value
//       at the last sync (metric = its name); absent while its last query failed
//   sluice_autoscaler_scale_events_total{namespace,pool,direction}  scale writes, "up"/"down"
//   sluice_autoscaler_query_errors_total{namespace,pool}   metrics without a value at a sync
//       (failed query, unusable result, or no Prometheus configured), one per metric per sync
//
// No stale series: every series is a callback metric (common/metrics/callback_family.h) that
// this object installs and removes. A pool's series go with RemovePool (the pool is being
// deleted or is gone), the autoscaler's with ForgetAutoscaler (spec.autoscaling was removed),
// a region's or a metric's when it leaves the spec, and all of them when this object is
// destroyed. Values are replica counts, or the metric's own units for metric_value.
//
// The counts come from ReplicaCountsOf, a pure function of what the controller computed; this
// object only stores them.
//
// Ownership: the Registry must outlive this object. Thread safety: every method may be called
// from any thread; scrapes run concurrently with updates.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/metrics/registry.h"
#include "operator/autoscale/recommendation.h"
#include "operator/placement/region_targets.h"

namespace sluice::controllers {

// One status.regions entry with its placement target.
struct RegionReplicaCounts {
  std::string region;
  int64_t desired = 0;  // The placement target (RegionTarget.replicas).
  int64_t current = 0;  // Non-draining replicas there.
  int64_t ready = 0;
  int64_t pending = 0;  // Pod phase Pending.

  friend bool operator==(const RegionReplicaCounts&, const RegionReplicaCounts&) = default;
};

struct PoolReplicaCounts {
  int64_t desired = 0;  // spec.replicas.
  int64_t current = 0;  // status.replicas.
  int64_t ready = 0;    // status.readyReplicas.
  int64_t updated = 0;  // status.updatedReplicas.
  int64_t unplaced = 0;
  std::vector<RegionReplicaCounts> regions;  // status.regions order.

  friend bool operator==(const PoolReplicaCounts&, const PoolReplicaCounts&) = default;
};

// The counts of `pool` (its spec as the controller acted on it) from the `status` PoolStatus
// computed (rolloutpool/status.h) and the placement plan (`targets`, `unplaced`). A status
// region's desired count is the target of the same name; the region "default" (no placement)
// takes the target named "". Missing fields count 0. Pure.
PoolReplicaCounts ReplicaCountsOf(const nlohmann::json& pool, const nlohmann::json& status,
                                  const std::vector<placement::RegionTarget>& targets,
                                  int64_t unplaced);

// The label of metric `index` of spec.autoscaling.metrics: its name, or the index when unnamed.
std::string AutoscalerMetricLabel(const autoscale::MetricSample& sample, size_t index);

enum class ScaleDirection { kUp, kDown };

class RolloutPoolMetrics {
 public:
  explicit RolloutPoolMetrics(metrics::Registry& registry);
  ~RolloutPoolMetrics();  // Removes every series it installed.
  RolloutPoolMetrics(const RolloutPoolMetrics&) = delete;
  RolloutPoolMetrics& operator=(const RolloutPoolMetrics&) = delete;

  // Sets the pool's replica series to `counts`; regions no longer in `counts` lose theirs.
  void SetReplicas(const std::string& ns, const std::string& pool, const PoolReplicaCounts& counts);

  // One autoscaler sync: the decision's replica count and one sample per spec metric. A sample
  // with a value sets its metric_value series; one without (error set) removes it and counts a
  // query error. Metrics no longer in `samples` lose their series. The counters are created at
  // 0 on the first sync, so rate() sees their first increase.
  void RecordAutoscalerSync(const std::string& ns, const std::string& pool,
                            int64_t desired_replicas,
                            const std::vector<autoscale::MetricSample>& samples);
  // spec.replicas was written (scale subresource) in `direction`.
  void RecordScaleEvent(const std::string& ns, const std::string& pool, ScaleDirection direction);
  // The pool no longer autoscales: every sluice_autoscaler_* series of it is removed.
  void ForgetAutoscaler(const std::string& ns, const std::string& pool);

  // Removes every series of the pool (it is being deleted or is gone). No-op when it has none.
  void RemovePool(const std::string& ns, const std::string& pool);

 private:
  // The series one pool owns for one purpose; removes them from their families when destroyed.
  class SeriesSet;
  struct PoolSeries;

  PoolSeries& Pool(const std::string& ns, const std::string& pool);  // Requires mu_.

  metrics::CallbackFamily& replicas_;
  metrics::CallbackFamily& current_replicas_;
  metrics::CallbackFamily& ready_replicas_;
  metrics::CallbackFamily& updated_replicas_;
  metrics::CallbackFamily& unplaced_replicas_;
  metrics::CallbackFamily& region_replicas_;
  metrics::CallbackFamily& autoscaler_desired_;
  metrics::CallbackFamily& autoscaler_metric_value_;
  metrics::CallbackFamily& autoscaler_scale_events_;
  metrics::CallbackFamily& autoscaler_query_errors_;

  // Updates are serialised by mu_; scrapes never take it (each series' function reads an atomic
  // it shares), so installing functions under mu_ cannot deadlock with a scrape.
  std::mutex mu_;
  std::map<std::pair<std::string, std::string>, std::unique_ptr<PoolSeries>> pools_;
};

}  // namespace sluice::controllers
