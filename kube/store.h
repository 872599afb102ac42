// Store keys and object accessors shared by the cache layers (indexer, reflector, informer).
//
// Cached objects are `std::shared_ptr<const nlohmann::json>`: the cache and every handler share
// one immutable copy; nobody may modify a cached object (copy it first, as client-go demands of
// its handlers). Keys are "<namespace>/<name>", or "<name>" for cluster-scoped objects.
//
// Thread safety: pure functions.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace sluice::kube {

using ObjectPtr = std::shared_ptr<const nlohmann::json>;

// metadata.<field> as a string; "" when absent.
std::string MetaString(const nlohmann::json& object, std::string_view field);
inline std::string NamespaceOf(const nlohmann::json& o) { return MetaString(o, "namespace"); }
inline std::string NameOf(const nlohmann::json& o) { return MetaString(o, "name"); }
inline std::string UidOf(const nlohmann::json& o) { return MetaString(o, "uid"); }
inline std::string ResourceVersionOf(const nlohmann::json& o) {
  return MetaString(o, "resourceVersion");
}

// "<namespace>/<name>" or "<name>".
std::string ObjectKey(const nlohmann::json& object);
std::string ObjectKey(std::string_view namespace_, std::string_view name);

}  // namespace sluice::kube
