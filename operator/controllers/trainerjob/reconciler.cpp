#include "operator/controllers/trainerjob/reconciler.h"

#include <algorithm>

#include "api/meta.h"
#include "api/validation.h"
#include "common/http/bearer_token.h"
#include "common/http/client.h"
#include "common/openapi/field_error.h"
#include "common/time_format.h"
#include "kube/kubeconfig.h"
#include "operator/controllers/data_exhaustion.h"
#include "operator/controllers/labels.h"
#include "operator/controllers/object_meta.h"
#include "operator/controllers/reference_indexes.h"
#include "operator/controllers/trainerjob/desired_pods.h"
#include "operator/controllers/trainerjob/final_progress.h"
#include "operator/controllers/trainerjob/final_weights.h"
#include "operator/controllers/trainerjob/skipped_checkpoints.h"

namespace sluice::controllers {

using nlohmann::json;

namespace {

const kube::GroupVersionResource kJobs{"sluice.dev", "v1alpha1", "trainerjobs", true};
const kube::GroupVersionResource kPods{"", "v1", "pods", true};
const kube::GroupVersionResource kServices{"", "v1", "services", true};
const kube::GroupVersionResource kConfigMaps{"", "v1", "configmaps", true};

int64_t WallSeconds(const std::string& rfc3339) {
  Result<Clock::WallTime> t = ParseTime(rfc3339);
  if (!t.ok()) return 0;
  return std::chrono::duration_cast<std::chrono::seconds>(t->time_since_epoch()).count();
}

bool Unschedulable(const json& pod) {
  for (const json& c : pod.value("/status/conditions"_json_pointer, json::array())) {
    if (c.value("type", "") == "PodScheduled" && c.value("status", "") == "False" &&
        c.value("reason", "") == "Unschedulable") {
      return true;
    }
  }
  return false;
}

// Whether rank 0's pod of the job still runs (not being deleted): a finished trainer serving its
// final weights.
bool RankZeroRunning(const std::vector<json>& pods) {
  for (const json& p : pods) {
    if (Str(p, "/metadata/labels/sluice.dev~1rank", "0") == "0" &&
        !p.contains("/metadata/deletionTimestamp"_json_pointer) &&
        Str(p, "/status/phase") == "Running") {
      return true;
    }
  }
  return false;
}

std::string JoinedList(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

}  // namespace

TrainerJobController::TrainerJobController(kube::DynamicClient& client,
                                           TrainerJobInformers informers,
                                           kube::EventRecorder& events,
                                           TrainerJobControllerOptions options)
    : client_(client), informers_(informers), events_(events), options_(std::move(options)) {}

std::vector<std::string> TrainerJobController::JobsReferencing(const json& object,
                                                               const std::string& field) const {
  std::vector<std::string> keys;
  const std::string ns = Str(object, "/metadata/namespace", "default");
  const std::string name = Str(object, "/metadata/name");
  const bool policy = field == "policyRef";
  for (const kube::ObjectPtr& j : Referencing(
           informers_.jobs->store(), policy ? kPolicyRefIndex : kDataflowRefIndex,
           policy ? kube::IndexFunc(JobPolicyRefs) : kube::IndexFunc(DataflowRefs), ns, name)) {
    keys.push_back(ns + "/" + Str(*j, "/metadata/name"));
  }
  return keys;
}

Result<ReconcileResult> TrainerJobController::Reconcile(const std::string& key) {
  kube::ObjectPtr cached = informers_.jobs->store().Get(key);
  if (!cached || cached->contains("/metadata/deletionTimestamp"_json_pointer)) {
    return ReconcileResult{};
  }
  json job = *cached;
  // Another controller (e.g. Kueue's MultiKueue) owns this job: hands off.
  if (Str(job, "/spec/managedBy", kOperatorManagedBy) != kOperatorManagedBy)
    return ReconcileResult{};
  const std::string ns = Str(job, "/metadata/namespace", "default");
  const std::string name = Str(job, "/metadata/name");
  kube::ResourceClient jobs = client_.Resource(kJobs, ns);
  kube::ResourceClient pods_client = client_.Resource(kPods, ns);
  const auto now_wall = std::chrono::system_clock::now();
  const int64_t now_s =
      std::chrono::duration_cast<std::chrono::seconds>(now_wall.time_since_epoch()).count();
  const int64_t generation = job.value("/metadata/generation"_json_pointer, int64_t{0});

  json status = job.value("status", json::object());
  std::vector<api::Condition> conditions;
  if (status.contains("conditions")) {
    Result<std::vector<api::Condition>> old =
        api::ConditionsFromJson(status["conditions"], "status.conditions");
    if (old.ok()) conditions = *old;
  }
  auto set = [&](const char* type, bool ok, const std::string& reason, const std::string& msg) {
    return api::SetCondition(conditions, {type, ok ? "True" : "False", reason, msg, generation, ""},
                             now_wall);
  };
  auto write = [&]() -> Status {
    status["conditions"] = api::ToJson(conditions);
    status["observedGeneration"] = generation;
    if (status == job.value("status", json::object())) return Status::Ok();
    Result<json> r =
        jobs.Patch(name, kube::PatchType::kMerge, json{{"status", status}}.dump(), {}, "status");
    return r.ok() || r.status().code() == StatusCode::kNotFound ? Status::Ok() : r.status();
  };
  auto blocked = [&](const std::string& reason, const std::string& message) -> Status {
    if (set("Admitted", false, reason, message)) {
      (void)events_.Record(job, kube::kEventWarning, reason, message);
    }
    if (!status.contains("phase")) status["phase"] = "Pending";
    return write();
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
  const std::string policy_name = Str(job, "/spec/policyRef/name");
  const std::string df_name = Str(job, "/spec/dataflowRef/name");
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

  // The job's rank pods, by rank, with their attempt.
  std::vector<json> pods;
  const std::string job_label = JobLabelValue(name);
  Result<std::vector<kube::ObjectPtr>> owned =
      informers_.pods->store().ByIndex(kube::kOwnerUidIndex, Str(job, "/metadata/uid"));
  if (!owned.ok()) return owned.status();
  for (const kube::ObjectPtr& p : *owned) {
    if (Str(*p, "/metadata/namespace", "default") == ns &&
        Str(*p, "/metadata/labels/sluice.dev~1trainer-job") == job_label) {
      pods.push_back(*p);
    }
  }
  auto delete_pods = [&](const std::string& why) -> Status {
    int deleted = 0;  // Pods already going are not deleted, nor reported, again.
    for (const json& p : pods) {
      if (p.contains("/metadata/deletionTimestamp"_json_pointer)) continue;
      Result<json> r = pods_client.Delete(Str(p, "/metadata/name"));
      if (!r.ok() && r.status().code() != StatusCode::kNotFound) return r.status();
      ++deleted;
    }
    if (deleted > 0) {
      (void)events_.Record(job, kube::kEventNormal, "DeletedRanks",
                           "Deleted the rank pods: " + why);
    }
    return Status::Ok();
  };
  const std::string phase = Str(status, "/phase", "Pending");

  // Finished jobs: nothing runs; the TTL deletes the job.
  if (phase == "Succeeded" || phase == "Failed") {
    std::string why = "the job finished";
    if (phase == "Succeeded" && informers_.pools != nullptr && RankZeroRunning(pods)) {
      std::vector<json> pools;
      for (const kube::ObjectPtr& p : informers_.pools->store().List()) {
        if (Str(*p, "/metadata/namespace", "default") == ns) pools.push_back(*p);
      }
      const int64_t final_version = status.value("version", int64_t{0});
      const std::vector<std::string> lagging =
          PoolsWithoutFinalWeights(pools, policy_name, final_version);
      if (KeepRanksForFinalWeights(lagging, WallSeconds(Str(status, "/completionTime")), now_s)) {
        return ReconcileResult{std::chrono::seconds(1)};
      }
      why += lagging.empty() ? "; every rollout pool holds version " + std::to_string(final_version)
                             : "; the final weights' grace passed before " + JoinedList(lagging) +
                                   " loaded them";
    }
    SLUICE_RETURN_IF_ERROR(delete_pods(why));
    if (job.contains("/spec/runPolicy/ttlSecondsAfterFinished"_json_pointer)) {
      const int64_t ttl =
          job.value("/spec/runPolicy/ttlSecondsAfterFinished"_json_pointer, int64_t{0});
      const int64_t finished = WallSeconds(Str(status, "/completionTime"));
      if (finished > 0 && now_s >= finished + ttl) {
        Result<json> r = jobs.Delete(name, {"Background", std::nullopt, "", "", false});
        if (!r.ok() && r.status().code() != StatusCode::kNotFound) return r.status();
        return ReconcileResult{};
      }
      if (finished > 0) return ReconcileResult{std::chrono::seconds(finished + ttl - now_s)};
    }
    return ReconcileResult{};
  }

  // Suspension: pods go, state stays.
  if (job.value("/spec/runPolicy/suspend"_json_pointer, false)) {
    SLUICE_RETURN_IF_ERROR(delete_pods("the job is suspended"));
    if (set("Suspended", true, "JobSuspended", "runPolicy.suspend is true; rank pods deleted")) {
      (void)events_.Record(job, kube::kEventNormal, "Suspended", "The job is suspended");
    }
    status["phase"] = "Suspended";
    SLUICE_RETURN_IF_ERROR(write());
    return ReconcileResult{};
  }
  if (phase == "Suspended") {
    set("Suspended", false, "JobResumed", "runPolicy.suspend is false");
    status.erase("startTime");  // The deadline's clock restarts on resume.
    (void)events_.Record(job, kube::kEventNormal, "Resumed", "The job resumed");
  }

  // The Service and config every rank uses.
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
                                DesiredTrainerConfigMap(job, *policy, *dataflow), "data"));

  const int64_t replicas = job.value("/spec/replicas"_json_pointer, int64_t{1});
  const int64_t restarts = status.value("restarts", int64_t{0});
  const int attempt = static_cast<int>(restarts);
  const int64_t backoff_limit = job.value("/spec/runPolicy/backoffLimit"_json_pointer, int64_t{3});
  json rank0_desired = DesiredRankPod(job, *policy, *dataflow, 0, attempt, options_.images);
  const std::string hash = rank0_desired["metadata"]["labels"][kTemplateHashLabel];

  // Ranks of the current attempt, and whether the gang is broken.
  std::map<int, json> current;
  bool stale = false, failed_rank = false, rank0_succeeded = false;
  std::string failure;
  for (const json& p : pods) {
    const int rank = std::atoi(Str(p, "/metadata/labels/sluice.dev~1rank", "0").c_str());
    if (!RankPodCurrent(p, attempt, hash)) {
      stale = true;
      continue;
    }
    current[rank] = p;
    const std::string pod_phase = Str(p, "/status/phase");
    if (pod_phase == "Failed") {
      failed_rank = true;
      failure = "rank " + std::to_string(rank) + " failed" +
                (Str(p, "/status/reason").empty() ? "" : " (" + Str(p, "/status/reason") + ")");
    }
    if (pod_phase == "Succeeded" && rank == 0) rank0_succeeded = true;
  }
  // A rank that vanished while the gang ran (deleted, evicted) breaks it too.
  const bool was_running = phase == "Running";
  if (was_running && !failed_rank && !current.empty() &&
      static_cast<int64_t>(current.size()) < replicas && !stale) {
    failed_rank = true;
    failure = "a rank pod disappeared";
  }
  // Old-attempt or old-template pods are cleared before the new gang starts.
  if (stale) {
    for (const json& p : pods) {
      const int rank = std::atoi(Str(p, "/metadata/labels/sluice.dev~1rank", "0").c_str());
      auto it = current.find(rank);
      if (it != current.end() && Str(it->second, "/metadata/name") == Str(p, "/metadata/name") &&
          RankPodCurrent(p, attempt, hash)) {
        continue;
      }
      if (p.contains("/metadata/deletionTimestamp"_json_pointer)) continue;
      Result<json> r = pods_client.Delete(Str(p, "/metadata/name"));
      if (!r.ok() && r.status().code() != StatusCode::kNotFound) return r.status();
    }
    return ReconcileResult{std::chrono::milliseconds(500)};
  }

  // Rank 0's report.
  json rank0_report;
  if (auto it = current.find(0); it != current.end() &&
                                 Str(it->second, "/status/phase") == "Running" &&
                                 !Str(it->second, "/status/podIP").empty()) {
    http::ClientOptions options;
    options.base_url =
        "http://" + Str(it->second, "/status/podIP") + ":" + std::to_string(kTrainerPort);
    options.connect_timeout = options_.worker_timeout;
    options.read_timeout = options_.worker_timeout;
    options.max_attempts = 1;
    if (informers_.secrets != nullptr) {
      kube::ObjectPtr secret =
          informers_.secrets->store().Get(ns + "/" + DataflowTokenSecretName(df_name));
      Result<std::string> token =
          secret ? kube::DecodeBase64(secret->value("/data/token"_json_pointer, std::string()))
                 : Result<std::string>(Status::NotFound("no token"));
      if (token.ok() && !token->empty()) options.token = http::TokenSource::FromValue(*token);
    }
    Result<std::unique_ptr<http::Client>> client = http::Client::Create(options);
    if (client.ok()) {
      Result<http::Response> r = (*client)->Get("/v1/status");
      if (r.ok() && r->status == 200) rank0_report = json::parse(r->body, nullptr, false);
    }
  }
  if (rank0_report.is_object()) {
    const TrainerProgress shown = ReportedProgress(
        {status.value("step", int64_t{0}), status.value("version", int64_t{0})},
        rank0_report.value("phase", ""),
        {rank0_report.value("step", int64_t{0}), rank0_report.value("version", int64_t{0})});
    status["step"] = shown.step;
    status["version"] = shown.version;
    if (rank0_report.contains("lastCheckpointStep")) {
      status["lastCheckpointStep"] = rank0_report["lastCheckpointStep"];
    }
    // Checkpoints the resume skipped as damaged: each new one once, with a Warning event.
    if (rank0_report.contains("skippedCheckpoints")) {
      SkippedCheckpointsMerge merged = MergeSkippedCheckpoints(
          status.value("skippedCheckpoints", json::array()), rank0_report["skippedCheckpoints"]);
      if (!merged.status.empty()) status["skippedCheckpoints"] = std::move(merged.status);
      for (const json& c : merged.fresh) {
        (void)events_.Record(job, kube::kEventWarning, "CheckpointSkipped",
                             "the trainer's resume skipped the damaged checkpoint of step " +
                                 std::to_string(c["step"].get<int64_t>()) + ": " +
                                 c["reason"].get<std::string>());
      }
    }
    if (rank0_report.contains("metrics") && rank0_report["metrics"].is_object()) {
      json metrics = json::object();
      for (const char* k : {"loss", "rewardMean", "kl", "entropy", "tokensPerSecond",
                            "stalenessMean", "dataWaitFraction"}) {
        if (rank0_report["metrics"].contains(k) && rank0_report["metrics"][k].is_number()) {
          metrics[k] = rank0_report["metrics"][k];
        }
      }
      status["lastMetrics"] = metrics;
    }
  }
  const int64_t steps = job.value("/spec/steps"_json_pointer, int64_t{0});
  // Rank 0 exits 0 after the last step (or says so first).
  const bool done = rank0_succeeded ||
                    (rank0_report.is_object() && rank0_report.value("phase", "") == "Succeeded");
  auto finish = [&](bool ok, const std::string& reason, const std::string& message) -> Status {
    status["phase"] = ok ? "Succeeded" : "Failed";
    status["completionTime"] = FormatTime(now_wall);
    set(ok ? "Complete" : "Failed", true, reason, message);
    set("Running", false, reason, message);
    (void)events_.Record(job, ok ? kube::kEventNormal : kube::kEventWarning, reason, message);
    SLUICE_RETURN_IF_ERROR(write());
    // A success's ranks go in the finished branch, once the pools hold the final weights.
    return ok ? Status::Ok() : delete_pods(message);
  };
  if (done) {
    // The last report read may predate the last steps (trainerjob/final_progress.h).
    const TrainerProgress final_progress =
        FinalProgress({status.value("step", int64_t{0}), status.value("version", int64_t{0})},
                      job.value("/spec/warmStart/steps"_json_pointer, int64_t{0}), steps);
    status["step"] = final_progress.step;
    status["version"] = final_progress.version;
    SLUICE_RETURN_IF_ERROR(
        finish(true, "StepsCompleted", "all " + std::to_string(steps) + " steps completed"));
    return ReconcileResult{std::chrono::milliseconds(200)};
  }
  // Rank 0 says its Dataflow can never feed it again before spec.steps: the job cannot complete.
  if (std::optional<std::string> starved = StarvedMessage(rank0_report, df_name)) {
    set(kStarvedCondition, true, kDataflowDrainedReason, *starved);
    SLUICE_RETURN_IF_ERROR(finish(false, kDataExhaustedReason, *starved));
    return ReconcileResult{};
  }
  if (failed_rank) {
    if (restarts >= backoff_limit) {
      SLUICE_RETURN_IF_ERROR(finish(false, "BackoffLimitExceeded",
                                    failure + "; the gang was restarted " +
                                        std::to_string(restarts) + " times (backoffLimit " +
                                        std::to_string(backoff_limit) + ")"));
      return ReconcileResult{};
    }
    status["restarts"] = restarts + 1;
    status["phase"] = "Pending";
    set("Running", false, "GangRestarting", failure + "; restarting every rank");
    (void)events_.Record(job, kube::kEventWarning, "GangRestarted",
                         failure + "; restarting the gang (attempt " +
                             std::to_string(restarts + 1) + " of " + std::to_string(backoff_limit) +
                             ")");
    SLUICE_RETURN_IF_ERROR(write());
    SLUICE_RETURN_IF_ERROR(delete_pods("gang restart after " + failure));
    return ReconcileResult{std::chrono::milliseconds(500)};
  }
  // The deadline.
  if (job.contains("/spec/runPolicy/activeDeadlineSeconds"_json_pointer) &&
      status.contains("startTime")) {
    const int64_t deadline =
        job.value("/spec/runPolicy/activeDeadlineSeconds"_json_pointer, int64_t{0});
    if (now_s - WallSeconds(Str(status, "/startTime")) >= deadline) {
      SLUICE_RETURN_IF_ERROR(finish(
          false, "DeadlineExceeded",
          "the job ran longer than activeDeadlineSeconds (" + std::to_string(deadline) + "s)"));
      return ReconcileResult{};
    }
  }

  // Create the missing ranks of this attempt, all together.
  for (int64_t rank = 0; rank < replicas; ++rank) {
    if (current.count(static_cast<int>(rank))) continue;
    json desired =
        DesiredRankPod(job, *policy, *dataflow, static_cast<int>(rank), attempt, options_.images);
    Result<json> r = pods_client.Create(desired);
    if (!r.ok() && r.status().code() != StatusCode::kAlreadyExists) return r.status();
  }

  // Admission (the whole gang scheduled) and running.
  int running = 0;
  std::string pending_since;
  bool unschedulable = false;
  for (const auto& [rank, p] : current) {
    if (Str(p, "/status/phase") == "Running") ++running;
    if (Unschedulable(p)) {
      unschedulable = true;
      const std::string created = Str(p, "/metadata/creationTimestamp");
      if (pending_since.empty() || created < pending_since) pending_since = created;
    }
  }
  if (unschedulable && now_s - WallSeconds(pending_since) >= options_.gang_timeout.count()) {
    set("Admitted", false, "GangPending",
        "not every rank can be scheduled (" + std::to_string(running) + " of " +
            std::to_string(replicas) + " running); waiting for capacity");
  } else if (!unschedulable) {
    set("Admitted", true, "GangScheduled", "every rank has a node");
  }
  if (running == replicas) {
    if (!status.contains("startTime")) status["startTime"] = FormatTime(now_wall);
    status["phase"] = "Running";
    if (set("Running", true, "GangRunning",
            "all " + std::to_string(replicas) + " ranks are running")) {
      (void)events_.Record(job, kube::kEventNormal, "GangRunning",
                           "All " + std::to_string(replicas) + " ranks are running");
    }
  } else if (phase != "Running") {
    status["phase"] = "Pending";
  }
  if (!status.contains("restarts")) status["restarts"] = restarts;
  SLUICE_RETURN_IF_ERROR(write());
  return ReconcileResult{options_.status_period};
}

}  // namespace sluice::controllers
