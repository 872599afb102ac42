#include "common/json/options_reader.h"

namespace sluice {

namespace {

Status WrongType(const char* expected, const nlohmann::json& v, std::string_view key) {
  return Status::InvalidArgument(std::string("must be ") + expected + ", got " + v.type_name(),
                                 std::string(key));
}

}  // namespace

Result<JsonOptions> JsonOptions::Create(const nlohmann::json& options) {
  if (options.is_null()) return JsonOptions(nlohmann::json::object());
  if (!options.is_object()) {
    return Status::InvalidArgument(std::string("must be an object, got ") + options.type_name());
  }
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
  if (!v->is_number()) return WrongType("a number", *v, key);
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
  if (!v->is_number_integer()) return WrongType("an integer", *v, key);
  out = v->get<int64_t>();
  return Status::Ok();
}

Status JsonOptions::Bool(std::string_view key, bool& out) {
  const nlohmann::json* v = Find(key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_boolean()) return WrongType("a boolean", *v, key);
  out = v->get<bool>();
  return Status::Ok();
}

Status JsonOptions::String(std::string_view key, std::string& out) {
  const nlohmann::json* v = Find(key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_string()) return WrongType("a string", *v, key);
  out = v->get<std::string>();
  return Status::Ok();
}

Status JsonOptions::RejectUnknown() const {
  for (const auto& [key, value] : options_.items()) {
    if (seen_.contains(key)) continue;
    std::string known;
    for (const std::string& k : seen_) known += (known.empty() ? "" : ", ") + k;
    return Status::InvalidArgument(
        known.empty() ? "unknown option; this takes none" : "unknown option; known: " + known, key);
  }
  return Status::Ok();
}

Status PrefixField(const Status& status, std::string_view prefix) {
  if (status.ok()) return status;
  std::string field(prefix);
  if (!status.field().empty()) field += "." + status.field();
  return Status(status.code(), status.message(), std::move(field));
}

}  // namespace sluice
