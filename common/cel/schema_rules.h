// Evaluation of a structural schema's CEL rules (x-kubernetes-validations) over an object, as
// a Kubernetes API server runs them for custom resources. Shared by the operator's own
// validation (api/validation.h) and the local API server, so both give the same
// messages for the same CRD.
//
// Rules run top down wherever the schema declares them and the value is present (not null).
// Transition rules (those using oldSelf) run only when the old value at the same path exists;
// inside lists they are skipped (items are not correlated with the old list). A rule outside the
// subset this evaluator supports (docs/cel.md), or one that fails to evaluate, is never treated
// as passing silently: it is listed in `skipped` for the caller to log.
//
// Thread safety: pure functions; compiled rules are cached process-wide behind a lock.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/openapi/field_error.h"

namespace sluice::cel {

struct RuleReport {
  openapi::FieldErrors errors;  // One per failed rule: its fieldPath (or path) and message.
  // "spec.x: rule \"...\": reason" for each rule that could not be compiled or evaluated.
  std::vector<std::string> skipped;
};

// Runs every rule of `schema` (an openAPIV3Schema node) over `value`; `old_value` is the
// previous object on update (null on create). `path` is the dotted path of `value` ("" for the
// object root). Appends to `report`.
void EvaluateSchemaRules(const nlohmann::json& schema, const nlohmann::json& value,
                         const nlohmann::json* old_value, const std::string& path,
                         RuleReport& report);

// Runs the rules of `schema` and of its descendants over `value`, the `default` of that schema
// node exactly as the CRD gives it (nested defaults are NOT applied first), as kube-apiserver
// checks a CRD's defaults when the CRD is written: oldSelf is bound to the value itself, and
// errors use kube's wording, keyed by `path` (where the value sits, e.g.
// "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[batch].default"):
//   a false rule:   `Invalid value: "object": <message>` at path + fieldPath (Forbidden,
//                   Required value or Duplicate value instead, by the rule's reason);
//   an evaluation error, which kube treats as a failure, not a skip:
//                   `Invalid value: "object": no such key: minibatches evaluating rule: <message
//                   or rule>` at path.
// "object" is the node's type. Rules outside the subset, or over the evaluator's step budget
// (which is not kube's cost budget), are listed in `skipped` instead. Appends to `report`.
void EvaluateRulesOnDefault(const nlohmann::json& schema, const nlohmann::json& value,
                            const std::string& path, RuleReport& report);

}  // namespace sluice::cel
