// The CEL comprehension macros (evaluator.h): all() and exists(), which absorb an error when
// another element decides the outcome, exists_one(), map() (with and without a filter) and
// filter(), over the elements of a list or the keys of a map.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/cel/eval.h"
#include "common/cel/eval_support.h"
#include "common/cel/evaluator.h"

namespace sluice::cel::detail {
namespace {

using Kind = Value::Kind;

}  // namespace

Result<Value> Evaluator::EvalComprehension(const Expr& e) {
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

}  // namespace sluice::cel::detail
