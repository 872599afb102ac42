// The CEL evaluator's core (evaluator.h): the node dispatch, variables, field selection, has(),
// indexing, list and map literals, && and ||; and the entry points of eval.h (Evaluate, Equal,
// TypeName, ToJson).
#include "common/cel/eval.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "common/cel/eval_support.h"
#include "common/cel/evaluator.h"
#include "common/cel/parser.h"

namespace sluice::cel {
namespace {

using Kind = Value::Kind;

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

namespace detail {

Evaluator::Evaluator(int num_slots, const Value& self, const Value* old_self, uint64_t max_steps)
    : slots_(static_cast<size_t>(num_slots)), max_steps_(max_steps) {
  slots_[kSelfSlot] = self;
  if (old_self) {
    slots_[kOldSelfSlot] = *old_self;
    has_old_self_ = true;
  }
}

Result<Value> Evaluator::Eval(const Expr& e) {
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

Result<Value> Evaluator::EvalNode(const Expr& e) {
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

Result<Value> Evaluator::EvalSelect(const Expr& e) {
  SLUICE_ASSIGN_OR_RETURN(Value operand, Eval(*e.args[0]));
  if (operand.kind() != Kind::kMap) {
    return EvalError("type '" + std::string(TypeName(operand)) +
                     "' does not support field selection (selecting '" + e.name + "')");
  }
  std::optional<Value> v = MapFind(operand, Value::String(e.name));
  if (!v) return EvalError("no such key: " + e.name);
  return std::move(*v);
}

Result<Value> Evaluator::EvalHas(const Expr& e) {
  SLUICE_ASSIGN_OR_RETURN(Value operand, Eval(*e.args[0]));
  if (operand.kind() != Kind::kMap) {
    return EvalError("has() requires a map, got " + std::string(TypeName(operand)) + " (testing '" +
                     e.name + "')");
  }
  return Value::Bool(MapFind(operand, Value::String(e.name)).has_value());
}

Result<Value> Evaluator::EvalIndex(const Expr& e) {
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

Result<Value> Evaluator::EvalList(const Expr& e) {
  ValueList items;
  items.reserve(e.args.size());
  for (const auto& a : e.args) {
    SLUICE_ASSIGN_OR_RETURN(Value v, Eval(*a));
    items.push_back(std::move(v));
  }
  return Value::List(std::move(items));
}

Result<Value> Evaluator::EvalMap(const Expr& e) {
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

Result<Value> Evaluator::EvalLogical(const Expr& e) {
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

}  // namespace detail

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
  detail::Evaluator ev(kFirstLocalSlot, Value(), nullptr, UINT64_MAX);
  return ev.Equals(a, b);
}

Result<nlohmann::json> ToJson(const Value& v) { return ToJsonAt(v, 0); }

Result<Value> Evaluate(const Expr& root, int num_slots, const Value& self, const Value* old_self,
                       uint64_t max_steps) {
  detail::Evaluator ev(std::max(num_slots, kFirstLocalSlot), self, old_self, max_steps);
  return ev.Eval(root);
}

}  // namespace sluice::cel
