// The lifecycle of CRDs in ApiServer's served resources: the stored CRDs loaded at start, a
// written CRD served (or its update applied), a deleted CRD unserved along with its resources.
#include <mutex>
#include <optional>
#include <string>

#include "localcluster/apiserver/api_server.h"
#include "localcluster/apiserver/api_server_request.h"
#include "localcluster/apiserver/resource_registry.h"
#include "localcluster/apiserver/storage.h"

namespace sluice::apiserver {
namespace {

using api_server_internal::kWatchInitialPage;
using nlohmann::json;

}  // namespace

Status ApiServer::LoadCrds() {
  std::string token;
  do {
    SLUICE_ASSIGN_OR_RETURN(
        ListResult page,
        storage_->List("apiextensions.k8s.io/customresourcedefinitions", std::nullopt, 500, token));
    for (const Stored& s : page.items) {
      const std::string name = s.object.value("/metadata/name"_json_pointer, "");
      if (Status st = registry_.AddCrd(s.object); !st.ok()) {
        logger_.Warn("stored CRD not served", {{"crd", name}, {"error", st.message()}});
        continue;
      }
      crds_[name] = s.object;
    }
    token = page.continue_token;
  } while (!token.empty());
  return Status::Ok();
}

void ApiServer::OnCrdWritten(const json& crd) {
  const std::string name = crd.value("/metadata/name"_json_pointer, "");
  std::unique_lock lock(registry_mu_);
  if (Status s = registry_.AddCrd(crd); !s.ok()) {
    logger_.Error("CRD update not served", {{"crd", name}, {"error", s.message()}});
    return;
  }
  crds_[name] = crd;
}

void ApiServer::OnCrdDeleted(const json& crd) {
  const std::string name = crd.value("/metadata/name"_json_pointer, "");
  const std::string group = crd.value("/spec/group"_json_pointer, "");
  const std::string plural = crd.value("/spec/names/plural"_json_pointer, "");
  {
    std::unique_lock lock(registry_mu_);
    registry_.RemoveCrd(name);
    crds_.erase(name);
  }
  // The custom resources go with their definition.
  const std::string resource = group + "/" + plural;
  std::string token;
  do {
    Result<ListResult> page = storage_->List(resource, std::nullopt, kWatchInitialPage, token);
    if (!page.ok()) {
      logger_.Error("listing custom resources of a deleted CRD failed",
                    {{"crd", name}, {"error", page.status().message()}});
      return;
    }
    for (const Stored& s : page->items) {
      ObjectKey key{resource, s.object.value("/metadata/namespace"_json_pointer, ""),
                    s.object.value("/metadata/name"_json_pointer, "")};
      Result<Stored> gone = storage_->Delete(key, std::nullopt);
      if (!gone.ok() && gone.status().code() != StatusCode::kNotFound) {
        logger_.Error("deleting a custom resource of a deleted CRD failed",
                      {{"object", key.ToString()}, {"error", gone.status().message()}});
      }
    }
    token = page->continue_token;
  } while (!token.empty());
}

}  // namespace sluice::apiserver
