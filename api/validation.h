// Defaulting and validation of Sluice objects, with the rules of their CRDs.
//
// An object is checked the way a Kubernetes API server checks a custom resource: schema
// defaults applied, then the structural schema (types, required, enums, bounds, patterns, list
// keys, unknown fields rejected as with fieldValidation=Strict), then the CRD's CEL rules
// (x-kubernetes-validations), all read from crds/*.yaml. The operator runs the same checks
// itself, so a cluster that does not enforce CEL (or the local API server) still gives the user
// the same clear errors. CEL rules run only once the schema checks pass, so every message is
// about one mistake rather than its consequences.
//
// Thread safety: every function may be called from any thread (compiled rules are cached).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/openapi/field_error.h"
#include "common/status.h"

namespace sluice::api {

struct ValidationReport {
  openapi::FieldErrors errors;
  // Rules that could not be evaluated ("spec.x: rule \"...\": reason"). Never treated as
  // passing silently: callers log them, and the CRD tests require this list to be empty.
  std::vector<std::string> skipped_rules;

  bool ok() const { return errors.empty(); }
};

// Applies the schema defaults of the object's kind in place. Errors when apiVersion/kind do not
// name a Sluice resource.
Status DefaultObject(nlohmann::json& object);

// Validates an object (normally already defaulted). `old_object` enables transition rules
// (those using oldSelf), as on an update; they are skipped on create.
ValidationReport ValidateObject(const nlohmann::json& object,
                                const nlohmann::json* old_object = nullptr);

// DefaultObject then ValidateObject, as one Status: Unprocessable (422) listing every error.
Status DefaultAndValidate(nlohmann::json& object, const nlohmann::json* old_object = nullptr);

}  // namespace sluice::api
