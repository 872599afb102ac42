#include "localcluster/apiserver/discovery.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

json GroupJson(const ResourceRegistry& registry, const std::string& group) {
  json versions = json::array();
  for (const std::string& v : registry.Versions(group)) {
    versions.push_back({{"groupVersion", group + "/" + v}, {"version", v}});
  }
  json out = {{"name", group}, {"versions", versions}};
  if (!versions.empty()) out["preferredVersion"] = versions[0];
  return out;
}

json DiscoveryResourceJson(const ResourceInfo& r) {
  json out = {{"name", r.plural},
              {"singularName", r.singular},
              {"namespaced", r.namespaced},
              {"kind", r.kind},
              {"verbs", r.verbs}};
  if (!r.short_names.empty()) out["shortNames"] = r.short_names;
  if (!r.categories.empty()) out["categories"] = r.categories;
  return out;
}

}  // namespace

json CoreApiVersions(std::string_view server_address) {
  return {{"kind", "APIVersions"},
          {"versions", {"v1"}},
          {"serverAddressByClientCIDRs",
           {{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", std::string(server_address)}}}}};
}

json ApiGroupList(const ResourceRegistry& registry) {
  json groups = json::array();
  for (const std::string& g : registry.Groups()) {
    if (!g.empty()) groups.push_back(GroupJson(registry, g));
  }
  return {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", groups}};
}

std::optional<json> ApiGroup(const ResourceRegistry& registry, std::string_view group) {
  if (group.empty() || registry.Versions(group).empty()) return std::nullopt;
  json out = GroupJson(registry, std::string(group));
  out["kind"] = "APIGroup";
  out["apiVersion"] = "v1";
  return out;
}

std::optional<json> ApiResourceList(const ResourceRegistry& registry, std::string_view group,
                                    std::string_view version) {
  json resources = json::array();
  for (const ResourceInfo* r : registry.All()) {
    if (r->group != group || r->version != version) continue;
    resources.push_back(DiscoveryResourceJson(*r));
    auto sub = [&](const std::string& name, const std::string& kind,
                   std::vector<std::string> verbs) {
      resources.push_back({{"name", r->plural + "/" + name},
                           {"singularName", ""},
                           {"namespaced", r->namespaced},
                           {"kind", kind},
                           {"verbs", std::move(verbs)}});
    };
    if (r->has_status) sub("status", r->kind, {"get", "patch", "update"});
    if (r->scale) sub("scale", "Scale", {"get", "patch", "update"});
    if (r->has_log) sub("log", "Pod", {"get"});
    if (r->has_token) {
      resources.push_back({{"name", r->plural + "/token"},
                           {"singularName", ""},
                           {"namespaced", r->namespaced},
                           {"group", "authentication.k8s.io"},
                           {"version", "v1"},
                           {"kind", "TokenRequest"},
                           {"verbs", {"create"}}});
    }
  }
  if (resources.empty()) return std::nullopt;
  const std::string group_version =
      group.empty() ? std::string(version) : std::string(group) + "/" + std::string(version);
  return json{{"kind", "APIResourceList"},
              {"apiVersion", "v1"},
              {"groupVersion", group_version},
              {"resources", resources}};
}

}  // namespace sluice::apiserver
