// Reading fields of the objects the controllers handle: any string by JSON pointer, and
// metadata.name and metadata.namespace.
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace sluice::controllers {

// The string at JSON pointer `pointer` (e.g. "/spec/policyRef/name"); `fallback` when it is
// missing or not a string.
inline std::string Str(const nlohmann::json& obj, const char* pointer,
                       const std::string& fallback = "") {
  const nlohmann::json::json_pointer ptr(pointer);
  return obj.contains(ptr) && obj.at(ptr).is_string() ? obj.at(ptr).get<std::string>() : fallback;
}

// metadata.name; "" when missing.
inline std::string Name(const nlohmann::json& obj) {
  return obj.value("/metadata/name"_json_pointer, "");
}

// metadata.namespace; "default" when missing, as kube defaults a namespaced object's namespace.
inline std::string Namespace(const nlohmann::json& obj) {
  return obj.value("/metadata/namespace"_json_pointer, "default");
}

}  // namespace sluice::controllers
