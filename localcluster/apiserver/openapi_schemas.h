// The schemas the OpenAPI documents (openapi_docs.h) carry, built in the OpenAPI 3.0 form: the
// shared apimachinery schemas (ObjectMeta, ListMeta, Status, ...), each kind's schema (a CRD
// version's openAPIV3Schema, or a permissive one for a built-in kind) and its list's, and their
// conversion to Swagger 2.0. Internal to openapi_docs.cpp, which assembles the documents.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "localcluster/apiserver/openapi_docs.h"
#include "localcluster/apiserver/resource_registry.h"

namespace sluice::apiserver::openapi_docs_internal {

inline constexpr std::string_view kV3RefPrefix = "#/components/schemas/";
inline constexpr std::string_view kV2RefPrefix = "#/definitions/";
inline constexpr std::string_view kGvkKey = "x-kubernetes-group-version-kind";

// The names of the shared schemas.
inline constexpr std::string_view kObjectMeta = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
inline constexpr std::string_view kListMeta = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
inline constexpr std::string_view kOwnerReference =
    "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference";
inline constexpr std::string_view kManagedFields =
    "io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry";
inline constexpr std::string_view kPatch = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
inline constexpr std::string_view kStatus = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
inline constexpr std::string_view kDeleteOptions =
    "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
inline constexpr std::string_view kScale = "io.k8s.api.autoscaling.v1.Scale";

// {"group", "version", "kind"}: an entry of x-kubernetes-group-version-kind.
nlohmann::json Gvk(std::string_view group, std::string_view version, std::string_view kind);

// The shared apimachinery schemas, named by the constants above.
nlohmann::json ObjectMetaSchema();
nlohmann::json ListMetaSchema();
nlohmann::json OwnerReferenceSchema();
nlohmann::json ManagedFieldsSchema();
nlohmann::json PatchSchema();
nlohmann::json StatusSchema();
nlohmann::json DeleteOptionsSchema();
nlohmann::json ScaleSchema();

// Kind schemas: a built-in kind's permissive schema, a custom resource's from its CRD version,
// and the list of either (its items referring to `item_schema`).
nlohmann::json BuiltinSchema(const ResourceInfo& r);
nlohmann::json CrdSchema(const ResourceInfo& r, const CrdLookup& crds);
nlohmann::json ListSchema(const ResourceInfo& r, std::string_view item_schema);

// Conversion to Swagger 2.0: $refs to #/definitions/, a schema made v2-compatible in place, and
// a kind's schema converted whole.
void RewriteRefs(nlohmann::json& node);
void ToV2Schema(nlohmann::json& s);
nlohmann::json KindSchemaToV2(nlohmann::json schema);

}  // namespace sluice::apiserver::openapi_docs_internal
