#include "localcluster/node/pod_template_hash.h"

#include <utility>

#include "localcluster/node/workload_objects.h"

namespace sluice::node {

using nlohmann::json;

namespace {

// Drops, inside objects, null values and empty objects and arrays (after normalizing them): as
// kube decodes templates into typed structs, `resources: {}`, `creationTimestamp: null` and an
// absent field all read the same there. (So `emptyDir: {}` reads as absent too; two templates
// differing only in that would compare equal, which valid templates cannot.)
json Compact(const json& v) {
  if (v.is_object()) {
    json out = json::object();
    for (const auto& [k, child] : v.items()) {
      json c = Compact(child);
      if (c.is_null() || ((c.is_object() || c.is_array()) && c.empty())) continue;
      out[k] = std::move(c);
    }
    return out;
  }
  if (v.is_array()) {
    json out = json::array();
    for (const json& child : v) out.push_back(Compact(child));
    return out;
  }
  return v;
}

json NormalizedTemplate(const json& t) {
  json out = t;
  const json::json_pointer labels("/metadata/labels");
  if (out.is_object() && out.contains(labels) && out.at(labels).is_object()) {
    out.at(labels).erase(kPodTemplateHashLabel);
  }
  return Compact(out);
}

}  // namespace

std::string PodTemplateHash(const json& pod_template, int64_t collision_count) {
  uint32_t h = 2166136261u;  // FNV-1a, 32 bits.
  auto feed = [&h](const std::string& bytes) {
    for (unsigned char c : bytes) {
      h ^= c;
      h *= 16777619u;
    }
  };
  feed(NormalizedTemplate(pod_template).dump());
  if (collision_count >= 0) feed("\n" + std::to_string(collision_count));
  // Each decimal digit as one of ten characters without vowels.
  static constexpr char kDigits[] = "456789bcdf";
  std::string out;
  for (char c : std::to_string(h)) out += kDigits[c - '0'];
  return out;
}

bool TemplatesEqualIgnoringHash(const json& a, const json& b) {
  return NormalizedTemplate(a) == NormalizedTemplate(b);
}

}  // namespace sluice::node
