// What the files implementing ApiServer (api_server*.cpp) share: the parsed API request
// (ApiServer::Request), the readers of its query parameters, and the few helpers that more than
// one handler file needs. Internal to the server: only api_server*.cpp include it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/http/json_body.h"
#include "common/status.h"
#include "localcluster/apiserver/api_errors.h"
#include "localcluster/apiserver/api_server.h"
#include "localcluster/apiserver/custom_resources.h"
#include "localcluster/apiserver/field_selector.h"
#include "localcluster/apiserver/label_selector.h"
#include "localcluster/apiserver/request_info.h"
#include "localcluster/apiserver/resource_registry.h"
#include "localcluster/apiserver/storage.h"
#include "localcluster/apiserver/table.h"
#include "localcluster/apiserver/user_info.h"

namespace sluice::apiserver {

struct ApiServer::Request {
  Request(const httplib::Request& h, RequestInfo i, ResourceInfo r)
      : http(h), info(std::move(i)), resource(std::move(r)) {}

  const httplib::Request& http;
  RequestInfo info;
  ResourceInfo resource;
  UserInfo user;  // Who sent it (authenticator.h): what authorization will decide on.
  std::optional<nlohmann::json> crd;  // The CRD of a custom resource.
  ObjectKey key;                      // Named requests: the object's key.
  bool table = false;
  bool dry_run = false;
  FieldValidation field_validation = FieldValidation::kWarn;
  std::vector<std::string> warnings;
  // A protobuf request body, decoded to JSON (kubectl's typed clients send protobuf).
  std::optional<nlohmann::json> decoded_body;

  // The body as a JSON object: the decoded protobuf, else the JSON text.
  Result<nlohmann::json> Body() const {
    if (decoded_body) return *decoded_body;
    return http::ParseJsonObject(http);
  }

  ErrorSubject Subject() const { return {resource.group, resource.plural, info.name}; }
  std::string QualifiedKind() const {
    return resource.group.empty() ? resource.kind : resource.kind + "." + resource.group;
  }
};

namespace api_server_internal {

// Page size of the server's own paged reads (a watch's initial state, deletecollection, the
// custom resources of a deleted CRD).
inline constexpr size_t kWatchInitialPage = 500;

inline bool IsCrdResource(const ResourceInfo& info) {
  return info.group == "apiextensions.k8s.io" && info.plural == "customresourcedefinitions";
}

// Fields each built-in resource may be selected by, besides metadata.name/namespace.
inline std::vector<std::string> SelectableFields(const ResourceInfo& info) {
  if (info.group.empty() && info.plural == "pods") {
    return {
        "spec.nodeName",    "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
        "spec.hostNetwork", "status.phase",       "status.podIP",       "status.nominatedNodeName"};
  }
  if (info.group.empty() && info.plural == "nodes") return {"spec.unschedulable"};
  if (info.group.empty() && info.plural == "namespaces") return {"status.phase"};
  if (info.group.empty() && info.plural == "secrets") return {"type"};
  if (info.group.empty() && info.plural == "events") {
    return {"involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source.component",
            "type"};
  }
  if (info.group == "events.k8s.io" && info.plural == "events") {
    return {"regarding.kind",       "regarding.namespace",
            "regarding.name",       "regarding.uid",
            "regarding.apiVersion", "regarding.resourceVersion",
            "regarding.fieldPath",  "reason",
            "reportingController",  "type"};
  }
  return {};
}

inline std::string Param(const httplib::Request& req, const char* name) {
  return req.has_param(name) ? req.get_param_value(name) : std::string();
}

inline bool TruthyParam(const httplib::Request& req, const char* name) {
  const std::string v = Param(req, name);
  return v == "true" || v == "1";
}

inline Result<uint64_t> ParseRevision(const std::string& text, const char* what) {
  if (text.empty()) return uint64_t{0};
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') {
      return Status::InvalidArgument(std::string(what) + ": Invalid value: \"" + text +
                                     "\": must be a resource version returned by the server");
    }
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

inline std::string ResourceVersionOf(const nlohmann::json& object) {
  if (!object.contains("metadata") || !object["metadata"].is_object()) return "";
  const nlohmann::json& rv = object["metadata"].value("resourceVersion", nlohmann::json());
  return rv.is_string() ? rv.get<std::string>() : "";
}

// cpp-httplib gzips chunked responses of text and JSON types when the client accepts it (Go
// clients always do), and its compressor holds data back until a block fills: a watch event or
// a followed log line would sit in the buffer. Streams are therefore sent uncompressed. The
// request is a non-const object owned by httplib's worker, so removing the header is defined.
inline void DisableCompression(const httplib::Request& req) {
  const_cast<httplib::Request&>(req).headers.erase("Accept-Encoding");
}

// The labelSelector and fieldSelector parameters of a list, watch or deletecollection.
struct Selectors {
  LabelSelector labels;
  FieldSelector fields;
};
inline Result<Selectors> ParseSelectors(const httplib::Request& req, const ResourceInfo& resource) {
  Selectors out;
  SLUICE_ASSIGN_OR_RETURN(out.labels, ParseLabelSelector(Param(req, "labelSelector")));
  SLUICE_ASSIGN_OR_RETURN(
      out.fields, ParseFieldSelector(Param(req, "fieldSelector"), SelectableFields(resource)));
  return out;
}

inline IncludeObject IncludeFrom(const httplib::Request& req) {
  const std::string v = Param(req, "includeObject");
  if (v == "None") return IncludeObject::kNone;
  if (v == "Object") return IncludeObject::kObject;
  return IncludeObject::kMetadata;
}

// The Table for `objects` of `resource` (CRD printer columns or the built-in printers). Defined
// in api_server_reads.cpp; watches with `as=Table` use it too.
Result<nlohmann::json> TableFor(const ResourceInfo& resource,
                                const std::optional<nlohmann::json>& crd,
                                const std::vector<nlohmann::json>& objects, Clock::WallTime now,
                                const std::string& resource_version, IncludeObject include);

// Applies a PATCH body of `content_type` to `current`. Defined in api_server_patch.cpp; the
// scale subresource patches its Scale object with it.
Result<nlohmann::json> ApplyPatch(const std::string& content_type, const std::string& body,
                                  const nlohmann::json& current, const ResourceInfo& resource,
                                  bool custom);
// Whether ApplyPatch takes `content_type` (strategic merge patch: built-in kinds only).
bool SupportedPatchType(const std::string& content_type, bool custom);

}  // namespace api_server_internal
}  // namespace sluice::apiserver
