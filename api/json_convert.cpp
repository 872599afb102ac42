#include "api/json_convert.h"

namespace sluice::api {

Status FromJson(const nlohmann::json& j, std::string_view path, std::string* out) {
  if (!j.is_string()) return convert::TypeError(path, "string");
  *out = j.get<std::string>();
  return Status::Ok();
}

Status FromJson(const nlohmann::json& j, std::string_view path, int64_t* out) {
  if (j.is_number_integer() || j.is_number_unsigned()) {
    *out = j.get<int64_t>();
    return Status::Ok();
  }
  // 3.0 is an integer to the schema validator, so accept it here too.
  if (j.is_number_float()) {
    const double d = j.get<double>();
    if (d == static_cast<double>(static_cast<int64_t>(d))) {
      *out = static_cast<int64_t>(d);
      return Status::Ok();
    }
  }
  return convert::TypeError(path, "integer");
}

Status FromJson(const nlohmann::json& j, std::string_view path, double* out) {
  if (!j.is_number()) return convert::TypeError(path, "number");
  *out = j.get<double>();
  return Status::Ok();
}

Status FromJson(const nlohmann::json& j, std::string_view path, bool* out) {
  if (!j.is_boolean()) return convert::TypeError(path, "boolean");
  *out = j.get<bool>();
  return Status::Ok();
}

Status FromJson(const nlohmann::json& j, std::string_view, nlohmann::json* out) {
  *out = j;
  return Status::Ok();
}

Status FromJson(const nlohmann::json& j, std::string_view path, IntOrString* out) {
  if (j.is_string()) {
    *out = j.get<std::string>();
    return Status::Ok();
  }
  int64_t v = 0;
  if (!FromJson(j, path, &v).ok()) return convert::TypeError(path, "integer or string");
  *out = v;
  return Status::Ok();
}

nlohmann::json ToJson(const IntOrString& v) {
  if (const int64_t* i = std::get_if<int64_t>(&v)) return *i;
  return std::get<std::string>(v);
}

}  // namespace sluice::api
