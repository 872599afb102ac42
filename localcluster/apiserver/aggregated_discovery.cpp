#include "localcluster/apiserver/aggregated_discovery.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "common/ascii.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

// Splits on a separator outside double quotes.
std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  bool quoted = false;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '"') quoted = !quoted;
    if (s[i] == sep && !quoted) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  out.push_back(s.substr(start));
  return out;
}

bool MediaRangeIsAggregatedV2(std::string_view range) {
  const std::vector<std::string_view> parts = Split(range, ';');
  if (AsciiLower(StripAsciiSpace(parts[0])) != "application/json") return false;
  std::map<std::string, std::string> params;
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string_view param = StripAsciiSpace(parts[i]);
    const size_t eq = param.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view value = StripAsciiSpace(param.substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    params[AsciiLower(StripAsciiSpace(param.substr(0, eq)))] = std::string(value);
  }
  if (auto q = params.find("q"); q != params.end()) {
    // q=0 (or 0.0, 0.000) means "not acceptable".
    if (q->second.find_first_not_of("0.") == std::string::npos) return false;
  }
  return params["g"] == "apidiscovery.k8s.io" && params["v"] == "v2" &&
         params["as"] == "APIGroupDiscoveryList";
}

json Gvk(const std::string& group, const std::string& version, const std::string& kind) {
  return {{"group", group}, {"version", version}, {"kind", kind}};
}

json ResourceJson(const ResourceInfo& r) {
  json out = {{"resource", r.plural},
              {"responseKind", Gvk(r.group, r.version, r.kind)},
              {"scope", r.namespaced ? "Namespaced" : "Cluster"},
              {"singularResource", r.singular},
              {"verbs", r.verbs}};
  if (!r.short_names.empty()) out["shortNames"] = r.short_names;
  if (!r.categories.empty()) out["categories"] = r.categories;
  json subresources = json::array();
  if (r.has_status) {
    subresources.push_back({{"subresource", "status"},
                            {"responseKind", Gvk(r.group, r.version, r.kind)},
                            {"verbs", {"get", "patch", "update"}}});
  }
  if (r.scale) {
    subresources.push_back({{"subresource", "scale"},
                            {"responseKind", Gvk("autoscaling", "v1", "Scale")},
                            {"verbs", {"get", "patch", "update"}}});
  }
  if (r.has_log) {
    subresources.push_back({{"subresource", "log"},
                            {"responseKind", Gvk(r.group, r.version, r.kind)},
                            {"verbs", {"get"}}});
  }
  if (r.has_token) {
    subresources.push_back({{"subresource", "token"},
                            {"responseKind", Gvk("authentication.k8s.io", "v1", "TokenRequest")},
                            {"verbs", {"create"}}});
  }
  if (!subresources.empty()) out["subresources"] = std::move(subresources);
  return out;
}

json GroupJson(const ResourceRegistry& registry, const std::vector<const ResourceInfo*>& all,
               const std::string& group) {
  json versions = json::array();
  for (const std::string& version : registry.Versions(group)) {
    json resources = json::array();
    for (const ResourceInfo* r : all) {
      if (r->group == group && r->version == version) resources.push_back(ResourceJson(*r));
    }
    versions.push_back(
        {{"version", version}, {"resources", std::move(resources)}, {"freshness", "Current"}});
  }
  json metadata = json::object();
  if (!group.empty()) metadata["name"] = group;
  return {{"metadata", std::move(metadata)}, {"versions", std::move(versions)}};
}

}  // namespace

bool WantsAggregatedDiscovery(std::string_view accept_header) {
  for (std::string_view range : Split(accept_header, ',')) {
    if (MediaRangeIsAggregatedV2(range)) return true;
  }
  return false;
}

json AggregatedDiscovery(const ResourceRegistry& registry, bool core) {
  const std::vector<const ResourceInfo*> all = registry.All();
  json items = json::array();
  for (const std::string& group : registry.Groups()) {
    if (group.empty() != core) continue;
    items.push_back(GroupJson(registry, all, group));
  }
  return {{"kind", "APIGroupDiscoveryList"},
          {"apiVersion", "apidiscovery.k8s.io/v2"},
          {"metadata", json::object()},
          {"items", std::move(items)}};
}

}  // namespace sluice::apiserver
