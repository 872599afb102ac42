// ApiServer's patch: JSON patch, merge patch and (built-in kinds only) strategic merge patch,
// applied to the served form of the object, then written through WriteExisting.
#include <optional>
#include <string>

#include "common/json/json_depth.h"
#include "localcluster/apiserver/api_errors.h"
#include "localcluster/apiserver/api_server.h"
#include "localcluster/apiserver/api_server_request.h"
#include "localcluster/apiserver/json_patch.h"
#include "localcluster/apiserver/merge_patch.h"
#include "localcluster/apiserver/object_rules.h"
#include "localcluster/apiserver/resource_registry.h"
#include "localcluster/apiserver/storage.h"
#include "localcluster/apiserver/strategic_merge_patch.h"

namespace sluice::apiserver {
namespace {

using api_server_internal::ApplyPatch;
using api_server_internal::ResourceVersionOf;
using api_server_internal::SupportedPatchType;
using nlohmann::json;

}  // namespace

namespace api_server_internal {

// Applies a PATCH body of `content_type` to `current`.
Result<json> ApplyPatch(const std::string& content_type, const std::string& body,
                        const json& current, const ResourceInfo& resource, bool custom) {
  const std::string type = content_type.substr(0, content_type.find(';'));
  if (const std::optional<size_t> at = FirstTooDeepJson(body)) {
    return Status::InvalidArgument("the patch nests deeper than " + std::to_string(kMaxJsonDepth) +
                                   " levels (at byte " + std::to_string(*at) + ")");
  }
  json patch = json::parse(body, nullptr, false);
  if (patch.is_discarded()) {
    return Status::InvalidArgument("the body of the request was in an unknown format: " + type +
                                   " (not valid JSON)");
  }
  if (type == "application/json-patch+json") return ApplyJsonPatch(current, patch);
  if (type == "application/merge-patch+json") return ApplyMergePatch(current, patch);
  if (type == "application/strategic-merge-patch+json") {
    if (custom) {
      return Status::InvalidArgument(
          "strategic merge patch is not supported for custom resources; use --type=merge");
    }
    return ApplyStrategicMergePatch(current, patch, DefaultPatchMeta(resource.kind));
  }
  return Status::InvalidArgument(
      "the body of the request was in an unknown format - accepted "
      "media types include: application/json-patch+json, "
      "application/merge-patch+json, "
      "application/strategic-merge-patch+json");
}

bool SupportedPatchType(const std::string& content_type, bool custom) {
  const std::string type = content_type.substr(0, content_type.find(';'));
  return type == "application/json-patch+json" || type == "application/merge-patch+json" ||
         (!custom && type == "application/strategic-merge-patch+json");
}

}  // namespace api_server_internal

void ApiServer::Patch(Request& r, httplib::Response& res) {
  const std::string content_type = r.http.get_header_value("Content-Type");
  const bool custom = !r.resource.crd_name.empty();
  if (!SupportedPatchType(content_type, custom)) {
    const json body = StatusJson(
        415, "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json" +
            std::string(custom ? "" : ", application/strategic-merge-patch+json"),
        r.Subject());
    res.status = 415;
    res.set_content(body.dump(), "application/json");
    return;
  }
  WriteExisting(
      r,
      [&](const json& current) -> Result<json> {
        const json served = ForOutput(r.resource, current);
        SLUICE_ASSIGN_OR_RETURN(json patched,
                                ApplyPatch(content_type, r.http.body, served, r.resource, custom));
        const std::string rv = ResourceVersionOf(patched);
        if (!rv.empty() && rv != ResourceVersionOf(current)) {
          return storage_internal::UpdateConflictError(r.key);
        }
        return patched;
      },
      res);
}

}  // namespace sluice::apiserver
