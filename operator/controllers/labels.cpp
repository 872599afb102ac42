#include "operator/controllers/labels.h"

#include <cstdint>
#include <cstdio>

namespace sluice::controllers {

using nlohmann::json;

json StandardLabels(const std::string& name, const std::string& instance,
                    const std::string& component, const std::map<std::string, std::string>& extra) {
  json labels = {{kNameLabel, name},
                 {kInstanceLabel, instance},
                 {kComponentLabel, component},
                 {kPartOfLabel, "sluice"},
                 {kManagedByLabel, kManagedBy}};
  for (const auto& [k, v] : extra) labels[k] = v;
  return labels;
}

json ControllerRef(const json& owner) {
  return {{"apiVersion", owner.value("apiVersion", "")},
          {"kind", owner.value("kind", "")},
          {"name", owner.value("/metadata/name"_json_pointer, "")},
          {"uid", owner.value("/metadata/uid"_json_pointer, "")},
          {"controller", true},
          {"blockOwnerDeletion", true}};
}

std::string JsonHash(const json& value) {
  // dump() sorts object keys (nlohmann::json's default map), so equal values hash equally.
  const std::string text = value.dump();
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
  return std::string(buf).substr(0, 10);
}

}  // namespace sluice::controllers
