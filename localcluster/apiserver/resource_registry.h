// ResourceRegistry: the resources the local API server serves, built-in and CRD-defined.
//
// Built-in resources are the ones Sluice and kubectl use (namespaces, pods, services,
// endpoints, configmaps, secrets, serviceaccounts, events in core/v1 and events.k8s.io/v1,
// persistentvolumeclaims, nodes, coordination.k8s.io leases, apiextensions.k8s.io
// customresourcedefinitions, apps deployments and replicasets, networking.k8s.io networkpolicies
// (stored and validated, not enforced), rbac.authorization.k8s.io roles,
// clusterroles, rolebindings and clusterrolebindings, and the create-only access reviews of
// authorization.k8s.io and authentication.k8s.io selfsubjectreviews). A CRD adds one resource per
// served version when it is created and removes them when it is deleted. The registry answers the
// questions every request needs (which resource is /apis/g/v/plural? is it namespaced? which
// subresources exist?) and feeds discovery (discovery.h).
//
// Thread safety: not synchronised; the server guards it with its own lock and hands request
// handlers copies of the ResourceInfo they need.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace sluice::apiserver {

struct ScaleSubresource {
  std::string spec_replicas_path;    // ".spec.replicas"
  std::string status_replicas_path;  // ".status.replicas"
  std::string label_selector_path;   // ".status.selector"; may be empty.
};

struct ResourceInfo {
  std::string group;    // "" for the core group.
  std::string version;  // "v1", "v1alpha1".
  std::string kind;     // "Pod".
  std::string list_kind;
  std::string plural;  // "pods": the path segment.
  std::string singular;
  bool namespaced = true;
  std::vector<std::string> short_names;
  std::vector<std::string> categories;
  std::vector<std::string> verbs;  // get, list, watch, create, update, patch, delete,
                                   // deletecollection.
  bool has_status = false;         // A /status subresource.
  std::optional<ScaleSubresource> scale;
  bool has_log = false;    // pods/log.
  bool has_token = false;  // serviceaccounts/token (authentication.k8s.io/v1 TokenRequest).
  bool storage_version = true;
  // The CRD this resource comes from ("rolloutpools.sluice.dev"); empty for built-ins.
  std::string crd_name;

  // "v1" or "sluice.dev/v1alpha1".
  std::string ApiVersion() const;
  // "pods" or "rolloutpools.sluice.dev": the key storage and error messages use.
  std::string StorageResource() const;
};

class ResourceRegistry {
 public:
  // The built-in resources.
  static ResourceRegistry WithBuiltins();

  // Adds the resources of every served version of a CustomResourceDefinition (JSON of an
  // apiextensions.k8s.io/v1 object). Errors name the CRD field at fault; a CRD whose names
  // clash with a built-in or with another CRD's is rejected (NamesAccepted=False in a real
  // server).
  Status AddCrd(const nlohmann::json& crd);
  // Removes the resources a CRD added; returns whether there were any.
  bool RemoveCrd(std::string_view crd_name);

  // The resource at /api/v1/<plural> (group "") or /apis/<group>/<version>/<plural>.
  const ResourceInfo* Find(std::string_view group, std::string_view version,
                           std::string_view plural) const;
  // The resource for an apiVersion and kind ("sluice.dev/v1alpha1", "RolloutPool").
  const ResourceInfo* FindByKind(std::string_view api_version, std::string_view kind) const;

  // Every resource, sorted by group, version, plural.
  std::vector<const ResourceInfo*> All() const;
  // Group names, core ("") first, then built-in groups, then CRD groups, each once.
  std::vector<std::string> Groups() const;
  // Versions served for a group, preferred (storage) version first.
  std::vector<std::string> Versions(std::string_view group) const;

 private:
  void Add(ResourceInfo info);

  // Key: group + "/" + version + "/" + plural.
  std::map<std::string, ResourceInfo, std::less<>> resources_;
  std::vector<std::string> group_order_;
};

}  // namespace sluice::apiserver
