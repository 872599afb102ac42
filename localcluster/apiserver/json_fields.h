// Small readers of object fields shared by the deletion code and the garbage collector: they
// treat a missing or ill-typed field as empty, since stored objects are checked on write.
//
// Thread safety: pure functions.
#pragma once

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::apiserver {

// The strings of object[outer][field] when it is an array (other items skipped).
inline std::vector<std::string> StringsAt(const nlohmann::json& object, const char* outer,
                                          const char* field) {
  std::vector<std::string> out;
  if (!object.is_object()) return out;
  auto o = object.find(outer);
  if (o == object.end() || !o->is_object()) return out;
  auto it = o->find(field);
  if (it == o->end() || !it->is_array()) return out;
  for (const nlohmann::json& item : *it) {
    if (item.is_string()) out.push_back(item.get<std::string>());
  }
  return out;
}

inline bool ContainsString(const std::vector<std::string>& list, std::string_view value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

}  // namespace sluice::apiserver
