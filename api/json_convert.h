// JSON conversions the API types are built from (meta.h and the generated types, codegen.h):
// one FromJson/ToJson overload per value shape, so the code for a struct is a flat list of field
// reads and writes. FromJson checks the JSON type and names the field path on a mismatch; it
// never throws. Overloads for a struct live beside the struct and are found by lookup in this
// namespace.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/status.h"

namespace sluice::api {

// A Kubernetes int-or-string value (quantities such as cpu: 2 or memory: "8Gi").
using IntOrString = std::variant<int64_t, std::string>;

namespace convert {

inline Status TypeError(std::string_view path, const char* expected) {
  return Status::InvalidArgument(std::string("must be of type ") + expected, std::string(path));
}
inline std::string Join(std::string_view path, std::string_view key) {
  return path.empty() ? std::string(key) : std::string(path) + "." + std::string(key);
}
inline std::string Index(std::string_view path, size_t i) {
  return std::string(path) + "[" + std::to_string(i) + "]";
}

}  // namespace convert

Status FromJson(const nlohmann::json& j, std::string_view path, std::string* out);
Status FromJson(const nlohmann::json& j, std::string_view path, int64_t* out);
Status FromJson(const nlohmann::json& j, std::string_view path, double* out);
Status FromJson(const nlohmann::json& j, std::string_view path, bool* out);
Status FromJson(const nlohmann::json& j, std::string_view path, nlohmann::json* out);
Status FromJson(const nlohmann::json& j, std::string_view path, IntOrString* out);

inline nlohmann::json ToJson(const std::string& v) { return v; }
inline nlohmann::json ToJson(int64_t v) { return v; }
inline nlohmann::json ToJson(double v) { return v; }
inline nlohmann::json ToJson(bool v) { return v; }
inline nlohmann::json ToJson(const nlohmann::json& v) { return v; }
nlohmann::json ToJson(const IntOrString& v);

template <typename T>
Status FromJson(const nlohmann::json& j, std::string_view path, std::vector<T>* out) {
  if (!j.is_array()) return convert::TypeError(path, "array");
  out->clear();
  out->resize(j.size());
  for (size_t i = 0; i < j.size(); ++i) {
    SLUICE_RETURN_IF_ERROR(FromJson(j[i], convert::Index(path, i), &(*out)[i]));
  }
  return Status::Ok();
}

template <typename T>
Status FromJson(const nlohmann::json& j, std::string_view path, std::map<std::string, T>* out) {
  if (!j.is_object()) return convert::TypeError(path, "object");
  out->clear();
  for (auto it = j.begin(); it != j.end(); ++it) {
    SLUICE_RETURN_IF_ERROR(FromJson(*it, convert::Join(path, it.key()), &(*out)[it.key()]));
  }
  return Status::Ok();
}

template <typename T>
nlohmann::json ToJson(const std::vector<T>& v) {
  nlohmann::json out = nlohmann::json::array();
  for (const T& item : v) out.push_back(ToJson(item));
  return out;
}

template <typename T>
nlohmann::json ToJson(const std::map<std::string, T>& v) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, item] : v) out[key] = ToJson(item);
  return out;
}

// Reads member `key` of object `j` into a plain field; an absent or null member leaves the
// field as it is (defaulting has filled every field that has a default).
template <typename T>
Status ReadField(const nlohmann::json& j, const char* key, std::string_view path, T* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::Ok();
  return FromJson(*it, convert::Join(path, key), out);
}

// Reads an optional member: absent or null is nullopt.
template <typename T>
Status ReadField(const nlohmann::json& j, const char* key, std::string_view path,
                 std::optional<T>* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    out->reset();
    return Status::Ok();
  }
  T value{};
  SLUICE_RETURN_IF_ERROR(FromJson(*it, convert::Join(path, key), &value));
  *out = std::move(value);
  return Status::Ok();
}

template <typename T>
void WriteField(nlohmann::json& j, const char* key, const T& v) {
  j[key] = ToJson(v);
}

template <typename T>
void WriteField(nlohmann::json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = ToJson(*v);
}

}  // namespace sluice::api
