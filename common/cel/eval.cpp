#include "common/cel/eval.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "common/cel/parser.h"

namespace sluice::cel {
namespace {

using Kind = Value::Kind;

Status EvalError(std::string msg) { return Status::InvalidArgument(std::move(msg)); }

Status NoOverload(std::string_view op, const Value& a) {
  return EvalError("no such overload: " + std::string(op) + " on " + std::string(TypeName(a)));
}
Status NoOverload(std::string_view op, const Value& a, const Value& b) {
  return EvalError("no such overload: " + std::string(TypeName(a)) + " " + std::string(op) + " " +
                   std::string(TypeName(b)));
}

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

// Three-way comparison of numbers by mathematical value; nullopt when a NaN is involved.
std::optional<int> Sign(bool less, bool greater) { return less ? -1 : (greater ? 1 : 0); }

std::optional<int> CompareIntDouble(int64_t i, double d) {
  if (std::isnan(d)) return std::nullopt;
  if (d >= 9223372036854775808.0) return -1;
  if (d < -9223372036854775808.0) return 1;
  double t = std::trunc(d);
  auto ti = static_cast<int64_t>(t);
  if (i != ti) return Sign(i<ti, i> ti);
  double frac = d - t;
  return Sign(frac > 0, frac < 0);
}

std::optional<int> CompareUintDouble(uint64_t u, double d) {
  if (std::isnan(d)) return std::nullopt;
  if (d < 0) return 1;
  if (d >= 18446744073709551616.0) return -1;
  double t = std::trunc(d);
  auto tu = static_cast<uint64_t>(t);
  if (u != tu) return Sign(u<tu, u> tu);
  double frac = d - t;
  return Sign(frac > 0, frac < 0);
}

std::optional<int> CompareNumbers(const Value& a, const Value& b) {
  Kind ka = a.kind();
  Kind kb = b.kind();
  if (ka == Kind::kInt && kb == Kind::kInt) {
    return Sign(a.int_value() < b.int_value(), a.int_value() > b.int_value());
  }
  if (ka == Kind::kUint && kb == Kind::kUint) {
    return Sign(a.uint_value() < b.uint_value(), a.uint_value() > b.uint_value());
  }
  if (ka == Kind::kDouble && kb == Kind::kDouble) {
    double x = a.double_value();
    double y = b.double_value();
    if (std::isnan(x) || std::isnan(y)) return std::nullopt;
    return Sign(x<y, x> y);
  }
  if (ka == Kind::kInt && kb == Kind::kUint) {
    if (a.int_value() < 0) return -1;
    auto x = static_cast<uint64_t>(a.int_value());
    return Sign(x<b.uint_value(), x> b.uint_value());
  }
  if (ka == Kind::kUint && kb == Kind::kInt) {
    std::optional<int> r = CompareNumbers(b, a);
    return r ? std::optional<int>(-*r) : std::nullopt;
  }
  if (ka == Kind::kInt) return CompareIntDouble(a.int_value(), b.double_value());
  if (ka == Kind::kUint) return CompareUintDouble(a.uint_value(), b.double_value());
  std::optional<int> r = CompareNumbers(b, a);  // a is the double
  return r ? std::optional<int>(-*r) : std::nullopt;
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

bool KeyEqual(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    std::optional<int> c = CompareNumbers(a, b);
    return c && *c == 0;
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::kBool:
      return a.bool_value() == b.bool_value();
    case Kind::kString:
      return a.string_value() == b.string_value();
    case Kind::kNull:
      return true;
    default:
      return false;  // lists and maps are never keys
  }
}

std::optional<Value> MapFind(const Value& m, const Value& key) {
  if (const nlohmann::json* j = m.json_rep()) {
    if (key.kind() != Kind::kString) return std::nullopt;
    auto it = j->find(key.string_value());
    if (it == j->end()) return std::nullopt;
    return Value::FromJson(*it);
  }
  for (const auto& [k, v] : *m.owned_map()) {
    if (KeyEqual(k, key)) return v;
  }
  return std::nullopt;
}

std::string Quote(const Value& key) {
  if (key.kind() == Kind::kString) return key.string_value();
  if (key.kind() == Kind::kInt) return std::to_string(key.int_value());
  if (key.kind() == Kind::kUint) return std::to_string(key.uint_value()) + "u";
  if (key.kind() == Kind::kBool) return key.bool_value() ? "true" : "false";
  return std::string(TypeName(key));
}

size_t CodePoints(const std::string& s) {
  size_t n = 0;
  for (char c : s) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  }
  return n;
}

std::string FormatDouble(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d);
  return std::string(buf, res.ptr);
}

template <typename T>
bool ParseInteger(const std::string& s, T& out) {
  const char* begin = s.data();
  const char* end = s.data() + s.size();
  if (begin != end && *begin == '+') ++begin;
  auto res = std::from_chars(begin, end, out);
  return res.ec == std::errc() && res.ptr == end && begin != end;
}

class Evaluator {
 public:
  Evaluator(int num_slots, const Value& self, const Value* old_self, uint64_t max_steps)
      : slots_(static_cast<size_t>(num_slots)), max_steps_(max_steps) {
    slots_[kSelfSlot] = self;
    if (old_self) {
      slots_[kOldSelfSlot] = *old_self;
      has_old_self_ = true;
    }
  }

  Result<Value> Eval(const Expr& e) {
    SLUICE_RETURN_IF_ERROR(Charge(1));
    if (++depth_ > kMaxNestingDepth + 1) {
      --depth_;
      return Abort(Status::TooLarge("evaluation nesting exceeds the limit of " +
                                    std::to_string(kMaxNestingDepth)));
    }
    Result<Value> r = EvalNode(e);
    --depth_;
    return r;
  }

  // Deep equality, charging one step per element.
  Result<bool> Equals(const Value& a, const Value& b, int depth = 0) {
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

 private:
  Status Charge(uint64_t n) {
    steps_ += n;
    if (steps_ > max_steps_) {
      return Abort(Status::TooLarge("evaluation cost limit exceeded (more than " +
                                    std::to_string(max_steps_) + " steps)"));
    }
    return Status::Ok();
  }

  // A limit error: recorded so that && / || / all / exists never absorb it.
  Status Abort(Status s) {
    aborted_ = true;
    return s;
  }

  Result<Value> EvalNode(const Expr& e) {
    switch (e.kind) {
      case ExprKind::kLiteral:
        return e.literal;
      case ExprKind::kIdent:
        if (e.slot == kOldSelfSlot && !has_old_self_) {
          return EvalError("oldSelf is not available (a transition rule evaluated on create)");
        }
        return slots_[static_cast<size_t>(e.slot)];
      case ExprKind::kSelect:
        return EvalSelect(e);
      case ExprKind::kHas:
        return EvalHas(e);
      case ExprKind::kIndex:
        return EvalIndex(e);
      case ExprKind::kCall:
        return EvalCall(e);
      case ExprKind::kList:
        return EvalList(e);
      case ExprKind::kMap:
        return EvalMap(e);
      case ExprKind::kUnary:
        return EvalUnary(e);
      case ExprKind::kBinary:
        return EvalBinary(e);
      case ExprKind::kAnd:
      case ExprKind::kOr:
        return EvalLogical(e);
      case ExprKind::kTernary: {
        SLUICE_ASSIGN_OR_RETURN(Value cond, Eval(*e.args[0]));
        if (!cond.is_bool()) return NoOverload("?:", cond);
        return Eval(*e.args[cond.bool_value() ? 1 : 2]);
      }
      case ExprKind::kComprehension:
        return EvalComprehension(e);
    }
    return Status::Internal("unknown expression kind");
  }

  Result<Value> EvalSelect(const Expr& e) {
    SLUICE_ASSIGN_OR_RETURN(Value operand, Eval(*e.args[0]));
    if (operand.kind() != Kind::kMap) {
      return EvalError("type '" + std::string(TypeName(operand)) +
                       "' does not support field selection (selecting '" + e.name + "')");
    }
    std::optional<Value> v = MapFind(operand, Value::String(e.name));
    if (!v) return EvalError("no such key: " + e.name);
    return std::move(*v);
  }

  Result<Value> EvalHas(const Expr& e) {
    SLUICE_ASSIGN_OR_RETURN(Value operand, Eval(*e.args[0]));
    if (operand.kind() != Kind::kMap) {
      return EvalError("has() requires a map, got " + std::string(TypeName(operand)) +
                       " (testing '" + e.name + "')");
    }
    return Value::Bool(MapFind(operand, Value::String(e.name)).has_value());
  }

  Result<Value> EvalIndex(const Expr& e) {
    SLUICE_ASSIGN_OR_RETURN(Value operand, Eval(*e.args[0]));
    SLUICE_ASSIGN_OR_RETURN(Value index, Eval(*e.args[1]));
    if (operand.kind() == Kind::kList) {
      size_t n = operand.list_size();
      if (!index.is_number()) return NoOverload("[]", operand, index);
      int64_t i = -1;
      if (index.kind() == Kind::kInt) {
        i = index.int_value();
      } else if (index.kind() == Kind::kUint) {
        i = index.uint_value() > static_cast<uint64_t>(INT64_MAX)
                ? INT64_MAX
                : static_cast<int64_t>(index.uint_value());
      } else {
        double d = index.double_value();
        if (std::isnan(d) || d != std::trunc(d)) {
          return EvalError("invalid list index " + FormatDouble(d));
        }
        i = d >= 9.2e18 ? INT64_MAX : (d < 0 ? -1 : static_cast<int64_t>(d));
      }
      if (i < 0 || static_cast<uint64_t>(i) >= n) {
        return EvalError("index out of range: " + std::to_string(i) + " (list size " +
                         std::to_string(n) + ")");
      }
      return operand.list_at(static_cast<size_t>(i));
    }
    if (operand.kind() == Kind::kMap) {
      std::optional<Value> v = MapFind(operand, index);
      if (!v) return EvalError("no such key: " + Quote(index));
      return std::move(*v);
    }
    return NoOverload("[]", operand, index);
  }

  Result<Value> EvalList(const Expr& e) {
    ValueList items;
    items.reserve(e.args.size());
    for (const auto& a : e.args) {
      SLUICE_ASSIGN_OR_RETURN(Value v, Eval(*a));
      items.push_back(std::move(v));
    }
    return Value::List(std::move(items));
  }

  Result<Value> EvalMap(const Expr& e) {
    ValueMap entries;
    for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
      SLUICE_ASSIGN_OR_RETURN(Value k, Eval(*e.args[i]));
      SLUICE_ASSIGN_OR_RETURN(Value v, Eval(*e.args[i + 1]));
      Kind kk = k.kind();
      if (kk != Kind::kString && kk != Kind::kInt && kk != Kind::kUint && kk != Kind::kBool) {
        return EvalError("unsupported map key type " + std::string(TypeName(k)));
      }
      for (const auto& entry : entries) {
        if (KeyEqual(entry.first, k)) return EvalError("duplicate map key: " + Quote(k));
      }
      entries.emplace_back(std::move(k), std::move(v));
    }
    return Value::Map(std::move(entries));
  }

  Result<Value> EvalUnary(const Expr& e) {
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

  Result<Value> EvalLogical(const Expr& e) {
    bool is_and = e.kind == ExprKind::kAnd;
    std::string_view op = is_and ? "&&" : "||";
    // The value that decides the result on its own: false for &&, true for ||.
    bool decisive = !is_and;
    Result<Value> lhs = Eval(*e.args[0]);
    if (aborted_) return lhs.status();
    if (lhs.ok() && lhs->is_bool() && lhs->bool_value() == decisive) return Value::Bool(decisive);
    Result<Value> rhs = Eval(*e.args[1]);
    if (aborted_) return rhs.status();
    if (rhs.ok() && rhs->is_bool() && rhs->bool_value() == decisive) return Value::Bool(decisive);
    if (!lhs.ok()) return lhs.status();
    if (!lhs->is_bool()) return NoOverload(op, *lhs);
    if (!rhs.ok()) return rhs.status();
    if (!rhs->is_bool()) return NoOverload(op, *rhs);
    return Value::Bool(!decisive);
  }

  Result<Value> EvalBinary(const Expr& e) {
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

  Result<Value> Relation(Op op, const Value& a, const Value& b) {
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

  Result<Value> In(const Value& a, const Value& b) {
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

  Result<Value> Arithmetic(Op op, const Value& a, const Value& b) {
    std::string_view name = OpName(op);
    if (a.kind() == Kind::kInt && b.kind() == Kind::kInt) {
      int64_t x = a.int_value();
      int64_t y = b.int_value();
      int64_t r = 0;
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
          if (x == INT64_MIN && y == -1) {
            overflow = true;
          } else {
            r = op == Op::kDiv ? x / y : x % y;
          }
          break;
        default:
          return NoOverload(name, a, b);
      }
      if (overflow) return EvalError("integer overflow in " + std::string(name));
      return Value::Int(r);
    }
    if (a.kind() == Kind::kUint && b.kind() == Kind::kUint) {
      uint64_t x = a.uint_value();
      uint64_t y = b.uint_value();
      uint64_t r = 0;
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
          r = op == Op::kDiv ? x / y : x % y;
          break;
        default:
          return NoOverload(name, a, b);
      }
      if (overflow) return EvalError("unsigned integer overflow in " + std::string(name));
      return Value::Uint(r);
    }
    // A double with any number is double arithmetic (an extension, see docs/cel.md: JSON
    // cannot tell 2 from 2.0, so a number field may hold either).
    if (a.is_number() && b.is_number() &&
        (a.kind() == Kind::kDouble || b.kind() == Kind::kDouble) && op != Op::kMod) {
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

  Result<Value> EvalComprehension(const Expr& e) {
    SLUICE_ASSIGN_OR_RETURN(Value range, Eval(*e.args[0]));
    std::vector<Value> keys;
    bool is_list = range.kind() == Kind::kList;
    if (range.kind() == Kind::kMap) {
      keys = range.map_keys();
    } else if (!is_list) {
      return EvalError("macro requires a list or map, got " + std::string(TypeName(range)));
    }
    size_t n = is_list ? range.list_size() : keys.size();
    auto item = [&](size_t i) { return is_list ? range.list_at(i) : keys[i]; };
    Value& var = slots_[static_cast<size_t>(e.slot)];
    const Expr& body = *e.args[1];

    switch (e.macro) {
      case Macro::kAll:
      case Macro::kExists: {
        bool decisive = e.macro == Macro::kExists;  // exists stops at true, all at false
        std::optional<Status> error;
        for (size_t i = 0; i < n; ++i) {
          var = item(i);
          Result<Value> r = Eval(body);
          if (aborted_) return r.status();
          if (r.ok() && r->is_bool()) {
            if (r->bool_value() == decisive) return Value::Bool(decisive);
          } else if (!error) {
            error =
                r.ok() ? NoOverload(e.macro == Macro::kAll ? "all()" : "exists()", *r) : r.status();
          }
        }
        if (error) return *error;
        return Value::Bool(!decisive);
      }
      case Macro::kExistsOne: {
        size_t count = 0;
        for (size_t i = 0; i < n; ++i) {
          var = item(i);
          SLUICE_ASSIGN_OR_RETURN(Value r, Eval(body));
          if (!r.is_bool()) return NoOverload("exists_one()", r);
          if (r.bool_value()) ++count;
        }
        return Value::Bool(count == 1);
      }
      case Macro::kMap:
      case Macro::kMapFilter:
      case Macro::kFilter: {
        ValueList out;
        for (size_t i = 0; i < n; ++i) {
          var = item(i);
          if (e.macro != Macro::kMap) {
            SLUICE_ASSIGN_OR_RETURN(Value keep, Eval(body));
            if (!keep.is_bool()) {
              return NoOverload(e.macro == Macro::kFilter ? "filter()" : "map()", keep);
            }
            if (!keep.bool_value()) continue;
          }
          if (e.macro == Macro::kFilter) {
            out.push_back(var);
          } else {
            SLUICE_ASSIGN_OR_RETURN(Value mapped, Eval(e.macro == Macro::kMap ? body : *e.args[2]));
            out.push_back(std::move(mapped));
          }
        }
        return Value::List(std::move(out));
      }
    }
    return Status::Internal("unknown macro");
  }

  Result<Value> EvalCall(const Expr& e) {
    std::vector<Value> args;
    args.reserve(e.args.size());
    for (const auto& a : e.args) {
      SLUICE_ASSIGN_OR_RETURN(Value v, Eval(*a));
      args.push_back(std::move(v));
    }
    const Value& x = args[0];
    auto string_pair = [&]() {
      return args.size() == 2 && x.kind() == Kind::kString && args[1].kind() == Kind::kString;
    };
    switch (e.fn) {
      case Builtin::kSize:
        if (x.kind() == Kind::kString) {
          return Value::Int(static_cast<int64_t>(CodePoints(x.string_value())));
        }
        if (x.kind() == Kind::kList) return Value::Int(static_cast<int64_t>(x.list_size()));
        if (x.kind() == Kind::kMap) return Value::Int(static_cast<int64_t>(x.map_size()));
        return NoOverload("size()", x);
      case Builtin::kStartsWith:
      case Builtin::kEndsWith:
      case Builtin::kContains: {
        if (!string_pair()) return NoOverload(e.name + "()", x, args[1]);
        const std::string& s = x.string_value();
        const std::string& p = args[1].string_value();
        SLUICE_RETURN_IF_ERROR(Charge(s.size() / 64));
        if (e.fn == Builtin::kStartsWith) return Value::Bool(s.compare(0, p.size(), p) == 0);
        if (e.fn == Builtin::kEndsWith) {
          return Value::Bool(s.size() >= p.size() &&
                             s.compare(s.size() - p.size(), p.size(), p) == 0);
        }
        return Value::Bool(s.find(p) != std::string::npos);
      }
      case Builtin::kMatches:
        return Matches(e, args);
      case Builtin::kLowerAscii:
      case Builtin::kUpperAscii: {
        if (x.kind() != Kind::kString) return NoOverload(e.name + "()", x);
        std::string s = x.string_value();
        SLUICE_RETURN_IF_ERROR(Charge(s.size() / 64));
        for (char& c : s) {
          if (e.fn == Builtin::kLowerAscii && c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
          if (e.fn == Builtin::kUpperAscii && c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
        }
        return Value::String(std::move(s));
      }
      case Builtin::kInt:
        return ToInt(x);
      case Builtin::kUint:
        return ToUint(x);
      case Builtin::kDouble:
        return ToDouble(x);
      case Builtin::kString:
        return ToString(x);
      case Builtin::kDyn:
        return x;
    }
    return Status::Internal("unknown function");
  }

  Result<Value> Matches(const Expr& e, const std::vector<Value>& args) {
    const Value& s = args[0];
    const Value& p = args[1];
    if (s.kind() != Kind::kString || p.kind() != Kind::kString) {
      return NoOverload("matches()", s, p);
    }
    if (s.string_value().size() > kMaxRegexInput) {
      return EvalError("matches(): input of " + std::to_string(s.string_value().size()) +
                       " bytes exceeds the supported " + std::to_string(kMaxRegexInput));
    }
    SLUICE_RETURN_IF_ERROR(Charge(s.string_value().size() + 1));
    try {
      if (e.regex) return Value::Bool(std::regex_search(s.string_value(), *e.regex));
      std::regex re(p.string_value(), std::regex::ECMAScript);
      return Value::Bool(std::regex_search(s.string_value(), re));
    } catch (const std::regex_error& err) {
      return EvalError(std::string("matches(): invalid or too complex regular expression: ") +
                       err.what());
    }
  }

  static Result<Value> ToInt(const Value& x) {
    switch (x.kind()) {
      case Kind::kInt:
        return x;
      case Kind::kUint:
        if (x.uint_value() > static_cast<uint64_t>(INT64_MAX)) {
          return EvalError("int() overflow: " + std::to_string(x.uint_value()));
        }
        return Value::Int(static_cast<int64_t>(x.uint_value()));
      case Kind::kDouble: {
        double d = x.double_value();
        if (std::isnan(d) || d >= 9223372036854775808.0 || d < -9223372036854775808.0) {
          return EvalError("int() overflow: " + FormatDouble(d));
        }
        return Value::Int(static_cast<int64_t>(d));
      }
      case Kind::kString: {
        int64_t v = 0;
        if (!ParseInteger(x.string_value(), v)) {
          return EvalError("int(): cannot convert '" + x.string_value() + "'");
        }
        return Value::Int(v);
      }
      default:
        return NoOverload("int()", x);
    }
  }

  static Result<Value> ToUint(const Value& x) {
    switch (x.kind()) {
      case Kind::kUint:
        return x;
      case Kind::kInt:
        if (x.int_value() < 0) {
          return EvalError("uint() overflow: " + std::to_string(x.int_value()));
        }
        return Value::Uint(static_cast<uint64_t>(x.int_value()));
      case Kind::kDouble: {
        double d = x.double_value();
        if (std::isnan(d) || d <= -1.0 || d >= 18446744073709551616.0) {
          return EvalError("uint() overflow: " + FormatDouble(d));
        }
        return Value::Uint(static_cast<uint64_t>(d));
      }
      case Kind::kString: {
        uint64_t v = 0;
        if (!ParseInteger(x.string_value(), v)) {
          return EvalError("uint(): cannot convert '" + x.string_value() + "'");
        }
        return Value::Uint(v);
      }
      default:
        return NoOverload("uint()", x);
    }
  }

  static Result<Value> ToDouble(const Value& x) {
    switch (x.kind()) {
      case Kind::kDouble:
        return x;
      case Kind::kInt:
        return Value::Double(static_cast<double>(x.int_value()));
      case Kind::kUint:
        return Value::Double(static_cast<double>(x.uint_value()));
      case Kind::kString: {
        const std::string& s = x.string_value();
        char* end = nullptr;
        double d = s.empty() ? 0 : std::strtod(s.c_str(), &end);
        if (s.empty() || end != s.c_str() + s.size() ||
            std::isspace(static_cast<unsigned char>(s[0]))) {
          return EvalError("double(): cannot convert '" + s + "'");
        }
        return Value::Double(d);
      }
      default:
        return NoOverload("double()", x);
    }
  }

  static Result<Value> ToString(const Value& x) {
    switch (x.kind()) {
      case Kind::kString:
        return x;
      case Kind::kBool:
        return Value::String(x.bool_value() ? "true" : "false");
      case Kind::kInt:
        return Value::String(std::to_string(x.int_value()));
      case Kind::kUint:
        return Value::String(std::to_string(x.uint_value()));
      case Kind::kDouble:
        return Value::String(FormatDouble(x.double_value()));
      default:
        return NoOverload("string()", x);
    }
  }

  std::vector<Value> slots_;
  bool has_old_self_ = false;
  uint64_t max_steps_;
  uint64_t steps_ = 0;
  int depth_ = 0;
  bool aborted_ = false;
};

Result<nlohmann::json> ToJsonAt(const Value& v, int depth) {
  if (depth > kMaxValueDepth) {
    return Status::TooLarge("value nesting exceeds the limit of " + std::to_string(kMaxValueDepth));
  }
  if (const nlohmann::json* j = v.json_rep()) return *j;
  switch (v.kind()) {
    case Kind::kNull:
      return nlohmann::json(nullptr);
    case Kind::kBool:
      return nlohmann::json(v.bool_value());
    case Kind::kInt:
      return nlohmann::json(v.int_value());
    case Kind::kUint:
      return nlohmann::json(v.uint_value());
    case Kind::kDouble:
      return nlohmann::json(v.double_value());
    case Kind::kString:
      return nlohmann::json(v.string_value());
    case Kind::kList: {
      nlohmann::json out = nlohmann::json::array();
      for (size_t i = 0; i < v.list_size(); ++i) {
        SLUICE_ASSIGN_OR_RETURN(nlohmann::json item, ToJsonAt(v.list_at(i), depth + 1));
        out.push_back(std::move(item));
      }
      return out;
    }
    case Kind::kMap: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& [k, val] : *v.owned_map()) {
        if (k.kind() != Kind::kString) {
          return Status::InvalidArgument("a map with a " + std::string(TypeName(k)) +
                                         " key cannot be converted to JSON");
        }
        SLUICE_ASSIGN_OR_RETURN(nlohmann::json item, ToJsonAt(val, depth + 1));
        out[k.string_value()] = std::move(item);
      }
      return out;
    }
  }
  return Status::Internal("unknown value kind");
}

}  // namespace

std::string_view TypeName(const Value& v) {
  switch (v.kind()) {
    case Kind::kNull:
      return "null_type";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kUint:
      return "uint";
    case Kind::kDouble:
      return "double";
    case Kind::kString:
      return "string";
    case Kind::kList:
      return "list";
    case Kind::kMap:
      return "map";
  }
  return "unknown";
}

Result<bool> Equal(const Value& a, const Value& b) {
  Evaluator ev(kFirstLocalSlot, Value(), nullptr, UINT64_MAX);
  return ev.Equals(a, b);
}

Result<nlohmann::json> ToJson(const Value& v) { return ToJsonAt(v, 0); }

Result<Value> Evaluate(const Expr& root, int num_slots, const Value& self, const Value* old_self,
                       uint64_t max_steps) {
  Evaluator ev(std::max(num_slots, kFirstLocalSlot), self, old_self, max_steps);
  return ev.Eval(root);
}

}  // namespace sluice::cel
