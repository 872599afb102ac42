// EvaluateArithmetic: the calculator tool's language, evaluated in double precision.
//
// Grammar (whitespace between tokens is ignored):
//   expression := term (("+" | "-") term)*
//   term       := unary (("*" | "/" | "%") unary)*
//   unary      := ("-" | "+") unary | power
//   power      := primary ("^" unary)?            right-associative: 2^3^2 = 2^9
//   primary    := number | "(" expression ")" | function "(" expression ")"
//   number     := digits ["." digits] | "." digits, then optionally ("e" | "E") ["+" | "-"] digits
//   function   := "sqrt" | "abs"
// Unary minus binds looser than "^" (-2^2 = -4) and tighter than "*" (-2*3 = -6), as in
// mathematics. "%" is the floored remainder, with the sign of the divisor (-7 % 3 = 2), as in
// Python, which is what models trained on code expect.
//
// Limits, so that a model's output cannot make the worker do unbounded work: at most
// kMaxExpressionLength bytes, and at most kMaxNestingDepth nested parentheses, function calls,
// unary signs and chained powers together.
//
// Errors (InvalidArgument; the message says what and where, positions count bytes from 1): a
// syntax error or trailing characters ("unexpected ')' at position 7"), an unknown function,
// division or remainder by zero, the square root of a negative number, a number that does not
// fit a double, any intermediate result that is infinite or not a number, and the limits above.
//
// Thread safety: a pure function.
#pragma once

#include <cstddef>
#include <string_view>

#include "common/status.h"

namespace sluice::rollout {

inline constexpr size_t kMaxExpressionLength = 1000;
inline constexpr int kMaxNestingDepth = 100;

Result<double> EvaluateArithmetic(std::string_view expression);

}  // namespace sluice::rollout
