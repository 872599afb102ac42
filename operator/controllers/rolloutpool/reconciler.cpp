#include "operator/controllers/rolloutpool/reconciler.h"

#include <algorithm>
#include <map>

#include "api/meta.h"
#include "api/validation.h"
#include "common/openapi/field_error.h"
#include "common/time_format.h"
#include "kube/kubeconfig.h"
#include "operator/autoscale/prometheus_client.h"
#include "operator/controllers/abandoned_termination.h"
#include "operator/controllers/bearer_tokens.h"
#include "operator/controllers/core_resources.h"
#include "operator/controllers/ensure_certificates.h"
#include "operator/controllers/external_engine.h"
#include "operator/controllers/labels.h"
#include "operator/controllers/namespace_certificates.h"
#include "operator/controllers/object_meta.h"
#include "operator/controllers/reference_indexes.h"
#include "operator/controllers/rolloutpool/desired_pods.h"
#include "operator/controllers/rolloutpool/replica_facts.h"
#include "operator/controllers/rolloutpool/status.h"
#include "operator/controllers/status_write.h"
#include "operator/placement/capacity_refusals.h"
#include "operator/placement/region_targets.h"
#include "operator/placement/spillover.h"

namespace sluice::controllers {

using nlohmann::json;
using rolloutpool::Action;
using rolloutpool::ActionKind;
using rolloutpool::Replica;

namespace {

const kube::GroupVersionResource kPools{"sluice.dev", "v1alpha1", "rolloutpools", true};

}  // namespace

struct RolloutPoolController::PoolState {
  autoscale::RecommendationHistory history;
  Clock::MonoTime next_autoscale{};
  std::vector<api::Condition>
      scaling_conditions;  // ScalingActive/ScalingLimited, written with status.
  // Replica pods that ended: when each name may be created again (exponential back-off).
  std::map<std::string, std::pair<int, Clock::MonoTime>> recreate;
  // The missing Policies last reported with a PolicyNotFound Event: the Event is recorded when
  // this set changes, not on every reconcile, which would spend the pool's Event budget (25,
  // then one per 5 minutes) and crowd out the Events that follow.
  std::string reported_missing_policies;
  // Spill-over (placement/capacity_refusals.h): the regions that refused replicas during the
  // current crunch, forgotten when spec.placement or the replica template changes (what might
  // fit then differs; spec.replicas alone does not count, or every autoscaler step would restart
  // the spill-over cycle), and whether the InsufficientCapacity event of the current settled
  // episode was recorded.
  placement::Refusals refusals;
  std::string refusals_key;
  bool reported_settled = false;
  // The uids of replicas force-deleted (abandoned_termination.h): each is deleted and reported
  // once.
  std::set<std::string> force_deleted;
};

RolloutPoolController::RolloutPoolController(kube::DynamicClient& client,
                                             RolloutPoolInformers informers,
                                             kube::EventRecorder& events,
                                             RolloutPoolControllerOptions options)
    : client_(client),
      informers_(informers),
      events_(events),
      options_(std::move(options)),
      clock_(ClockOrSystem(options_.clock)),
      workers_(options_.worker_timeout) {
  if (options_.registry != nullptr) {
    metrics_ = std::make_unique<RolloutPoolMetrics>(*options_.registry);
  }
}

RolloutPoolController::~RolloutPoolController() = default;

RolloutPoolController::PoolState& RolloutPoolController::State(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  std::unique_ptr<PoolState>& s = states_[key];
  if (!s) s = std::make_unique<PoolState>();
  return *s;
}

std::vector<std::string> RolloutPoolController::PoolsOfDataflow(const json& dataflow) const {
  std::vector<std::string> keys;
  const std::string ns = StringAt(dataflow, "/metadata/namespace", "default");
  const std::string name = StringAt(dataflow, "/metadata/name");
  for (const kube::ObjectPtr& p :
       Referencing(informers_.pools->store(), kDataflowRefIndex, DataflowRefs, ns, name)) {
    keys.push_back(ns + "/" + StringAt(*p, "/metadata/name"));
  }
  return keys;
}

std::vector<std::string> RolloutPoolController::PoolsOfPolicy(const json& policy) const {
  std::vector<std::string> keys;
  const std::string ns = StringAt(policy, "/metadata/namespace", "default");
  const std::string name = StringAt(policy, "/metadata/name");
  for (const kube::ObjectPtr& p :
       Referencing(informers_.pools->store(), kPolicyRefIndex, PoolPolicyRefs, ns, name)) {
    keys.push_back(ns + "/" + StringAt(*p, "/metadata/name"));
  }
  return keys;
}

rolloutpool::WorkerCredentials RolloutPoolController::Credentials(const json& pool) const {
  const std::string ns = Namespace(pool);
  rolloutpool::WorkerCredentials creds;
  creds.server_name = RolloutServerName(pool);
  // The pool's control token: the only one the replicas admit on their control routes (their
  // peers' rollout token reads relayed weights only). Until the cache holds it the calls get
  // 401 and are made again at the next reconcile.
  if (kube::ObjectPtr secret =
          informers_.secrets->store().Get(ns + "/" + RolloutControlTokenSecretName(Name(pool)))) {
    Result<std::string> token =
        kube::DecodeBase64(secret->value("/data/token"_json_pointer, std::string()));
    if (token.ok()) creds.token = *token;
  }
  // Without the CA in the cache yet the calls fail (the system's CAs do not know the replicas)
  // and are made again at the next reconcile.
  if (kube::ObjectPtr ca = informers_.secrets->store().Get(ns + "/" + kNamespaceCaSecretName)) {
    if (Result<tls::CertifiedKey> key = CaFromSecret(*ca); key.ok()) creds.ca_pem = key->cert_pem;
  }
  return creds;
}

int64_t RolloutPoolController::NowSeconds() const {
  return std::chrono::duration_cast<std::chrono::seconds>(clock_.WallNow().time_since_epoch())
      .count();
}

Result<std::vector<json>> RolloutPoolController::OwnedPods(const json& pool) const {
  // The owner-uid index, so a reconcile costs the pool's pods, not every pod in the cache.
  std::vector<json> pods;
  const std::string ns = Namespace(pool);
  const std::string pool_label = LabelValue(Name(pool));
  SLUICE_ASSIGN_OR_RETURN(
      std::vector<kube::ObjectPtr> owned,
      informers_.pods->store().ByIndex(kube::kOwnerUidIndex, StringAt(pool, "/metadata/uid")));
  for (const kube::ObjectPtr& p : owned) {
    if (Namespace(*p) == ns && StringAt(*p, "/metadata/labels/sluice.dev~1pool") == pool_label &&
        StringAt(*p, "/metadata/labels/app.kubernetes.io~1component") == "rollout") {
      pods.push_back(*p);
    }
  }
  return pods;
}

std::vector<Replica> RolloutPoolController::Observe(const std::vector<json>& pods,
                                                    const std::string& template_hash,
                                                    const rolloutpool::WorkerCredentials& creds,
                                                    int64_t abandon_after, PoolState& state) {
  const int64_t now_s = NowSeconds();
  std::vector<Replica> replicas;
  for (const json& pod : pods) {
    Replica r = rolloutpool::ReplicaFromPod(pod, template_hash, now_s, abandon_after);
    if (r.placement.ready) {
      if (Result<json> ws = workers_.GetStatus(r.url, creds); ws.ok()) {
        r.worker = rolloutpool::WorkerReportOf(*ws);
        r.placement.in_flight = ws->value("in_flight", int64_t{-1});
      }
    }
    replicas.push_back(std::move(r));
  }
  std::erase_if(state.force_deleted, [&](const std::string& uid) {
    return std::none_of(replicas.begin(), replicas.end(),
                        [&](const Replica& r) { return r.uid == uid; });
  });
  return replicas;
}

Status RolloutPoolController::WriteBlocked(const json& pool, const Blocked& blocked) {
  std::vector<api::Condition> conditions =
      api::ConditionsOrEmpty(pool.value("/status/conditions"_json_pointer, json()));
  const int64_t generation = pool.value("/metadata/generation"_json_pointer, int64_t{0});
  const bool changed = api::SetCondition(
      conditions, {"Available", "False", blocked.reason, blocked.message, generation, ""},
      clock_.WallNow());
  if (changed) (void)events_.Record(pool, kube::kEventWarning, blocked.reason, blocked.message);
  json status = pool.value("status", json::object());
  status["conditions"] = api::ToJson(conditions);
  status["observedGeneration"] = generation;
  return WriteStatusIfChanged(client_, kPools, pool, status);
}

Result<std::optional<RolloutPoolController::Blocked>> RolloutPoolController::ResolvePolicies(
    const json& pool, PoolState& state, std::vector<json>* hosted) {
  // The hosted Policies the replicas load (rollout.json). A Policy that does not exist yet is
  // left out (the replicas then fail to start, naming it) and reported as an Event; its creation
  // re-triggers this pool (Watch). The hosted Policies also give the replicas their model claim
  // mounts (and so the template hash).
  const std::string ns = Namespace(pool);
  std::vector<std::string> missing;
  for (const json& p : pool.value("/spec/policies"_json_pointer, json::array())) {
    if (!p.is_string() || informers_.policies == nullptr) continue;
    kube::ObjectPtr policy = informers_.policies->store().Get(ns + "/" + p.get<std::string>());
    if (policy) {
      hosted->push_back(*policy);
    } else {
      missing.push_back(p.get<std::string>());
    }
  }
  if (informers_.config_maps != nullptr && informers_.policies != nullptr) {
    std::string names;
    for (const std::string& m : missing) names += (names.empty() ? "" : ", ") + m;
    // Recorded when the set changes, not at every reconcile, which would spend the pool's Event
    // budget and crowd out the Events that follow.
    if (!missing.empty() && names != state.reported_missing_policies) {
      (void)events_.Record(pool, kube::kEventWarning, "PolicyNotFound",
                           "spec.policies: Policy " + names + " not found in " + ns);
    }
    state.reported_missing_policies = names;
    const json desired = DesiredRolloutConfigMap(pool, *hosted);
    const std::string cm_name = desired["metadata"]["name"];
    kube::ObjectPtr current = informers_.config_maps->store().Get(ns + "/" + cm_name);
    kube::ResourceClient cms = client_.Resource(kConfigMaps, ns);
    if (!current) {
      Result<json> r = cms.Create(desired);
      if (!r.ok() && r.status().code() != StatusCode::kAlreadyExists) return r.status();
    } else if (current->value("data", json()) != desired["data"]) {
      json updated = *current;
      updated["data"] = desired["data"];
      Result<json> r = cms.Update(updated);
      if (!r.ok() && r.status().code() != StatusCode::kConflict) return r.status();
    }
  }
  // An external server loads its Policy from a directory both containers mount; no replica is
  // built before the Policy is known. The Policy's creation or update re-triggers the pool.
  if (UsesExternalEngine(pool)) {
    if (hosted->empty() && informers_.policies != nullptr) {
      return std::optional<Blocked>(Blocked{
          "PolicyNotFound", "spec.policies: Policy " +
                                pool.value("/spec/policies/0"_json_pointer, std::string()) +
                                " not found in " + ns + "; the engine server needs its model"});
    }
    for (const json& p : *hosted) {
      if (Result<std::string> dir = ExternalEngineModelDir(p); !dir.ok()) {
        return std::optional<Blocked>(
            Blocked{"UnservableModel", dir.status().field() + ": " + dir.status().message()});
      }
    }
  }
  return std::optional<Blocked>();
}

Result<int64_t> RolloutPoolController::Autoscale(
    const json& pool, PoolState& state, std::optional<std::chrono::milliseconds>* next_sync) {
  const std::string ns = Namespace(pool);
  const std::string name = Name(pool);
  const int64_t before = pool.value("/spec/replicas"_json_pointer, int64_t{0});
  if (!pool.contains("/spec/autoscaling"_json_pointer)) {
    // The last decision's conditions go (PoolStatus drops them too).
    state.scaling_conditions.clear();
    if (metrics_) metrics_->ForgetAutoscaler(ns, name);
    return before;
  }
  api::RolloutPoolSpecAutoscaling spec;
  Status parsed =
      api::FromJson(pool.at("/spec/autoscaling"_json_pointer), "spec.autoscaling", &spec);
  const auto period = std::chrono::seconds(std::max<int64_t>(1, spec.sync_period_seconds));
  int64_t replicas = before;
  if (parsed.ok() && clock_.Now() >= state.next_autoscale) {
    state.next_autoscale = clock_.Now() + period;
    const std::string url = spec.prometheus_url.value_or(options_.prometheus_url);
    std::vector<autoscale::MetricSample> samples;
    Result<std::unique_ptr<autoscale::PrometheusClient>> prom =
        url.empty() ? Result<std::unique_ptr<autoscale::PrometheusClient>>(Status::InvalidArgument(
                          "no Prometheus: set spec.autoscaling.prometheusURL or the operator's "
                          "--prometheus-url"))
                    : autoscale::PrometheusClient::Create(url, std::chrono::seconds(5));
    for (const api::RolloutPoolSpecAutoscalingMetric& m : spec.metrics) {
      autoscale::MetricSample sample{m.name, std::nullopt, ""};
      if (!prom.ok()) {
        sample.error = prom.status().message();
      } else if (Result<double> v = (*prom)->QueryScalar(autoscale::ExpandQuery(m.query, name, ns));
                 v.ok()) {
        sample.value = *v;
      } else {
        sample.error = m.name + ": " + v.status().message();
      }
      samples.push_back(sample);
    }
    autoscale::ScaleDecision d =
        autoscale::Decide(spec, before, samples, state.history, NowSeconds());
    if (metrics_) metrics_->RecordAutoscalerSync(ns, name, d.desired, samples);
    // Conditions need a reason even when the decision leaves one empty.
    if (d.scaling_active_reason.empty()) {
      d.scaling_active_reason = d.scaling_active ? "ValidMetricFound" : "FailedGetMetrics";
    }
    if (d.scaling_limited_reason.empty()) {
      d.scaling_limited_reason = d.scaling_limited ? "ScalingLimited" : "DesiredWithinRange";
    }
    const int64_t generation = pool.value("/metadata/generation"_json_pointer, int64_t{0});
    state.scaling_conditions.clear();
    api::SetCondition(state.scaling_conditions,
                      {"ScalingActive", d.scaling_active ? "True" : "False",
                       d.scaling_active_reason, d.scaling_active_message, generation, ""},
                      clock_.WallNow());
    api::SetCondition(state.scaling_conditions,
                      {"ScalingLimited", d.scaling_limited ? "True" : "False",
                       d.scaling_limited_reason, d.scaling_limited_message, generation, ""},
                      clock_.WallNow());
    if (!d.scaling_active) {
      (void)events_.Record(pool, kube::kEventWarning, "FailedGetMetrics", d.scaling_active_message);
    }
    if (d.changed) {
      json scale = {{"apiVersion", "autoscaling/v1"},
                    {"kind", "Scale"},
                    {"metadata", {{"name", name}, {"namespace", ns}}},
                    {"spec", {{"replicas", d.desired}}}};
      SLUICE_RETURN_IF_ERROR(client_.Resource(kPools, ns).UpdateScale(name, scale).status());
      replicas = d.desired;
      const bool up = d.desired > before;
      if (metrics_) {
        metrics_->RecordScaleEvent(ns, name, up ? ScaleDirection::kUp : ScaleDirection::kDown);
      }
      (void)events_.Record(pool, kube::kEventNormal, up ? "ScaledUp" : "ScaledDown", d.reason);
    }
  }
  *next_sync = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::max(Clock::Duration(0), state.next_autoscale - clock_.Now()));
  return replicas;
}

RolloutPoolController::Placed RolloutPoolController::Place(const json& pool, PoolState& state,
                                                           const std::vector<Replica>& replicas,
                                                           const std::string& hash) {
  Placed placed;
  const int64_t desired = pool.value("/spec/replicas"_json_pointer, int64_t{0});
  api::RolloutPoolSpecPlacement spec;
  if (!pool.contains("/spec/placement"_json_pointer) ||
      !api::FromJson(pool.at("/spec/placement"_json_pointer), "spec.placement", &spec).ok()) {
    placed.targets = {{"", desired}};
    return placed;
  }
  std::vector<placement::ReplicaFacts> facts;
  for (const Replica& r : replicas) facts.push_back(r.placement);
  // Kubernetes timestamps have whole seconds, so an elapsed time computed from them can exceed
  // the real one by up to a second: wait one second more, so that a replica never moves before
  // spilloverAfterSeconds have really passed (0 still moves at once).
  const int64_t spill_after =
      spec.spillover_after_seconds > 0 ? spec.spillover_after_seconds + 1 : 0;
  // Refusals are forgotten when spec.placement or the replica template changes (what might fit
  // then differs); spec.replicas alone does not count, or every autoscaler step would restart the
  // spill-over cycle.
  const std::string refusals_key = pool.at("/spec/placement"_json_pointer).dump() + "/" + hash;
  if (state.refusals_key != refusals_key) {
    state.refusals.clear();
    state.refusals_key = refusals_key;
  }
  if (spec.strategy == "Priority") {
    state.refusals =
        placement::RememberRefusals(state.refusals, facts, desired, NowSeconds(), spill_after);
  } else {
    state.refusals.clear();
  }
  placement::SpilloverPlan plan = placement::PlanWithRefusals(spec, desired, facts, state.refusals);
  placed.targets = plan.plan.targets;
  placed.unplaced = plan.plan.unplaced;
  for (const std::string& name : plan.spill) {
    placed.spilled.insert(name);
    std::string from;
    for (const placement::ReplicaFacts& f : facts) {
      if (f.name == name) from = f.region;
    }
    (void)events_.Record(pool, kube::kEventNormal, "SpilledOver",
                         "Replica " + name + " is unschedulable in region " + from +
                             ", which has refused replicas for " +
                             std::to_string(spec.spillover_after_seconds) +
                             "s; placing it in the next region");
  }
  if (plan.settled) {
    placed.settled_message = SettledMessage(state.refusals, facts);
    if (!state.reported_settled) {
      (void)events_.Record(pool, kube::kEventWarning, "InsufficientCapacity",
                           placed.settled_message);
    }
  }
  state.reported_settled = plan.settled;
  return placed;
}

Status RolloutPoolController::Execute(const json& pool, const std::vector<Action>& actions,
                                      const std::vector<Replica>& replicas,
                                      const std::vector<json>& pods,
                                      const std::vector<json>& hosted, const json* dataflow,
                                      const rolloutpool::WorkerCredentials& creds,
                                      PoolState& state) {
  kube::ResourceClient pods_client = client_.Resource(kPods, Namespace(pool));
  std::map<std::string, size_t, std::less<>> by_name;  // Replica index by Pod name.
  for (size_t i = 0; i < replicas.size(); ++i) by_name.emplace(replicas[i].placement.name, i);
  const auto find = [&](const std::string& name) -> size_t {
    const auto it = by_name.find(name);
    return it == by_name.end() ? replicas.size() : it->second;
  };
  const int64_t abandon_after =
      std::max<int64_t>(pool.value("/spec/drain/gracePeriodSeconds"_json_pointer, int64_t{120}),
                        kAbandonedTerminationFloorSeconds);
  for (const Action& a : actions) {
    const size_t i = find(a.replica);
    const bool known = i < replicas.size();
    if (!known && a.kind != ActionKind::kCreate && a.kind != ActionKind::kRemoveFinalizer) {
      return Status::Internal("the plan names replica " + a.replica + ", which was not observed");
    }
    switch (a.kind) {
      case ActionKind::kForceDelete: {
        kube::DeleteOptions force;
        force.grace_period_seconds = 0;
        force.precondition_uid = replicas[i].uid;
        Result<json> r = pods_client.Delete(a.replica, force);
        if (!r.ok() && r.status().code() != StatusCode::kNotFound &&
            r.status().code() != StatusCode::kConflict) {
          return r.status();
        }
        state.force_deleted.insert(replicas[i].uid);
        if (!r.ok()) break;  // Gone already, or another Pod holds the name now.
        (void)events_.Record(pool, kube::kEventWarning, "ForceDeletedReplica",
                             "Replica " + a.replica + " stayed Terminating and not Ready for " +
                                 std::to_string(abandon_after) +
                                 "s past its deletion deadline on node " +
                                 StringAt(pods[i], "/spec/nodeName", "(none)") +
                                 ": its node no longer answers; deleted it with no grace period");
        break;
      }
      case ActionKind::kAskToDrain: {
        Status s = workers_.Drain(replicas[i].url, creds);
        json patch = {
            {"metadata",
             {{"annotations",
               {{rolloutpool::kDrainingSinceAnnotation, FormatTime(clock_.WallNow())}}}}}};
        SLUICE_RETURN_IF_ERROR(
            pods_client.Patch(a.replica, kube::PatchType::kMerge, patch.dump()).status());
        (void)events_.Record(pool, kube::kEventNormal, "DrainingReplica",
                             "Draining replica " + a.replica + " (" + a.reason + ")" +
                                 (s.ok() ? "" : "; POST /v1/drain failed: " + s.message()));
        break;
      }
      case ActionKind::kAskAgain:
        (void)workers_.Drain(replicas[i].url, creds);
        break;
      case ActionKind::kDelete: {
        Result<json> r = pods_client.Delete(a.replica);
        if (!r.ok() && r.status().code() != StatusCode::kNotFound) return r.status();
        (void)events_.Record(pool, kube::kEventNormal, "DeletedReplica",
                             "Deleted replica " + a.replica + " (" + a.reason + ")");
        break;
      }
      case ActionKind::kDeleteEnded: {
        // Re-created after a back-off that doubles with each failure, up to 5 minutes.
        auto& [failures, at] = state.recreate[a.replica];
        ++failures;
        at = clock_.Now() + std::min(std::chrono::seconds(300),
                                     std::chrono::seconds(1 << std::min(failures - 1, 8)));
        Result<json> r = pods_client.Delete(a.replica);
        if (!r.ok() && r.status().code() != StatusCode::kNotFound) return r.status();
        (void)events_.Record(pool, kube::kEventWarning, "ReplicaFailed",
                             "Replica " + a.replica + " ended (" + replicas[i].phase +
                                 "); it is re-created after a back-off");
        break;
      }
      case ActionKind::kCreate: {
        if (dataflow == nullptr) return Status::Internal("creating a replica needs the Dataflow");
        const json* region = nullptr;  // A pointer into the pool (value() would copy).
        if (!a.region.empty() && pool.contains("/spec/placement/regions"_json_pointer)) {
          for (const json& r : pool.at("/spec/placement/regions"_json_pointer)) {
            if (r.value("name", "") == a.region) region = &r;
          }
        }
        const json desired =
            DesiredReplicaPod(pool, hosted, region, a.index, *dataflow, options_.images);
        Result<json> r = pods_client.Create(desired);
        if (!r.ok() && r.status().code() != StatusCode::kAlreadyExists) return r.status();
        break;
      }
      case ActionKind::kSetRelay: {
        std::optional<rolloutpool::WorkerReport> report = replicas[i].worker;
        if (!report.has_value()) {  // A joiner, not asked for its status yet.
          Result<json> ws = workers_.GetStatus(replicas[i].url, creds);
          if (!ws.ok()) break;
          report = rolloutpool::WorkerReportOf(*ws);
        }
        // A lost POST is repeated at the next round.
        if (report->relay != a.relay) (void)workers_.SetRelay(replicas[i].url, creds, a.relay);
        break;
      }
      case ActionKind::kRemoveFinalizer: {
        json kept = json::array();
        for (const json& f : pool.value("/metadata/finalizers"_json_pointer, json::array())) {
          if (f != kDrainFinalizer) kept.push_back(f);
        }
        json patch = {{"metadata",
                       {{"finalizers", kept},
                        {"resourceVersion", StringAt(pool, "/metadata/resourceVersion")}}}};
        Result<json> r = client_.Resource(kPools, Namespace(pool))
                             .Patch(Name(pool), kube::PatchType::kMerge, patch.dump());
        if (!r.ok() && r.status().code() != StatusCode::kNotFound) return r.status();
        break;
      }
    }
  }
  return Status::Ok();
}

Result<ReconcileResult> RolloutPoolController::Reconcile(const std::string& key) {
  kube::ObjectPtr cached = informers_.pools->store().Get(key);
  if (!cached) {
    if (metrics_) {
      const size_t slash = key.find('/');
      metrics_->RemovePool(slash == std::string::npos ? "" : key.substr(0, slash),
                           slash == std::string::npos ? key : key.substr(slash + 1));
    }
    std::lock_guard<std::mutex> lock(mu_);
    states_.erase(key);
    return ReconcileResult{};
  }
  json pool = *cached;
  const std::string ns = Namespace(pool);
  const std::string name = Name(pool);
  PoolState& state = State(key);
  rolloutpool::PoolFacts facts;
  facts.pool = name;
  facts.deleting = pool.contains("/metadata/deletionTimestamp"_json_pointer);

  // 1. The drain finalizer.
  json finalizers = pool.value("/metadata/finalizers"_json_pointer, json::array());
  facts.has_finalizer =
      std::find(finalizers.begin(), finalizers.end(), json(kDrainFinalizer)) != finalizers.end();
  if (!facts.deleting && !facts.has_finalizer) {
    finalizers.push_back(kDrainFinalizer);
    json patch = {{"metadata",
                   {{"finalizers", finalizers},
                    {"resourceVersion", StringAt(pool, "/metadata/resourceVersion")}}}};
    SLUICE_ASSIGN_OR_RETURN(
        pool, client_.Resource(kPools, ns).Patch(name, kube::PatchType::kMerge, patch.dump()));
    facts.has_finalizer = true;
  }
  SLUICE_ASSIGN_OR_RETURN(const std::vector<json> pods, OwnedPods(pool));
  const std::string df_name = StringAt(pool, "/spec/dataflowRef/name");
  const rolloutpool::WorkerCredentials creds = Credentials(pool);
  facts.grace_seconds = pool.value("/spec/drain/gracePeriodSeconds"_json_pointer, int64_t{120});
  const int64_t abandon_after =
      std::max<int64_t>(facts.grace_seconds, kAbandonedTerminationFloorSeconds);

  if (facts.deleting) {
    // Every replica is leaving: the pool's counts and autoscaler no longer mean anything.
    if (metrics_) metrics_->RemovePool(ns, name);
    facts.replicas = Observe(pods, "", creds, abandon_after, state);
    SLUICE_RETURN_IF_ERROR(Execute(pool, rolloutpool::Plan(facts, NowSeconds()), facts.replicas,
                                   pods, {}, nullptr, creds, state));
    if (pods.empty()) return ReconcileResult{};
    return ReconcileResult{std::chrono::milliseconds(500)};
  }

  // 2. Validation, the Dataflow, the hosted Policies.
  json defaulted = pool;
  Status defaulting = api::DefaultObject(defaulted);
  api::ValidationReport report;
  if (defaulting.ok()) report = api::ValidateObject(defaulted);
  if (!defaulting.ok() || !report.ok()) {
    SLUICE_RETURN_IF_ERROR(
        WriteBlocked(pool, {"InvalidSpec", defaulting.ok() ? openapi::Describe(report.errors)
                                                           : defaulting.message()}));
    return ReconcileResult{};
  }
  pool = defaulted;
  kube::ObjectPtr dataflow = informers_.dataflows->store().Get(ns + "/" + df_name);
  if (!dataflow) {
    // The Dataflow's creation re-triggers this pool (Watch).
    SLUICE_RETURN_IF_ERROR(WriteBlocked(
        pool,
        {"DataflowNotFound", "spec.dataflowRef: Dataflow \"" + df_name + "\" not found in " + ns}));
    return ReconcileResult{};
  }
  std::vector<json> hosted;
  SLUICE_ASSIGN_OR_RETURN(std::optional<Blocked> blocked, ResolvePolicies(pool, state, &hosted));
  if (blocked.has_value()) {
    SLUICE_RETURN_IF_ERROR(WriteBlocked(pool, *blocked));
    return ReconcileResult{};
  }

  // The replicas' serving certificate, from the namespace's CA, before any replica mounts it.
  const Clock::WallTime now = clock_.WallNow();
  SLUICE_ASSIGN_OR_RETURN(tls::CertifiedKey ca,
                          EnsureNamespaceCa(client_, *informers_.secrets, events_, pool, ns, now));
  SLUICE_RETURN_IF_ERROR(EnsureServingSecret(client_, *informers_.secrets, events_, pool,
                                             RolloutTlsSecretMeta(pool), {RolloutServerName(pool)},
                                             RolloutServerName(pool), ca, now));
  // The operator's token for the replicas' control routes: made once, never rewritten (a
  // replica re-reads its file; the copy in the cache is what Credentials sends).
  if (!informers_.secrets->store().Get(ns + "/" + RolloutControlTokenSecretName(name))) {
    Result<json> made = client_.Resource(kSecrets, ns)
                            .Create(DesiredRolloutControlTokenSecret(pool, RandomBearerToken()));
    if (!made.ok() && made.status().code() != StatusCode::kAlreadyExists) return made.status();
  }

  // 3. Facts about each replica. A replica that is ready again earns a fresh back-off.
  const std::string hash = PoolTemplateHash(pool, hosted, dataflow.get());
  facts.replicas = Observe(pods, hash, creds, abandon_after, state);
  for (const Replica& r : facts.replicas) {
    if (r.placement.ready) state.recreate.erase(r.placement.name);
  }
  for (const auto& [replica, backoff] : state.recreate) {
    if (clock_.Now() < backoff.second) facts.backing_off.insert(replica);
  }

  // 4 and 5. Autoscaling (first, so this round acts on the new size), then placement.
  std::optional<std::chrono::milliseconds> next_sync;
  SLUICE_ASSIGN_OR_RETURN(pool["spec"]["replicas"], Autoscale(pool, state, &next_sync));
  const Placed placed = Place(pool, state, facts.replicas, hash);
  facts.regional = pool.contains("/spec/placement"_json_pointer);
  facts.max_unavailable = rolloutpool::MaxUnavailable(pool);
  facts.targets = placed.targets;
  facts.spilled = placed.spilled;
  facts.force_deleted = state.force_deleted;

  // 6. The plan.
  SLUICE_RETURN_IF_ERROR(Execute(pool, rolloutpool::Plan(facts, NowSeconds()), facts.replicas, pods,
                                 hosted, dataflow.get(), creds, state));

  // 7. Status.
  SLUICE_RETURN_IF_ERROR(WriteStatus(pool, state, facts.replicas, placed));
  std::chrono::milliseconds again = options_.status_period;
  if (next_sync && *next_sync < again) again = *next_sync;
  // Waiting on a drain or a back-off: look again soon.
  for (const Replica& r : facts.replicas) {
    if (r.placement.draining) again = std::min(again, std::chrono::milliseconds(500));
  }
  if (!state.recreate.empty()) again = std::min(again, std::chrono::milliseconds(1000));
  return ReconcileResult{again};
}

Status RolloutPoolController::WriteStatus(const json& pool, PoolState& state,
                                          const std::vector<Replica>& replicas,
                                          const Placed& placed) {
  std::vector<api::Condition> conditions =
      api::ConditionsOrEmpty(pool.value("/status/conditions"_json_pointer, json()));
  for (const api::Condition& c : state.scaling_conditions) {
    api::SetCondition(conditions, c, clock_.WallNow());
  }
  std::vector<ReplicaObservation> observed;
  for (const Replica& r : replicas) {
    std::optional<json> worker;
    if (r.worker.has_value()) worker = r.worker->raw;
    observed.push_back({r.placement.name, r.placement.region, r.placement.replica_index, r.phase,
                        r.placement.ready, r.current, r.placement.draining,
                        r.placement.pending_unschedulable, worker});
  }
  json status = PoolStatus(pool, observed, placed.targets, placed.unplaced, conditions,
                           clock_.WallNow(), placed.settled_message);
  if (metrics_) {
    metrics_->SetReplicas(Namespace(pool), Name(pool),
                          ReplicaCountsOf(pool, status, placed.targets, placed.unplaced));
  }
  return WriteStatusIfChanged(client_, kPools, pool, status);
}

}  // namespace sluice::controllers
