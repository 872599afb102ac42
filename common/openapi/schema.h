// OpenAPI v3 structural schemas, as CustomResourceDefinitions use them: checking a schema,
// validating an object against it, applying its defaults and pruning unknown fields.
//
// A schema is the `openAPIV3Schema` JSON of a CRD version, used as is (no parsed copy), so the
// CRD files in crds/ stay the single source of truth for the operator's validation and the local
// API server's. Supported keywords: type, nullable, properties, required, additionalProperties
// (a schema), items, enum, minimum/maximum (+ exclusive), minLength/maxLength, pattern
// (ECMAScript), minItems/maxItems, minProperties/maxProperties, format (date-time, int32,
// int64), default, and the Kubernetes extensions x-kubernetes-int-or-string,
// x-kubernetes-preserve-unknown-fields, x-kubernetes-embedded-resource and
// x-kubernetes-list-type (atomic, set, map with x-kubernetes-list-map-keys). CEL rules
// (x-kubernetes-validations) are not evaluated here; see the API types for those.
//
// At the root of a custom resource, apiVersion, kind and metadata are accepted whatever the
// schema says (the API server validates metadata itself).
//
// Thread safety: pure functions (compiled patterns are cached behind a lock).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/openapi/field_error.h"

namespace sluice::openapi {

// Problems with the schema itself, by the apiextensions.k8s.io/v1 structural rules: every node
// has a type (unless int-or-string or preserve-unknown-fields), the root is an object without
// additionalProperties, no additionalProperties beside properties or set to false, items is one
// schema, list-type map has keys that its items declare; apiVersion and kind of a resource are
// strings and its metadata an object, the root's metadata restricts nothing but name and
// generateName and nothing under the root's apiVersion, kind and metadata has a default; and
// every default validates against its own schema (CEL rules on defaults are the API server's
// concern: localcluster/apiserver/crd_schema_checks.h). Paths and messages are kube-apiserver's,
// relative to the schema: "properties[spec].properties[replicas].default: Invalid value: ...".
FieldErrors CheckStructural(const nlohmann::json& schema);

struct ValidateOptions {
  // Unknown fields are errors (`unknown field "spec.x"`), as kubectl's --validate=strict and the
  // API server's fieldValidation=Strict make them. Otherwise they are ignored (see Prune).
  bool reject_unknown_fields = true;
  // Treat `value` as a whole custom resource (apiVersion, kind, metadata exempt at the root).
  bool is_resource_root = true;
};

// Every problem with `value`, in document order.
FieldErrors Validate(const nlohmann::json& schema, const nlohmann::json& value,
                     const ValidateOptions& options = {});

// Fills in defaults, in place, top down: a field that is absent gets its default, then the
// defaults inside it. An explicit null is left alone unless the schema is not nullable, in which
// case it is replaced by the default (the API server's rule).
void ApplyDefaults(const nlohmann::json& schema, nlohmann::json& value);

// Removes fields the schema does not declare (except under preserve-unknown-fields), in place;
// returns the paths removed.
std::vector<std::string> Prune(const nlohmann::json& schema, nlohmann::json& value,
                               bool is_resource_root = true);

}  // namespace sluice::openapi
