#include "workers/dataflow/algorithms/options_json.h"

namespace sluice::dataflow {

Result<JsonOptions> JsonOptions::Create(const nlohmann::json& options) {
  if (options.is_null()) return JsonOptions(nlohmann::json::object());
  if (!options.is_object()) return Status::InvalidArgument("options must be an object");
  return JsonOptions(options);
}

const nlohmann::json* JsonOptions::Find(std::string_view key) {
  seen_.emplace(key);
  auto it = options_.find(std::string(key));
  return it == options_.end() ? nullptr : &*it;
}

Status JsonOptions::Double(std::string_view key, double& out) {
  const nlohmann::json* v = Find(key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_number()) return Status::InvalidArgument("must be a number", std::string(key));
  out = v->get<double>();
  return Status::Ok();
}

Status JsonOptions::Int(std::string_view key, int64_t& out) {
  const nlohmann::json* v = Find(key);
  if (v == nullptr) return Status::Ok();
  if (v->is_number_unsigned()) {
    if (v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      return Status::InvalidArgument("out of range", std::string(key));
    }
    out = static_cast<int64_t>(v->get<uint64_t>());
    return Status::Ok();
  }
  if (!v->is_number_integer())
    return Status::InvalidArgument("must be an integer", std::string(key));
  out = v->get<int64_t>();
  return Status::Ok();
}

Status JsonOptions::Bool(std::string_view key, bool& out) {
  const nlohmann::json* v = Find(key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_boolean()) return Status::InvalidArgument("must be a boolean", std::string(key));
  out = v->get<bool>();
  return Status::Ok();
}

Status JsonOptions::String(std::string_view key, std::string& out) {
  const nlohmann::json* v = Find(key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_string()) return Status::InvalidArgument("must be a string", std::string(key));
  out = v->get<std::string>();
  return Status::Ok();
}

Status JsonOptions::RejectUnknown() const {
  for (const auto& [key, value] : options_.items()) {
    if (!seen_.contains(key)) return Status::InvalidArgument("unknown option", key);
  }
  return Status::Ok();
}

Status PrefixField(const Status& status, std::string_view prefix) {
  if (status.ok()) return status;
  std::string field(prefix);
  if (!status.field().empty()) field += "." + status.field();
  return Status(status.code(), status.message(), std::move(field));
}

}  // namespace sluice::dataflow
