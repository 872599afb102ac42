#include "localcluster/apiserver/resource_registry.h"

#include <algorithm>
#include <tuple>

namespace sluice::apiserver {
namespace {

using nlohmann::json;

const std::vector<std::string> kAllVerbs = {"create", "delete", "deletecollection", "get",
                                            "list",   "patch",  "update",           "watch"};

std::string Key(std::string_view group, std::string_view version, std::string_view plural) {
  std::string key(group);
  key += '/';
  key += version;
  key += '/';
  key += plural;
  return key;
}

ResourceInfo Builtin(std::string group, std::string version, std::string kind, std::string plural,
                     bool namespaced, std::vector<std::string> short_names = {},
                     bool has_status = false) {
  ResourceInfo r;
  r.group = std::move(group);
  r.version = std::move(version);
  r.kind = std::move(kind);
  r.list_kind = r.kind + "List";
  r.plural = std::move(plural);
  r.singular = r.kind;
  std::transform(r.singular.begin(), r.singular.end(), r.singular.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  r.namespaced = namespaced;
  r.short_names = std::move(short_names);
  r.verbs = kAllVerbs;
  r.has_status = has_status;
  return r;
}

}  // namespace

std::string ResourceInfo::ApiVersion() const {
  return group.empty() ? version : group + "/" + version;
}

std::string ResourceInfo::StorageResource() const {
  return group.empty() ? plural : plural + "." + group;
}

ResourceRegistry ResourceRegistry::WithBuiltins() {
  ResourceRegistry r;
  r.Add(Builtin("", "v1", "Namespace", "namespaces", false, {"ns"}, true));
  ResourceInfo pods = Builtin("", "v1", "Pod", "pods", true, {"po"}, true);
  pods.categories = {"all"};
  pods.has_log = true;
  r.Add(std::move(pods));
  ResourceInfo services = Builtin("", "v1", "Service", "services", true, {"svc"}, true);
  services.categories = {"all"};
  r.Add(std::move(services));
  r.Add(Builtin("", "v1", "Endpoints", "endpoints", true, {"ep"}));
  r.Add(Builtin("", "v1", "ConfigMap", "configmaps", true, {"cm"}));
  r.Add(Builtin("", "v1", "Secret", "secrets", true));
  ResourceInfo service_accounts =
      Builtin("", "v1", "ServiceAccount", "serviceaccounts", true, {"sa"});
  service_accounts.has_token = true;
  r.Add(std::move(service_accounts));
  r.Add(Builtin("", "v1", "Event", "events", true, {"ev"}));
  r.Add(Builtin("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", true, {"pvc"}, true));
  r.Add(Builtin("", "v1", "Node", "nodes", false, {"no"}, true));
  r.Add(Builtin("events.k8s.io", "v1", "Event", "events", true, {"ev"}));
  r.Add(Builtin("coordination.k8s.io", "v1", "Lease", "leases", true));
  // Workloads: run by the local cluster's controllers (localcluster/node/workload_controller.h).
  for (auto [kind, plural, short_name] : {std::tuple{"Deployment", "deployments", "deploy"},
                                          std::tuple{"ReplicaSet", "replicasets", "rs"}}) {
    ResourceInfo workload = Builtin("apps", "v1", kind, plural, true, {short_name}, true);
    workload.categories = {"all"};
    workload.scale = ScaleSubresource{".spec.replicas", ".status.replicas", ""};
    r.Add(std::move(workload));
  }
  // Stored and validated (network_policy_admission.h), never enforced: pods are host processes.
  r.Add(Builtin("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", true, {"netpol"}));
  r.Add(Builtin("rbac.authorization.k8s.io", "v1", "Role", "roles", true));
  r.Add(Builtin("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", false));
  r.Add(Builtin("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", true));
  r.Add(Builtin("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings",
                false));
  // Reviews are answered, not stored (request_authorization.h): create is their only verb.
  for (auto [group, kind, plural, namespaced] :
       {std::tuple{"authorization.k8s.io", "SelfSubjectAccessReview", "selfsubjectaccessreviews",
                   false},
        std::tuple{"authorization.k8s.io", "SubjectAccessReview", "subjectaccessreviews", false},
        std::tuple{"authorization.k8s.io", "LocalSubjectAccessReview", "localsubjectaccessreviews",
                   true},
        std::tuple{"authentication.k8s.io", "SelfSubjectReview", "selfsubjectreviews", false}}) {
    ResourceInfo review = Builtin(group, "v1", kind, plural, namespaced);
    review.verbs = {"create"};
    r.Add(std::move(review));
  }
  r.Add(Builtin("apiextensions.k8s.io", "v1", "CustomResourceDefinition",
                "customresourcedefinitions", false, {"crd", "crds"}, true));
  return r;
}

void ResourceRegistry::Add(ResourceInfo info) {
  if (std::find(group_order_.begin(), group_order_.end(), info.group) == group_order_.end()) {
    group_order_.push_back(info.group);
  }
  std::string key = Key(info.group, info.version, info.plural);
  resources_[std::move(key)] = std::move(info);
}

Status ResourceRegistry::AddCrd(const json& crd) {
  const std::string name = crd.value("/metadata/name"_json_pointer, std::string());
  auto field = [&](const std::string& path) -> const json* {
    const json::json_pointer pointer(path);
    return crd.contains(pointer) ? &crd.at(pointer) : nullptr;
  };
  const json* group = field("/spec/group");
  const json* names = field("/spec/names");
  const json* versions = field("/spec/versions");
  const json* scope = field("/spec/scope");
  if (!group || !group->is_string() || group->get<std::string>().empty()) {
    return Status::Unprocessable("Required value", "spec.group");
  }
  if (!names || !names->is_object() || !names->contains("plural") || !names->contains("kind")) {
    return Status::Unprocessable("Required value: plural and kind are required", "spec.names");
  }
  if (!versions || !versions->is_array() || versions->empty()) {
    return Status::Unprocessable("Required value: at least one version", "spec.versions");
  }
  const std::string plural = names->value("plural", "");
  if (name != plural + "." + group->get<std::string>()) {
    return Status::Unprocessable(
        "Invalid value: \"" + name + "\": must be spec.names.plural+\".\"+spec.group",
        "metadata.name");
  }
  std::vector<ResourceInfo> added;
  for (size_t i = 0; i < versions->size(); ++i) {
    const json& v = (*versions)[i];
    if (!v.value("served", false)) continue;
    ResourceInfo r;
    r.group = group->get<std::string>();
    r.version = v.value("name", "");
    if (r.version.empty()) {
      return Status::Unprocessable("Required value",
                                   "spec.versions[" + std::to_string(i) + "].name");
    }
    r.kind = names->value("kind", "");
    r.list_kind = names->value("listKind", r.kind + "List");
    r.plural = plural;
    r.singular = names->value("singular", "");
    if (r.singular.empty()) {
      r.singular = r.kind;
      std::transform(r.singular.begin(), r.singular.end(), r.singular.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    }
    r.namespaced = !scope || *scope != "Cluster";
    r.short_names = names->value("shortNames", std::vector<std::string>{});
    r.categories = names->value("categories", std::vector<std::string>{});
    r.verbs = kAllVerbs;
    r.storage_version = v.value("storage", false);
    r.crd_name = name;
    if (auto sub = v.find("subresources"); sub != v.end() && sub->is_object()) {
      r.has_status = sub->contains("status");
      if (auto scale = sub->find("scale"); scale != sub->end() && scale->is_object()) {
        r.scale = ScaleSubresource{scale->value("specReplicasPath", ""),
                                   scale->value("statusReplicasPath", ""),
                                   scale->value("labelSelectorPath", "")};
      }
    }
    if (const ResourceInfo* existing = Find(r.group, r.version, r.plural);
        existing != nullptr && existing->crd_name != name) {
      return Status::Conflict("\"" + r.plural + "\" in " + r.ApiVersion() + " is already served" +
                              (existing->crd_name.empty() ? " by a built-in resource"
                                                          : " by CRD " + existing->crd_name));
    }
    added.push_back(std::move(r));
  }
  RemoveCrd(name);  // An update replaces the CRD's previous versions.
  for (ResourceInfo& r : added) Add(std::move(r));
  return Status::Ok();
}

bool ResourceRegistry::RemoveCrd(std::string_view crd_name) {
  bool removed = false;
  for (auto it = resources_.begin(); it != resources_.end();) {
    if (!it->second.crd_name.empty() && it->second.crd_name == crd_name) {
      it = resources_.erase(it);
      removed = true;
    } else {
      ++it;
    }
  }
  // Drop groups nothing serves any more.
  group_order_.erase(std::remove_if(group_order_.begin(), group_order_.end(),
                                    [&](const std::string& g) { return Versions(g).empty(); }),
                     group_order_.end());
  return removed;
}

const ResourceInfo* ResourceRegistry::Find(std::string_view group, std::string_view version,
                                           std::string_view plural) const {
  auto it = resources_.find(Key(group, version, plural));
  return it == resources_.end() ? nullptr : &it->second;
}

const ResourceInfo* ResourceRegistry::FindByKind(std::string_view api_version,
                                                 std::string_view kind) const {
  const size_t slash = api_version.find('/');
  const std::string_view group =
      slash == std::string_view::npos ? std::string_view() : api_version.substr(0, slash);
  const std::string_view version =
      slash == std::string_view::npos ? api_version : api_version.substr(slash + 1);
  for (const auto& [key, r] : resources_) {
    if (r.group == group && r.version == version && r.kind == kind) return &r;
  }
  return nullptr;
}

std::vector<const ResourceInfo*> ResourceRegistry::All() const {
  std::vector<const ResourceInfo*> out;
  for (const auto& [key, r] : resources_) out.push_back(&r);
  return out;
}

std::vector<std::string> ResourceRegistry::Groups() const { return group_order_; }

std::vector<std::string> ResourceRegistry::Versions(std::string_view group) const {
  std::vector<std::string> out;
  std::string preferred;
  for (const auto& [key, r] : resources_) {
    if (r.group != group) continue;
    if (std::find(out.begin(), out.end(), r.version) == out.end()) out.push_back(r.version);
    if (r.storage_version && preferred.empty()) preferred = r.version;
  }
  if (!preferred.empty()) {
    std::stable_partition(out.begin(), out.end(),
                          [&](const std::string& v) { return v == preferred; });
  }
  return out;
}

}  // namespace sluice::apiserver
