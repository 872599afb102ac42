#include "localcluster/apiserver/openapi_docs.h"

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <set>
#include <vector>

namespace sluice::apiserver {
namespace {

using nlohmann::json;

constexpr std::string_view kV3RefPrefix = "#/components/schemas/";
constexpr std::string_view kV2RefPrefix = "#/definitions/";
constexpr std::string_view kGvkKey = "x-kubernetes-group-version-kind";
constexpr std::string_view kActionKey = "x-kubernetes-action";
constexpr std::string_view kPreserveKey = "x-kubernetes-preserve-unknown-fields";

constexpr std::string_view kObjectMeta = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
constexpr std::string_view kListMeta = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
constexpr std::string_view kOwnerReference = "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference";
constexpr std::string_view kManagedFields =
    "io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry";
constexpr std::string_view kPatch = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
constexpr std::string_view kStatus = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
constexpr std::string_view kDeleteOptions = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
constexpr std::string_view kScale = "io.k8s.api.autoscaling.v1.Scale";

// Which OpenAPI dialect a document is built in. Schemas are always built in the v3 form and
// converted for v2 at the end (ToV2Schema).
enum class Flavor { kV3, kV2 };

// Tolerant accessors: a stored CRD's schema has been validated, but a wrongly typed keyword
// must not throw here.
bool IsTrue(const json& s, std::string_view key) {
  auto it = s.find(key);
  return it != s.end() && *it == true;
}

bool TypeIs(const json& s, std::string_view type) {
  auto it = s.find("type");
  return it != s.end() && *it == type;
}

json Gvk(std::string_view group, std::string_view version, std::string_view kind) {
  return {{"group", group}, {"version", version}, {"kind", kind}};
}

json Ref(std::string_view name) {
  return {{"$ref", std::string(kV3RefPrefix) + std::string(name)}};
}

// A field that refers to another schema; OpenAPI 3.0 ignores siblings of $ref, so the reference
// goes under allOf as kube-apiserver writes it.
json RefField(std::string_view name, std::string_view description) {
  return {{"allOf", json::array({Ref(name)})}, {"description", description}};
}

json Typed(std::string_view type, std::string_view description) {
  return {{"type", type}, {"description", description}};
}

json StringMap(std::string_view description) {
  return {{"type", "object"},
          {"description", description},
          {"additionalProperties", {{"type", "string"}, {"default", ""}}}};
}

json DateTime(std::string_view description) {
  return {{"type", "string"}, {"format", "date-time"}, {"description", description}};
}

json OpenObject(std::string_view description) {
  return {{"type", "object"}, {"description", description}, {kPreserveKey, true}};
}

json ApiVersionField() {
  return Typed("string",
               "The versioned schema of this representation of an object (group/version, or v1 "
               "for the core group).");
}

json KindField() {
  return Typed("string", "The REST resource this object represents, in CamelCase.");
}

json ObjectMetaField() {
  return RefField(kObjectMeta,
                  "Standard object metadata: name, namespace, labels, annotations and the fields "
                  "the server maintains.");
}

// ---------------------------------------------------------------------------------------------
// The shared apimachinery schemas.

json ObjectMetaSchema() {
  json p;
  p["name"] = Typed("string",
                    "Unique name of the object within its namespace (or the cluster, for "
                    "cluster-scoped kinds). Cannot be updated.");
  p["generateName"] = Typed("string",
                            "Prefix from which the server generates a unique name when name is "
                            "not set.");
  p["namespace"] = Typed("string",
                         "Namespace the object lives in; empty for cluster-scoped kinds. Cannot "
                         "be updated.");
  p["uid"] = Typed("string", "Server-assigned unique identifier of this object. Read-only.");
  p["resourceVersion"] =
      Typed("string",
            "Opaque version of the object, changed on every write; used for optimistic "
            "concurrency and watches. Read-only.");
  p["generation"] = {{"type", "integer"},
                     {"format", "int64"},
                     {"description", "Sequence number of the desired state (spec). Read-only."}};
  p["creationTimestamp"] = DateTime("When the object was created (RFC 3339, UTC). Read-only.");
  p["deletionTimestamp"] = DateTime(
      "When the object will be (or began to be) deleted; set by the server when a "
      "delete is requested while finalizers remain. Read-only.");
  p["deletionGracePeriodSeconds"] = {
      {"type", "integer"},
      {"format", "int64"},
      {"description", "Seconds the object is allowed to shut down gracefully. Read-only."}};
  p["labels"] = StringMap("Key/value pairs used to select and organise objects.");
  p["annotations"] = StringMap("Unstructured key/value data for tools and extensions.");
  p["ownerReferences"] = {
      {"type", "array"},
      {"description",
       "Objects this object depends on; it is garbage-collected when all "
       "of them are gone."},
      {"items", {{"allOf", json::array({Ref(kOwnerReference)})}, {"default", json::object()}}},
      {"x-kubernetes-list-type", "map"},
      {"x-kubernetes-list-map-keys", json::array({"uid"})},
      {"x-kubernetes-patch-merge-key", "uid"},
      {"x-kubernetes-patch-strategy", "merge"}};
  p["finalizers"] = {{"type", "array"},
                     {"description",
                      "Conditions that must be cleared (by their controllers) before the object "
                      "is removed from storage."},
                     {"items", {{"type", "string"}, {"default", ""}}},
                     {"x-kubernetes-list-type", "set"},
                     {"x-kubernetes-patch-strategy", "merge"}};
  p["managedFields"] = {
      {"type", "array"},
      {"description", "Which field manager owns which fields (server-side apply). Internal."},
      {"items", {{"allOf", json::array({Ref(kManagedFields)})}, {"default", json::object()}}},
      {"x-kubernetes-list-type", "atomic"}};
  p["selfLink"] = Typed("string", "Deprecated and unset.");
  return {{"type", "object"},
          {"description",
           "ObjectMeta is metadata that all persisted resources must have, which includes all "
           "objects users must create."},
          {"properties", p}};
}

json ListMetaSchema() {
  json p;
  p["resourceVersion"] = Typed("string", "Version of the list: the revision it was read at.");
  p["continue"] = Typed("string", "Token for the next page when the list was limited.");
  p["remainingItemCount"] = {
      {"type", "integer"},
      {"format", "int64"},
      {"description", "Approximate number of items after this page, when known."}};
  p["selfLink"] = Typed("string", "Deprecated and unset.");
  return {{"type", "object"},
          {"description", "ListMeta describes metadata that synthetic resources must have."},
          {"properties", p}};
}

json OwnerReferenceSchema() {
  json p;
  p["apiVersion"] = Typed("string", "API version of the owner.");
  p["kind"] = Typed("string", "Kind of the owner.");
  p["name"] = Typed("string", "Name of the owner.");
  p["uid"] = Typed("string", "UID of the owner.");
  p["controller"] = Typed("boolean", "Whether the owner is the managing controller.");
  p["blockOwnerDeletion"] =
      Typed("boolean", "Whether foreground deletion of the owner waits for this object.");
  return {{"type", "object"},
          {"description",
           "OwnerReference identifies an owning object, which must be in the same namespace "
           "(or cluster-scoped)."},
          {"required", json::array({"apiVersion", "kind", "name", "uid"})},
          {"properties", p},
          {"x-kubernetes-map-type", "atomic"}};
}

json ManagedFieldsSchema() {
  json p;
  p["manager"] = Typed("string", "The field manager (usually the client's name).");
  p["operation"] = Typed("string", "Apply or Update.");
  p["apiVersion"] = Typed("string", "API version the fields are expressed in.");
  p["time"] = DateTime("When the entry last changed.");
  p["fieldsType"] = Typed("string", "Format of fieldsV1; always FieldsV1.");
  p["fieldsV1"] = OpenObject("The set of owned fields.");
  p["subresource"] = Typed("string", "Subresource the fields were written through, if any.");
  return {{"type", "object"},
          {"description", "ManagedFieldsEntry records the fields one manager owns."},
          {"properties", p}};
}

json PatchSchema() {
  return {{"type", "object"},
          {"description",
           "A patch document: JSON patch, JSON merge patch, strategic merge patch or an apply "
           "configuration, as the request's Content-Type says."}};
}

json StatusSchema() {
  json p;
  p["apiVersion"] = ApiVersionField();
  p["kind"] = KindField();
  p["metadata"] = RefField(kListMeta, "Standard list metadata.");
  p["status"] = Typed("string", "Success or Failure.");
  p["message"] = Typed("string", "Human-readable description of the outcome.");
  p["reason"] = Typed("string", "Machine-readable reason, such as NotFound or Conflict.");
  p["details"] = OpenObject("Extended data about the reason.");
  p["code"] = {{"type", "integer"}, {"format", "int32"}, {"description", "HTTP status code."}};
  return {{"type", "object"},
          {"description", "Status is the result of operations that do not return an object."},
          {"properties", p}};
}

json DeleteOptionsSchema() {
  json p;
  p["apiVersion"] = ApiVersionField();
  p["kind"] = KindField();
  p["dryRun"] = {{"type", "array"},
                 {"description", "When All, the deletion is validated but not persisted."},
                 {"items", {{"type", "string"}, {"default", ""}}}};
  p["gracePeriodSeconds"] = {{"type", "integer"},
                             {"format", "int64"},
                             {"description", "Seconds before the object is deleted."}};
  p["propagationPolicy"] =
      Typed("string", "How dependents are garbage-collected: Orphan, Background or Foreground.");
  p["preconditions"] = OpenObject("uid and/or resourceVersion the object must still have.");
  return {{"type", "object"},
          {"description", "DeleteOptions may be provided when deleting an API object."},
          {"properties", p}};
}

json ScaleSchema() {
  json spec = {{"type", "object"},
               {"description", "Desired state of the scale."},
               {"properties",
                {{"replicas",
                  {{"type", "integer"},
                   {"format", "int32"},
                   {"description", "Desired number of replicas."}}}}}};
  json status = {{"type", "object"},
                 {"description", "Observed state of the scale."},
                 {"required", json::array({"replicas"})},
                 {"properties",
                  {{"replicas",
                    {{"type", "integer"},
                     {"format", "int32"},
                     {"description", "Observed number of replicas."}}},
                   {"selector", Typed("string", "Label selector of the replicas, as a string.")}}}};
  json p;
  p["apiVersion"] = ApiVersionField();
  p["kind"] = KindField();
  p["metadata"] = ObjectMetaField();
  p["spec"] = std::move(spec);
  p["status"] = std::move(status);
  return {{"type", "object"},
          {"description", "Scale represents a scaling request for a resource."},
          {"properties", p},
          {kGvkKey, json::array({Gvk("autoscaling", "v1", "Scale")})}};
}

// ---------------------------------------------------------------------------------------------
// Kind schemas.

// The top-level fields of a built-in kind besides apiVersion, kind and metadata. Type codes:
// s string, b boolean, i integer, t date-time, m map of strings, o object (contents not
// described, preserved), a array of objects (contents preserved).
struct BuiltinField {
  std::string name;
  char type;
  std::string description;
};

std::vector<BuiltinField> BuiltinFields(std::string_view group, std::string_view kind) {
  if (kind == "ConfigMap") {
    return {{"data", 'm', "Configuration data, UTF-8 strings by key."},
            {"binaryData", 'm', "Binary configuration data, base64-encoded by key."},
            {"immutable", 'b', "When true, data and binaryData cannot be updated."}};
  }
  if (kind == "Secret") {
    return {{"data", 'm', "Secret data, base64-encoded by key."},
            {"stringData", 'm', "Write-only convenience: plain strings merged into data."},
            {"type", 's', "Used to facilitate programmatic handling of secret data."},
            {"immutable", 'b', "When true, data cannot be updated."}};
  }
  if (kind == "Endpoints") {
    return {{"subsets", 'a', "Sets of addresses and ports that make up the service."}};
  }
  if (kind == "ServiceAccount") {
    return {{"secrets", 'a', "Secrets pods running as this ServiceAccount may use (legacy)."},
            {"imagePullSecrets", 'a', "Secrets for pulling the images of its pods."},
            {"automountServiceAccountToken", 'b', "Whether pods get its token mounted."}};
  }
  if (kind == "Lease") return {{"spec", 'o', "Specification of the Lease."}};
  if (kind == "Role" || kind == "ClusterRole") {
    std::vector<BuiltinField> fields = {
        {"rules", 'a', "The PolicyRules of this " + std::string(kind) + "."}};
    if (kind == "ClusterRole") {
      fields.push_back({"aggregationRule", 'o', "How to build the rules of this ClusterRole."});
    }
    return fields;
  }
  if (kind == "RoleBinding" || kind == "ClusterRoleBinding") {
    return {{"subjects", 'a', "The users, groups and ServiceAccounts the role is granted to."},
            {"roleRef", 'o', "The Role or ClusterRole granted; it cannot be changed."}};
  }
  if (kind == "Event" && group.empty()) {
    return {{"involvedObject", 'o', "The object this event is about."},
            {"reason", 's', "Short, machine-understandable reason for the transition."},
            {"message", 's', "Human-readable description of the status of this operation."},
            {"type", 's', "Normal or Warning."},
            {"source", 'o', "The component reporting this event."},
            {"firstTimestamp", 't', "When the event was first recorded."},
            {"lastTimestamp", 't', "When the most recent occurrence was recorded."},
            {"count", 'i', "Number of times this event has occurred."},
            {"eventTime", 't', "When this event was first observed (microseconds)."},
            {"series", 'o', "Data about the series this event represents."},
            {"action", 's', "What action was taken or failed regarding the object."},
            {"related", 'o', "Secondary object for more complex actions."},
            {"reportingComponent", 's', "Name of the controller that emitted this event."},
            {"reportingInstance", 's', "ID of the controller instance."}};
  }
  if (kind == "Event") {
    return {{"eventTime", 't', "When this event was first observed."},
            {"series", 'o', "Data about the series this event represents."},
            {"reportingController", 's', "Name of the controller that emitted this event."},
            {"reportingInstance", 's', "ID of the controller instance."},
            {"action", 's', "What action was taken or failed regarding the regarding object."},
            {"reason", 's', "Why the action was taken."},
            {"regarding", 'o', "The object this event is about."},
            {"related", 'o', "Secondary object for more complex actions."},
            {"note", 's', "Human-readable description of the status of this operation."},
            {"type", 's', "Normal or Warning."},
            {"deprecatedSource", 'o', "Deprecated field for core/v1 Event compatibility."},
            {"deprecatedFirstTimestamp", 't', "Deprecated field for core/v1 compatibility."},
            {"deprecatedLastTimestamp", 't', "Deprecated field for core/v1 compatibility."},
            {"deprecatedCount", 'i', "Deprecated field for core/v1 compatibility."}};
  }
  // Namespace, Pod, Service, PersistentVolumeClaim, Node, CustomResourceDefinition.
  return {{"spec", 'o', "Desired state of the " + std::string(kind) + "."},
          {"status", 'o', "Most recently observed state of the " + std::string(kind) + "."}};
}

json BuiltinFieldSchema(const BuiltinField& f) {
  switch (f.type) {
    case 's':
      return Typed("string", f.description);
    case 'b':
      return Typed("boolean", f.description);
    case 'i':
      return {{"type", "integer"}, {"format", "int32"}, {"description", f.description}};
    case 't':
      return DateTime(f.description);
    case 'm':
      return StringMap(f.description);
    case 'a':
      return {{"type", "array"},
              {"description", f.description},
              {"items", {{"type", "object"}, {kPreserveKey, true}}}};
    default:
      return OpenObject(f.description);
  }
}

json BuiltinSchema(const ResourceInfo& r) {
  json p;
  p["apiVersion"] = ApiVersionField();
  p["kind"] = KindField();
  p["metadata"] = ObjectMetaField();
  for (const BuiltinField& f : BuiltinFields(r.group, r.kind)) p[f.name] = BuiltinFieldSchema(f);
  return {{"type", "object"},
          {"description", r.kind + " (" + r.ApiVersion() +
                              "). Sluice describes only its top-level fields; the contents of "
                              "nested objects are accepted as sent."},
          {"properties", p},
          {kGvkKey, json::array({Gvk(r.group, r.version, r.kind)})}};
}

// Adds apiVersion, kind and metadata to every embedded resource (x-kubernetes-embedded-resource)
// inside a CRD schema, as kube-apiserver does.
void AddEmbeddedResourceFields(json& schema) {
  if (!schema.is_object()) return;
  if (auto it = schema.find("properties"); it != schema.end() && it->is_object()) {
    for (auto& [name, sub] : it->items()) AddEmbeddedResourceFields(sub);
  }
  if (auto it = schema.find("items"); it != schema.end()) AddEmbeddedResourceFields(*it);
  if (auto it = schema.find("additionalProperties"); it != schema.end()) {
    AddEmbeddedResourceFields(*it);
  }
  if (!IsTrue(schema, "x-kubernetes-embedded-resource")) return;
  json& p = schema["properties"];
  p["apiVersion"] = ApiVersionField();
  p["kind"] = KindField();
  p["metadata"] = ObjectMetaField();
}

const json* CrdVersionSchema(const json* crd, std::string_view version) {
  if (crd == nullptr) return nullptr;
  const json::json_pointer versions_ptr("/spec/versions");
  if (!crd->contains(versions_ptr) || !crd->at(versions_ptr).is_array()) return nullptr;
  for (const json& v : crd->at(versions_ptr)) {
    if (!v.is_object() || !v.contains("name") || v["name"] != version) continue;
    const json::json_pointer schema_ptr("/schema/openAPIV3Schema");
    if (v.contains(schema_ptr) && v.at(schema_ptr).is_object()) return &v.at(schema_ptr);
    return nullptr;
  }
  return nullptr;
}

json CrdSchema(const ResourceInfo& r, const CrdLookup& crds) {
  const json* crd = crds ? crds(r.crd_name) : nullptr;
  const json* source = CrdVersionSchema(crd, r.version);
  json schema;
  if (source == nullptr) {
    schema = OpenObject(r.kind + " (" + r.ApiVersion() + "); its CRD declares no schema.");
  } else {
    schema = *source;
    AddEmbeddedResourceFields(schema);
  }
  json& p = schema["properties"];
  p["apiVersion"] = ApiVersionField();
  p["kind"] = KindField();
  p["metadata"] = ObjectMetaField();
  schema[kGvkKey] = json::array({Gvk(r.group, r.version, r.kind)});
  return schema;
}

json ListSchema(const ResourceInfo& r, std::string_view item_schema) {
  json p;
  p["apiVersion"] = ApiVersionField();
  p["kind"] = KindField();
  p["metadata"] = RefField(kListMeta, "Standard list metadata.");
  p["items"] = {
      {"type", "array"}, {"description", "List of " + r.plural + "."}, {"items", Ref(item_schema)}};
  return {{"type", "object"},
          {"description", r.list_kind + " is a list of " + r.kind + "."},
          {"required", json::array({"items"})},
          {"properties", p},
          {kGvkKey, json::array({Gvk(r.group, r.version, r.list_kind)})}};
}

// ---------------------------------------------------------------------------------------------
// Conversion to Swagger 2.0, following the rules kube-apiserver applies to CRD schemas there:
// no allOf/anyOf/oneOf/not, no nullable (such fields lose their type), and schemas that
// preserve unknown fields lose their properties and items (and their object type) so that
// clients that validate against v2 do not reject the unknown fields.

void RewriteRefs(json& node) {
  if (node.is_object()) {
    for (auto& [key, value] : node.items()) {
      if (key == "$ref" && value.is_string()) {
        std::string ref = value.get<std::string>();
        if (ref.rfind(kV3RefPrefix, 0) == 0) {
          value = std::string(kV2RefPrefix) + ref.substr(kV3RefPrefix.size());
        }
      } else {
        RewriteRefs(value);
      }
    }
  } else if (node.is_array()) {
    for (json& item : node) RewriteRefs(item);
  }
}

void ToV2Schema(json& s) {
  if (!s.is_object()) return;
  // {allOf: [{$ref}], description} (a described reference) becomes {$ref, description}.
  if (auto all_of = s.find("allOf"); all_of != s.end() && all_of->is_array() &&
                                     all_of->size() == 1 && (*all_of)[0].contains("$ref") &&
                                     !s.contains("properties") && !s.contains("type")) {
    json ref = (*all_of)[0]["$ref"];
    s.erase("allOf");
    s["$ref"] = std::move(ref);
  }
  for (const char* junctor : {"allOf", "anyOf", "oneOf", "not"}) s.erase(junctor);
  if (IsTrue(s, "nullable")) {
    s.erase("type");
    s.erase("items");
    s.erase("properties");
  }
  s.erase("nullable");
  if (IsTrue(s, kPreserveKey)) {
    s.erase("items");
    s.erase("properties");
    if (TypeIs(s, "object")) s.erase("type");
  }
  if (TypeIs(s, "array") && !s.contains("items")) s.erase("type");
  if (auto it = s.find("properties"); it != s.end() && it->is_object()) {
    for (auto& [name, sub] : it->items()) ToV2Schema(sub);
  }
  if (auto it = s.find("items"); it != s.end()) ToV2Schema(*it);
  if (auto it = s.find("additionalProperties"); it != s.end()) ToV2Schema(*it);
}

json KindSchemaToV2(json schema) {
  if (IsTrue(schema, kPreserveKey)) {
    // A kind that preserves unknown fields at its root is published as a bare object.
    json out = {{"type", "object"}};
    if (schema.contains("description")) out["description"] = schema["description"];
    out[kGvkKey] = schema[kGvkKey];
    return out;
  }
  ToV2Schema(schema);
  RewriteRefs(schema);
  return schema;
}

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
