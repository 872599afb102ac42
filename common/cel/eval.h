// Evaluator: runs a resolved Expr tree (ast.h) over `self` / `oldSelf` values.
//
// Semantics follow the CEL language definition for the supported subset (docs/cel.md):
// heterogeneous numeric equality and ordering (1 == 1.0, 1u < 2), errors as results that `&&`,
// `||`, all() and exists() absorb when the other side decides the outcome, checked integer
// arithmetic (overflow and division by zero are errors). Every evaluation is bounded: each node
// visited, each element compared and each element copied costs a step, and more than `max_steps`
// steps abort with a TooLarge "evaluation cost limit exceeded" error that nothing absorbs. The
// recursion depth is bounded by the tree height (kMaxNestingDepth, enforced by the parser) and,
// for deep values, by kMaxValueDepth.
//
// Error codes: evaluation errors are InvalidArgument ("no such key: b", "division by zero");
// exceeding a limit is TooLarge.
//
// Ownership: Evaluate borrows the tree and the values for the duration of the call; the result
// may borrow from `self` / `old_self` (see value.h). Thread safety: Evaluate keeps all its state
// on the stack, so one tree may be evaluated by many threads at once.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "common/cel/ast.h"
#include "common/cel/value.h"
#include "common/status.h"

namespace sluice::cel {

inline constexpr uint64_t kMaxEvalSteps = 1'000'000;
// The deepest value (lists and maps inside each other) that equality and conversion will walk.
inline constexpr int kMaxValueDepth = 1000;
// matches() refuses longer inputs: with the step limit (common/cel/regex.h) it bounds a search.
inline constexpr size_t kMaxRegexInput = 16 * 1024;

// Evaluates `root`, whose variables need `num_slots` slots (ParsedExpr::num_slots). `old_self`
// null means oldSelf is unavailable: a reference to it is an error.
Result<Value> Evaluate(const Expr& root, int num_slots, const Value& self, const Value* old_self,
                       uint64_t max_steps = kMaxEvalSteps);

// CEL's type name of a value's kind: null_type, bool, int, uint, double, string, list, map.
std::string_view TypeName(const Value& v);

// Deep, heterogeneous equality (1 == 1.0 == 1u; NaN != NaN; values of different kinds are
// unequal). Fails only on values nested deeper than kMaxValueDepth.
Result<bool> Equal(const Value& a, const Value& b);

// Converts a value to JSON (ints stay integers, doubles floats). A map key that is not a string
// is an error.
Result<nlohmann::json> ToJson(const Value& v);

}  // namespace sluice::cel
