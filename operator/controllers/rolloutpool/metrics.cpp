#include "operator/controllers/rolloutpool/metrics.h"

#include "common/json/fields.h"
#include "operator/controllers/rolloutpool/status.h"

namespace sluice::controllers {

using nlohmann::json;

namespace {

const std::vector<std::string> kPoolLabels = {"namespace", "pool"};

}  // namespace

PoolReplicaCounts ReplicaCountsOf(const json& pool, const json& status,
                                  const std::vector<placement::RegionTarget>& targets,
                                  int64_t unplaced) {
  PoolReplicaCounts counts;
  counts.desired = pool.value("/spec/replicas"_json_pointer, int64_t{0});
  if (!status.is_object()) return counts;
  counts.current = IntField(status, "replicas");
  counts.ready = IntField(status, "readyReplicas");
  counts.updated = IntField(status, "updatedReplicas");
  counts.unplaced = unplaced;
  for (const json& r : status.value("regions", json::array())) {
    if (!r.is_object() || !r.contains("name") || !r["name"].is_string()) continue;
    RegionReplicaCounts& rc = counts.regions.emplace_back();
    rc.region = r["name"].get<std::string>();
    rc.current = IntField(r, "replicas");
    rc.ready = IntField(r, "ready");
    rc.pending = IntField(r, "pending");
    for (const placement::RegionTarget& t : targets) {
      const bool same =
          t.region == rc.region || (t.region.empty() && rc.region == kDefaultRegionName);
      if (same) rc.desired = t.replicas;
    }
  }
  return counts;
}

std::string AutoscalerMetricLabel(const autoscale::MetricSample& sample, size_t index) {
  return sample.name.empty() ? std::to_string(index) : sample.name;
}

// A series: a family and its label values. Its value lives in an atomic shared with the function
// installed in the family, so a scrape reads it without any lock of ours.
class RolloutPoolMetrics::SeriesSet {
 public:
  using Key = std::pair<metrics::CallbackFamily*, std::vector<std::string>>;

  SeriesSet() = default;
  ~SeriesSet() { Clear(); }
  SeriesSet(const SeriesSet&) = delete;
  SeriesSet& operator=(const SeriesSet&) = delete;

  // Makes this set exactly `values`: new series are installed, missing ones removed.
  void Replace(const std::map<Key, double>& values) {
    for (auto it = cells_.begin(); it != cells_.end();) {
      if (values.count(it->first)) {
        ++it;
      } else {
        it->first.first->Remove(it->first.second);
        it = cells_.erase(it);
      }
    }
    for (const auto& [key, value] : values) Cell(key).store(value);
  }
  void Set(const Key& key, double value) { Cell(key).store(value); }
  // Creates the series at 0 when new, then adds `delta` (counters).
  void Add(const Key& key, double delta) {
    std::atomic<double>& cell = Cell(key);
    cell.store(cell.load() + delta);  // Writers are serialised by the owner's mutex.
  }
  void Remove(const Key& key) {
    auto it = cells_.find(key);
    if (it == cells_.end()) return;
    key.first->Remove(key.second);
    cells_.erase(it);
  }
  void Clear() {
    for (const auto& [key, cell] : cells_) key.first->Remove(key.second);
    cells_.clear();
  }

 private:
  std::atomic<double>& Cell(const Key& key) {
    std::shared_ptr<std::atomic<double>>& cell = cells_[key];
    if (!cell) {
      cell = std::make_shared<std::atomic<double>>(0.0);
      key.first->Set(key.second, [cell] { return cell->load(); });
    }
    return *cell;
  }

  std::map<Key, std::shared_ptr<std::atomic<double>>> cells_;
};

struct RolloutPoolMetrics::PoolSeries {
  SeriesSet replicas;             // sluice_rolloutpool_*.
  SeriesSet autoscaler_gauges;    // desired_replicas, metric_value.
  SeriesSet autoscaler_counters;  // scale_events_total, query_errors_total.
};

RolloutPoolMetrics::RolloutPoolMetrics(metrics::Registry& registry)
    : replicas_(registry.AddCallbackGauge(
          "sluice_rolloutpool_replicas",
          "Replicas a RolloutPool wants (spec.replicas, after autoscaling).", kPoolLabels)),
      current_replicas_(registry.AddCallbackGauge(
          "sluice_rolloutpool_current_replicas",
          "Replica pods of a RolloutPool that are not draining (status.replicas).", kPoolLabels)),
      ready_replicas_(registry.AddCallbackGauge(
          "sluice_rolloutpool_ready_replicas",
          "Ready replicas of a RolloutPool, draining ones excluded (status.readyReplicas).",
          kPoolLabels)),
      updated_replicas_(registry.AddCallbackGauge(
          "sluice_rolloutpool_updated_replicas",
          "Replicas of a RolloutPool built from its current template (status.updatedReplicas).",
          kPoolLabels)),
      unplaced_replicas_(registry.AddCallbackGauge(
          "sluice_rolloutpool_unplaced_replicas",
          "Replicas of a RolloutPool that no placement region can take (all at maxReplicas).",
          kPoolLabels)),
      region_replicas_(registry.AddCallbackGauge(
          "sluice_rolloutpool_region_replicas",
          "Replicas of a RolloutPool per region: state desired (placement target), current, "
          "ready or pending.",
          {"namespace", "pool", "region", "state"})),
      autoscaler_desired_(registry.AddCallbackGauge(
          "sluice_autoscaler_desired_replicas",
          "Replica count of the autoscaler's last decision for a RolloutPool.", kPoolLabels)),
      autoscaler_metric_value_(registry.AddCallbackGauge(
          "sluice_autoscaler_metric_value",
          "Value of each autoscaling metric of a RolloutPool at the last sync, in the metric's "
          "units; absent while its query fails.",
          {"namespace", "pool", "metric"})),
      autoscaler_scale_events_(registry.AddCallbackCounter(
          "sluice_autoscaler_scale_events_total",
          "Times the autoscaler wrote a new replica count for a RolloutPool, by direction.",
          {"namespace", "pool", "direction"})),
      autoscaler_query_errors_(registry.AddCallbackCounter(
          "sluice_autoscaler_query_errors_total",
          "Autoscaling metrics of a RolloutPool that had no usable value at a sync.",
          kPoolLabels)) {}

RolloutPoolMetrics::~RolloutPoolMetrics() {
  std::lock_guard<std::mutex> lock(mu_);
  pools_.clear();  // Each SeriesSet removes its series.
}

RolloutPoolMetrics::PoolSeries& RolloutPoolMetrics::Pool(const std::string& ns,
                                                         const std::string& pool) {
  std::unique_ptr<PoolSeries>& series = pools_[{ns, pool}];
  if (!series) series = std::make_unique<PoolSeries>();
  return *series;
}

void RolloutPoolMetrics::SetReplicas(const std::string& ns, const std::string& pool,
                                     const PoolReplicaCounts& counts) {
  const std::vector<std::string> labels = {ns, pool};
  std::map<SeriesSet::Key, double> values = {
      {{&replicas_, labels}, static_cast<double>(counts.desired)},
      {{&current_replicas_, labels}, static_cast<double>(counts.current)},
      {{&ready_replicas_, labels}, static_cast<double>(counts.ready)},
      {{&updated_replicas_, labels}, static_cast<double>(counts.updated)},
      {{&unplaced_replicas_, labels}, static_cast<double>(counts.unplaced)}};
  for (const RegionReplicaCounts& r : counts.regions) {
    const std::pair<const char*, int64_t> states[] = {
        {"desired", r.desired}, {"current", r.current}, {"ready", r.ready}, {"pending", r.pending}};
    for (const auto& [state, n] : states) {
      values[{&region_replicas_, {ns, pool, r.region, state}}] = static_cast<double>(n);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  Pool(ns, pool).replicas.Replace(values);
}

void RolloutPoolMetrics::RecordAutoscalerSync(const std::string& ns, const std::string& pool,
                                              int64_t desired_replicas,
                                              const std::vector<autoscale::MetricSample>& samples) {
  const std::vector<std::string> labels = {ns, pool};
  std::map<SeriesSet::Key, double> gauges = {
      {{&autoscaler_desired_, labels}, static_cast<double>(desired_replicas)}};
  int errors = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    const autoscale::MetricSample& s = samples[i];
    if (s.value.has_value() && s.error.empty()) {
      gauges[{&autoscaler_metric_value_, {ns, pool, AutoscalerMetricLabel(s, i)}}] = *s.value;
    } else {
      ++errors;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  PoolSeries& series = Pool(ns, pool);
  series.autoscaler_gauges.Replace(gauges);
  series.autoscaler_counters.Add({&autoscaler_scale_events_, {ns, pool, "up"}}, 0);
  series.autoscaler_counters.Add({&autoscaler_scale_events_, {ns, pool, "down"}}, 0);
  series.autoscaler_counters.Add({&autoscaler_query_errors_, labels}, errors);
}

void RolloutPoolMetrics::RecordScaleEvent(const std::string& ns, const std::string& pool,
                                          ScaleDirection direction) {
  const char* label = direction == ScaleDirection::kUp ? "up" : "down";
  std::lock_guard<std::mutex> lock(mu_);
  Pool(ns, pool).autoscaler_counters.Add({&autoscaler_scale_events_, {ns, pool, label}}, 1);
}

void RolloutPoolMetrics::ForgetAutoscaler(const std::string& ns, const std::string& pool) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pools_.find({ns, pool});
  if (it == pools_.end()) return;
  it->second->autoscaler_gauges.Clear();
  it->second->autoscaler_counters.Clear();
}

void RolloutPoolMetrics::RemovePool(const std::string& ns, const std::string& pool) {
  std::lock_guard<std::mutex> lock(mu_);
  pools_.erase({ns, pool});
}

}  // namespace sluice::controllers
