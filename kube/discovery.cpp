#include "kube/discovery.h"

namespace sluice::kube {
namespace {

std::string Key(const std::string& group, const std::string& version) {
  return group + "/" + version;
}

}  // namespace

Result<std::vector<ApiResource>> DiscoveryClient::Fetch(const std::string& group,
                                                        const std::string& version) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++fetches_;
  }
  RestRequest req;
  req.path = GroupVersionResource{group, version, "", true}.GroupVersionPath();
  Result<nlohmann::json> doc = client_.DoJson(req);
  if (!doc.ok()) {
    if (IsNotFound(doc.status())) {
      std::lock_guard<std::mutex> lock(mu_);
      cache_.erase(Key(group, version));
    }
    return doc.status();
  }
  std::vector<ApiResource> out;
  const auto resources = doc->find("resources");
  if (resources != doc->end() && resources->is_array()) {
    for (const nlohmann::json& r : *resources) {
      if (!r.is_object()) continue;
      ApiResource res;
      res.name = r.value("name", "");
      res.kind = r.value("kind", "");
      res.namespaced = r.value("namespaced", false);
      if (const auto v = r.find("verbs"); v != r.end() && v->is_array()) {
        for (const auto& verb : *v) {
          if (verb.is_string()) res.verbs.push_back(verb.get<std::string>());
        }
      }
      if (const auto s = r.find("shortNames"); s != r.end() && s->is_array()) {
        for (const auto& name : *s) {
          if (name.is_string()) res.short_names.push_back(name.get<std::string>());
        }
      }
      out.push_back(std::move(res));
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  cache_[Key(group, version)] = out;
  return out;
}

Result<std::vector<ApiResource>> DiscoveryClient::ResourcesFor(const std::string& group,
                                                               const std::string& version) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = cache_.find(Key(group, version));
    if (it != cache_.end()) return it->second;
  }
  return Fetch(group, version);
}

Result<GroupVersionResource> DiscoveryClient::Find(const std::string& group,
                                                   const std::string& version,
                                                   const std::string& name_or_kind) {
  auto lookup = [&](const std::vector<ApiResource>& list) -> std::optional<GroupVersionResource> {
    for (const ApiResource& r : list) {
      if (r.name.find('/') != std::string::npos) continue;
      if (r.name == name_or_kind || r.kind == name_or_kind) {
        return GroupVersionResource{group, version, r.name, r.namespaced};
      }
    }
    return std::nullopt;
  };
  bool fetched = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    fetched = cache_.find(Key(group, version)) == cache_.end();
  }
  SLUICE_ASSIGN_OR_RETURN(std::vector<ApiResource> list, ResourcesFor(group, version));
  if (auto found = lookup(list)) return *found;
  if (!fetched) {  // Refresh once: the resource may have been added since.
    SLUICE_ASSIGN_OR_RETURN(list, Fetch(group, version));
    if (auto found = lookup(list)) return *found;
  }
  return Status::NotFound("the server has no resource \"" + name_or_kind + "\" in " +
                          (group.empty() ? version : group + "/" + version));
}

void DiscoveryClient::Invalidate() {
  std::lock_guard<std::mutex> lock(mu_);
  cache_.clear();
}

int DiscoveryClient::fetches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return fetches_;
}

}  // namespace sluice::kube
