// Evaluation of a structural schema's CEL rules (x-kubernetes-validations) over an object, as
// a Kubernetes API server runs them for custom resources. Shared by the operator's own
// validation (operator/api/validation.h) and the local API server, so both give the same
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

}  // namespace sluice::cel
