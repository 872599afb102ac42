#include "localcluster/cli/crd_install.h"

#include <thread>

#include "api/crds/crds.h"
#include "kube/errors.h"

namespace sluice::cli {
namespace {

using nlohmann::json;

// The spec as compared: server-defaulted fields the desired spec leaves out are dropped.
json ComparableSpec(const json& crd, const json& desired_spec) {
  json spec = crd.value("spec", json::object());
  if (!spec.is_object()) return spec;
  if (!desired_spec.contains("conversion")) spec.erase("conversion");
  if (!desired_spec.contains("preserveUnknownFields") &&
      spec.value("preserveUnknownFields", false) == false) {
    spec.erase("preserveUnknownFields");
  }
  return spec;
}

}  // namespace

const char* CrdActionName(CrdAction action) {
  switch (action) {
    case CrdAction::kCreate:
      return "created";
    case CrdAction::kUpdate:
      return "updated";
    case CrdAction::kUnchanged:
      return "unchanged";
  }
  return "?";
}

CrdAction DecideCrdAction(const json* existing, const json& desired) {
  if (existing == nullptr) return CrdAction::kCreate;
  const json desired_spec = desired.value("spec", json::object());
  return ComparableSpec(*existing, desired_spec) == ComparableSpec(desired, desired_spec)
             ? CrdAction::kUnchanged
             : CrdAction::kUpdate;
}

bool IsEstablished(const json& crd) {
  const json* conditions = nullptr;
  if (crd.contains("status") && crd["status"].is_object() && crd["status"].contains("conditions") &&
      crd["status"]["conditions"].is_array()) {
    conditions = &crd["status"]["conditions"];
  }
  if (conditions == nullptr) return false;
  for (const json& c : *conditions) {
    if (c.is_object() && c.value("type", "") == "Established" && c.value("status", "") == "True") {
      return true;
    }
  }
  return false;
}

kube::GroupVersionResource CrdResource() {
  return {"apiextensions.k8s.io", "v1", "customresourcedefinitions", false};
}

std::vector<json> EmbeddedCrds() {
  std::vector<json> out;
  for (const api::ResourceKind& kind : api::Kinds()) out.push_back(kind.crd);
  return out;
}

Result<std::vector<CrdInstallResult>> InstallCrds(kube::RestClient& client,
                                                  const std::vector<json>& crds) {
  kube::ResourceClient resource(client, CrdResource(), "");
  std::vector<CrdInstallResult> results;
  for (const json& desired : crds) {
    const std::string name = desired.value("/metadata/name"_json_pointer, "");
    if (name.empty()) return Status::InvalidArgument("a compiled-in CRD has no metadata.name");
    CrdInstallResult result{name, CrdAction::kUnchanged};
    Status status;
    for (int attempt = 0; attempt < 5; ++attempt) {
      Result<json> existing = resource.Get(name);
      if (!existing.ok() && !kube::IsNotFound(existing.status())) {
        status = existing.status();
        break;
      }
      result.action = DecideCrdAction(existing.ok() ? &*existing : nullptr, desired);
      if (result.action == CrdAction::kCreate) {
        status = resource.Create(desired).status();
        // Created meanwhile by someone else: look again.
        if (kube::IsAlreadyExists(status)) continue;
      } else if (result.action == CrdAction::kUpdate) {
        json update = desired;
        update["metadata"]["resourceVersion"] =
            existing->value("/metadata/resourceVersion"_json_pointer, "");
        status = resource.Update(update).status();
        if (kube::IsConflict(status)) continue;
      } else {
        status = Status::Ok();
      }
      break;
    }
    if (!status.ok()) return status.WithContext("CRD " + name);
    results.push_back(result);
  }
  return results;
}

Status WaitCrdsEstablished(kube::RestClient& client, const std::vector<std::string>& names,
                           std::chrono::milliseconds timeout) {
  kube::ResourceClient resource(client, CrdResource(), "");
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<std::string> pending = names;
  while (true) {
    std::vector<std::string> still;
    std::string last_error;
    for (const std::string& name : pending) {
      Result<json> crd = resource.Get(name);
      if (crd.ok() && IsEstablished(*crd)) continue;
      if (!crd.ok()) last_error = crd.status().message();
      still.push_back(name);
    }
    pending = std::move(still);
    if (pending.empty()) return Status::Ok();
    if (std::chrono::steady_clock::now() >= deadline) {
      std::string list;
      for (const std::string& n : pending) list += (list.empty() ? "" : ", ") + n;
      return Status::DeadlineExceeded("CRDs not Established in time: " + list +
                                      (last_error.empty() ? "" : " (" + last_error + ")"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace sluice::cli
