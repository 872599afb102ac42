#include "operator/controllers/trainerjob/reconciler.h"

#include <algorithm>

#include "api/meta.h"
#include "api/validation.h"
#include "common/http/bearer_token.h"
#include "common/http/client.h"
#include "common/openapi/field_error.h"
#include "common/time_format.h"
#include "kube/core_resources.h"
#include "kube/kubeconfig.h"
#include "operator/controllers/core_resources.h"
#include "operator/controllers/data_exhaustion.h"
#include "operator/controllers/ensure_certificates.h"
#include "operator/controllers/labels.h"
#include "operator/controllers/namespace_certificates.h"
#include "operator/controllers/network_policies.h"
#include "operator/controllers/object_meta.h"
#include "operator/controllers/reference_indexes.h"
#include "operator/controllers/status_write.h"
#include "operator/controllers/trainerjob/desired_pods.h"
#include "operator/controllers/trainerjob/final_progress.h"
#include "operator/controllers/trainerjob/final_weights.h"
#include "operator/controllers/trainerjob/job_facts.h"
#include "operator/controllers/trainerjob/rank_report.h"

namespace sluice::controllers {

using nlohmann::json;

namespace {

const kube::GroupVersionResource kJobs{"sluice.dev", "v1alpha1", "trainerjobs", true};

}  // namespace

TrainerJobController::TrainerJobController(kube::DynamicClient& client,
                                           TrainerJobInformers informers,
                                           kube::EventRecorder& events,
                                           TrainerJobControllerOptions options)
    : client_(client),
      informers_(informers),
      events_(events),
      options_(std::move(options)),
      clock_(ClockOrSystem(options_.clock)) {}

std::vector<std::string> TrainerJobController::JobsReferencing(const json& object,
                                                               const std::string& field) const {
  std::vector<std::string> keys;
  const std::string ns = StringAt(object, "/metadata/namespace", "default");
  const std::string name = StringAt(object, "/metadata/name");
  const bool policy = field == "policyRef";
  for (const kube::ObjectPtr& j : Referencing(
           informers_.jobs->store(), policy ? kPolicyRefIndex : kDataflowRefIndex,
           policy ? kube::IndexFunc(JobPolicyRefs) : kube::IndexFunc(DataflowRefs), ns, name)) {
    keys.push_back(ns + "/" + StringAt(*j, "/metadata/name"));
  }
  return keys;
}

// The job's status as one reconcile changes it, written once and only when it changed.
class TrainerJobController::StatusEditor {
 public:
  StatusEditor(const json& job, Clock::WallTime now)
      : job_(job),
        status_(job.value("status", json::object())),
        conditions_(api::ConditionsOrEmpty(status_.value("conditions", json()))),
        generation_(job.value("/metadata/generation"_json_pointer, int64_t{0})),
        now_(now) {}

  json& status() { return status_; }
  Clock::WallTime now() const { return now_; }

  // Sets a condition; true when it changed.
  bool Set(const std::string& type, bool ok, const std::string& reason, const std::string& msg) {
    return api::SetCondition(conditions_,
                             {type, ok ? "True" : "False", reason, msg, generation_, ""}, now_);
  }

  Status Write(kube::DynamicClient& client) {
    status_["conditions"] = api::ToJson(conditions_);
    status_["observedGeneration"] = generation_;
    // Conditional: status written from a stale read (say, an older restart count) is refused
    // with 409 instead of undoing a newer write.
    return WriteStatusIfChanged(client, kJobs, job_, status_,
                                StatusPrecondition::kUnchangedSinceRead);
  }

 private:
  const json& job_;
  json status_;
  std::vector<api::Condition> conditions_;
  int64_t generation_;
  Clock::WallTime now_;
};

Result<std::vector<json>> TrainerJobController::OwnedPods(const json& job) const {
  std::vector<json> pods;
  const std::string ns = Namespace(job);
  const std::string job_label = JobLabelValue(Name(job));
  SLUICE_ASSIGN_OR_RETURN(
      std::vector<kube::ObjectPtr> owned,
      informers_.pods->store().ByIndex(kube::kOwnerUidIndex, StringAt(job, "/metadata/uid")));
  for (const kube::ObjectPtr& p : owned) {
    if (Namespace(*p) == ns &&
        StringAt(*p, "/metadata/labels/sluice.dev~1trainer-job") == job_label) {
      pods.push_back(*p);
    }
  }
  return pods;
}

json TrainerJobController::AskRankZero(const json& job, const std::vector<json>& pods,
                                       const trainerjob::JobFacts& facts) const {
  const json* rank0 = nullptr;  // The last current rank-0 Pod read, as the plan counts it.
  for (size_t i = 0; i < pods.size(); ++i) {
    if (facts.ranks[i].current && facts.ranks[i].rank == 0) rank0 = &pods[i];
  }
  if (rank0 == nullptr || StringAt(*rank0, "/status/phase") != "Running" ||
      StringAt(*rank0, "/status/podIP").empty()) {
    return json();
  }
  // The pod's IP, which the ranks' certificate cannot name: verify rank 0's stable name instead.
  kube::ObjectPtr ca_secret =
      informers_.secrets->store().Get(Namespace(job) + "/" + kNamespaceCaSecretName);
  Result<tls::CertifiedKey> ca =
      ca_secret ? CaFromSecret(*ca_secret) : Result<tls::CertifiedKey>(Status::NotFound("no CA"));
  if (!ca.ok()) return json();
  http::ClientOptions options;
  options.base_url =
      "https://" + StringAt(*rank0, "/status/podIP") + ":" + std::to_string(kTrainerPort);
  options.tls.ca_pem = ca->cert_pem;
  options.tls.server_name = RankServerName(job, 0);
  options.connect_timeout = options_.worker_timeout;
  options.read_timeout = options_.worker_timeout;
  options.max_attempts = 1;
  const std::string df_name = StringAt(job, "/spec/dataflowRef/name");
  kube::ObjectPtr secret =
      informers_.secrets->store().Get(Namespace(job) + "/" + DataflowTokenSecretName(df_name));
  Result<std::string> token =
      secret ? kube::DecodeBase64(secret->value("/data/token"_json_pointer, std::string()))
             : Result<std::string>(Status::NotFound("no token"));
  if (token.ok() && !token->empty()) options.token = http::TokenSource::FromValue(*token);
  Result<std::unique_ptr<http::Client>> client = http::Client::Create(options);
  if (!client.ok()) return json();
  Result<http::Response> r = (*client)->Get("/v1/status");
  if (!r.ok() || r->status != 200) return json();
  json report = json::parse(r->body, nullptr, false);
  return report.is_object() ? report : json();
}

std::vector<std::string> TrainerJobController::LaggingPools(const std::string& ns,
                                                            const std::string& policy,
                                                            int64_t final_version) const {
  std::vector<json> pools;
  for (const kube::ObjectPtr& p : informers_.pools->store().List()) {
    if (Namespace(*p) == ns) pools.push_back(*p);
  }
  return PoolsWithoutFinalWeights(pools, policy, final_version);
}

Status TrainerJobController::DeleteRanks(const json& job, const std::vector<std::string>& names,
                                         const std::string& why) {
  kube::ResourceClient pods = client_.Resource(kPods, Namespace(job));
  for (const std::string& name : names) {
    Result<json> r = pods.Delete(name);
    if (!r.ok() && r.status().code() != StatusCode::kNotFound) return r.status();
  }
  if (!names.empty()) {
    (void)events_.Record(job, kube::kEventNormal, "DeletedRanks", "Deleted the rank pods: " + why);
  }
  return Status::Ok();
}

Status TrainerJobController::EnsureChildren(const json& job, const json& policy,
                                            const json& dataflow) {
  const std::string ns = Namespace(job);
  auto ensure = [&](const kube::GroupVersionResource& gvr, kube::Informer* informer,
                    const json& desired, const char* compare) -> Status {
    const std::string child = desired["metadata"]["name"];
    kube::ObjectPtr current = informer->store().Get(ns + "/" + child);
    kube::ResourceClient rc = client_.Resource(gvr, ns);
    if (!current) {
      Result<json> r = rc.Create(desired);
      return r.ok() || r.status().code() == StatusCode::kAlreadyExists ? Status::Ok() : r.status();
    }
    if (current->value(compare, json()) != desired.value(compare, json())) {
      json updated = *current;
      updated[compare] = desired[compare];
      return rc.Update(updated).status();
    }
    return Status::Ok();
  };
  SLUICE_RETURN_IF_ERROR(
      ensure(kServices, informers_.services, DesiredTrainerService(job), "spec"));
  SLUICE_RETURN_IF_ERROR(ensure(kConfigMaps, informers_.config_maps,
                                DesiredTrainerConfigMap(job, policy, dataflow), "data"));
  // The ranks' serving certificate, from the namespace's CA.
  const Clock::WallTime now = clock_.WallNow();
  SLUICE_ASSIGN_OR_RETURN(tls::CertifiedKey ca,
                          EnsureNamespaceCa(client_, *informers_.secrets, events_, job, ns, now));
  SLUICE_RETURN_IF_ERROR(EnsureServingSecret(client_, *informers_.secrets, events_, job,
                                             TrainerTlsSecretMeta(job), TrainerServingHosts(job),
                                             RankServerName(job, 0), ca, now));
  if (informers_.network_policies == nullptr) return Status::Ok();
  const json gang = DesiredGangNetworkPolicy(job, dataflow);
  if (!gang.is_null())
    return ensure(kube::kNetworkPolicies, informers_.network_policies, gang, "spec");
  // Switched off on the Dataflow: delete the job's policy, never one of that name it does not
  // control.
  const std::string child = GangNetworkPolicyName(Name(job));
  kube::ObjectPtr current = informers_.network_policies->store().Get(ns + "/" + child);
  if (!current || !ControlledBy(*current, StringAt(job, "/metadata/uid"))) return Status::Ok();
  kube::DeleteOptions options;
  options.precondition_uid = StringAt(*current, "/metadata/uid");
  Result<json> r = client_.Resource(kube::kNetworkPolicies, ns).Delete(child, options);
  return r.ok() || r.status().code() == StatusCode::kNotFound ? Status::Ok() : r.status();
}

bool TrainerJobController::CacheLagsRestart(const std::string& key, const json& job) {
  std::lock_guard<std::mutex> lock(restarts_mu_);
  const auto it = restarts_written_.find(key);
  if (it == restarts_written_.end()) return false;
  if (it->second.first == StringAt(job, "/metadata/uid") &&
      job.value("/status/restarts"_json_pointer, int64_t{0}) < it->second.second) {
    return true;
  }
  restarts_written_.erase(it);
  return false;
}

void TrainerJobController::RememberRestart(const std::string& key, const json& job,
                                           int64_t restarts) {
  std::lock_guard<std::mutex> lock(restarts_mu_);
  restarts_written_[key] = {StringAt(job, "/metadata/uid"), restarts};
}

Result<ReconcileResult> TrainerJobController::Reconcile(const std::string& key) {
  Result<ReconcileResult> r = Sync(key);
  // A write from a stale read was refused: the watch brings the newer job, read it then.
  if (!r.ok() && r.status().code() == StatusCode::kConflict) {
    return ReconcileResult{std::chrono::milliseconds(100)};
  }
  return r;
}

Result<ReconcileResult> TrainerJobController::Sync(const std::string& key) {
  kube::ObjectPtr cached = informers_.jobs->store().Get(key);
  if (!cached || cached->contains("/metadata/deletionTimestamp"_json_pointer)) {
    std::lock_guard<std::mutex> lock(restarts_mu_);
    restarts_written_.erase(key);
    return ReconcileResult{};
  }
  // The watch has not delivered this controller's gang restart yet: wait for it.
  if (CacheLagsRestart(key, *cached)) return ReconcileResult{std::chrono::milliseconds(100)};
  // Another controller (e.g. Kueue's MultiKueue) owns this job: hands off.
  if (StringAt(*cached, "/spec/managedBy", kOperatorManagedBy) != kOperatorManagedBy) {
    return ReconcileResult{};
  }
  json job = *cached;
  const std::string ns = Namespace(job);
  StatusEditor status(*cached, clock_.WallNow());
  auto blocked = [&](const std::string& reason, const std::string& message) -> Status {
    if (status.Set("Admitted", false, reason, message)) {
      (void)events_.Record(job, kube::kEventWarning, reason, message);
    }
    if (!status.status().contains("phase")) status.status()["phase"] = "Pending";
    return status.Write(client_);
  };

  json defaulted = job;
  Status defaulting = api::DefaultObject(defaulted);
  api::ValidationReport report;
  if (defaulting.ok()) report = api::ValidateObject(defaulted);
  if (!defaulting.ok() || !report.ok()) {
    SLUICE_RETURN_IF_ERROR(blocked(
        "InvalidSpec", defaulting.ok() ? openapi::Describe(report.errors) : defaulting.message()));
    return ReconcileResult{};
  }
  job = defaulted;
  const std::string policy_name = StringAt(job, "/spec/policyRef/name");
  const std::string df_name = StringAt(job, "/spec/dataflowRef/name");
  kube::ObjectPtr policy = informers_.policies->store().Get(ns + "/" + policy_name);
  kube::ObjectPtr dataflow = informers_.dataflows->store().Get(ns + "/" + df_name);
  if (!policy) {
    SLUICE_RETURN_IF_ERROR(
        blocked("PolicyNotFound", "spec.policyRef: Policy \"" + policy_name + "\" not found"));
    return ReconcileResult{};
  }
  if (!dataflow) {
    SLUICE_RETURN_IF_ERROR(
        blocked("DataflowNotFound", "spec.dataflowRef: Dataflow \"" + df_name + "\" not found"));
    return ReconcileResult{};
  }

  // The facts: the rank Pods, rank 0's report while the job runs, the pools lacking a succeeded
  // job's final weights.
  SLUICE_ASSIGN_OR_RETURN(const std::vector<json> pods, OwnedPods(job));
  const int attempt = static_cast<int>(job.value("/status/restarts"_json_pointer, int64_t{0}));
  const json rank0 = DesiredRankPod(job, *policy, *dataflow, 0, attempt, options_.images);
  trainerjob::JobFacts facts =
      trainerjob::JobFactsOf(job, pods, rank0["metadata"]["labels"][kTemplateHashLabel]);
  facts.gang_timeout_seconds = options_.gang_timeout.count();
  json rank0_report;
  const bool finished = facts.phase == "Succeeded" || facts.phase == "Failed";
  if (!finished && !facts.suspend) {
    rank0_report = AskRankZero(job, pods, facts);
    if (rank0_report.is_object() && rank0_report.value("phase", json()).is_string()) {
      facts.report_phase = rank0_report["phase"].get<std::string>();
    }
    facts.starved = StarvedMessage(rank0_report, df_name);
  }
  if (facts.phase == "Succeeded" && informers_.pools != nullptr) {
    facts.lagging_pools = LaggingPools(ns, policy_name, facts.final_version);
  }
  const int64_t now_s =
      std::chrono::duration_cast<std::chrono::seconds>(status.now().time_since_epoch()).count();
  return Apply(job, trainerjob::Plan(facts, now_s), rank0_report, *policy, *dataflow, status);
}

Result<ReconcileResult> TrainerJobController::Apply(const json& job,
                                                    const trainerjob::JobPlan& plan,
                                                    const json& report, const json& policy,
                                                    const json& dataflow, StatusEditor& status) {
  using trainerjob::Verdict;
  const auto requeue = [&](std::chrono::milliseconds fallback) {
    return ReconcileResult{plan.requeue_after.value_or(fallback)};
  };
  json& st = status.status();
  switch (plan.verdict) {
    case Verdict::kServeFinalWeights:
      return requeue(std::chrono::seconds(1));
    case Verdict::kFinished:
      SLUICE_RETURN_IF_ERROR(DeleteRanks(job, plan.delete_pods, plan.message));
      if (plan.delete_job) {
        Result<json> r = client_.Resource(kJobs, Namespace(job))
                             .Delete(Name(job), {"Background", std::nullopt, "", "", false});
        if (!r.ok() && r.status().code() != StatusCode::kNotFound) return r.status();
      }
      return ReconcileResult{plan.requeue_after};
    case Verdict::kSuspended:
      SLUICE_RETURN_IF_ERROR(DeleteRanks(job, plan.delete_pods, plan.message));
      if (status.Set("Suspended", true, "JobSuspended",
                     "runPolicy.suspend is true; rank pods deleted")) {
        (void)events_.Record(job, kube::kEventNormal, "Suspended", "The job is suspended");
      }
      st["phase"] = "Suspended";
      SLUICE_RETURN_IF_ERROR(status.Write(client_));
      return ReconcileResult{};
    default:
      break;
  }
  if (plan.resumed) {
    status.Set("Suspended", false, "JobResumed", "runPolicy.suspend is false");
    st.erase("startTime");  // The deadline's clock restarts on resume.
    st["phase"] = "Pending";
    (void)events_.Record(job, kube::kEventNormal, "Resumed", "The job resumed");
  }
  SLUICE_RETURN_IF_ERROR(EnsureChildren(job, policy, dataflow));
  if (plan.verdict == Verdict::kClearStale) {
    // Old-attempt or old-template Pods are cleared before the new gang starts.
    kube::ResourceClient pods = client_.Resource(kPods, Namespace(job));
    for (const std::string& name : plan.delete_pods) {
      Result<json> r = pods.Delete(name);
      if (!r.ok() && r.status().code() != StatusCode::kNotFound) return r.status();
    }
    if (plan.resumed) SLUICE_RETURN_IF_ERROR(status.Write(client_));
    return requeue(std::chrono::milliseconds(500));
  }

  // Checkpoints the resume skipped as damaged: each new one once, with a Warning Event.
  for (const json& c : trainerjob::ApplyRankZeroReport(report, st)) {
    (void)events_.Record(job, kube::kEventWarning, "CheckpointSkipped",
                         "the trainer's resume skipped the damaged checkpoint of step " +
                             std::to_string(c.value("step", int64_t{0})) + ": " +
                             c.value("reason", std::string()));
  }
  auto finish = [&](bool ok, const std::string& reason) -> Status {
    st["phase"] = ok ? "Succeeded" : "Failed";
    st["completionTime"] = FormatTime(status.now());
    status.Set(ok ? "Complete" : "Failed", true, reason, plan.message);
    status.Set("Running", false, reason, plan.message);
    (void)events_.Record(job, ok ? kube::kEventNormal : kube::kEventWarning, reason, plan.message);
    SLUICE_RETURN_IF_ERROR(status.Write(client_));
    // A success's ranks go once finished, when the pools hold the final weights.
    return ok ? Status::Ok() : DeleteRanks(job, plan.delete_pods, plan.message);
  };
  const int64_t replicas = job.value("/spec/replicas"_json_pointer, int64_t{1});
  const int64_t restarts = job.value("/status/restarts"_json_pointer, int64_t{0});
  switch (plan.verdict) {
    case Verdict::kSucceeded: {
      // The last report read may predate the last steps (final_progress.h).
      const TrainerProgress last =
          FinalProgress({st.value("step", int64_t{0}), st.value("version", int64_t{0})},
                        job.value("/spec/warmStart/steps"_json_pointer, int64_t{0}),
                        job.value("/spec/steps"_json_pointer, int64_t{0}));
      st["step"] = last.step;
      st["version"] = last.version;
      SLUICE_RETURN_IF_ERROR(finish(true, "StepsCompleted"));
      return requeue(options_.status_period);
    }
    case Verdict::kStarved:
      status.Set(kStarvedCondition, true, kDataflowDrainedReason, plan.message);
      SLUICE_RETURN_IF_ERROR(finish(false, kDataExhaustedReason));
      return ReconcileResult{};
    case Verdict::kBackoffLimitExceeded:
      SLUICE_RETURN_IF_ERROR(finish(false, "BackoffLimitExceeded"));
      return ReconcileResult{};
    case Verdict::kDeadlineExceeded:
      SLUICE_RETURN_IF_ERROR(finish(false, "DeadlineExceeded"));
      return ReconcileResult{};
    case Verdict::kGangRestart: {
      const int64_t limit = job.value("/spec/runPolicy/backoffLimit"_json_pointer, int64_t{3});
      st["restarts"] = restarts + 1;
      st["phase"] = "Pending";
      status.Set("Running", false, "GangRestarting", plan.failure + "; restarting every rank");
      (void)events_.Record(job, kube::kEventWarning, "GangRestarted",
                           plan.failure + "; restarting the gang (attempt " +
                               std::to_string(restarts + 1) + " of " + std::to_string(limit) + ")");
      SLUICE_RETURN_IF_ERROR(status.Write(client_));
      RememberRestart(Namespace(job) + "/" + Name(job), job, restarts + 1);
      SLUICE_RETURN_IF_ERROR(DeleteRanks(job, plan.delete_pods, plan.message));
      return requeue(options_.status_period);
    }
    default:
      break;
  }

  // kRun: the missing ranks of this attempt, all together; admission and running.
  kube::ResourceClient pods = client_.Resource(kPods, Namespace(job));
  for (int rank : plan.create_ranks) {
    Result<json> r = pods.Create(
        DesiredRankPod(job, policy, dataflow, rank, static_cast<int>(restarts), options_.images));
    if (!r.ok() && r.status().code() != StatusCode::kAlreadyExists) return r.status();
  }
  if (plan.admitted == true) {
    status.Set("Admitted", true, "GangScheduled", "every rank has a node");
  } else if (plan.admitted == false) {
    status.Set("Admitted", false, "GangPending",
               "not every rank can be scheduled (" + std::to_string(plan.running) + " of " +
                   std::to_string(replicas) + " running); waiting for capacity");
  }
  if (plan.gang_running) {
    if (!st.contains("startTime")) st["startTime"] = FormatTime(status.now());
    st["phase"] = "Running";
    if (status.Set("Running", true, "GangRunning",
                   "all " + std::to_string(replicas) + " ranks are running")) {
      (void)events_.Record(job, kube::kEventNormal, "GangRunning",
                           "All " + std::to_string(replicas) + " ranks are running");
    }
  } else if (st.value("phase", "Pending") != "Running") {
    st["phase"] = "Pending";
  }
  if (!st.contains("restarts")) st["restarts"] = restarts;
  SLUICE_RETURN_IF_ERROR(status.Write(client_));
  return ReconcileResult{options_.status_period};
}

}  // namespace sluice::controllers
