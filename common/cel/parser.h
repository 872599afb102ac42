// Parser: CEL text to a resolved Expr tree (ast.h), by recursive descent.
//
// Precedence, lowest first: `?:` (right associative) < `||` < `&&` < relations
// (== != < <= > >= in) < `+ -` < `* / %` < unary `! -` < member access, index and call; binary
// operators are left associative. After parsing, names are resolved: `self`, `oldSelf` and the
// variables of enclosing comprehension macros; every function must be one of the supported
// builtins. Anything outside the subset (docs/cel.md) is an InvalidArgument naming the construct
// ("unsupported function 'timestamp'"); syntax errors give the column and what was expected.
// The tree's height is bounded by kMaxNestingDepth, so neither parsing nor evaluation recurses
// without bound.
//
// Ownership: the caller owns the returned tree. Thread safety: pure function.
#pragma once

#include <memory>
#include <string_view>

#include "common/cel/ast.h"
#include "common/status.h"

namespace sluice::cel {

// The most nested an expression may be (tree height, and parenthesis/argument nesting).
inline constexpr int kMaxNestingDepth = 100;

struct ParsedExpr {
  std::unique_ptr<Expr> root;
  bool uses_old_self = false;
  int num_slots = kFirstLocalSlot;  // variable slots the evaluator needs
};

Result<ParsedExpr> Parse(std::string_view text);

// Kubernetes' escaping of property names in field selections: `__dash__` is '-', `__dot__` '.',
// `__slash__` '/', `__underscores__` "__", and `__<keyword>__` a CEL keyword or reserved word
// (`self.__namespace__` selects "namespace"). Other names are returned unchanged.
std::string UnescapeFieldName(std::string_view name);

}  // namespace sluice::cel
