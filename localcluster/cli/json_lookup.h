// Typed reads of nested members of Kubernetes objects as JSON ({"status": {"evaluation": ...}}),
// tolerant of anything missing or of the wrong type: what the CLI's views of objects it did not
// write need. Pure functions.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace sluice::cli {

// The member at the path `keys`, or nullptr when a step is missing or not an object.
inline const nlohmann::json* JsonAt(const nlohmann::json& j,
                                    std::initializer_list<const char*> keys) {
  const nlohmann::json* at = &j;
  for (const char* key : keys) {
    if (!at->is_object()) return nullptr;
    auto it = at->find(key);
    if (it == at->end()) return nullptr;
    at = &*it;
  }
  return at;
}

// An integer at `keys`; nullopt when absent or not an integer.
inline std::optional<int64_t> JsonInt(const nlohmann::json& j,
                                      std::initializer_list<const char*> keys) {
  const nlohmann::json* v = JsonAt(j, keys);
  if (v == nullptr || !v->is_number_integer()) return std::nullopt;
  return v->get<int64_t>();
}

// A number at `keys`; nullopt when absent or not a number.
inline std::optional<double> JsonNumber(const nlohmann::json& j,
                                        std::initializer_list<const char*> keys) {
  const nlohmann::json* v = JsonAt(j, keys);
  if (v == nullptr || !v->is_number()) return std::nullopt;
  return v->get<double>();
}

// A string at `keys`; "" when absent or not a string.
inline std::string JsonString(const nlohmann::json& j, std::initializer_list<const char*> keys) {
  const nlohmann::json* v = JsonAt(j, keys);
  if (v == nullptr || !v->is_string()) return "";
  return v->get<std::string>();
}

}  // namespace sluice::cli
