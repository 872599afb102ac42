#include "operator/controllers/dataflow/reconciler.h"

#include <set>

#include "api/meta.h"
#include "api/validation.h"
#include "common/http/bearer_token.h"
#include "common/http/client.h"
#include "common/openapi/field_error.h"
#include "kube/core_resources.h"
#include "kube/kubeconfig.h"
#include "operator/controllers/bearer_tokens.h"
#include "operator/controllers/core_resources.h"
#include "operator/controllers/data_exhaustion.h"
#include "operator/controllers/dataflow/dataflow_tls.h"
#include "operator/controllers/network_policies.h"
#include "operator/controllers/object_meta.h"
#include "operator/controllers/status_write.h"

namespace sluice::controllers {

using nlohmann::json;

namespace {

const kube::GroupVersionResource kDataflows{"sluice.dev", "v1alpha1", "dataflows", true};

bool PodReady(const json& pod) {
  for (const json& c : pod.value("/status/conditions"_json_pointer, json::array())) {
    if (c.value("type", "") == "Ready") return c.value("status", "") == "True";
  }
  return false;
}

// Why a pod is not ready, in a few words (its phase, else the first waiting reason).
std::string PodProblem(const json& pod) {
  for (const json& s : pod.value("/status/containerStatuses"_json_pointer, json::array())) {
    if (s.contains("/state/waiting/reason"_json_pointer)) {
      std::string m = s.at("/state/waiting/reason"_json_pointer).get<std::string>();
      if (s.contains("/state/waiting/message"_json_pointer)) {
        m += ": " + s.at("/state/waiting/message"_json_pointer).get<std::string>();
      }
      return m;
    }
  }
  const std::string msg = StringAt(pod, "/status/conditions/0/message");
  return "phase " + StringAt(pod, "/status/phase", "Pending") + (msg.empty() ? "" : ": " + msg);
}

}  // namespace

DataflowController::DataflowController(kube::DynamicClient& client, DataflowInformers informers,
                                       kube::EventRecorder& events,
                                       DataflowControllerOptions options)
    : client_(client),
      informers_(informers),
      events_(events),
      options_(std::move(options)),
      clock_(ClockOrSystem(options_.clock)) {}

Status DataflowController::EnsureChildren(const json& df, std::string* pod_state) {
  const std::string ns = StringAt(df, "/metadata/namespace", "default");
  const std::string name = StringAt(df, "/metadata/name");
  auto cached = [&](kube::Informer* informer, const std::string& child) {
    return informer->store().Get(ns + "/" + child);
  };
  auto create = [&](const kube::GroupVersionResource& gvr, const json& desired) -> Status {
    Result<json> r = client_.Resource(gvr, ns).Create(desired);
    if (r.ok() || r.status().code() == StatusCode::kAlreadyExists) return Status::Ok();
    return r.status();
  };
  // Tokens and claim: created once, never rewritten (the tokens are shared by the experiment's
  // pods; a claim's size cannot shrink).
  if (!cached(informers_.secrets, DataflowTokenSecretName(name))) {
    SLUICE_RETURN_IF_ERROR(create(kSecrets, DesiredDataflowTokenSecret(df, RandomBearerToken())));
  }
  if (!cached(informers_.secrets, DataflowRolloutTokenSecretName(name))) {
    SLUICE_RETURN_IF_ERROR(
        create(kSecrets, DesiredDataflowRolloutTokenSecret(df, RandomBearerToken())));
  }
  if (!cached(informers_.claims, DataflowClaimName(name))) {
    SLUICE_RETURN_IF_ERROR(create(kClaims, DesiredDataflowClaim(df)));
  }
  const json cm = DesiredDataflowConfigMap(df);
  if (kube::ObjectPtr current = cached(informers_.config_maps, DataflowConfigMapName(name));
      !current) {
    SLUICE_RETURN_IF_ERROR(create(kConfigMaps, cm));
  } else if (current->value("data", json()) != cm["data"]) {
    json updated = *current;
    updated["data"] = cm["data"];
    Result<json> r = client_.Resource(kConfigMaps, ns).Update(updated);
    if (!r.ok()) return r.status();
  }
  const json svc = DesiredDataflowService(df);
  if (kube::ObjectPtr current = cached(informers_.services, DataflowServiceName(name)); !current) {
    SLUICE_RETURN_IF_ERROR(create(kServices, svc));
  } else if (current->value("/spec/selector"_json_pointer, json()) != svc["spec"]["selector"] ||
             current->value("/spec/ports/0/port"_json_pointer, 0) != kDataflowPort) {
    json updated = *current;
    updated["spec"]["selector"] = svc["spec"]["selector"];
    updated["spec"]["ports"] = svc["spec"]["ports"];
    Result<json> r = client_.Resource(kServices, ns).Update(updated);
    if (!r.ok()) return r.status();
  }
  // Before the pod, so that with policies switched on the worker never starts without them.
  SLUICE_RETURN_IF_ERROR(EnsureNetworkPolicies(df));
  // Before the pod too: it mounts the certificate and cannot start without it.
  SLUICE_RETURN_IF_ERROR(EnsureTls(df));
  const json pod = DesiredDataflowPod(df, options_.images);
  kube::ObjectPtr current = cached(informers_.pods, DataflowPodName(name));
  if (!current) {
    SLUICE_RETURN_IF_ERROR(create(kPods, pod));
    *pod_state = "Created";
    return Status::Ok();
  }
  if (current->contains("/metadata/deletionTimestamp"_json_pointer)) {
    *pod_state = "Terminating";
    return Status::Ok();
  }
  const std::string want = pod["metadata"]["annotations"][kConfigHashAnnotation];
  const std::string have = StringAt(*current, "/metadata/annotations/sluice.dev~1config-hash", "");
  const std::string phase = StringAt(*current, "/status/phase");
  if (want != have || phase == "Failed" || phase == "Succeeded") {
    const std::string why = want != have ? "its spec changed" : "its pod ended (" + phase + ")";
    kube::DeleteOptions options;
    options.precondition_uid = StringAt(*current, "/metadata/uid");
    Result<json> r = client_.Resource(kPods, ns).Delete(DataflowPodName(name), options);
    if (!r.ok() && r.status().code() != StatusCode::kNotFound) return r.status();
    (void)events_.Record(df, kube::kEventNormal, "ReplacingPod",
                         "Replacing pod " + DataflowPodName(name) + ": " + why);
    *pod_state = "Replacing";
    return Status::Ok();
  }
  *pod_state = PodReady(*current) ? "Ready" : PodProblem(*current);
  return Status::Ok();
}

Status DataflowController::EnsureNetworkPolicies(const json& df) {
  if (informers_.network_policies == nullptr) return Status::Ok();
  const std::string ns = StringAt(df, "/metadata/namespace", "default");
  const std::string name = StringAt(df, "/metadata/name");
  kube::ResourceClient policies = client_.Resource(kube::kNetworkPolicies, ns);
  std::set<std::string> wanted;
  for (const json& desired : DesiredNetworkPolicies(df)) {
    const std::string child = desired["metadata"]["name"];
    wanted.insert(child);
    kube::ObjectPtr current = informers_.network_policies->store().Get(ns + "/" + child);
    Status written;
    if (!current) {
      Result<json> r = policies.Create(desired);
      if (!r.ok() && r.status().code() != StatusCode::kAlreadyExists) written = r.status();
    } else if (current->value("spec", json()) != desired["spec"]) {
      // The spec is the operator's; labels and annotations others added are kept.
      json updated = *current;
      updated["spec"] = desired["spec"];
      Result<json> r = policies.Update(updated);
      if (!r.ok()) written = r.status();
    }
    if (!written.ok()) {
      // A conflict is a stale cache: the retry re-reads. Anything else (an API server refusing
      // a spec.networkPolicy.prometheus selector, say) is for the user to see.
      if (written.code() != StatusCode::kConflict) {
        (void)events_.Record(df, kube::kEventWarning, "NetworkPolicyFailed",
                             "NetworkPolicy " + child + ": " + written.message());
      }
      return written;
    }
  }
  // Switched off: delete what this Dataflow made, never a policy of the same name it does not
  // control.
  for (const std::string& child : NetworkPolicyNames(name)) {
    if (wanted.count(child) > 0) continue;
    kube::ObjectPtr current = informers_.network_policies->store().Get(ns + "/" + child);
    if (!current || !ControlledBy(*current, StringAt(df, "/metadata/uid"))) continue;
    kube::DeleteOptions options;
    options.precondition_uid = StringAt(*current, "/metadata/uid");
    Result<json> r = policies.Delete(child, options);
    if (!r.ok() && r.status().code() != StatusCode::kNotFound) return r.status();
  }
  return Status::Ok();
}

json DataflowController::CurrentStatus(const json& df, const std::string& pod_state) {
  const std::string ns = StringAt(df, "/metadata/namespace", "default");
  const std::string name = StringAt(df, "/metadata/name");
  const std::string key = ns + "/" + name;
  json status = df.value("status", json::object());
  status.erase("conditions");
  status["endpoint"] = DataflowEndpoint(df);
  std::vector<api::Condition> conditions =
      api::ConditionsOrEmpty(df.value("/status/conditions"_json_pointer, json()));
  const int64_t generation = df.value("/metadata/generation"_json_pointer, int64_t{0});
  const auto now = clock_.WallNow();
  auto set = [&](const char* type, bool ok, const std::string& reason, const std::string& msg) {
    api::SetCondition(conditions, {type, ok ? "True" : "False", reason, msg, generation, ""}, now);
  };
  if (pod_state != "Ready") {
    set("Ready", false, "PodNotReady", "pod " + DataflowPodName(name) + ": " + pod_state);
  } else {
    // Ask the worker. Its address is the pod IP, so no DNS is needed (in a cluster or locally).
    kube::ObjectPtr pod = informers_.pods->store().Get(ns + "/" + DataflowPodName(name));
    kube::ObjectPtr secret =
        informers_.secrets->store().Get(ns + "/" + DataflowTokenSecretName(name));
    kube::ObjectPtr ca_secret = informers_.secrets->store().Get(ns + "/" + kNamespaceCaSecretName);
    Result<tls::CertifiedKey> ca =
        ca_secret ? CaFromSecret(*ca_secret) : Result<tls::CertifiedKey>(Status::NotFound("none"));
    std::string error;
    json worker;
    if (!pod || !secret || !ca.ok()) {
      error = "the pod, the token Secret or the namespace CA Secret is not in the cache yet";
    } else {
      Result<std::string> token =
          kube::DecodeBase64(secret->value("/data/token"_json_pointer, std::string()));
      http::ClientOptions options;
      // The pod's IP, which its certificate cannot name: verify the Service's name instead.
      options.base_url =
          "https://" + StringAt(*pod, "/status/podIP") + ":" + std::to_string(kDataflowPort);
      options.tls.ca_pem = ca->cert_pem;
      options.tls.server_name = DataflowServerName(df);
      options.connect_timeout = options_.worker_timeout;
      options.read_timeout = options_.worker_timeout;
      options.max_attempts = 1;
      if (token.ok()) options.token = http::TokenSource::FromValue(*token);
      Result<std::unique_ptr<http::Client>> client = http::Client::Create(options);
      Result<http::Response> reply =
          client.ok() ? (*client)->Get("/v1/status") : Result<http::Response>(client.status());
      if (!reply.ok()) {
        error = reply.status().ToString();
      } else if (reply->status != 200) {
        error = reply->ToStatus().ToString();
      } else {
        worker = json::parse(reply->body, nullptr, false);
        if (!worker.is_object()) error = "GET /v1/status did not return a JSON object";
      }
    }
    if (!error.empty()) {
      set("Ready", true, "PodReady", "the dataflow pod is ready");
      set("Degraded", true, "StatusUnavailable", "GET /v1/status: " + error);
    } else {
      Sample previous;
      {
        std::lock_guard<std::mutex> lock(mu_);
        previous = last_[key];
      }
      const auto t = clock_.Now();
      const bool has_baseline = previous.status.is_object();
      const double elapsed =
          has_baseline ? std::chrono::duration<double>(t - previous.at).count() : 0;
      // Within the rate window the baseline stays, and the published rate (in `status`) is kept.
      const bool new_window = !has_baseline || elapsed >= kTrajectoryRateWindowSeconds;
      json fresh = DataflowStatusFromWorker(df, worker,
                                            has_baseline && new_window ? previous.status : status,
                                            has_baseline && new_window ? elapsed : 0);
      for (auto& [k, v] : fresh.items()) status[k] = v;
      if (new_window) {
        std::lock_guard<std::mutex> lock(mu_);
        last_[key] = {fresh, t};
      }
      set("Ready", true, "DataflowReady", "serving at " + DataflowEndpoint(df));
      const bool backpressure = worker.value("backpressure", false);
      set("Backpressure", backpressure, backpressure ? "AdmissionFull" : "AdmissionOpen",
          backpressure ? "buffered, leased and in-training work reached the admission limit "
                         "(spec.buffer.capacity, or spec.buffer.maxStaleness + 1 batches); "
                         "leases wait"
                       : "");
      const size_t failed = worker.value("failed_tasks", json::array()).size();
      set("Degraded", failed > 0, failed > 0 ? "TasksFailed" : "AsExpected",
          failed > 0 ? std::to_string(failed) + " task(s) failed every attempt and were set aside"
                     : "");
      // The end of the data: an event when it comes, and one whenever a policy is drained.
      const DataflowExhaustion exhaustion = ExhaustionFromWorker(worker);
      const api::Condition* before = api::FindCondition(conditions, kExhaustedCondition);
      const bool was_exhausted = before != nullptr && before->status == "True";
      const std::string before_message = was_exhausted ? before->message : "";
      set(kExhaustedCondition, exhaustion.exhausted,
          exhaustion.exhausted ? kDatasetExhaustedReason : kDataRemainingReason,
          exhaustion.message);
      if (exhaustion.exhausted && !was_exhausted) {
        (void)events_.Record(df, kube::kEventNormal, kDatasetExhaustedReason, exhaustion.message);
      }
      if (!exhaustion.drained.empty() && exhaustion.message != before_message) {
        (void)events_.Record(df, kube::kEventWarning, kDataflowDrainedReason, exhaustion.message);
      }
    }
  }
  status["conditions"] = api::ToJson(conditions);
  status["observedGeneration"] = generation;
  return status;
}

Status DataflowController::WriteStatus(const json& df, json status) {
  return WriteStatusIfChanged(client_, kDataflows, df, status);
}

Result<ReconcileResult> DataflowController::Reconcile(const std::string& key) {
  kube::ObjectPtr cached = informers_.dataflows->store().Get(key);
  if (!cached) {
    std::lock_guard<std::mutex> lock(mu_);
    last_.erase(key);
    return ReconcileResult{};  // Deleted: the garbage collector removes the owned children.
  }
  if (cached->contains("/metadata/deletionTimestamp"_json_pointer)) return ReconcileResult{};
  json df = *cached;
  json defaulted = df;
  Status defaulting = api::DefaultObject(defaulted);
  api::ValidationReport report;
  if (defaulting.ok()) report = api::ValidateObject(defaulted);
  if (!defaulting.ok() || !report.ok()) {
    const std::string message =
        defaulting.ok() ? openapi::Describe(report.errors) : defaulting.message();
    json status = df.value("status", json::object());
    std::vector<api::Condition> conditions =
        api::ConditionsOrEmpty(status.value("conditions", json()));
    const int64_t generation = df.value("/metadata/generation"_json_pointer, int64_t{0});
    const bool changed = api::SetCondition(
        conditions, {"Ready", "False", "InvalidSpec", message, generation, ""}, clock_.WallNow());
    if (changed) (void)events_.Record(df, kube::kEventWarning, "InvalidSpec", message);
    status["conditions"] = api::ToJson(conditions);
    status["observedGeneration"] = generation;
    SLUICE_RETURN_IF_ERROR(WriteStatus(df, status));
    return ReconcileResult{};  // A spec change re-triggers the reconcile.
  }
  std::string pod_state;
  SLUICE_RETURN_IF_ERROR(EnsureChildren(defaulted, &pod_state));
  SLUICE_RETURN_IF_ERROR(WriteStatus(df, CurrentStatus(defaulted, pod_state)));
  return ReconcileResult{options_.status_period};
}

}  // namespace sluice::controllers
