// The CEL evaluator's operators (evaluator.h): deep heterogeneous equality, ordering, `in`, unary
// `!` and `-`, string and list concatenation, and checked int / uint and double arithmetic.
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "common/cel/eval.h"
#include "common/cel/eval_support.h"
#include "common/cel/evaluator.h"

namespace sluice::cel::detail {
namespace {

using Kind = Value::Kind;

std::string_view OpName(Op op) {
  switch (op) {
    case Op::kNot:
      return "!";
    case Op::kNeg:
      return "-";
    case Op::kAdd:
      return "+";
    case Op::kSub:
      return "-";
    case Op::kMul:
      return "*";
    case Op::kDiv:
      return "/";
    case Op::kMod:
      return "%";
    case Op::kEq:
      return "==";
    case Op::kNe:
      return "!=";
    case Op::kLt:
      return "<";
    case Op::kLe:
      return "<=";
    case Op::kGt:
      return ">";
    case Op::kGe:
      return ">=";
    case Op::kIn:
      return "in";
  }
  return "?";
}

// Calls fn(key, value) for each entry of a map until it returns false.
template <typename Fn>
void ForEachEntry(const Value& m, Fn fn) {
  if (const nlohmann::json* j = m.json_rep()) {
    for (auto it = j->begin(); it != j->end(); ++it) {
      if (!fn(Value::String(it.key()), Value::FromJson(it.value()))) return;
    }
    return;
  }
  for (const auto& [k, v] : *m.owned_map()) {
    if (!fn(k, v)) return;
  }
}

}  // namespace

// Deep equality, charging one step per element.
Result<bool> Evaluator::Equals(const Value& a, const Value& b, int depth) {
  if (depth > kMaxValueDepth) {
    return Abort(
        Status::TooLarge("value nesting exceeds the limit of " + std::to_string(kMaxValueDepth)));
  }
  SLUICE_RETURN_IF_ERROR(Charge(1));
  if (a.is_number() && b.is_number()) {
    std::optional<int> c = CompareNumbers(a, b);
    return c && *c == 0;
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::kNull:
      return true;
    case Kind::kBool:
      return a.bool_value() == b.bool_value();
    case Kind::kString:
      return a.string_value() == b.string_value();
    case Kind::kList: {
      size_t n = a.list_size();
      if (n != b.list_size()) return false;
      for (size_t i = 0; i < n; ++i) {
        SLUICE_ASSIGN_OR_RETURN(bool eq, Equals(a.list_at(i), b.list_at(i), depth + 1));
        if (!eq) return false;
      }
      return true;
    }
    case Kind::kMap: {
      if (a.map_size() != b.map_size()) return false;
      bool equal = true;
      Status error;
      ForEachEntry(a, [&](const Value& k, const Value& v) {
        std::optional<Value> other = MapFind(b, k);
        if (!other) {
          equal = false;
          return false;
        }
        Result<bool> eq = Equals(v, *other, depth + 1);
        if (!eq.ok()) {
          error = eq.status();
          return false;
        }
        equal = *eq;
        return equal;
      });
      if (!error.ok()) return error;
      return equal;
    }
    default:
      return false;
  }
}

Result<Value> Evaluator::EvalUnary(const Expr& e) {
  SLUICE_ASSIGN_OR_RETURN(Value v, Eval(*e.args[0]));
  if (e.op == Op::kNot) {
    if (!v.is_bool()) return NoOverload("!", v);
    return Value::Bool(!v.bool_value());
  }
  if (v.kind() == Kind::kInt) {
    if (v.int_value() == INT64_MIN) return EvalError("integer overflow in -");
    return Value::Int(-v.int_value());
  }
  if (v.kind() == Kind::kDouble) return Value::Double(-v.double_value());
  return NoOverload("-", v);
}

Result<Value> Evaluator::EvalBinary(const Expr& e) {
  SLUICE_ASSIGN_OR_RETURN(Value a, Eval(*e.args[0]));
  SLUICE_ASSIGN_OR_RETURN(Value b, Eval(*e.args[1]));
  switch (e.op) {
    case Op::kEq:
    case Op::kNe: {
      SLUICE_ASSIGN_OR_RETURN(bool eq, Equals(a, b));
      return Value::Bool(e.op == Op::kEq ? eq : !eq);
    }
    case Op::kLt:
    case Op::kLe:
    case Op::kGt:
    case Op::kGe:
      return Relation(e.op, a, b);
    case Op::kIn:
      return In(a, b);
    case Op::kAdd:
      if (a.kind() == Kind::kString && b.kind() == Kind::kString) {
        SLUICE_RETURN_IF_ERROR(Charge((a.string_value().size() + b.string_value().size()) / 64));
        return Value::String(a.string_value() + b.string_value());
      }
      if (a.kind() == Kind::kList && b.kind() == Kind::kList) {
        SLUICE_RETURN_IF_ERROR(Charge(a.list_size() + b.list_size()));
        ValueList items;
        items.reserve(a.list_size() + b.list_size());
        for (size_t i = 0; i < a.list_size(); ++i) items.push_back(a.list_at(i));
        for (size_t i = 0; i < b.list_size(); ++i) items.push_back(b.list_at(i));
        return Value::List(std::move(items));
      }
      return Arithmetic(e.op, a, b);
    default:
      return Arithmetic(e.op, a, b);
  }
}

Result<Value> Evaluator::Relation(Op op, const Value& a, const Value& b) {
  std::optional<int> c;
  if (a.is_number() && b.is_number()) {
    c = CompareNumbers(a, b);
    if (!c) return Value::Bool(false);  // NaN is unordered
  } else if (a.kind() == Kind::kString && b.kind() == Kind::kString) {
    int r = a.string_value().compare(b.string_value());
    c = r < 0 ? -1 : (r > 0 ? 1 : 0);
  } else if (a.is_bool() && b.is_bool()) {
    c = static_cast<int>(a.bool_value()) - static_cast<int>(b.bool_value());
  } else {
    return NoOverload(OpName(op), a, b);
  }
  switch (op) {
    case Op::kLt:
      return Value::Bool(*c < 0);
    case Op::kLe:
      return Value::Bool(*c <= 0);
    case Op::kGt:
      return Value::Bool(*c > 0);
    default:
      return Value::Bool(*c >= 0);
  }
}

Result<Value> Evaluator::In(const Value& a, const Value& b) {
  if (b.kind() == Kind::kList) {
    for (size_t i = 0; i < b.list_size(); ++i) {
      SLUICE_ASSIGN_OR_RETURN(bool eq, Equals(a, b.list_at(i)));
      if (eq) return Value::Bool(true);
    }
    return Value::Bool(false);
  }
  if (b.kind() == Kind::kMap) return Value::Bool(MapFind(b, a).has_value());
  return NoOverload("in", a, b);
}

namespace {

// x op y in CEL's int (int64_t) or uint (uint64_t): overflow and a zero divisor are errors, as
// the spec asks; `a` and `b` name the operands of an operator with no overload.
template <typename T>
Result<T> CheckedArithmetic(Op op, T x, T y, const Value& a, const Value& b) {
  const std::string_view name = OpName(op);
  T r = 0;
  bool overflow = false;
  switch (op) {
    case Op::kAdd:
      overflow = __builtin_add_overflow(x, y, &r);
      break;
    case Op::kSub:
      overflow = __builtin_sub_overflow(x, y, &r);
      break;
    case Op::kMul:
      overflow = __builtin_mul_overflow(x, y, &r);
      break;
    case Op::kDiv:
    case Op::kMod:
      if (y == 0) return EvalError(op == Op::kDiv ? "division by zero" : "modulus by zero");
      if constexpr (std::is_signed_v<T>) {
        // The one signed quotient that does not fit.
        if (x == std::numeric_limits<T>::min() && y == -1) {
          overflow = true;
          break;
        }
      }
      r = op == Op::kDiv ? x / y : x % y;
      break;
    default:
      return NoOverload(name, a, b);
  }
  if (overflow) {
    return EvalError(std::string(std::is_signed_v<T> ? "" : "unsigned ") + "integer overflow in " +
                     std::string(name));
  }
  return r;
}

}  // namespace

Result<Value> Evaluator::Arithmetic(Op op, const Value& a, const Value& b) {
  std::string_view name = OpName(op);
  if (a.kind() == Kind::kInt && b.kind() == Kind::kInt) {
    SLUICE_ASSIGN_OR_RETURN(int64_t r, CheckedArithmetic(op, a.int_value(), b.int_value(), a, b));
    return Value::Int(r);
  }
  if (a.kind() == Kind::kUint && b.kind() == Kind::kUint) {
    SLUICE_ASSIGN_OR_RETURN(uint64_t r,
                            CheckedArithmetic(op, a.uint_value(), b.uint_value(), a, b));
    return Value::Uint(r);
  }
  // A double with any number is double arithmetic (an extension, see docs/cel.md: JSON
  // cannot tell 2 from 2.0, so a number field may hold either).
  if (a.is_number() && b.is_number() && (a.kind() == Kind::kDouble || b.kind() == Kind::kDouble) &&
      op != Op::kMod) {
    auto as_double = [](const Value& v) {
      if (v.kind() == Kind::kInt) return static_cast<double>(v.int_value());
      if (v.kind() == Kind::kUint) return static_cast<double>(v.uint_value());
      return v.double_value();
    };
    double x = as_double(a);
    double y = as_double(b);
    switch (op) {
      case Op::kAdd:
        return Value::Double(x + y);
      case Op::kSub:
        return Value::Double(x - y);
      case Op::kMul:
        return Value::Double(x * y);
      case Op::kDiv:
        return Value::Double(x / y);  // IEEE: x / 0.0 is +-Inf or NaN, as in CEL
      default:
        break;
    }
  }
  return NoOverload(name, a, b);
}

}  // namespace sluice::cel::detail
