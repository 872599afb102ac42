#include "workers/dataflow/request_fields.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <system_error>
#include <utility>

namespace sluice::dataflow {

using nlohmann::json;

Status BadField(std::string message, std::string field) {
  return Status::InvalidArgument(std::move(message), std::move(field));
}

Status ReadString(const json& j, const char* key, bool required, std::string& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    return required ? BadField("is required", key) : Status::Ok();
  }
  if (!it->is_string()) return BadField("must be a string", key);
  out = it->get<std::string>();
  return Status::Ok();
}

Status ReadInt(const json& j, const char* key, bool required, int64_t& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    return required ? BadField("is required", key) : Status::Ok();
  }
  if (!it->is_number_integer()) return BadField("must be an integer", key);
  if (it->is_number_unsigned() && it->get<uint64_t>() > uint64_t{INT64_MAX}) {
    return BadField("is out of range", key);
  }
  out = it->get<int64_t>();
  return Status::Ok();
}

Status ReadSeconds(const json& j, const char* key, double& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::Ok();
  if (!it->is_number()) return BadField("must be a number of seconds", key);
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < 0) return BadField("must be a finite number >= 0", key);
  out = v;
  return Status::Ok();
}

Status ReadBool(const json& j, const char* key, bool& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::Ok();
  if (!it->is_boolean()) return BadField("must be a boolean", key);
  out = it->get<bool>();
  return Status::Ok();
}

Status RejectUnknownKeys(const json& j, std::initializer_list<std::string_view> known) {
  for (const auto& [key, value] : j.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return BadField("unknown field", key);
    }
  }
  return Status::Ok();
}

Status QueryInt(const httplib::Params& params, const char* key, int64_t& out) {
  auto it = params.lower_bound(key);  // The first occurrence.
  if (it == params.end() || it->first != key) return Status::Ok();
  const std::string& v = it->second;
  int64_t parsed = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), parsed);
  if (ec != std::errc() || end != v.data() + v.size()) {
    return BadField("\"" + v + "\" is not an integer", key);
  }
  out = parsed;
  return Status::Ok();
}

Status QuerySeconds(const httplib::Params& params, const char* key, double& out) {
  auto it = params.lower_bound(key);  // The first occurrence.
  if (it == params.end() || it->first != key) return Status::Ok();
  const std::string& v = it->second;
  double parsed = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), parsed);
  if (ec != std::errc() || end != v.data() + v.size() || !std::isfinite(parsed) || parsed < 0) {
    return BadField("\"" + v + "\" is not a number of seconds >= 0", key);
  }
  out = parsed;
  return Status::Ok();
}

}  // namespace sluice::dataflow
