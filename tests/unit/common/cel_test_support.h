// What the CEL evaluator tests (cel_*_test.cpp) share: compiling an expression and evaluating it
// over a `self` given as JSON text.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/cel/program.h"
#include "common/status.h"

namespace sluice::cel::testing_support {

inline Result<nlohmann::json> EvalText(const std::string& expr, const std::string& self_text) {
  Result<Program> p = Compile(expr);
  if (!p.ok()) return p.status();
  nlohmann::json self = nlohmann::json::parse(self_text);
  return p->Eval(self, nullptr);
}

}  // namespace sluice::cel::testing_support
