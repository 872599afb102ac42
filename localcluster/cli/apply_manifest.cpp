#include "localcluster/cli/apply_manifest.h"

#include "kube/errors.h"

namespace sluice::cli {
namespace {

using nlohmann::json;

Status Named(const ManifestDocument& document, const Status& status) {
  return Status(status.code(), document.Where() + ": " + status.message());
}

}  // namespace

Result<AppliedObject> ApplyDocument(kube::RestClient& client, kube::DiscoveryClient& discovery,
                                    const ManifestDocument& document,
                                    const std::string& default_namespace) {
  const std::string api_version = document.object.value("apiVersion", "");
  Result<GroupVersion> gv = SplitApiVersion(api_version);
  if (!gv.ok()) return Named(document, gv.status());
  AppliedObject applied;
  applied.kind = document.kind();
  applied.name = document.name();
  applied.display = DisplayName(applied.kind, gv->group, applied.name);
  applied.role = RoleOf(gv->group, applied.kind);
  Result<kube::GroupVersionResource> gvr = discovery.Find(gv->group, gv->version, applied.kind);
  if (!gvr.ok()) {
    if (kube::IsNotFound(gvr.status())) {
      return Status::NotFound(
          document.Where() + ": the server has no kind " + applied.kind + " in " + api_version +
          (gv->group == "sluice.dev" ? " (are the Sluice CRDs installed? `sluice up` installs them)"
                                     : ""));
    }
    return Named(document, gvr.status());
  }
  applied.gvr = *gvr;
  if (applied.gvr.namespaced) {
    auto metadata = document.object.find("metadata");
    if (metadata != document.object.end() && metadata->is_object()) {
      applied.namespace_ = metadata->value("namespace", "");
    }
    if (applied.namespace_.empty()) applied.namespace_ = default_namespace;
  }
  kube::ResourceClient resource(client, applied.gvr, applied.namespace_);
  const json patch = ApplyPatch(document.object);

  // Two rounds: a create that loses a race with another writer patches instead.
  for (int round = 0; round < 2; ++round) {
    Result<json> existing = resource.Get(applied.name);
    if (!existing.ok() && !kube::IsNotFound(existing.status())) {
      return Named(document, existing.status());
    }
    applied.action = DecideApply(existing.ok() ? &*existing : nullptr, patch);
    if (applied.action == ApplyAction::kUnchanged) return applied;
    if (applied.action == ApplyAction::kConfigure) {
      Result<json> patched = resource.Patch(applied.name, kube::PatchType::kMerge, patch.dump());
      if (!patched.ok()) return Named(document, patched.status());
      return applied;
    }
    json object = document.object;
    object.erase("status");
    if (applied.gvr.namespaced) object["metadata"]["namespace"] = applied.namespace_;
    Result<json> created = resource.Create(object);
    if (created.ok()) return applied;
    if (!kube::IsAlreadyExists(created.status())) return Named(document, created.status());
  }
  return Status::Conflict(document.Where() + ": created and deleted by someone else meanwhile");
}

}  // namespace sluice::cli
