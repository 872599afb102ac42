// Evaluator: the tree-walking interpreter behind Evaluate and Equal (eval.h). Internal to
// common/cel.
//
// Its members are defined by concept: eval.cpp (the node dispatch, variables, field selection,
// indexing, list and map literals, && and ||), eval_operators.cpp (equality, ordering, `in`,
// arithmetic), eval_macros.cpp (all, exists, exists_one, map, filter) and eval_functions.cpp (the
// builtin functions and conversions). The step budget, the nesting bounds and the abort rule are
// described in eval.h.
//
// Thread safety: one Evaluator per evaluation; it keeps all its state in itself.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/cel/ast.h"
#include "common/cel/value.h"
#include "common/status.h"

namespace sluice::cel::detail {

class Evaluator {
 public:
  Evaluator(int num_slots, const Value& self, const Value* old_self, uint64_t max_steps);

  Result<Value> Eval(const Expr& e);

  // Deep equality, charging one step per element.
  Result<bool> Equals(const Value& a, const Value& b, int depth = 0);

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

  // eval.cpp
  Result<Value> EvalNode(const Expr& e);
  Result<Value> EvalSelect(const Expr& e);
  Result<Value> EvalHas(const Expr& e);
  Result<Value> EvalIndex(const Expr& e);
  Result<Value> EvalList(const Expr& e);
  Result<Value> EvalMap(const Expr& e);
  Result<Value> EvalLogical(const Expr& e);

  // eval_operators.cpp
  Result<Value> EvalUnary(const Expr& e);
  Result<Value> EvalBinary(const Expr& e);
  Result<Value> Relation(Op op, const Value& a, const Value& b);
  Result<Value> In(const Value& a, const Value& b);
  Result<Value> Arithmetic(Op op, const Value& a, const Value& b);

  // eval_macros.cpp
  Result<Value> EvalComprehension(const Expr& e);

  // eval_functions.cpp
  Result<Value> EvalCall(const Expr& e);
  Result<Value> Matches(const Expr& e, const std::vector<Value>& args);

  std::vector<Value> slots_;
  bool has_old_self_ = false;
  uint64_t max_steps_;
  uint64_t steps_ = 0;
  int depth_ = 0;
  bool aborted_ = false;
};

}  // namespace sluice::cel::detail
