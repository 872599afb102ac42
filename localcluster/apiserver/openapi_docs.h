// The OpenAPI documents kubectl fetches: /openapi/v3 (an index of group-versions with content
// hashes), /openapi/v3/api/v1 and /openapi/v3/apis/<group>/<version> (OpenAPI 3.0), and
// /openapi/v2 (Swagger 2.0, every group-version in one document).
//
// kubectl reads them for three things, and each shapes what the documents carry:
// - `kubectl explain` finds a resource's kind from the `x-kubernetes-group-version-kind` of the
//   operations at its collection or item path, then the schema under `components.schemas` whose
//   `x-kubernetes-group-version-kind` list contains that same {group, version, kind}.
// - `kubectl apply/create/replace` send `fieldValidation=Strict` (server-side validation) only
//   when the group-version's v3 document has a PATCH operation for the kind that lists the
//   `fieldValidation` query parameter; otherwise they validate client-side or not at all.
// - The v3 index's `?hash=` lets clients cache a group-version document until it changes.
//
// Schemas are named as kube-apiserver names them: "dev.sluice.v1alpha1.RolloutPool" for a CRD
// (the group reversed) and "io.k8s.api.core.v1.Pod" for a built-in. A CRD-backed kind's schema is
// its CRD version's openAPIV3Schema with apiVersion, kind and metadata (a reference to ObjectMeta)
// added; a built-in kind gets a permissive schema (its top-level fields, anything else preserved),
// since Sluice does not carry kube's generated schemas.
//
// Differences from kube-apiserver: no /watch/ paths, no proxy/exec/attach/eviction/binding
// operations, and the hash is a 64-bit FNV-1a rather than a SHA-512. Built-in kinds' PATCH
// operations do not list application/strategic-merge-patch+json in v3 (the server still accepts
// it): kubectl apply would otherwise compute the patch from the permissive schema and warn
// "unable to find api field"; without it kubectl uses its compiled-in types, which carry kube's
// merge keys. kubectl reads /openapi/v2 only as protobuf, which Sluice does not serve, so the v2
// document is for other clients.
//
// Thread safety: pure functions of their arguments; the CrdLookup is called synchronously and
// its returned pointer is used only during the call.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "localcluster/apiserver/resource_registry.h"

namespace sluice::apiserver {

// The stored CustomResourceDefinition (apiextensions.k8s.io/v1 JSON) named by
// ResourceInfo::crd_name ("rolloutpools.sluice.dev"), or nullptr when there is none; a resource
// whose CRD is missing gets a permissive schema.
using CrdLookup = std::function<const nlohmann::json*(std::string_view crd_name)>;

// The OpenAPI schema name of a resource's kind: "dev.sluice.v1alpha1.RolloutPool",
// "io.k8s.api.core.v1.Pod", "io.k8s.api.coordination.v1.Lease".
std::string OpenApiSchemaName(std::string_view group, std::string_view version,
                              std::string_view kind);

// GET /openapi/v3: {"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=H"},
// "apis/<g>/<v>": {...}}}, one entry per served group-version. H is OpenApiHash of that
// group-version's document, so it changes whenever the document does (a CRD's schema edited, a
// resource added or removed).
nlohmann::json OpenApiV3Root(const ResourceRegistry& registry, const CrdLookup& crds);

// GET /openapi/v3/api/v1 (group "") or /openapi/v3/apis/<group>/<version>: an OpenAPI 3.0
// document with the paths and schemas of every resource served there; nullopt when nothing is.
std::optional<nlohmann::json> OpenApiV3GroupVersion(const ResourceRegistry& registry,
                                                    const CrdLookup& crds, std::string_view group,
                                                    std::string_view version);

// GET /openapi/v2: a Swagger 2.0 document covering every served group-version.
nlohmann::json OpenApiV2(const ResourceRegistry& registry, const CrdLookup& crds);

// The content hash used in serverRelativeURL (16 upper-case hex digits); also a fitting ETag for
// the document.
std::string OpenApiHash(const nlohmann::json& document);

}  // namespace sluice::apiserver
