#include "localcluster/node/workload_controller.h"

#include <map>
#include <set>
#include <utility>

#include "kube/store.h"
#include "localcluster/node/workload_objects.h"

namespace sluice::node {

using nlohmann::json;

namespace {

const kube::GroupVersionResource kDeployments{"apps", "v1", "deployments", true};
const kube::GroupVersionResource kReplicaSets{"apps", "v1", "replicasets", true};
const kube::GroupVersionResource kWorkloadPods{"", "v1", "pods", true};

std::string OwnerKey(const char* kind, const json& object) {
  return std::string(kind) + "/" + kube::UidOf(object);
}

}  // namespace

WorkloadController::WorkloadController(kube::RestClient& rest, WorkloadControllerOptions options)
    : options_(std::move(options)),
      clock_(ClockOrSystem(options_.clock)),
      log_("workloads"),
      client_(rest),
      deployment_events_(client_, kube::EventRecorderOptions{"deployment-controller", "", 1.0, 25,
                                                             4096, options_.clock}),
      replica_set_events_(client_, kube::EventRecorderOptions{"replicaset-controller", "", 1.0, 25,
                                                              4096, options_.clock}) {
  deployments_ = std::make_unique<kube::Informer>(client_.Resource(kDeployments));
  replica_sets_ = std::make_unique<kube::Informer>(client_.Resource(kReplicaSets));
  if (options_.pods == nullptr) {
    own_pods_ = std::make_unique<kube::Informer>(client_.Resource(kWorkloadPods));
  }
  pods_ = options_.pods != nullptr ? options_.pods : own_pods_.get();
}

std::vector<kube::Informer*> WorkloadController::informers() const {
  std::vector<kube::Informer*> out = {deployments_.get(), replica_sets_.get()};
  if (own_pods_) out.push_back(own_pods_.get());
  return out;
}

bool WorkloadController::HasSynced() const {
  return deployments_->HasSynced() && replica_sets_->HasSynced() && pods_->HasSynced();
}

void WorkloadController::Sync() {
  if (!HasSynced()) return;
  PruneAwaited();
  const Clock::WallTime now = clock_.WallNow();
  const std::vector<kube::ObjectPtr> deployments = deployments_->store().List();
  const std::vector<kube::ObjectPtr> replica_sets = replica_sets_->store().List();
  if (deployments.empty() && replica_sets.empty()) return;
  // One copy per pass of what the namespaces with workloads hold.
  std::map<std::string, std::vector<json>> rs_by_ns, pods_by_ns;
  for (const kube::ObjectPtr& rs : replica_sets) rs_by_ns[kube::NamespaceOf(*rs)].push_back(*rs);
  std::set<std::string> namespaces;
  for (const kube::ObjectPtr& d : deployments) namespaces.insert(kube::NamespaceOf(*d));
  for (const auto& [ns, _] : rs_by_ns) namespaces.insert(ns);
  for (const kube::ObjectPtr& p : pods_->store().List()) {
    const std::string ns = kube::NamespaceOf(*p);
    if (namespaces.count(ns)) pods_by_ns[ns].push_back(*p);
  }
  for (const kube::ObjectPtr& d : deployments) {
    const std::string ns = kube::NamespaceOf(*d);
    SyncDeployment(*d, rs_by_ns[ns], pods_by_ns[ns], now);
  }
  for (const kube::ObjectPtr& rs : replica_sets) {
    SyncReplicaSet(*rs, pods_by_ns[kube::NamespaceOf(*rs)], now);
  }
}

void WorkloadController::SyncDeployment(const json& d, const std::vector<json>& replica_sets,
                                        const std::vector<json>& pods, Clock::WallTime now) {
  const std::string owner = OwnerKey("deployment", d);
  if (Waiting(owner)) return;
  const std::string ns = kube::NamespaceOf(d);
  const std::string name = kube::NameOf(d);
  const DeploymentPlan plan = node::SyncDeployment(d, replica_sets, pods, now);
  kube::ResourceClient rs_client = client_.Resource(kReplicaSets, ns);
  kube::ResourceClient d_client = client_.Resource(kDeployments, ns);

  for (const std::vector<json>* list : {&plan.adopt, &plan.release}) {
    for (const json& rs : *list) {
      Result<json> r = rs_client.Update(rs);
      if (!r.ok()) return LogWriteError("claiming a replica set", rs, r.status());
      Await(Awaited::Kind::kUpdated, replica_sets_.get(), rs, {kube::ResourceVersionOf(rs)}, owner);
    }
  }
  if (plan.create) {
    const json& rs = *plan.create;
    const std::string rs_name = kube::NameOf(rs);
    Result<json> r = rs_client.Create(rs);
    if (r.status().code() == StatusCode::kAlreadyExists) {
      Result<json> existing = rs_client.Get(rs_name);
      if (!existing.ok()) return;
      if (ControllerUid(*existing) == kube::UidOf(d) &&
          TemplatesEqualIgnoringHash(existing->value("/spec/template"_json_pointer, json()),
                                     d.value("/spec/template"_json_pointer, json()))) {
        // Ours, not yet in the cache: wait for it.
        Await(Awaited::Kind::kCreated, replica_sets_.get(), *existing, {}, owner);
        return;
      }
      // Another template hashed to the same name: kube's collisionCount changes the hash.
      const int64_t collisions = IntAt(d, "/status/collisionCount", 0) + 1;
      log_.Warn("pod template hash collision",
                {{"deployment", ns + "/" + name}, {"replica_set", rs_name}});
      Result<json> w =
          d_client.Patch(name, kube::PatchType::kMerge,
                         json{{"status", {{"collisionCount", collisions}}}}.dump(), {}, "status");
      if (w.ok()) {
        Await(Awaited::Kind::kUpdated, deployments_.get(), d, {kube::ResourceVersionOf(d)}, owner);
      }
      return;
    }
    if (!r.ok()) {
      const std::string message =
          "Failed to create new replica set \"" + rs_name + "\": " + r.status().message();
      Event(deployment_events_, d, "Deployment", kube::kEventWarning, "ReplicaSetCreateError",
            message);
      const json status = StatusAfterCreateFailure(d, rs_name, r.status().message(), now);
      (void)WriteStatus(d_client, name, d.value("status", json::object()), status);
      return LogWriteError("creating a replica set", rs, r.status());
    }
    Await(Awaited::Kind::kCreated, replica_sets_.get(), *r, {}, owner);
    const int64_t replicas = IntAt(rs, "/spec/replicas", 0);
    if (replicas > 0) {
      Event(deployment_events_, d, "Deployment", kube::kEventNormal, "ScalingReplicaSet",
            ScalingMessage(rs_name, 0, replicas));
    }
  }
  for (const ReplicaSetChange& change : plan.updates) {
    Result<json> r = rs_client.Update(change.object);
    if (!r.ok()) return LogWriteError("scaling a replica set", change.object, r.status());
    Await(Awaited::Kind::kUpdated, replica_sets_.get(), change.object,
          {kube::ResourceVersionOf(change.object)}, owner);
    if (change.from != change.to) {
      Event(deployment_events_, d, "Deployment", kube::kEventNormal, "ScalingReplicaSet",
            ScalingMessage(kube::NameOf(change.object), change.from, change.to));
    }
  }
  for (const json& rs : plan.delete_replica_sets) {
    kube::DeleteOptions options;
    options.precondition_uid = kube::UidOf(rs);
    options.propagation_policy = "Background";
    Result<json> r = rs_client.Delete(kube::NameOf(rs), options);
    if (r.ok() || r.status().code() == StatusCode::kNotFound) {
      Await(Awaited::Kind::kDeleted, replica_sets_.get(), rs, {}, owner);
    } else {
      LogWriteError("deleting an old replica set", rs, r.status());
    }
  }
  // The cached version, then each write's: the cache must move past all but the last.
  std::vector<std::string> versions = {kube::ResourceVersionOf(d)};
  if (plan.revision) {
    // The status subresource writes status only: the annotation goes through the object (no
    // spec change, so no new generation).
    const json patch = {{"metadata", {{"annotations", {{kRevisionAnnotation, *plan.revision}}}}}};
    Result<json> r = d_client.Patch(name, kube::PatchType::kMerge, patch.dump());
    if (!r.ok()) return LogWriteError("annotating a deployment", d, r.status());
    versions.push_back(kube::ResourceVersionOf(*r));
  }
  if (plan.status_changed) {
    Result<json> r = WriteStatus(d_client, name, d.value("status", json::object()), plan.status);
    if (r.ok()) {
      versions.push_back(kube::ResourceVersionOf(*r));
    } else {
      LogWriteError("writing a deployment's status", d, r.status());
    }
  }
  if (versions.size() > 1) {
    versions.pop_back();
    Await(Awaited::Kind::kUpdated, deployments_.get(), d, std::move(versions), owner);
  }
  for (const DeploymentEvent& e : plan.events) {
    Event(deployment_events_, d, "Deployment", e.type, e.reason, e.message);
  }
}

void WorkloadController::SyncReplicaSet(const json& rs, const std::vector<json>& pods,
                                        Clock::WallTime now) {
  const std::string owner = OwnerKey("rs", rs);
  const std::string ns = kube::NamespaceOf(rs);
  ReplicaSetSyncOptions options;
  options.manage = !Waiting(owner);
  options.burst = options_.burst_replicas;
  ReplicaSetPlan plan = node::SyncReplicaSet(rs, pods, now, options);
  kube::ResourceClient pod_client = client_.Resource(kWorkloadPods, ns);

  for (const std::vector<json>* list : {&plan.adopt, &plan.release}) {
    for (const json& pod : *list) {
      Result<json> r = pod_client.Update(pod);
      if (!r.ok()) LogWriteError("claiming a pod", pod, r.status());
    }
  }
  std::string failure_reason, failure_message;
  for (int64_t i = 0; i < plan.create; ++i) {
    Result<json> r = pod_client.Create(plan.pod);
    if (!r.ok()) {
      failure_reason = "FailedCreate";
      failure_message = r.status().message();
      Event(replica_set_events_, rs, "ReplicaSet", kube::kEventWarning, "FailedCreate",
            "Error creating: " + failure_message);
      LogWriteError("creating a pod", rs, r.status());
      break;  // The rest would most likely fail the same way.
    }
    Await(Awaited::Kind::kCreated, pods_, *r, {}, owner);
    Event(replica_set_events_, rs, "ReplicaSet", kube::kEventNormal, "SuccessfulCreate",
          "Created pod: " + kube::NameOf(*r));
  }
  auto remove = [&](const json& pod, bool immediately) {
    kube::DeleteOptions delete_options;
    delete_options.precondition_uid = kube::UidOf(pod);
    if (immediately) delete_options.grace_period_seconds = 0;
    Result<json> r = pod_client.Delete(kube::NameOf(pod), delete_options);
    if (r.ok() || r.status().code() == StatusCode::kNotFound) {
      Await(Awaited::Kind::kDeleted, pods_, pod, {}, owner);
      if (r.ok()) {
        Event(replica_set_events_, rs, "ReplicaSet", kube::kEventNormal, "SuccessfulDelete",
              "Deleted pod: " + kube::NameOf(pod));
      }
      return;
    }
    failure_reason = "FailedDelete";
    failure_message = r.status().message();
    Event(replica_set_events_, rs, "ReplicaSet", kube::kEventWarning, "FailedDelete",
          "Error deleting: " + failure_message);
    LogWriteError("deleting a pod", pod, r.status());
  };
  for (const json& pod : plan.delete_terminal) remove(pod, true);
  for (const json& pod : plan.delete_pods) remove(pod, false);

  if (!failure_reason.empty()) {
    SetReplicaFailure(plan.status, failure_reason, failure_message, now);
    plan.status_changed = true;
  }
  // A status written earlier and not yet in the cache would only be written again.
  const std::string status_owner = OwnerKey("rs-status", rs);
  if (!plan.status_changed || Waiting(status_owner)) return;
  kube::ResourceClient rs_client = client_.Resource(kReplicaSets, ns);
  Result<json> r =
      WriteStatus(rs_client, kube::NameOf(rs), rs.value("status", json::object()), plan.status);
  if (!r.ok()) return LogWriteError("writing a replica set's status", rs, r.status());
  Await(Awaited::Kind::kUpdated, replica_sets_.get(), rs, {kube::ResourceVersionOf(rs)},
        status_owner);
}

void WorkloadController::Await(Awaited::Kind kind, const kube::Informer* informer,
                               const json& object, std::vector<std::string> stale,
                               const std::string& owner) {
  awaited_.push_back({kind, informer, kube::ObjectKey(object), kube::UidOf(object),
                      std::move(stale), owner, clock_.Now() + options_.expectation_timeout});
}

void WorkloadController::PruneAwaited() {
  const Clock::MonoTime now = clock_.Now();
  std::erase_if(awaited_, [&](const Awaited& a) {
    if (now >= a.deadline) {
      log_.Debug("a write was not seen in the cache in time", {{"object", a.key}});
      return true;
    }
    const kube::ObjectPtr cached = a.informer->store().Get(a.key);
    switch (a.kind) {
      case Awaited::Kind::kCreated:
        return cached != nullptr;
      case Awaited::Kind::kUpdated:
        if (cached == nullptr) return true;
        for (const std::string& rv : a.stale) {
          if (kube::ResourceVersionOf(*cached) == rv) return false;
        }
        return true;
      case Awaited::Kind::kDeleted:
        return cached == nullptr || kube::UidOf(*cached) != a.uid || IsBeingDeleted(*cached);
    }
    return true;
  });
}

bool WorkloadController::Waiting(const std::string& owner) const {
  for (const Awaited& a : awaited_) {
    if (a.owner == owner) return true;
  }
  return false;
}

Result<json> WorkloadController::WriteStatus(kube::ResourceClient& client, const std::string& name,
                                             const json& old_status, const json& status) {
  json patch = status;
  if (old_status.is_object()) {
    for (const auto& [k, _] : old_status.items()) {
      if (!patch.contains(k)) patch[k] = nullptr;  // Merge patch: null removes the field.
    }
  }
  return client.Patch(name, kube::PatchType::kMerge, json{{"status", patch}}.dump(), {}, "status");
}

void WorkloadController::Event(kube::EventRecorder& recorder, const json& object, const char* kind,
                               const std::string& type, const std::string& reason,
                               const std::string& message) {
  const json involved = {{"apiVersion", std::string(kind) == "Pod" ? "v1" : "apps/v1"},
                         {"kind", kind},
                         {"metadata",
                          {{"name", kube::NameOf(object)},
                           {"namespace", kube::NamespaceOf(object)},
                           {"uid", kube::UidOf(object)},
                           {"resourceVersion", kube::ResourceVersionOf(object)}}}};
  Status s = recorder.Record(involved, type, reason, message);
  if (!s.ok() && s.code() != StatusCode::kTooManyRequests) {
    log_.Debug("event not recorded", {{"reason", reason}, {"error", s.ToString()}});
  }
}

void WorkloadController::LogWriteError(const char* what, const json& object, const Status& status) {
  const log::Fields fields = {{"object", kube::ObjectKey(object)}, {"error", status.ToString()}};
  // A conflict or a vanished object is the normal outcome of racing another writer.
  if (status.code() == StatusCode::kConflict || status.code() == StatusCode::kNotFound) {
    log_.Debug(std::string(what) + " failed; retrying on the next pass", fields);
  } else {
    log_.Warn(std::string(what) + " failed", fields);
  }
}

}  // namespace sluice::node
