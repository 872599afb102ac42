// ApiServer's create and update, pods/binding, and the write path that update, patch and the
// scale subresource share (WriteExisting): admission inside the storage's guaranteed update,
// dry runs, finalization, and serving a written CRD.
#include <algorithm>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <utility>

#include "common/time_format.h"
#include "localcluster/apiserver/api_errors.h"
#include "localcluster/apiserver/api_server.h"
#include "localcluster/apiserver/api_server_request.h"
#include "localcluster/apiserver/deletion.h"
#include "localcluster/apiserver/garbage_collector.h"
#include "localcluster/apiserver/object_rules.h"
#include "localcluster/apiserver/service_accounts.h"
#include "localcluster/apiserver/storage.h"

namespace sluice::apiserver {
namespace {

using api_server_internal::IsCrdResource;
using api_server_internal::ResourceVersionOf;
using nlohmann::json;

}  // namespace

void ApiServer::Create(Request& r, httplib::Response& res) {
  Result<json> body = r.Body();
  if (!body.ok()) {
    ReplyStatus(body.status(), &r, res);
    return;
  }
  if (r.info.subresource == "binding") {
    // Binding: the scheduler's way to set spec.nodeName once.
    const std::string node = body->value("/target/name"_json_pointer, "");
    if (node.empty()) {
      ReplyStatus(Status::InvalidArgument("target.name: Required value", "target.name"), &r, res);
      return;
    }
    Result<Stored> bound =
        storage_->GuaranteedUpdate(r.key, [&](const json& current) -> Result<json> {
          const std::string assigned = current.value("/spec/nodeName"_json_pointer, "");
          if (!assigned.empty()) {
            return Status::Conflict("pod " + r.info.name + " is already assigned to node \"" +
                                    assigned + "\"");
          }
          if (current.contains("/metadata/deletionTimestamp"_json_pointer)) {
            return Status::Conflict("pod " + r.info.name +
                                    " is being deleted, cannot be assigned to a host");
          }
          json next = current;
          next["spec"]["nodeName"] = node;
          json& conditions = next["status"]["conditions"];
          if (!conditions.is_array()) conditions = json::array();
          conditions.erase(
              std::remove_if(conditions.begin(), conditions.end(),
                             [](const json& c) { return c.value("type", "") == "PodScheduled"; }),
              conditions.end());
          conditions.push_back({{"type", "PodScheduled"},
                                {"status", "True"},
                                {"lastTransitionTime", FormatTime(clock_->WallNow())}});
          return next;
        });
    if (!bound.ok()) {
      ReplyStatus(bound.status(), &r, res);
      return;
    }
    const json ok = SuccessStatusJson(r.Subject());
    res.status = 201;
    res.set_content(ok.dump(), "application/json");
    return;
  }
  Result<json> object =
      PrepareCreate(r.resource, std::move(*body), r.info.namespace_, clock_->WallNow());
  if (!object.ok()) {
    ReplyStatus(object.status(), &r, res);
    return;
  }
  r.info.name = object->value("/metadata/name"_json_pointer, "");
  r.key.name = r.info.name;
  if (r.resource.namespaced) {
    Result<Stored> ns = storage_->Get(ObjectKey{"core/namespaces", "", r.info.namespace_});
    if (!ns.ok()) {
      ReplyStatus(ns.status().code() == StatusCode::kNotFound
                      ? Status::NotFound("namespaces \"" + r.info.namespace_ + "\" not found")
                      : ns.status(),
                  &r, res);
      return;
    }
    if (ns->object.contains("/metadata/deletionTimestamp"_json_pointer)) {
      ReplyStatus(Status::PermissionDenied("unable to create new content in namespace " +
                                           r.info.namespace_ + " because it is being terminated"),
                  &r, res);
      return;
    }
  }
  if (r.resource.group.empty() && r.resource.plural == "pods") {
    if (Status s = AdmitPodServiceAccount(*storage_, *object, r.info.namespace_); !s.ok()) {
      ReplyStatus(s, &r, res);
      return;
    }
  }
  Status admit_error;
  if (!Admit(r, *object, nullptr, res, &admit_error)) return;
  if (r.dry_run) {
    ReplyObject(r, *object, 201, res);
    return;
  }
  const bool is_crd = IsCrdResource(r.resource);
  std::unique_lock<std::shared_mutex> crd_lock(registry_mu_, std::defer_lock);
  if (is_crd) crd_lock.lock();  // The CRD becomes served atomically with its write.
  Result<Stored> stored = storage_->Create(r.key, std::move(*object));
  if (!stored.ok()) {
    if (crd_lock.owns_lock()) crd_lock.unlock();
    ReplyStatus(stored.status(), &r, res);
    return;
  }
  if (is_crd) {
    const std::string name = stored->object.value("/metadata/name"_json_pointer, "");
    if (Status s = registry_.AddCrd(stored->object); s.ok()) {
      crds_[name] = stored->object;
    } else {
      logger_.Error("CRD stored but not served", {{"crd", name}, {"error", s.message()}});
    }
  }
  if (crd_lock.owns_lock()) crd_lock.unlock();
  if (r.resource.group.empty() && r.resource.plural == "namespaces") {
    AddDefaultServiceAccount(r.info.name);
  }
  ReplyObject(r, stored->object, 201, res);
}

void ApiServer::WriteExisting(Request& r, const MutateFn& fn, httplib::Response& res) {
  const WriteTarget target =
      r.info.subresource == "status" ? WriteTarget::kStatus : WriteTarget::kMain;
  httplib::Response admit_res;  // Filled by Admit on a validation failure.
  bool admit_failed = false;
  auto update = [&](const json& current) -> Result<json> {
    admit_failed = false;
    r.warnings.clear();
    SLUICE_ASSIGN_OR_RETURN(json body, fn(current));
    SLUICE_ASSIGN_OR_RETURN(json next, PrepareUpdate(r.resource, current, std::move(body), target));
    Status admit_error;
    if (!Admit(r, next, &current, admit_res, &admit_error)) {
      admit_failed = true;
      return admit_error;
    }
    return next;
  };
  const bool is_crd = IsCrdResource(r.resource);
  if (r.dry_run) {
    Result<Stored> current = storage_->Get(r.key);
    if (!current.ok()) {
      ReplyStatus(current.status(), &r, res);
      return;
    }
    Result<json> next = update(current->object);
    if (!next.ok()) {
      if (admit_failed) {
        res.status = admit_res.status;
        res.set_content(admit_res.body, "application/json");
      } else {
        ReplyStatus(next.status(), &r, res);
      }
      return;
    }
    ReplyObject(r, *next, 200, res);
    return;
  }
  std::unique_lock<std::shared_mutex> crd_lock(registry_mu_, std::defer_lock);
  Result<Stored> stored = storage_->GuaranteedUpdate(r.key, update);
  if (!stored.ok()) {
    if (admit_failed) {
      res.status = admit_res.status;
      res.set_content(admit_res.body, "application/json");
    } else {
      ReplyStatus(stored.status(), &r, res);
    }
    return;
  }
  Result<Stored> final_state = CompleteDeletionIfReady(*storage_, r.key, *stored);
  if (!final_state.ok()) {
    ReplyStatus(final_state.status(), &r, res);
    return;
  }
  const bool removed = final_state->revision != stored->revision;
  if (removed) gc_->Kick();
  if (is_crd) {
    if (removed) {
      OnCrdDeleted(final_state->object);
    } else {
      OnCrdWritten(final_state->object);
    }
  }
  ReplyObject(r, final_state->object, 200, res);
}

void ApiServer::Update(Request& r, httplib::Response& res) {
  Result<json> body = r.Body();
  if (!body.ok()) {
    ReplyStatus(body.status(), &r, res);
    return;
  }
  const std::string expected = ResourceVersionOf(*body);
  WriteExisting(
      r,
      [&](const json& current) -> Result<json> {
        if (!expected.empty() && expected != ResourceVersionOf(current)) {
          return storage_internal::UpdateConflictError(r.key);
        }
        return *body;
      },
      res);
}

}  // namespace sluice::apiserver
