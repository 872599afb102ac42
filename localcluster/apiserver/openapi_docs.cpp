// The assembly of the OpenAPI documents (openapi_docs.h): the paths and operations of every
// served resource, in the v3 or the v2 dialect, around the schemas of openapi_schemas.h.
#include "localcluster/apiserver/openapi_docs.h"

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "localcluster/apiserver/openapi_schemas.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;
using openapi_docs_internal::BuiltinSchema;
using openapi_docs_internal::CrdSchema;
using openapi_docs_internal::DeleteOptionsSchema;
using openapi_docs_internal::Gvk;
using openapi_docs_internal::kDeleteOptions;
using openapi_docs_internal::kGvkKey;
using openapi_docs_internal::KindSchemaToV2;
using openapi_docs_internal::kListMeta;
using openapi_docs_internal::kManagedFields;
using openapi_docs_internal::kObjectMeta;
using openapi_docs_internal::kOwnerReference;
using openapi_docs_internal::kPatch;
using openapi_docs_internal::kScale;
using openapi_docs_internal::kStatus;
using openapi_docs_internal::kV2RefPrefix;
using openapi_docs_internal::kV3RefPrefix;
using openapi_docs_internal::ListMetaSchema;
using openapi_docs_internal::ListSchema;
using openapi_docs_internal::ManagedFieldsSchema;
using openapi_docs_internal::ObjectMetaSchema;
using openapi_docs_internal::OwnerReferenceSchema;
using openapi_docs_internal::PatchSchema;
using openapi_docs_internal::RewriteRefs;
using openapi_docs_internal::ScaleSchema;
using openapi_docs_internal::StatusSchema;
using openapi_docs_internal::ToV2Schema;

constexpr std::string_view kActionKey = "x-kubernetes-action";

// Which OpenAPI dialect a document is built in. Schemas are always built in the v3 form and
// converted for v2 at the end (ToV2Schema).
enum class Flavor { kV3, kV2 };

// ---------------------------------------------------------------------------------------------
// Paths and operations.

struct QueryParam {
  const char* name;
  const char* type;  // "string", "integer", "boolean".
  const char* description;
};

const QueryParam kDryRun = {"dryRun", "string",
                            "When All, the request is validated and admitted but not persisted."};
const QueryParam kFieldManager = {"fieldManager", "string",
                                  "Name of the actor making the change (server-side apply)."};
const QueryParam kFieldValidation = {
    "fieldValidation", "string",
    "How to treat unknown or duplicate fields in the request: Ignore, Warn or Strict."};
const QueryParam kForce = {"force", "boolean",
                           "Apply requests only: take ownership of conflicting fields."};
const QueryParam kGracePeriod = {"gracePeriodSeconds", "integer",
                                 "Seconds before the object is deleted."};
const QueryParam kPropagation = {"propagationPolicy", "string",
                                 "How dependents are deleted: Orphan, Background or Foreground."};
const QueryParam kLabelSelector = {"labelSelector", "string",
                                   "Only objects whose labels match this selector."};
const QueryParam kFieldSelector = {"fieldSelector", "string",
                                   "Only objects whose fields match this selector."};
const QueryParam kLimit = {"limit", "integer", "Maximum number of objects in one page."};
const QueryParam kContinue = {"continue", "string", "Token of the next page of a limited list."};
const QueryParam kResourceVersion = {"resourceVersion", "string",
                                     "Revision to list at or watch from."};
const QueryParam kResourceVersionMatch = {"resourceVersionMatch", "string",
                                          "How resourceVersion applies to a list."};
const QueryParam kTimeoutSeconds = {"timeoutSeconds", "integer",
                                    "Time limit of the list or watch call."};
const QueryParam kWatch = {"watch", "boolean",
                           "Stream changes (add, update, delete) instead of returning a list."};
const QueryParam kBookmarks = {"allowWatchBookmarks", "boolean",
                               "Ask for BOOKMARK events in a watch."};
const QueryParam kSendInitialEvents = {"sendInitialEvents", "boolean",
                                       "Start a watch with synthetic events for existing objects."};

class DocBuilder {
 public:
  DocBuilder(Flavor flavor, const CrdLookup& crds) : flavor_(flavor), crds_(crds) {}

  void AddResource(const ResourceInfo& r) {
    const std::string name = OpenApiSchemaName(r.group, r.version, r.kind);
    const std::string list_name = OpenApiSchemaName(r.group, r.version, r.list_kind);
    schemas_[name] = r.crd_name.empty() ? BuiltinSchema(r) : CrdSchema(r, crds_);
    schemas_[list_name] = ListSchema(r, name);

    const json gvk = Gvk(r.group, r.version, r.kind);
    const std::string gv_path =
        r.group.empty() ? "/api/" + r.version : "/apis/" + r.group + "/" + r.version;
    const std::string op_prefix = OperationPrefix(r.group, r.version);
    const std::string scope = r.namespaced ? "Namespaced" : "";
    const std::string collection =
        r.namespaced ? gv_path + "/namespaces/{namespace}/" + r.plural : gv_path + "/" + r.plural;
    const std::string item = collection + "/{name}";
    const bool builtin = r.crd_name.empty();
    auto can = [&](const char* verb) {
      return std::find(r.verbs.begin(), r.verbs.end(), verb) != r.verbs.end();
    };
    const std::vector<QueryParam> list_params = {kBookmarks,
                                                 kContinue,
                                                 kFieldSelector,
                                                 kLabelSelector,
                                                 kLimit,
                                                 kResourceVersion,
                                                 kResourceVersionMatch,
                                                 kSendInitialEvents,
                                                 kTimeoutSeconds,
                                                 kWatch};
    const std::vector<QueryParam> write_params = {kDryRun, kFieldManager, kFieldValidation};
    const std::vector<QueryParam> patch_params = {kDryRun, kFieldManager, kFieldValidation, kForce};

    if (can("list")) {
      if (r.namespaced) {
        Operation(gv_path + "/" + r.plural, "get", "list", gvk,
                  "list or watch objects of kind " + r.kind,
                  "list" + op_prefix + r.kind + "ForAllNamespaces", list_params, Body::kNone,
                  list_name, false);
      }
      Operation(collection, "get", "list", gvk, "list or watch objects of kind " + r.kind,
                "list" + op_prefix + scope + r.kind, list_params, Body::kNone, list_name,
                r.namespaced);
    }
    if (can("create")) {
      Operation(collection, "post", "post", gvk, "create " + Article(r.kind) + r.kind,
                "create" + op_prefix + scope + r.kind, write_params, Body::kObject, name,
                r.namespaced, name);
    }
    if (can("deletecollection")) {
      Operation(collection, "delete", "deletecollection", gvk, "delete collection of " + r.kind,
                "deleteCollection" + op_prefix + scope + r.kind,
                {kContinue, kDryRun, kFieldSelector, kGracePeriod, kLabelSelector, kLimit,
                 kPropagation, kResourceVersion, kTimeoutSeconds},
                Body::kDeleteOptions, std::string(kStatus), r.namespaced);
    }
    if (can("get")) {
      Operation(item, "get", "get", gvk, "read the specified " + r.kind,
                "read" + op_prefix + scope + r.kind, {}, Body::kNone, name, r.namespaced);
    }
    if (can("update")) {
      Operation(item, "put", "put", gvk, "replace the specified " + r.kind,
                "replace" + op_prefix + scope + r.kind, write_params, Body::kObject, name,
                r.namespaced, name);
    }
    if (can("patch")) {
      Operation(item, "patch", "patch", gvk, "partially update the specified " + r.kind,
                "patch" + op_prefix + scope + r.kind, patch_params,
                builtin ? Body::kStrategicPatch : Body::kPatch, name, r.namespaced);
    }
    if (can("delete")) {
      Operation(item, "delete", "delete", gvk, "delete " + Article(r.kind) + r.kind,
                "delete" + op_prefix + scope + r.kind, {kDryRun, kGracePeriod, kPropagation},
                Body::kDeleteOptions, std::string(kStatus), r.namespaced);
    }
    if (r.has_status) {
      const std::string path = item + "/status";
      const std::string id = op_prefix + scope + r.kind + "Status";
      Operation(path, "get", "get", gvk, "read status of the specified " + r.kind, "read" + id, {},
                Body::kNone, name, r.namespaced);
      Operation(path, "put", "put", gvk, "replace status of the specified " + r.kind,
                "replace" + id, write_params, Body::kObject, name, r.namespaced, name);
      Operation(path, "patch", "patch", gvk, "partially update status of the specified " + r.kind,
                "patch" + id, patch_params, builtin ? Body::kStrategicPatch : Body::kPatch, name,
                r.namespaced);
    }
    if (r.scale) {
      uses_scale_ = true;
      const std::string path = item + "/scale";
      const std::string id = op_prefix + scope + r.kind + "Scale";
      const json scale_gvk = Gvk("autoscaling", "v1", "Scale");
      const std::string scale(kScale);
      Operation(path, "get", "get", scale_gvk, "read scale of the specified " + r.kind, "read" + id,
                {}, Body::kNone, scale, r.namespaced);
      Operation(path, "put", "put", scale_gvk, "replace scale of the specified " + r.kind,
                "replace" + id, write_params, Body::kObject, scale, r.namespaced, scale);
      Operation(path, "patch", "patch", scale_gvk,
                "partially update scale of the specified " + r.kind, "patch" + id, patch_params,
                builtin ? Body::kStrategicPatch : Body::kPatch, scale, r.namespaced);
    }
    if (r.has_log) {
      Operation(item + "/log", "get", "get", gvk, "read log of the specified " + r.kind,
                "read" + op_prefix + scope + r.kind + "Log",
                {{"container", "string", "The container to read logs of."},
                 {"follow", "boolean", "Stream the log as it grows."},
                 {"previous", "boolean", "Logs of the previous, terminated container."},
                 {"sinceSeconds", "integer", "Only lines newer than this many seconds."},
                 {"tailLines", "integer", "Only this many lines from the end."},
                 {"timestamps", "boolean", "Prefix every line with its timestamp."},
                 {"limitBytes", "integer", "Stop after this many bytes."}},
                Body::kNone, "", r.namespaced);
    }
  }

  json Finish(std::string_view title) {
    schemas_[std::string(kObjectMeta)] = ObjectMetaSchema();
    schemas_[std::string(kListMeta)] = ListMetaSchema();
    schemas_[std::string(kOwnerReference)] = OwnerReferenceSchema();
    schemas_[std::string(kManagedFields)] = ManagedFieldsSchema();
    schemas_[std::string(kPatch)] = PatchSchema();
    schemas_[std::string(kStatus)] = StatusSchema();
    schemas_[std::string(kDeleteOptions)] = DeleteOptionsSchema();
    if (uses_scale_) schemas_[std::string(kScale)] = ScaleSchema();
    const json info = {{"title", title}, {"version", "v1"}};
    if (flavor_ == Flavor::kV3) {
      return {{"openapi", "3.0.0"},
              {"info", info},
              {"paths", paths_},
              {"components", {{"schemas", schemas_}}}};
    }
    json definitions = json::object();
    for (auto& [name, schema] : schemas_.items()) {
      if (schema.contains(kGvkKey)) {
        definitions[name] = KindSchemaToV2(schema);
        continue;
      }
      json s = schema;
      ToV2Schema(s);
      RewriteRefs(s);
      definitions[name] = std::move(s);
    }
    return {{"swagger", "2.0"}, {"info", info}, {"paths", paths_}, {"definitions", definitions}};
  }

 private:
  enum class Body { kNone, kObject, kPatch, kStrategicPatch, kDeleteOptions };

  static std::string Article(const std::string& kind) {
    return !kind.empty() && std::string_view("AEIOU").find(kind[0]) != std::string_view::npos
               ? "an "
               : "a ";
  }

  // "CoreV1", "CoordinationV1", "SluiceDevV1alpha1": keeps operation IDs unique in the v2
  // document, which holds every group.
  static std::string OperationPrefix(std::string_view group, std::string_view version) {
    std::string g(group.empty() ? "core" : group);
    if (const size_t k8s = g.find(".k8s.io"); k8s != std::string::npos) g.resize(k8s);
    std::string out;
    bool upper = true;
    for (char c : g) {
      if (c == '.' || c == '-') {
        upper = true;
        continue;
      }
      out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
      upper = false;
    }
    std::string v(version);
    if (!v.empty()) v[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(v[0])));
    return out + v;
  }

  json SchemaRef(std::string_view name) const {
    return {{"$ref", std::string(flavor_ == Flavor::kV3 ? kV3RefPrefix : kV2RefPrefix) +
                         std::string(name)}};
  }

  json Param(const QueryParam& q) const {
    json p = {{"name", q.name}, {"in", "query"}, {"description", q.description}};
    if (flavor_ == Flavor::kV3) {
      p["schema"] = {{"type", q.type}, {"uniqueItems", true}};
    } else {
      p["type"] = q.type;
      p["uniqueItems"] = true;
    }
    return p;
  }

  json PathParam(const char* name, std::string_view description) const {
    json p = {{"name", name}, {"in", "path"}, {"description", description}, {"required", true}};
    if (flavor_ == Flavor::kV3) {
      p["schema"] = {{"type", "string"}, {"uniqueItems", true}};
    } else {
      p["type"] = "string";
      p["uniqueItems"] = true;
    }
    return p;
  }

  // The parameters shared by every operation of a path (kube puts them on the path item).
  json PathParams(const std::string& path, bool namespaced) const {
    json params = json::array();
    if (path.find("{name}") != std::string::npos) {
      params.push_back(PathParam("name", "name of the object"));
    }
    if (namespaced) {
      params.push_back(
          PathParam("namespace", "object name and auth scope, such as for teams and projects"));
    }
    params.push_back(Param({"pretty", "string", "If 'true', the output is pretty printed."}));
    return params;
  }

  void Operation(const std::string& path, const char* method, const char* action, const json& gvk,
                 std::string description, std::string operation_id,
                 const std::vector<QueryParam>& query, Body body, const std::string& response,
                 bool namespaced, const std::string& request_schema = "") {
    json& item = paths_[path];
    if (!item.contains("parameters")) item["parameters"] = PathParams(path, namespaced);
    json op = {{"description", std::move(description)},
               {"operationId", std::move(operation_id)},
               {std::string(kActionKey), action},
               {std::string(kGvkKey), gvk}};
    json params = json::array();
    for (const QueryParam& q : query) params.push_back(Param(q));

    std::vector<std::string> consumes;
    std::string body_schema;
    bool body_required = true;
    switch (body) {
      case Body::kNone:
        break;
      case Body::kObject:
        consumes = {"application/json", "application/yaml"};
        body_schema = request_schema;
        break;
      case Body::kStrategicPatch:
        // Built-in kinds accept strategic merge patches, but the v3 document does not say so:
        // kubectl apply computes a strategic merge patch from the v3 schema when the PATCH
        // operation advertises it, and the permissive built-in schemas lack the nested fields
        // and merge keys it needs ("unable to find api field"). Unadvertised, kubectl uses its
        // compiled-in types, which carry kube's exact patch metadata.
        consumes = {"application/json-patch+json", "application/merge-patch+json",
                    "application/apply-patch+yaml"};
        if (flavor_ == Flavor::kV2) consumes.push_back("application/strategic-merge-patch+json");
        body_schema = kPatch;
        break;
      case Body::kPatch:
        consumes = {"application/json-patch+json", "application/merge-patch+json",
                    "application/apply-patch+yaml"};
        body_schema = kPatch;
        break;
      case Body::kDeleteOptions:
        consumes = {"application/json", "application/yaml"};
        body_schema = kDeleteOptions;
        body_required = false;
        break;
    }

    // Logs are plain text; everything else answers with an object.
    const std::vector<std::string> produces =
        response.empty() ? std::vector<std::string>{"text/plain", "application/json"}
                         : std::vector<std::string>{"application/json", "application/yaml"};
    const json response_schema = response.empty() ? json{{"type", "string"}} : SchemaRef(response);
    std::vector<std::string> codes = {"200"};
    if (std::string_view(method) == "post") codes = {"200", "201", "202"};
    if (std::string_view(method) == "put") codes = {"200", "201"};
    if (action == std::string_view("delete")) codes = {"200", "202"};

    json responses = json::object();
    if (flavor_ == Flavor::kV3) {
      if (!body_schema.empty()) {
        json content = json::object();
        for (const std::string& type : consumes) {
          content[type] = {{"schema", SchemaRef(body_schema)}};
        }
        op["requestBody"] = {{"content", content}, {"required", body_required}};
      }
      for (const std::string& code : codes) {
        json content = json::object();
        for (const std::string& type : produces) content[type] = {{"schema", response_schema}};
        responses[code] = {{"description", Describe(code)}, {"content", content}};
      }
    } else {
      if (!body_schema.empty()) {
        params.push_back({{"name", "body"},
                          {"in", "body"},
                          {"required", body_required},
                          {"schema", SchemaRef(body_schema)}});
        op["consumes"] = consumes;
      }
      op["produces"] = produces;
      op["schemes"] = json::array({"https"});
      for (const std::string& code : codes) {
        responses[code] = {{"description", Describe(code)}, {"schema", response_schema}};
      }
    }
    responses["401"] = {{"description", "Unauthorized"}};
    op["parameters"] = std::move(params);
    op["responses"] = std::move(responses);
    item[method] = std::move(op);
  }

  static const char* Describe(const std::string& code) {
    if (code == "201") return "Created";
    if (code == "202") return "Accepted";
    return "OK";
  }

  Flavor flavor_;
  const CrdLookup& crds_;
  json paths_ = json::object();
  json schemas_ = json::object();
  bool uses_scale_ = false;
};

std::string GroupVersionKey(std::string_view group, std::string_view version) {
  return group.empty() ? "api/" + std::string(version)
                       : "apis/" + std::string(group) + "/" + std::string(version);
}

}  // namespace

std::string OpenApiSchemaName(std::string_view group, std::string_view version,
                              std::string_view kind) {
  std::string prefix;
  if (group.empty()) {
    prefix = "io.k8s.api.core";
  } else if (group == "apiextensions.k8s.io") {
    prefix = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions";
  } else if (group.size() > 7 && group.substr(group.size() - 7) == ".k8s.io") {
    // Built-in groups: events.k8s.io -> io.k8s.api.events.
    prefix = "io.k8s.api." + std::string(group.substr(0, group.find('.')));
  } else {
    // Other groups (CRDs) reversed: sluice.dev -> dev.sluice.
    std::vector<std::string_view> labels;
    size_t start = 0;
    while (start <= group.size()) {
      const size_t dot = group.find('.', start);
      const size_t end = dot == std::string_view::npos ? group.size() : dot;
      labels.push_back(group.substr(start, end - start));
      start = end + 1;
    }
    for (auto it = labels.rbegin(); it != labels.rend(); ++it) {
      if (!prefix.empty()) prefix += '.';
      prefix += *it;
    }
  }
  return prefix + "." + std::string(version) + "." + std::string(kind);
}

std::string OpenApiHash(const json& document) {
  // 64-bit FNV-1a of the compact serialization: stable across runs and platforms.
  const std::string text = document.dump();
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016" PRIX64, h);
  return buf;
}

std::optional<json> OpenApiV3GroupVersion(const ResourceRegistry& registry, const CrdLookup& crds,
                                          std::string_view group, std::string_view version) {
  DocBuilder builder(Flavor::kV3, crds);
  bool any = false;
  for (const ResourceInfo* r : registry.All()) {
    if (r->group != group || r->version != version) continue;
    builder.AddResource(*r);
    any = true;
  }
  if (!any) return std::nullopt;
  return builder.Finish("Sluice local API server (" + GroupVersionKey(group, version) + ")");
}

json OpenApiV3Root(const ResourceRegistry& registry, const CrdLookup& crds) {
  json paths = json::object();
  for (const std::string& group : registry.Groups()) {
    for (const std::string& version : registry.Versions(group)) {
      std::optional<json> doc = OpenApiV3GroupVersion(registry, crds, group, version);
      if (!doc) continue;
      const std::string key = GroupVersionKey(group, version);
      paths[key] = {{"serverRelativeURL", "/openapi/v3/" + key + "?hash=" + OpenApiHash(*doc)}};
    }
  }
  return {{"paths", paths}};
}

json OpenApiV2(const ResourceRegistry& registry, const CrdLookup& crds) {
  DocBuilder builder(Flavor::kV2, crds);
  for (const ResourceInfo* r : registry.All()) builder.AddResource(*r);
  return builder.Finish("Sluice local API server");
}

}  // namespace sluice::apiserver
