// Program: a compiled CEL expression of the subset that Kubernetes CRD validation rules
// (`x-kubernetes-validations`) use, evaluated over JSON. docs/cel.md lists the subset exactly.
//
//   Result<Program> p = cel::Compile("!has(self.steps) || self.warmup < self.steps");
//   if (!p.ok()) { log once, skip the rule }            // outside the subset or a syntax error
//   if (p->UsesOldSelf() && old == nullptr) { skip }     // transition rule on create
//   Result<bool> ok = p->EvalRule(spec_json, old);       // error: report as the rule failing
//
// Compile errors are InvalidArgument: "syntax error at column N: expected ...", or, for a
// construct outside the subset, a message starting "unsupported " and naming it ("unsupported
// function 'timestamp' at column 1"), "undeclared reference to 'x'", or "expression nesting
// exceeds the limit of 100". Evaluation errors are InvalidArgument ("no such key: b", "division
// by zero", "no such overload: ..."); an evaluation over its step budget (kMaxEvalSteps) is
// TooLarge. Variables: `self` is the value the rule is attached to, `oldSelf` the previous value
// on update.
//
// Ownership: a Program shares its immutable compiled tree; copies are cheap. Evaluation borrows
// the JSON arguments for the duration of the call. Thread safety: a compiled Program may be
// evaluated concurrently from any number of threads.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/cel/eval.h"
#include "common/cel/parser.h"
#include "common/status.h"

namespace sluice::cel {

class Program {
 public:
  // Evaluates a validation rule: the result must be a bool (anything else is InvalidArgument
  // "validation rule must evaluate to a bool, got int"). `old_self` null means no previous value:
  // a rule that uses oldSelf then fails, so check UsesOldSelf() first.
  Result<bool> EvalRule(const nlohmann::json& self, const nlohmann::json* old_self,
                        uint64_t max_steps = kMaxEvalSteps) const;

  // Evaluates to any value, converted to JSON (ints as integers, doubles as floats).
  Result<nlohmann::json> Eval(const nlohmann::json& self, const nlohmann::json* old_self,
                              uint64_t max_steps = kMaxEvalSteps) const;

  // True when the expression references oldSelf (a transition rule; skipped on create).
  bool UsesOldSelf() const { return parsed_->uses_old_self; }
  const std::string& expression() const { return expression_; }

 private:
  friend Result<Program> Compile(std::string_view expression);
  Program() = default;
  Result<Value> EvalValue(const nlohmann::json& self, const nlohmann::json* old_self,
                          uint64_t max_steps) const;

  std::string expression_;
  std::shared_ptr<const ParsedExpr> parsed_;
};

Result<Program> Compile(std::string_view expression);

}  // namespace sluice::cel
