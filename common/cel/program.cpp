#include "common/cel/program.h"

#include <exception>
#include <string>
#include <utility>

namespace sluice::cel {

Result<Program> Compile(std::string_view expression) {
  Result<ParsedExpr> parsed = [&]() -> Result<ParsedExpr> {
    try {
      return Parse(expression);
    } catch (const std::exception& e) {  // allocation failure and the like
      return Status::Internal(std::string("CEL compile failed: ") + e.what());
    }
  }();
  if (!parsed.ok()) return parsed.status();
  Program p;
  p.expression_ = std::string(expression);
  p.parsed_ = std::make_shared<const ParsedExpr>(std::move(parsed).value());
  return p;
}

Result<Value> Program::EvalValue(const nlohmann::json& self, const nlohmann::json* old_self,
                                 uint64_t max_steps) const {
  try {
    Value self_value = Value::FromJson(self);
    Value old_value;
    if (old_self) old_value = Value::FromJson(*old_self);
    return Evaluate(*parsed_->root, parsed_->num_slots, self_value, old_self ? &old_value : nullptr,
                    max_steps);
  } catch (const std::exception& e) {  // nlohmann type errors would be a bug here; be safe
    return Status::Internal(std::string("CEL evaluation failed: ") + e.what());
  }
}

Result<bool> Program::EvalRule(const nlohmann::json& self, const nlohmann::json* old_self,
                               uint64_t max_steps) const {
  SLUICE_ASSIGN_OR_RETURN(Value v, EvalValue(self, old_self, max_steps));
  if (!v.is_bool()) {
    return Status::InvalidArgument("validation rule must evaluate to a bool, got " +
                                   std::string(TypeName(v)));
  }
  return v.bool_value();
}

Result<nlohmann::json> Program::Eval(const nlohmann::json& self, const nlohmann::json* old_self,
                                     uint64_t max_steps) const {
  SLUICE_ASSIGN_OR_RETURN(Value v, EvalValue(self, old_self, max_steps));
  try {
    return ToJson(v);
  } catch (const std::exception& e) {
    return Status::Internal(std::string("CEL result conversion failed: ") + e.what());
  }
}

}  // namespace sluice::cel
