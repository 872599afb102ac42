// Expr: the checked syntax tree of a CEL expression of the supported subset (docs/cel.md).
//
// The parser builds the tree and resolves it: identifiers are bound to variable slots, calls to
// builtin functions, and the comprehension macros (all, exists, exists_one, map, filter) and has()
// to their own node kinds, so the evaluator never looks at names.
//
// Ownership: each node owns its children (std::unique_ptr). Thread safety: immutable once built;
// concurrent evaluation of one tree is safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/cel/regex.h"
#include "common/cel/value.h"

namespace sluice::cel {

enum class ExprKind : uint8_t {
  kLiteral,        // literal
  kIdent,          // name, slot
  kSelect,         // args[0].name; a missing key is an error
  kHas,            // has(args[0].name)
  kIndex,          // args[0][args[1]]
  kCall,           // builtin fn; args[0] is the receiver for method-style calls
  kList,           // [args...]
  kMap,            // {args[0]: args[1], args[2]: args[3], ...}
  kUnary,          // op args[0]
  kBinary,         // args[0] op args[1] (not && or ||)
  kAnd,            // args[0] && args[1]
  kOr,             // args[0] || args[1]
  kTernary,        // args[0] ? args[1] : args[2]
  kComprehension,  // args[0].macro(name, args[1] [, args[2]]); the variable lives in `slot`
};

enum class Op : uint8_t {
  kNot,
  kNeg,
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMod,
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kIn,
};

enum class Builtin : uint8_t {
  kSize,
  kStartsWith,
  kEndsWith,
  kContains,
  kMatches,
  kLowerAscii,
  kUpperAscii,
  kInt,
  kUint,
  kDouble,
  kString,
  kDyn,
};

enum class Macro : uint8_t {
  kAll,
  kExists,
  kExistsOne,
  kMap,        // range.map(v, transform): args[1] is the transform
  kMapFilter,  // range.map(v, predicate, transform): args[1] predicate, args[2] transform
  kFilter,
};

// Variable slots: 0 is `self`, 1 is `oldSelf`, 2 and up are comprehension variables by depth.
inline constexpr int kSelfSlot = 0;
inline constexpr int kOldSelfSlot = 1;
inline constexpr int kFirstLocalSlot = 2;

struct Expr {
  ExprKind kind = ExprKind::kLiteral;
  int column = 0;    // 1-based byte column of the token that starts (or names) the node
  int height = 1;    // 1 for a leaf; 1 + the tallest child otherwise (bounded by the parser)
  Value literal;     // kLiteral
  std::string name;  // kIdent, kSelect, kHas: field or variable name; kCall: function name
  int slot = -1;     // kIdent, kComprehension
  Op op = Op::kNot;
  Builtin fn = Builtin::kSize;
  Macro macro = Macro::kAll;
  bool receiver_style = false;  // kCall: x.f(...) rather than f(x, ...)
  std::vector<std::unique_ptr<Expr>> args;
  // kCall of matches() with a literal pattern: the pattern compiled once (safe to search
  // concurrently).
  std::shared_ptr<const Regex> regex;
};

}  // namespace sluice::cel
