// ApiServer's scale subresource (autoscaling/v1 Scale): read from and written to the paths a
// resource declares for spec and status replicas and the label selector.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "localcluster/apiserver/api_errors.h"
#include "localcluster/apiserver/api_server.h"
#include "localcluster/apiserver/api_server_request.h"
#include "localcluster/apiserver/resource_registry.h"
#include "localcluster/apiserver/storage.h"

namespace sluice::apiserver {
namespace {

using api_server_internal::ApplyPatch;
using api_server_internal::ResourceVersionOf;
using api_server_internal::SupportedPatchType;
using nlohmann::json;

// Reads `.spec.replicas`-style paths (the scale subresource's) from an object.
const json* AtDottedPath(const json& object, const std::string& path) {
  const json* node = &object;
  size_t pos = path.empty() || path[0] != '.' ? 0 : 1;
  while (pos < path.size()) {
    const size_t end = std::min(path.find('.', pos), path.size());
    const std::string key = path.substr(pos, end - pos);
    if (!node->is_object() || !node->contains(key)) return nullptr;
    node = &(*node)[key];
    pos = end + 1;
  }
  return node;
}

void SetDottedPath(json& object, const std::string& path, json value) {
  json* node = &object;
  size_t pos = path.empty() || path[0] != '.' ? 0 : 1;
  while (pos < path.size()) {
    const size_t end = std::min(path.find('.', pos), path.size());
    const std::string key = path.substr(pos, end - pos);
    if (!node->is_object()) *node = json::object();
    node = &(*node)[key];
    pos = end + 1;
  }
  *node = std::move(value);
}

json ScaleOf(const ResourceInfo& resource, const json& object) {
  const ScaleSubresource& scale = *resource.scale;
  const json& meta = object.at("metadata");
  json out = {{"apiVersion", "autoscaling/v1"},
              {"kind", "Scale"},
              {"metadata",
               {{"name", meta.value("name", "")},
                {"uid", meta.value("uid", "")},
                {"resourceVersion", meta.value("resourceVersion", "")},
                {"creationTimestamp", meta.value("creationTimestamp", "")}}},
              {"spec", json::object()},
              {"status", {{"replicas", 0}}}};
  if (meta.contains("namespace")) out["metadata"]["namespace"] = meta["namespace"];
  if (const json* v = AtDottedPath(object, scale.spec_replicas_path); v && v->is_number_integer()) {
    out["spec"]["replicas"] = *v;
  }
  if (const json* v = AtDottedPath(object, scale.status_replicas_path);
      v && v->is_number_integer()) {
    out["status"]["replicas"] = *v;
  }
  if (!scale.label_selector_path.empty()) {
    if (const json* v = AtDottedPath(object, scale.label_selector_path); v && v->is_string()) {
      out["status"]["selector"] = *v;
    }
  }
  return out;
}

}  // namespace

void ApiServer::GetScale(Request& r, httplib::Response& res) {
  Result<Stored> stored = storage_->Get(r.key);
  if (!stored.ok()) {
    ReplyStatus(stored.status(), &r, res);
    return;
  }
  res.set_content(ScaleOf(r.resource, stored->object).dump(), "application/json");
}

void ApiServer::WriteScale(Request& r, httplib::Response& res) {
  const std::string content_type = r.http.get_header_value("Content-Type");
  const bool is_patch = r.info.verb == "patch";
  if (is_patch && !SupportedPatchType(content_type, /*custom=*/false)) {
    const json body = StatusJson(415, "UnsupportedMediaType",
                                 "the body of the request was in an unknown format", r.Subject());
    res.status = 415;
    res.set_content(body.dump(), "application/json");
    return;
  }
  std::optional<json> put_body;
  if (!is_patch) {
    Result<json> body = r.Body();
    if (!body.ok()) {
      ReplyStatus(body.status(), &r, res);
      return;
    }
    put_body = std::move(*body);
  }
  const std::string spec_path = r.resource.scale->spec_replicas_path;
  // The scale write is an update of the main resource's spec replicas field.
  Request main = r;
  main.info.subresource.clear();
  httplib::Response inner;
  WriteExisting(
      main,
      [&](const json& current) -> Result<json> {
        json scale = ScaleOf(r.resource, current);
        json next_scale;
        if (is_patch) {
          SLUICE_ASSIGN_OR_RETURN(next_scale,
                                  ApplyPatch(content_type, r.http.body, scale, r.resource, false));
        } else {
          next_scale = *put_body;
        }
        const std::string rv = ResourceVersionOf(next_scale);
        if (!rv.empty() && rv != ResourceVersionOf(current)) {
          return storage_internal::UpdateConflictError(r.key);
        }
        const json replicas = next_scale.value("/spec/replicas"_json_pointer, json());
        if (!replicas.is_number_integer() || replicas.get<int64_t>() < 0) {
          return Status::Unprocessable("spec.replicas: Invalid value: " + replicas.dump() +
                                           ": must be a non-negative integer",
                                       "spec.replicas");
        }
        json next = current;
        SetDottedPath(next, spec_path, replicas);
        return next;
      },
      inner);
  if (inner.status != 200) {
    res.status = inner.status;
    res.set_content(inner.body, "application/json");
    return;
  }
  json object = json::parse(inner.body);
  res.set_content(ScaleOf(r.resource, object).dump(), "application/json");
}

}  // namespace sluice::apiserver
