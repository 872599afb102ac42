#include "operator/controllers/status_write.h"

#include "operator/controllers/object_meta.h"

namespace sluice::controllers {

using nlohmann::json;

Status WriteStatusIfChanged(kube::DynamicClient& client, const kube::GroupVersionResource& gvr,
                            const json& object, const json& status,
                            StatusPrecondition precondition) {
  if (status == object.value("status", json::object())) return Status::Ok();
  json patch = {{"status", status}};
  if (precondition == StatusPrecondition::kUnchangedSinceRead) {
    patch["metadata"]["resourceVersion"] = StringAt(object, "/metadata/resourceVersion");
  }
  Result<json> r = client.Resource(gvr, gvr.namespaced ? Namespace(object) : "")
                       .Patch(Name(object), kube::PatchType::kMerge, patch.dump(), {}, "status");
  return r.ok() || r.status().code() == StatusCode::kNotFound ? Status::Ok() : r.status();
}

}  // namespace sluice::controllers
