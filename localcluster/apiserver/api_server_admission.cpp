// ApiServer's admission of created and updated objects: RBAC escalation prevention, name
// validation, built-in defaulting and validation, custom resource and CRD checks (schema, CEL),
// then Pod Security admission of namespaces, pods and workload templates.
#include <mutex>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/openapi/field_error.h"
#include "localcluster/apiserver/api_errors.h"
#include "localcluster/apiserver/api_server.h"
#include "localcluster/apiserver/api_server_request.h"
#include "localcluster/apiserver/builtin_admission.h"
#include "localcluster/apiserver/crd_schema_checks.h"
#include "localcluster/apiserver/custom_resources.h"
#include "localcluster/apiserver/object_rules.h"
#include "localcluster/apiserver/pod_security.h"
#include "localcluster/apiserver/rbac_escalation.h"
#include "localcluster/apiserver/request_authorization.h"
#include "localcluster/apiserver/resource_registry.h"
#include "localcluster/apiserver/storage.h"

namespace sluice::apiserver {
namespace {

using api_server_internal::IsCrdResource;
using nlohmann::json;

}  // namespace

void ApiServer::LogSkippedRules(const std::string& crd, const std::vector<std::string>& rules) {
  if (rules.empty()) return;
  std::lock_guard<std::mutex> lock(skipped_mu_);
  for (const std::string& rule : rules) {
    if (skipped_logged_.insert(crd + " " + rule).second) {
      logger_.Warn("CEL rule not evaluated", {{"crd", crd}, {"rule", rule}});
    }
  }
}

bool ApiServer::Admit(Request& r, json& object, const json* old_object, httplib::Response& res,
                      Status* admit_error) {
  // Returns false with `res` filled (HTTP path) or *admit_error set (inside GuaranteedUpdate).
  auto fail_invalid = [&](const openapi::FieldErrors& errors) {
    const std::string name = object.value("/metadata/name"_json_pointer, r.info.name);
    const json body =
        InvalidStatusJson(r.QualifiedKind(), name, r.resource.group, r.resource.kind, errors);
    res.status = 422;
    res.set_content(body.dump(), "application/json");
    *admit_error = Status::Unprocessable(body.value("message", "invalid"));
    return false;
  };
  auto fail_decode = [&](const Status& decode_error) {  // 400, kube's strict decoding error.
    const json body = StatusJson(decode_error, r.Subject());
    res.status = 400;
    res.set_content(body.dump(), "application/json");
    *admit_error = decode_error;
    return false;
  };
  // RBAC escalation prevention (rbac_escalation.h), first as in kube's RBAC storage.
  const RbacWrite rbac_write{r.resource.group, r.resource.plural, r.info.namespace_,
                             old_object != nullptr ? r.info.name : std::string()};
  if (Status s = AdmitRbacWrite(r.user, rbac_write, object, old_object,
                                [this] { return ReadRbacPolicy(*storage_); });
      !s.ok()) {
    const json body = StatusJson(s, r.Subject());
    res.status = CodeOf(body);
    res.set_content(body.dump(), "application/json");
    *admit_error = s;
    return false;
  }
  if (IsCrdResource(r.resource)) {
    // As in kube, decoding comes first: fields of the schemas 1.30 does not know.
    CrdDecodeCheck decoded = DecodeCrdSchemas(object, r.field_validation);
    if (!decoded.decode_error.ok()) return fail_decode(decoded.decode_error);
    r.warnings = std::move(decoded.warnings);
  }
  if (old_object == nullptr) {
    openapi::FieldErrors name_errors = ValidateName(r.resource, object);
    if (!name_errors.empty()) return fail_invalid(name_errors);
  }
  // Kube's defaulting, then validation, of built-in kinds with rules (builtin_admission.h).
  if (openapi::FieldErrors errors = DefaultAndValidateBuiltin(r.resource, object, old_object);
      !errors.empty()) {
    return fail_invalid(errors);
  }
  if (r.crd) {
    CustomResourceCheck check =
        CheckCustomResource(*r.crd, r.resource.version, object, old_object, r.field_validation);
    LogSkippedRules(r.resource.crd_name, check.skipped_rules);
    if (!check.decode_error.ok()) return fail_decode(check.decode_error);
    if (!check.errors.empty()) return fail_invalid(check.errors);
    r.warnings = std::move(check.warnings);
  }
  if (IsCrdResource(r.resource)) {
    std::vector<std::string> skipped;
    openapi::FieldErrors errors = ValidateCrdSpec(object, &skipped);
    LogSkippedRules(object.value("/metadata/name"_json_pointer, r.info.name), skipped);
    if (errors.empty()) {
      std::shared_lock lock(registry_mu_);
      ResourceRegistry trial = registry_;
      if (Status s = trial.AddCrd(object); !s.ok()) {
        errors.push_back({s.field().empty() ? "spec.names" : s.field(), s.message()});
      }
    }
    if (!errors.empty()) return fail_invalid(errors);
    object["status"] = AcceptedCrdStatus(
        object,
        old_object != nullptr ? old_object->value("status", json::object()) : json::object(),
        clock_->WallNow());
  }
  return AdmitPodSecurityOf(r, object, old_object, res, admit_error);
}

bool ApiServer::AdmitPodSecurityOf(Request& r, const json& object, const json* old_object,
                                   httplib::Response& res, Status* admit_error) {
  const bool core = r.resource.group.empty();
  if (core && r.resource.plural == "namespaces") {
    openapi::FieldErrors errors = NamespacePodSecurityLabelErrors(object, old_object);
    if (!errors.empty()) {
      const json body = InvalidStatusJson(
          "Namespace", object.value("/metadata/name"_json_pointer, ""), "", "Namespace", errors);
      res.status = 422;
      res.set_content(body.dump(), "application/json");
      *admit_error = Status::Unprocessable(body.value("message", "invalid"));
      return false;
    }
    if (old_object != nullptr) {
      const std::string name = object.value("/metadata/name"_json_pointer, "");
      std::vector<json> pods;
      Result<ListResult> listed = storage_->List("core/pods", name, 0, "");
      if (listed.ok()) {
        for (Stored& p : listed->items) pods.push_back(std::move(p.object));
      }
      for (std::string& w :
           NamespaceEnforceWarnings(name, ReadNamespacePodSecurity(*old_object).policy,
                                    ReadNamespacePodSecurity(object).policy, pods)) {
        r.warnings.push_back(std::move(w));
      }
    }
    return true;
  }
  const bool pods = core && r.resource.plural == "pods";
  if (!r.info.subresource.empty() && (!pods || PodSecurityIgnoresSubresource(r.info.subresource))) {
    return true;
  }
  if (!pods && PodTemplateSpecOf(r.resource.group, r.resource.plural, object) == nullptr) {
    return true;
  }
  if (pods && old_object != nullptr && !PodSecurityUpdateMatters(object, *old_object)) return true;
  Result<Stored> ns = storage_->Get(ObjectKey{"core/namespaces", "", r.info.namespace_});
  if (!ns.ok()) return true;  // The create path reports a missing namespace itself.
  const NamespacePodSecurity policy = ReadNamespacePodSecurity(ns->object).policy;
  std::vector<std::string> warnings;
  if (pods) {
    PodSecurityDecision decision = AdmitPodSecurity(policy, object);
    if (!decision.status.ok()) {
      const json body = StatusJson(decision.status, r.Subject());
      res.status = CodeOf(body);
      res.set_content(body.dump(), "application/json");
      *admit_error = decision.status;
      return false;
    }
    warnings = std::move(decision.warnings);
  } else {
    warnings = WorkloadPodSecurityWarnings(policy, r.resource.group, r.resource.plural, object);
  }
  for (std::string& w : warnings) r.warnings.push_back(std::move(w));
  return true;
}

}  // namespace sluice::apiserver
