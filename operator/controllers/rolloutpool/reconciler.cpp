#include "operator/controllers/rolloutpool/reconciler.h"

#include <algorithm>
#include <cmath>

#include "api/meta.h"
#include "api/validation.h"
#include "common/http/bearer_token.h"
#include "common/http/client.h"
#include "common/openapi/field_error.h"
#include "common/time_format.h"
#include "kube/kubeconfig.h"
#include "operator/autoscale/prometheus_client.h"
#include "operator/controllers/abandoned_termination.h"
#include "operator/controllers/external_engine.h"
#include "operator/controllers/labels.h"
#include "operator/controllers/object_meta.h"
#include "operator/controllers/reference_indexes.h"
#include "operator/controllers/rolloutpool/desired_pods.h"
#include "operator/controllers/rolloutpool/status.h"
#include "operator/placement/capacity_refusals.h"
#include "operator/placement/region_targets.h"
#include "operator/placement/scale_down.h"
#include "operator/placement/spillover.h"
#include "operator/placement/weight_relays.h"

namespace sluice::controllers {

using nlohmann::json;
using Mono = std::chrono::steady_clock;

namespace {

const kube::GroupVersionResource kPools{"sluice.dev", "v1alpha1", "rolloutpools", true};
const kube::GroupVersionResource kPods{"", "v1", "pods", true};
const kube::GroupVersionResource kConfigMaps{"", "v1", "configmaps", true};

bool HasCondition(const json& pod, const std::string& type, const std::string& status,
                  const std::string& reason = "") {
  for (const json& c : pod.value("/status/conditions"_json_pointer, json::array())) {
    if (c.value("type", "") == type && c.value("status", "") == status &&
        (reason.empty() || c.value("reason", "") == reason)) {
      return true;
    }
  }
  return false;
}

int64_t WallSeconds(const std::string& rfc3339) {
  Result<Clock::WallTime> t = ParseTime(rfc3339);
  if (!t.ok()) return 0;
  return std::chrono::duration_cast<std::chrono::seconds>(t->time_since_epoch()).count();
}

int64_t NowSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// spec.updateStrategy.maxUnavailable: an integer, or a percentage of spec.replicas (rounded
// down, at least 1 so an update always progresses).
int64_t MaxUnavailable(const json& pool) {
  const json v = pool.value("/spec/updateStrategy/maxUnavailable"_json_pointer, json(1));
  const int64_t replicas = pool.value("/spec/replicas"_json_pointer, int64_t{0});
  if (v.is_number_integer()) return std::max<int64_t>(1, v.get<int64_t>());
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    if (!s.empty() && s.back() == '%') {
      const double pct = std::atof(s.substr(0, s.size() - 1).c_str());
      return std::max<int64_t>(1, static_cast<int64_t>(std::floor(replicas * pct / 100.0)));
    }
    return std::max<int64_t>(1, std::atoll(s.c_str()));
  }
  return 1;
}

}  // namespace

struct RolloutPoolController::PoolState {
  autoscale::RecommendationHistory history;
  Mono::time_point next_autoscale{};
  std::vector<api::Condition>
      scaling_conditions;  // ScalingActive/ScalingLimited, written with status.
  // Replica pods that ended: when each name may be created again (exponential back-off).
  std::map<std::string, std::pair<int, Mono::time_point>> recreate;
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
    : client_(client), informers_(informers), events_(events), options_(std::move(options)) {
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
  const std::string ns = Str(dataflow, "/metadata/namespace", "default");
  const std::string name = Str(dataflow, "/metadata/name");
  for (const kube::ObjectPtr& p :
       Referencing(informers_.pools->store(), kDataflowRefIndex, DataflowRefs, ns, name)) {
    keys.push_back(ns + "/" + Str(*p, "/metadata/name"));
  }
  return keys;
}

std::vector<std::string> RolloutPoolController::PoolsOfPolicy(const json& policy) const {
  std::vector<std::string> keys;
  const std::string ns = Str(policy, "/metadata/namespace", "default");
  const std::string name = Str(policy, "/metadata/name");
  for (const kube::ObjectPtr& p :
       Referencing(informers_.pools->store(), kPolicyRefIndex, PoolPolicyRefs, ns, name)) {
    keys.push_back(ns + "/" + Str(*p, "/metadata/name"));
  }
  return keys;
}

std::string RolloutPoolController::Token(const std::string& ns, const std::string& df) const {
  kube::ObjectPtr secret = informers_.secrets->store().Get(ns + "/" + DataflowTokenSecretName(df));
  if (!secret) return "";
  Result<std::string> token =
      kube::DecodeBase64(secret->value("/data/token"_json_pointer, std::string()));
  return token.ok() ? *token : "";
}

Result<std::unique_ptr<http::Client>> RolloutPoolController::WorkerClient(
    const json& pod, const std::string& token) const {
  http::ClientOptions options;
  options.base_url = "http://" + Str(pod, "/status/podIP") + ":" + std::to_string(kRolloutPort);
  options.connect_timeout = options_.worker_timeout;
  options.read_timeout = options_.worker_timeout;
  options.max_attempts = 1;
  if (!token.empty()) options.token = http::TokenSource::FromValue(token);
  return http::Client::Create(options);
}

Result<json> RolloutPoolController::WorkerStatus(const json& pod, const std::string& token) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<http::Client> client, WorkerClient(pod, token));
  SLUICE_ASSIGN_OR_RETURN(http::Response reply, client->Get("/v1/status"));
  if (reply.status != 200) return reply.ToStatus();
  json status = json::parse(reply.body, nullptr, false);
  if (!status.is_object()) return Status::Internal("GET /v1/status did not return a JSON object");
  return status;
}

Status RolloutPoolController::PostDrain(const json& pod, const std::string& token) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<http::Client> client, WorkerClient(pod, token));
  SLUICE_ASSIGN_OR_RETURN(http::Response reply,
                          client->Post("/v1/drain", "{}", "application/json"));
  return reply.status / 100 == 2 ? Status::Ok() : reply.ToStatus();
}

Status RolloutPoolController::PostRelay(const json& pod, const std::string& token,
                                        const std::string& relay) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<http::Client> client, WorkerClient(pod, token));
  SLUICE_ASSIGN_OR_RETURN(
      http::Response reply,
      client->Post("/v1/relay", json{{"url", relay}}.dump(), "application/json"));
  return reply.status / 100 == 2 ? Status::Ok() : reply.ToStatus();
}

Result<ReconcileResult> RolloutPoolController::Reconcile(const std::string& key) {
  kube::ObjectPtr cached = informers_.pools->store().Get(key);
  if (!cached) {
    if (metrics_) {
      const size_t slash = key.find('/');
      if (slash == std::string::npos) {
        metrics_->RemovePool("", key);
      } else {
        metrics_->RemovePool(key.substr(0, slash), key.substr(slash + 1));
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    states_.erase(key);
    return ReconcileResult{};
  }
  json pool = *cached;
  const std::string ns = Str(pool, "/metadata/namespace", "default");
  const std::string name = Str(pool, "/metadata/name");
  kube::ResourceClient pools = client_.Resource(kPools, ns);
  kube::ResourceClient pods_client = client_.Resource(kPods, ns);
  PoolState& state = State(key);
  const auto now_wall = std::chrono::system_clock::now();
  const int64_t now_s = NowSeconds();
  const bool deleting = pool.contains("/metadata/deletionTimestamp"_json_pointer);

  // 1. The drain finalizer.
  json finalizers = pool.value("/metadata/finalizers"_json_pointer, json::array());
  const bool has_finalizer =
      std::find(finalizers.begin(), finalizers.end(), json(kDrainFinalizer)) != finalizers.end();
  if (!deleting && !has_finalizer) {
    finalizers.push_back(kDrainFinalizer);
    json patch = {{"metadata",
                   {{"finalizers", finalizers},
                    {"resourceVersion", Str(pool, "/metadata/resourceVersion")}}}};
    Result<json> r = pools.Patch(name, kube::PatchType::kMerge, patch.dump());
    if (!r.ok()) return r.status();
    pool = *r;
  }

  // The pool's replica pods: those it owns (the owner-uid index, so a reconcile costs the pool's
  // pods, not every pod in the cache), with its labels.
  std::vector<json> pods;
  const std::string pool_label = LabelValue(name);
  Result<std::vector<kube::ObjectPtr>> owned =
      informers_.pods->store().ByIndex(kube::kOwnerUidIndex, Str(pool, "/metadata/uid"));
  if (!owned.ok()) return owned.status();
  for (const kube::ObjectPtr& p : *owned) {
    if (Str(*p, "/metadata/namespace", "default") == ns &&
        Str(*p, "/metadata/labels/sluice.dev~1pool") == pool_label &&
        Str(*p, "/metadata/labels/app.kubernetes.io~1component") == "rollout") {
      pods.push_back(*p);
    }
  }
  const std::string df_name = Str(pool, "/spec/dataflowRef/name");
  const std::string token = Token(ns, df_name);
  const int64_t grace = pool.value("/spec/drain/gracePeriodSeconds"_json_pointer, int64_t{120});

  // Asks a ready replica to drain (once) and deletes replicas that drained or ran out of time.
  // Returns true when `pod` is gone or going.
  auto drain_or_delete = [&](const json& pod, const std::string& why) -> Status {
    const std::string pod_name = Str(pod, "/metadata/name");
    if (pod.contains("/metadata/deletionTimestamp"_json_pointer)) return Status::Ok();
    const std::string since = Str(pod, "/metadata/annotations/sluice.dev~1draining-since");
    const bool ready = HasCondition(pod, "Ready", "True");
    bool remove = !ready;
    if (ready && since.empty()) {
      Status s = PostDrain(pod, token);
      json patch = {
          {"metadata", {{"annotations", {{kDrainingSinceAnnotation, FormatTime(now_wall)}}}}}};
      SLUICE_RETURN_IF_ERROR(
          pods_client.Patch(pod_name, kube::PatchType::kMerge, patch.dump()).status());
      (void)events_.Record(pool, kube::kEventNormal, "DrainingReplica",
                           "Draining replica " + pod_name + " (" + why + ")" +
                               (s.ok() ? "" : "; POST /v1/drain failed: " + s.message()));
      return Status::Ok();
    }
    if (ready) {
      Result<json> ws = WorkerStatus(pod, token);
      const bool drained = ws.ok() && ws->value("drained", false);
      // A worker that answers but is not draining missed the request (it restarted, or the
      // POST was lost): ask again.
      if (ws.ok() && !drained && !ws->value("draining", false)) (void)PostDrain(pod, token);
      remove = drained || now_s - WallSeconds(since) >= grace;
    }
    if (remove) {
      Result<json> r = pods_client.Delete(pod_name);
      if (!r.ok() && r.status().code() != StatusCode::kNotFound) return r.status();
      (void)events_.Record(pool, kube::kEventNormal, "DeletedReplica",
                           "Deleted replica " + pod_name + " (" + why + ")");
    }
    return Status::Ok();
  };

  // Replicas whose node abandoned their deletion are gone: remove the objects, so that neither the
  // drain finalizer nor a re-created replica of the same name waits on them forever.
  const int64_t abandon_after = std::max<int64_t>(grace, kAbandonedTerminationFloorSeconds);
  for (const json& pod : pods) {
    const std::string uid = Str(pod, "/metadata/uid");
    if (state.force_deleted.contains(uid) || !TerminationAbandoned(pod, now_s, abandon_after)) {
      continue;
    }
    const std::string pod_name = Str(pod, "/metadata/name");
    kube::DeleteOptions force;
    force.grace_period_seconds = 0;
    force.precondition_uid = uid;
    Result<json> r = pods_client.Delete(pod_name, force);
    if (!r.ok() && r.status().code() != StatusCode::kNotFound &&
        r.status().code() != StatusCode::kConflict) {
      return r.status();
    }
    state.force_deleted.insert(uid);
    if (!r.ok()) continue;  // Gone already, or another Pod holds the name now.
    (void)events_.Record(pool, kube::kEventWarning, "ForceDeletedReplica",
                         "Replica " + pod_name + " stayed Terminating and not Ready for " +
                             std::to_string(abandon_after) +
                             "s past its deletion deadline on node " +
                             Str(pod, "/spec/nodeName", "(none)") +
                             ": its node no longer answers; deleted it with no grace period");
  }
  std::erase_if(state.force_deleted, [&](const std::string& uid) {
    return std::none_of(pods.begin(), pods.end(),
                        [&](const json& p) { return Str(p, "/metadata/uid") == uid; });
  });

  if (deleting) {
    // Every replica is leaving: the pool's counts and autoscaler no longer mean anything.
    if (metrics_) metrics_->RemovePool(ns, name);
    bool any = false;
    for (const json& pod : pods) {
      any = true;
      SLUICE_RETURN_IF_ERROR(drain_or_delete(pod, "the pool is being deleted"));
    }
    if (!any && has_finalizer) {
      json kept = json::array();
      for (const json& f : finalizers) {
        if (f != kDrainFinalizer) kept.push_back(f);
      }
      json patch = {
          {"metadata",
           {{"finalizers", kept}, {"resourceVersion", Str(pool, "/metadata/resourceVersion")}}}};
      Result<json> r = pools.Patch(name, kube::PatchType::kMerge, patch.dump());
      if (!r.ok() && r.status().code() != StatusCode::kNotFound) return r.status();
      return ReconcileResult{};
    }
    return ReconcileResult{std::chrono::milliseconds(500)};
  }

  // 2. Validation and the Dataflow.
  json defaulted = pool;
  Status defaulting = api::DefaultObject(defaulted);
  api::ValidationReport report;
  if (defaulting.ok()) report = api::ValidateObject(defaulted);
  std::vector<api::Condition> conditions;
  if (pool.contains("/status/conditions"_json_pointer)) {
    Result<std::vector<api::Condition>> old =
        api::ConditionsFromJson(pool.at("/status/conditions"_json_pointer), "status.conditions");
    if (old.ok()) conditions = *old;
  }
  const int64_t generation = pool.value("/metadata/generation"_json_pointer, int64_t{0});
  auto write_blocked = [&](const std::string& reason, const std::string& message) -> Status {
    const bool changed = api::SetCondition(
        conditions, {"Available", "False", reason, message, generation, ""}, now_wall);
    if (changed) (void)events_.Record(pool, kube::kEventWarning, reason, message);
    json status = pool.value("status", json::object());
    status["conditions"] = api::ToJson(conditions);
    status["observedGeneration"] = generation;
    if (status == pool.value("status", json::object())) return Status::Ok();
    Result<json> r =
        pools.Patch(name, kube::PatchType::kMerge, json{{"status", status}}.dump(), {}, "status");
    return r.ok() || r.status().code() == StatusCode::kNotFound ? Status::Ok() : r.status();
  };
  if (!defaulting.ok() || !report.ok()) {
    SLUICE_RETURN_IF_ERROR(write_blocked(
        "InvalidSpec", defaulting.ok() ? openapi::Describe(report.errors) : defaulting.message()));
    return ReconcileResult{};
  }
  pool = defaulted;
  kube::ObjectPtr dataflow = informers_.dataflows->store().Get(ns + "/" + df_name);
  if (!dataflow) {
    SLUICE_RETURN_IF_ERROR(write_blocked(
        "DataflowNotFound", "spec.dataflowRef: Dataflow \"" + df_name + "\" not found in " + ns));
    return ReconcileResult{};  // The Dataflow's creation re-triggers this pool (Watch).
  }

  // The worker config: the hosted Policies the replicas load (rollout.json). A Policy that does not
  // exist yet is left out (the replicas then fail to start, naming it) and reported as an Event;
  // its creation re-triggers this pool (Watch). The hosted Policies also give the replicas their
  // model claim mounts (and so the template hash).
  std::vector<json> hosted;
  std::vector<std::string> missing;
  for (const json& p : pool.value("/spec/policies"_json_pointer, json::array())) {
    if (!p.is_string() || informers_.policies == nullptr) continue;
    kube::ObjectPtr policy = informers_.policies->store().Get(ns + "/" + p.get<std::string>());
    if (policy) {
      hosted.push_back(*policy);
    } else {
      missing.push_back(p.get<std::string>());
    }
  }
  if (informers_.config_maps != nullptr && informers_.policies != nullptr) {
    std::string names;
    for (const std::string& m : missing) names += (names.empty() ? "" : ", ") + m;
    std::string& reported = State(key).reported_missing_policies;
    if (!missing.empty() && names != reported) {
      (void)events_.Record(pool, kube::kEventWarning, "PolicyNotFound",
                           "spec.policies: Policy " + names + " not found in " + ns);
    }
    reported = names;
    const json desired = DesiredRolloutConfigMap(pool, hosted);
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
  // built before the Policy is known.
  if (UsesExternalEngine(pool)) {
    if (hosted.empty() && informers_.policies != nullptr) {
      SLUICE_RETURN_IF_ERROR(write_blocked(
          "PolicyNotFound", "spec.policies: Policy " +
                                pool.value("/spec/policies/0"_json_pointer, std::string()) +
                                " not found in " + ns + "; the engine server needs its model"));
      return ReconcileResult{};  // The Policy's creation re-triggers this pool (Watch).
    }
    for (const json& p : hosted) {
      if (Result<std::string> dir = ExternalEngineModelDir(p); !dir.ok()) {
        SLUICE_RETURN_IF_ERROR(
            write_blocked("UnservableModel", dir.status().field() + ": " + dir.status().message()));
        return ReconcileResult{};  // The Policy's update re-triggers this pool (Watch).
      }
    }
  }

  // 3. Facts about each replica.
  std::vector<placement::ReplicaFacts> facts;
  std::vector<ReplicaObservation> observed;
  const std::string hash = PoolTemplateHash(pool, hosted, dataflow.get());
  for (const json& pod : pods) {
    placement::ReplicaFacts f;
    f.name = Str(pod, "/metadata/name");
    f.region = Str(pod, "/metadata/labels/sluice.dev~1region");
    f.replica_index =
        std::atoi(Str(pod, "/metadata/labels/sluice.dev~1replica-index", "0").c_str());
    f.ready = HasCondition(pod, "Ready", "True");
    const std::string phase = Str(pod, "/status/phase", "Pending");
    f.pending_unschedulable =
        phase == "Pending" && HasCondition(pod, "PodScheduled", "False", "Unschedulable");
    f.unscheduled = phase == "Pending" && !HasCondition(pod, "PodScheduled", "True");
    if (f.pending_unschedulable) {
      for (const json& c : pod.value("/status/conditions"_json_pointer, json::array())) {
        if (c.value("type", "") == "PodScheduled") f.scheduler_message = c.value("message", "");
      }
    }
    if (phase == "Pending") {
      f.pending_since_seconds = WallSeconds(Str(pod, "/metadata/creationTimestamp"));
    }
    f.draining = pod.contains("/metadata/annotations/sluice.dev~1draining-since"_json_pointer) ||
                 pod.contains("/metadata/deletionTimestamp"_json_pointer);
    std::optional<json> worker;
    if (f.ready) {
      Result<json> ws = WorkerStatus(pod, token);
      if (ws.ok()) {
        worker = *ws;
        f.in_flight = ws->value("in_flight", int64_t{-1});
      }
    }
    facts.push_back(f);
    observed.push_back({f.name, f.region, f.replica_index, phase, f.ready,
                        Str(pod, "/metadata/labels/sluice.dev~1template-hash") == hash, f.draining,
                        f.pending_unschedulable, worker});
  }

  // Weight relays (operator/placement/weight_relays.h): tell each replica which peer to fetch
  // weights from when what it reports (weights.relay) differs: the region's relay in a pool with
  // placement, and for a joining replica of any pool a ready peer (the only source once the
  // trainer finished). A lost POST is repeated at the next round.
  {
    std::vector<placement::RelayCandidate> candidates;
    std::map<std::string, size_t> index_of;
    for (size_t i = 0; i < pods.size(); ++i) {
      const std::string ip = Str(pods[i], "/status/podIP");
      candidates.push_back({facts[i].name, facts[i].region, facts[i].replica_index, facts[i].ready,
                            facts[i].draining,
                            ip.empty() ? "" : "http://" + ip + ":" + std::to_string(kRolloutPort)});
      index_of[facts[i].name] = i;
    }
    const bool regional = pool.contains("/spec/placement"_json_pointer);
    for (const auto& [pod_name, relay] : placement::AssignWeightRelays(candidates, regional)) {
      const size_t i = index_of.at(pod_name);
      std::optional<json> worker = observed[i].worker_status;
      if (!observed[i].ready) {  // A joiner: not asked for its status above.
        Result<json> ws = WorkerStatus(pods[i], token);
        if (ws.ok()) worker = *ws;
      }
      if (!worker.has_value()) continue;
      const std::string reported = worker->value("/weights/relay"_json_pointer, std::string());
      if (reported != relay) (void)PostRelay(pods[i], token, relay);
    }
  }

  // A replica that came back and is ready again earns a fresh back-off.
  for (const ReplicaObservation& o : observed) {
    if (o.ready) state.recreate.erase(o.name);
  }

  // 5 (first, so this round acts on the new size). Autoscaling.
  const int64_t replicas_before = pool.value("/spec/replicas"_json_pointer, int64_t{0});
  int64_t replicas = replicas_before;
  std::optional<std::chrono::milliseconds> next_autoscale;
  // Without spec.autoscaling the last decision's conditions go (PoolStatus drops them too).
  if (!pool.contains("/spec/autoscaling"_json_pointer)) state.scaling_conditions.clear();
  if (pool.contains("/spec/autoscaling"_json_pointer)) {
    api::RolloutPoolSpecAutoscaling spec;
    Status parsed =
        api::FromJson(pool.at("/spec/autoscaling"_json_pointer), "spec.autoscaling", &spec);
    const auto period = std::chrono::seconds(std::max<int64_t>(1, spec.sync_period_seconds));
    if (parsed.ok() && Mono::now() >= state.next_autoscale) {
      state.next_autoscale = Mono::now() + period;
      const std::string url = spec.prometheus_url.value_or(options_.prometheus_url);
      std::vector<autoscale::MetricSample> samples;
      Result<std::unique_ptr<autoscale::PrometheusClient>> prom =
          url.empty()
              ? Result<std::unique_ptr<autoscale::PrometheusClient>>(Status::InvalidArgument(
                    "no Prometheus: set spec.autoscaling.prometheusURL or the operator's "
                    "--prometheus-url"))
              : autoscale::PrometheusClient::Create(url, std::chrono::seconds(5));
      for (const api::RolloutPoolSpecAutoscalingMetric& m : spec.metrics) {
        autoscale::MetricSample sample{m.name, std::nullopt, ""};
        if (!prom.ok()) {
          sample.error = prom.status().message();
        } else {
          Result<double> v = (*prom)->QueryScalar(autoscale::ExpandQuery(m.query, name, ns));
          if (v.ok()) {
            sample.value = *v;
          } else {
            sample.error = m.name + ": " + v.status().message();
          }
        }
        samples.push_back(sample);
      }
      autoscale::ScaleDecision d =
          autoscale::Decide(spec, replicas_before, samples, state.history, now_s);
      if (metrics_) metrics_->RecordAutoscalerSync(ns, name, d.desired, samples);
      // Conditions need a reason even when the decision leaves one empty.
      if (d.scaling_active_reason.empty()) {
        d.scaling_active_reason = d.scaling_active ? "ValidMetricFound" : "FailedGetMetrics";
      }
      if (d.scaling_limited_reason.empty()) {
        d.scaling_limited_reason = d.scaling_limited ? "ScalingLimited" : "DesiredWithinRange";
      }
      state.scaling_conditions.clear();
      api::SetCondition(state.scaling_conditions,
                        {"ScalingActive", d.scaling_active ? "True" : "False",
                         d.scaling_active_reason, d.scaling_active_message, generation, ""},
                        now_wall);
      api::SetCondition(state.scaling_conditions,
                        {"ScalingLimited", d.scaling_limited ? "True" : "False",
                         d.scaling_limited_reason, d.scaling_limited_message, generation, ""},
                        now_wall);
      if (!d.scaling_active) {
        (void)events_.Record(pool, kube::kEventWarning, "FailedGetMetrics",
                             d.scaling_active_message);
      }
      if (d.changed) {
        json scale = {{"apiVersion", "autoscaling/v1"},
                      {"kind", "Scale"},
                      {"metadata", {{"name", name}, {"namespace", ns}}},
                      {"spec", {{"replicas", d.desired}}}};
        Result<json> r = pools.UpdateScale(name, scale);
        if (!r.ok()) return r.status();
        replicas = d.desired;
        if (metrics_) {
          metrics_->RecordScaleEvent(
              ns, name, d.desired > replicas_before ? ScaleDirection::kUp : ScaleDirection::kDown);
        }
        (void)events_.Record(pool, kube::kEventNormal,
                             d.desired > replicas_before ? "ScaledUp" : "ScaledDown", d.reason);
      }
    }
    next_autoscale = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::max(Mono::duration(0), state.next_autoscale - Mono::now()));
  } else if (metrics_) {
    metrics_->ForgetAutoscaler(ns, name);
  }
  pool["spec"]["replicas"] = replicas;

  // 4. Placement: how many replicas each region should have.
  std::vector<placement::RegionTarget> targets;
  int64_t unplaced = 0;
  std::set<std::string> spilled;
  bool settled = false;
  const json* placement_json = pool.contains("/spec/placement"_json_pointer)
                                   ? &pool.at("/spec/placement"_json_pointer)
                                   : nullptr;
  api::RolloutPoolSpecPlacement placement_spec;
  if (placement_json != nullptr &&
      api::FromJson(*placement_json, "spec.placement", &placement_spec).ok()) {
    // Kubernetes timestamps have whole seconds, so an elapsed time computed from them can exceed
    // the real one by up to a second: wait one second more, so that a replica never moves before
    // spilloverAfterSeconds have really passed (0 still moves at once).
    const int64_t spill_after =
        placement_spec.spillover_after_seconds > 0 ? placement_spec.spillover_after_seconds + 1 : 0;
    const std::string refusals_key = placement_json->dump() + "/" + hash;
    if (state.refusals_key != refusals_key) {
      state.refusals.clear();
      state.refusals_key = refusals_key;
    }
    if (placement_spec.strategy == "Priority") {
      state.refusals =
          placement::RememberRefusals(state.refusals, facts, replicas, now_s, spill_after);
    } else {
      state.refusals.clear();
    }
    placement::SpilloverPlan plan =
        placement::PlanWithRefusals(placement_spec, replicas, facts, state.refusals);
    targets = plan.plan.targets;
    unplaced = plan.plan.unplaced;
    settled = plan.settled;
    for (const std::string& name : plan.spill) {
      spilled.insert(name);
      std::string from;
      for (const placement::ReplicaFacts& f : facts) {
        if (f.name == name) from = f.region;
      }
      (void)events_.Record(pool, kube::kEventNormal, "SpilledOver",
                           "Replica " + name + " is unschedulable in region " + from +
                               ", which has refused replicas for " +
                               std::to_string(placement_spec.spillover_after_seconds) +
                               "s; placing it in the next region");
    }
    if (settled && !state.reported_settled) {
      (void)events_.Record(pool, kube::kEventWarning, "InsufficientCapacity",
                           SettledMessage(state.refusals, facts));
    }
    state.reported_settled = settled;
  } else {
    targets = {{"", replicas}};
  }

  // Surplus replicas: drain, then delete.
  std::set<std::string> leaving;
  for (const std::string& n : placement::ChooseReplicasToRemove(facts, targets)) leaving.insert(n);
  for (const json& pod : pods) {
    const std::string pod_name = Str(pod, "/metadata/name");
    const std::string phase = Str(pod, "/status/phase");
    const bool draining =
        pod.contains("/metadata/annotations/sluice.dev~1draining-since"_json_pointer);
    if (leaving.count(pod_name) || draining) {
      SLUICE_RETURN_IF_ERROR(drain_or_delete(pod, spilled.count(pod_name)
                                                      ? "spill-over: its region has no room"
                                                  : leaving.count(pod_name) ? "scale-down"
                                                                            : "drain"));
    } else if ((phase == "Failed" || phase == "Succeeded") &&
               !pod.contains("/metadata/deletionTimestamp"_json_pointer)) {
      // Ended: delete now, re-create after a back-off that grows with each failure.
      auto& [failures, at] = state.recreate[pod_name];
      ++failures;
      at = Mono::now() + std::min(std::chrono::seconds(300),
                                  std::chrono::seconds(1 << std::min(failures - 1, 8)));
      Result<json> r = pods_client.Delete(pod_name);
      if (!r.ok() && r.status().code() != StatusCode::kNotFound) return r.status();
      (void)events_.Record(
          pool, kube::kEventWarning, "ReplicaFailed",
          "Replica " + pod_name + " ended (" + phase + "); it is re-created after a back-off");
    }
  }

  // Missing replicas: create them (respecting back-off).
  std::map<std::string, const json*> region_by_name;
  if (placement_json != nullptr && placement_json->contains("regions")) {
    // Pointers into the pool object itself (value() would return a copy).
    for (const json& r : placement_json->at("regions")) region_by_name[r.value("name", "")] = &r;
  }
  for (const auto& [region, index] : placement::ReplicasToCreate(facts, targets)) {
    const json* region_json = region.empty() ? nullptr : region_by_name[region];
    json desired = DesiredReplicaPod(pool, hosted, region_json, index, *dataflow, options_.images);
    const std::string pod_name = desired["metadata"]["name"];
    if (auto it = state.recreate.find(pod_name);
        it != state.recreate.end() && Mono::now() < it->second.second) {
      continue;
    }
    Result<json> r = pods_client.Create(desired);
    if (!r.ok() && r.status().code() != StatusCode::kAlreadyExists) return r.status();
  }

  // Rolling update: replace replicas of an old template, one region at a time, within
  // maxUnavailable.
  int64_t unavailable = 0;
  for (const ReplicaObservation& o : observed) {
    if (!o.draining && !o.ready) ++unavailable;
  }
  const int64_t budget = MaxUnavailable(pool) - unavailable;
  if (budget > 0) {
    std::string region_in_update;
    int64_t replaced = 0;
    for (const placement::RegionTarget& t : targets) {
      for (const ReplicaObservation& o : observed) {
        if (o.region != t.region || o.current || o.draining || leaving.count(o.name)) continue;
        if (!region_in_update.empty() && region_in_update != t.region) break;
        if (replaced >= budget) break;
        region_in_update = t.region;
        for (const json& pod : pods) {
          if (Str(pod, "/metadata/name") == o.name) {
            SLUICE_RETURN_IF_ERROR(drain_or_delete(pod, "its template changed"));
          }
        }
        ++replaced;
      }
      if (!region_in_update.empty()) break;
    }
  }

  // 6. Status.
  std::vector<api::Condition> base = conditions;
  for (const api::Condition& c : state.scaling_conditions) {
    api::SetCondition(base, c, now_wall);
  }
  json status = PoolStatus(pool, observed, targets, unplaced, base, now_wall,
                           settled ? SettledMessage(state.refusals, facts) : "");
  if (metrics_) metrics_->SetReplicas(ns, name, ReplicaCountsOf(pool, status, targets, unplaced));
  if (status != pool.value("status", json::object())) {
    Result<json> r =
        pools.Patch(name, kube::PatchType::kMerge, json{{"status", status}}.dump(), {}, "status");
    if (!r.ok() && r.status().code() != StatusCode::kNotFound) return r.status();
  }
  std::chrono::milliseconds again = options_.status_period;
  if (next_autoscale && *next_autoscale < again) again = *next_autoscale;
  // Waiting on a drain or a back-off: look again soon.
  for (const ReplicaObservation& o : observed) {
    if (o.draining) again = std::min(again, std::chrono::milliseconds(500));
  }
  if (!state.recreate.empty()) again = std::min(again, std::chrono::milliseconds(1000));
  return ReconcileResult{again};
}

}  // namespace sluice::controllers
