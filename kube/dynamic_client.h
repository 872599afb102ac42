// DynamicClient: CRUD on any group/version/resource (our CRDs and the core types), with objects
// as JSON, like client-go's dynamic client.
//
// Paths: the core group is /api/v1/..., every other group /apis/<group>/<version>/...;
// namespaced resources add namespaces/<ns>/; an empty namespace on a namespaced resource lists
// across all namespaces. Contracts, per verb:
//   Get      404 NotFound when absent. resourceVersion "" reads the newest ("0": any cached).
//   List     label/field selectors; `limit` + `continue` pagination (ListAll follows continue
//            tokens; an expired token is 410 Gone, so ListAll restarts from scratch once).
//   Create   409 AlreadyExists when the name is taken.
//   Update   the object's metadata.resourceVersion is the precondition: 409 Conflict when the
//            object changed since it was read. The caller re-reads and retries (reconcilers
//            requeue); Conflict is never retried here.
//   Patch    merge (RFC 7386), JSON patch (RFC 6902), strategic merge (core types only) or
//            server-side apply (needs field_manager; `force` takes over conflicting fields).
//   Delete   propagationPolicy (Foreground, Background, Orphan), preconditions on uid and
//            resourceVersion, gracePeriodSeconds. Returns the final object or Status body.
//   status / scale subresources: UpdateStatus, PatchStatus, GetScale, UpdateScale.
//
// Ownership: ResourceClient is a small value holding a reference to the RestClient, which must
// outlive it. Thread safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "kube/rest_client.h"

namespace sluice::kube {

struct GroupVersionResource {
  std::string group;  // "" for the core group.
  std::string version;
  std::string resource;  // Plural, lower case: "pods", "rolloutpools".
  bool namespaced = true;

  // "/api/v1" or "/apis/<group>/<version>".
  std::string GroupVersionPath() const;
  // "v1" or "<group>/<version>", as written in apiVersion.
  std::string ApiVersion() const;
};

// The path of a collection (`name` empty) or an object, optionally a subresource of it.
std::string ResourcePath(const GroupVersionResource& gvr, const std::string& namespace_,
                         const std::string& name = {}, const std::string& subresource = {});

struct ListOptions {
  std::string label_selector;  // "app=x,tier!=db"
  std::string field_selector;  // "metadata.name=x"
  int64_t limit = 0;           // 0: no paging.
  std::string continue_token;
  std::string resource_version;        // "" newest; "0" any; else at least/exactly per match.
  std::string resource_version_match;  // "", "NotOlderThan", "Exact".
  int timeout_seconds = 0;             // Watch: server-side timeout; 0: server default.
  bool allow_watch_bookmarks = false;  // Watch only.

  std::vector<std::pair<std::string, std::string>> ToQuery(bool watch) const;
};

struct ObjectList {
  std::vector<std::shared_ptr<const nlohmann::json>> items;
  std::string resource_version;  // Of the list; watch from here.
  std::string continue_token;    // Non-empty when more pages remain.
};

enum class PatchType { kMerge, kJson, kStrategicMerge, kApply };
// The Content-Type for a patch type.
const char* PatchContentType(PatchType type);

struct WriteOptions {
  std::string field_manager;  // Required for apply.
  bool force = false;         // Apply only: take ownership of conflicting fields.
  bool dry_run = false;
};

struct DeleteOptions {
  std::string propagation_policy;  // "", "Foreground", "Background", "Orphan".
  std::optional<int64_t> grace_period_seconds;
  std::string precondition_uid;
  std::string precondition_resource_version;
  bool dry_run = false;

  nlohmann::json ToJson() const;
};

class ResourceClient {
 public:
  // `namespace_` "" for cluster-scoped resources or to list across namespaces.
  ResourceClient(RestClient& client, GroupVersionResource gvr, std::string namespace_);

  Result<nlohmann::json> Get(const std::string& name, const std::string& resource_version = {});
  Result<ObjectList> List(const ListOptions& options = {});
  // Follows continue tokens with `options.limit` per page (500 when 0).
  Result<ObjectList> ListAll(ListOptions options = {});
  Result<nlohmann::json> Create(const nlohmann::json& object, const WriteOptions& options = {});
  Result<nlohmann::json> Update(const nlohmann::json& object, const WriteOptions& options = {});
  Result<nlohmann::json> UpdateStatus(const nlohmann::json& object,
                                      const WriteOptions& options = {});
  // `subresource` "" for the object, "status" or "scale".
  Result<nlohmann::json> Patch(const std::string& name, PatchType type, const std::string& patch,
                               const WriteOptions& options = {},
                               const std::string& subresource = {});
  // Server-side apply of `object` (must carry apiVersion, kind, metadata.name).
  Result<nlohmann::json> Apply(const nlohmann::json& object, const WriteOptions& options);
  Result<nlohmann::json> Delete(const std::string& name, const DeleteOptions& options = {});
  Result<nlohmann::json> GetScale(const std::string& name);
  // `scale` is an autoscaling/v1 Scale.
  Result<nlohmann::json> UpdateScale(const std::string& name, const nlohmann::json& scale);

  const GroupVersionResource& gvr() const { return gvr_; }
  const std::string& namespace_() const { return namespace__; }
  RestClient& rest() const { return client_; }

 private:
  std::string NamespaceOf(const nlohmann::json& object) const;
  Result<nlohmann::json> Put(const nlohmann::json& object, const WriteOptions& options,
                             const std::string& subresource);

  RestClient& client_;
  GroupVersionResource gvr_;
  std::string namespace__;
};

class DynamicClient {
 public:
  explicit DynamicClient(RestClient& client) : client_(client) {}
  ResourceClient Resource(const GroupVersionResource& gvr, const std::string& namespace_ = {}) {
    return ResourceClient(client_, gvr, namespace_);
  }
  RestClient& rest() const { return client_; }

 private:
  RestClient& client_;
};

}  // namespace sluice::kube
