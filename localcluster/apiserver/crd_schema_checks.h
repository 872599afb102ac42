// What kube-apiserver checks in a CustomResourceDefinition's schemas beyond the structural rules
// (common/openapi/schema.h, CheckStructural), emulating Sluice's minimum supported Kubernetes,
// 1.30, so that a CRD the local API server accepts is one a real cluster accepts too:
//
//  - Known fields. kube decodes a CRD into typed structs; a schema keyword or a field of an
//    x-kubernetes-validations rule that its release does not know is an unknown field: under
//    fieldValidation=Strict (kubectl's default) the write is refused with 400 "strict decoding
//    error", under Warn it is dropped with a Warning, under Ignore dropped silently. 1.30 knows
//    the JSONSchemaProps fields of apiextensions.k8s.io/v1 (kKnownSchemaFields) and the rule
//    fields rule, message, messageExpression, reason, fieldPath and optionalOldSelf (fieldPath
//    and reason exist since 1.28, optionalOldSelf since 1.29).
//    One deliberate difference: kube's decoder does not look inside `items`,
//    `additionalProperties`, `additionalItems` or `dependencies` (they are decoded by custom,
//    non-strict unmarshalers), so there it drops unknown fields silently even under Strict. We
//    report them there too: a rule field silently lost on a real cluster is a bug either way.
//
//  - Defaults against their own CEL rules. kube validates each `default` as given (nested
//    defaults not applied) against its node's schema and then against the x-kubernetes-validations
//    rules of that node and its descendants (common/cel/schema_rules.h: EvaluateRulesOnDefault). A
//    rule that reads a field only a nested default would fill fails on `default: {}` with "no such
//    key", and kube refuses the CRD.
//
// Thread safety: pure functions (compiled CEL rules are cached process-wide).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/openapi/field_error.h"
#include "common/status.h"
#include "localcluster/apiserver/custom_resources.h"

namespace sluice::apiserver {

// Whether Kubernetes 1.30 knows `key` as a field of JSONSchemaProps (apiextensions.k8s.io/v1),
// of a ValidationRule (x-kubernetes-validations[i]), or of ExternalDocumentation.
bool IsKnownSchemaField(std::string_view key);
bool IsKnownValidationRuleField(std::string_view key);
bool IsKnownExternalDocsField(std::string_view key);

// Removes from every spec.versions[i].schema.openAPIV3Schema of `crd`, in place, the fields
// kube 1.30 does not know (see above); returns their paths as kube's strict decoding writes them
// (map keys after a dot, list indices in brackets), in the order found:
//   "spec.versions[0].schema.openAPIV3Schema.properties.spec.x-kubernetes-validations[0].foo".
std::vector<std::string> PruneUnknownSchemaFields(nlohmann::json& crd);

// The decoding step of a CRD write under `mode`, as for custom resources (custom_resources.h):
// under Strict, a non-OK decode_error (InvalidArgument, answered 400 BadRequest:
// `CustomResourceDefinition in version "v1" cannot be handled as a CustomResourceDefinition:
// strict decoding error: unknown field "..."`) and `crd` left as it was; otherwise the unknown
// fields are pruned from `crd`, with one `unknown field "..."` warning each under Warn.
struct CrdDecodeCheck {
  Status decode_error;
  std::vector<std::string> warnings;
};
CrdDecodeCheck DecodeCrdSchemas(nlohmann::json& crd, FieldValidation mode);

// Every default of `schema` (an openAPIV3Schema found at `path`, such as
// "spec.versions[0].schema.openAPIV3Schema") checked against the CEL rules of its node and
// descendants, as given; errors at "<path>.properties[spec].properties[batch].default" and below,
// in kube's words (cel::EvaluateRulesOnDefault). Defaults that fail the schema itself are left
// to CheckStructural, as kube evaluates rules only on a default that passed it; defaults under
// the root's apiVersion, kind and metadata are forbidden there. Rules the evaluator cannot run
// are appended to `skipped` (when non-null) for the caller to log.
openapi::FieldErrors CheckDefaultRules(const nlohmann::json& schema, const std::string& path,
                                       std::vector<std::string>* skipped);

}  // namespace sluice::apiserver
