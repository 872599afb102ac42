#include "operator/controllers/policy/reconciler.h"

#include <algorithm>

#include "api/meta.h"
#include "api/validation.h"
#include "common/openapi/field_error.h"
#include "common/time_format.h"
#include "operator/controllers/object_meta.h"
#include "operator/controllers/reference_indexes.h"
#include "operator/controllers/status_write.h"
#include "operator/controllers/trainerjob/desired_pods.h"

namespace sluice::controllers {

using nlohmann::json;

namespace {

const kube::GroupVersionResource kPolicies{"sluice.dev", "v1alpha1", "policies", true};

bool Hosts(const json& pool, const std::string& policy) {
  for (const json& p : pool.value("/spec/policies"_json_pointer, json::array())) {
    if (p == policy) return true;
  }
  return false;
}

}  // namespace

json PolicyStatus(const json& policy, const std::vector<json>& jobs, const std::vector<json>& pools,
                  Clock::WallTime now) {
  std::vector<const json*> job_ptrs, pool_ptrs;
  for (const json& j : jobs) job_ptrs.push_back(&j);
  for (const json& p : pools) pool_ptrs.push_back(&p);
  return PolicyStatus(policy, job_ptrs, pool_ptrs, now);
}

json PolicyStatus(const json& policy, const std::vector<const json*>& jobs,
                  const std::vector<const json*>& pools, Clock::WallTime now) {
  const std::string name = StringAt(policy, "/metadata/name");
  const int64_t generation = policy.value("/metadata/generation"_json_pointer, int64_t{0});
  json status = policy.value("status", json::object());
  std::vector<api::Condition> conditions =
      api::ConditionsOrEmpty(status.value("conditions", json()));
  auto set = [&](const char* type, bool ok, const std::string& reason, const std::string& msg) {
    api::SetCondition(conditions, {type, ok ? "True" : "False", reason, msg, generation, ""}, now);
  };
  // The newest version any job training this Policy published.
  int64_t version = 0;
  const json* publisher = nullptr;
  std::vector<std::string> failed;
  for (const json* job_ptr : jobs) {
    const json& job = *job_ptr;
    if (StringAt(job, "/spec/policyRef/name") != name) continue;
    const int64_t v = job.value("/status/version"_json_pointer, int64_t{0});
    if (publisher == nullptr || v > version) {
      version = v;
      publisher = &job;
    }
    if (StringAt(job, "/status/phase") == "Failed")
      failed.push_back(StringAt(job, "/metadata/name"));
  }
  const int64_t old_version = status.value("version", int64_t{0});
  if (version > 0) {
    status["version"] = version;
    status["weightsURL"] = WeightsUrl(*publisher, version);
    if (version != old_version || !status.contains("updatedAt")) {
      status["updatedAt"] = FormatTime(now);
    }
    set("WeightsPublished", true, "VersionPublished",
        "version " + std::to_string(version) + " published by TrainerJob " +
            StringAt(*publisher, "/metadata/name"));
  } else {
    set("WeightsPublished", false, "NoVersionYet", "no TrainerJob has published a version yet");
  }
  // Serving.
  int64_t serving = 0;
  std::vector<std::string> lagging;
  int hosting = 0;
  for (const json* pool_ptr : pools) {
    const json& pool = *pool_ptr;
    if (!Hosts(pool, name)) continue;
    ++hosting;
    serving += pool.value("/status/readyReplicas"_json_pointer, int64_t{0});
    int64_t served = -1;
    for (const json& p : pool.value("/status/policies"_json_pointer, json::array())) {
      if (p.value("name", "") == name) served = p.value("version", int64_t{-1});
    }
    if (served != version) {
      lagging.push_back(StringAt(pool, "/metadata/name") + " (serves " +
                        (served < 0 ? std::string("none") : "v" + std::to_string(served)) + ")");
    }
  }
  status["servingReplicas"] = serving;
  if (hosting == 0) {
    set("RolloutSynced", false, "NoRolloutPool", "no RolloutPool hosts this Policy");
  } else if (lagging.empty()) {
    set("RolloutSynced", true, "AllPoolsCurrent",
        "every RolloutPool serves version " + std::to_string(version));
  } else {
    std::string msg = "version " + std::to_string(version) + " not yet served by ";
    for (size_t i = 0; i < lagging.size(); ++i) msg += (i ? ", " : "") + lagging[i];
    set("RolloutSynced", false, "RolloutLagging", msg);
  }
  if (failed.empty()) {
    set("Degraded", false, "AsExpected", "");
  } else {
    std::string msg = "TrainerJob(s) failed: ";
    for (size_t i = 0; i < failed.size(); ++i) msg += (i ? ", " : "") + failed[i];
    set("Degraded", true, "TrainerFailed", msg);
  }
  set("Ready", true, "PolicyValid", "the Policy is valid");
  status["conditions"] = api::ToJson(conditions);
  status["observedGeneration"] = generation;
  return status;
}

PolicyController::PolicyController(kube::DynamicClient& client, PolicyInformers informers,
                                   kube::EventRecorder& events, Clock* clock)
    : client_(client), informers_(informers), events_(events), clock_(ClockOrSystem(clock)) {}

std::vector<std::string> PolicyController::PoliciesOfJob(const json& job) {
  const std::string ns = StringAt(job, "/metadata/namespace", "default");
  const std::string policy = StringAt(job, "/spec/policyRef/name");
  if (policy.empty()) return {};
  return {ns + "/" + policy};
}

std::vector<std::string> PolicyController::PoliciesOfPool(const json& pool) {
  std::vector<std::string> keys;
  const std::string ns = StringAt(pool, "/metadata/namespace", "default");
  for (const json& p : pool.value("/spec/policies"_json_pointer, json::array())) {
    if (p.is_string()) keys.push_back(ns + "/" + p.get<std::string>());
  }
  return keys;
}

Result<ReconcileResult> PolicyController::Reconcile(const std::string& key) {
  kube::ObjectPtr cached = informers_.policies->store().Get(key);
  if (!cached || cached->contains("/metadata/deletionTimestamp"_json_pointer)) {
    return ReconcileResult{};
  }
  const json& policy = *cached;
  const std::string ns = StringAt(policy, "/metadata/namespace", "default");
  const auto now = clock_.WallNow();
  json status;
  json defaulted = policy;
  Status defaulting = api::DefaultObject(defaulted);
  api::ValidationReport report;
  if (defaulting.ok()) report = api::ValidateObject(defaulted);
  if (!defaulting.ok() || !report.ok()) {
    status = policy.value("status", json::object());
    std::vector<api::Condition> conditions =
        api::ConditionsOrEmpty(status.value("conditions", json()));
    const std::string message =
        defaulting.ok() ? openapi::Describe(report.errors) : defaulting.message();
    const int64_t generation = policy.value("/metadata/generation"_json_pointer, int64_t{0});
    if (api::SetCondition(conditions, {"Ready", "False", "InvalidSpec", message, generation, ""},
                          now)) {
      (void)events_.Record(policy, kube::kEventWarning, "InvalidSpec", message);
    }
    status["conditions"] = api::ToJson(conditions);
    status["observedGeneration"] = generation;
  } else {
    // Only the jobs training it and the pools hosting it (PolicyStatus ignores the rest), read
    // in the cache without copies.
    const std::string name = StringAt(policy, "/metadata/name");
    const std::vector<kube::ObjectPtr> jobs =
        Referencing(informers_.jobs->store(), kPolicyRefIndex, JobPolicyRefs, ns, name);
    const std::vector<kube::ObjectPtr> pools =
        Referencing(informers_.pools->store(), kPolicyRefIndex, PoolPolicyRefs, ns, name);
    std::vector<const json*> job_ptrs, pool_ptrs;
    for (const kube::ObjectPtr& j : jobs) job_ptrs.push_back(j.get());
    for (const kube::ObjectPtr& p : pools) pool_ptrs.push_back(p.get());
    status = PolicyStatus(policy, job_ptrs, pool_ptrs, now);
  }
  if (status == policy.value("status", json::object())) return ReconcileResult{};
  if (policy.value("/status/version"_json_pointer, int64_t{0}) <
      status.value("version", int64_t{0})) {
    (void)events_.Record(policy, kube::kEventNormal, "VersionPublished",
                         "Version " + std::to_string(status.value("version", int64_t{0})) + " at " +
                             status.value("weightsURL", std::string()));
  }
  SLUICE_RETURN_IF_ERROR(WriteStatusIfChanged(client_, kPolicies, policy, status));
  return ReconcileResult{};
}

}  // namespace sluice::controllers
