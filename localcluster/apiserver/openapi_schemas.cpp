// The schemas of the OpenAPI documents (openapi_schemas.h): the shared apimachinery schemas,
// the kinds' schemas (the built-in kinds' top-level field tables, CRD versions' schemas) and the
// conversion to Swagger 2.0.
#include "localcluster/apiserver/openapi_schemas.h"

#include <string>
#include <utility>
#include <vector>

namespace sluice::apiserver {
namespace {

using nlohmann::json;
using openapi_docs_internal::kObjectMeta;
using openapi_docs_internal::kV3RefPrefix;

constexpr std::string_view kPreserveKey = "x-kubernetes-preserve-unknown-fields";

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

}  // namespace

namespace openapi_docs_internal {

json Gvk(std::string_view group, std::string_view version, std::string_view kind) {
  return {{"group", group}, {"version", version}, {"kind", kind}};
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

}  // namespace openapi_docs_internal
}  // namespace sluice::apiserver
