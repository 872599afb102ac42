// Discovery: which resources an API server serves for a group/version, cached.
//
// ResourcesFor(group, version) asks /api/v1 or /apis/<group>/<version> once and caches the
// answer. Find() looks a resource up by plural name or kind; when it is missing from the cache
// (a CRD installed after the operator started) the group/version is fetched again once before
// NotFound is returned, and a NotFound from the server drops the cached entry. Invalidate()
// forgets everything.
//
// Ownership: the RestClient must outlive the discovery client.
// Thread safety: every method may be called from any thread.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "kube/dynamic_client.h"
#include "kube/rest_client.h"

namespace sluice::kube {

struct ApiResource {
  std::string name;  // Plural: "rolloutpools"; subresources are "rolloutpools/status".
  std::string kind;  // "RolloutPool"
  bool namespaced = true;
  std::vector<std::string> verbs;
  std::vector<std::string> short_names;
};

class DiscoveryClient {
 public:
  explicit DiscoveryClient(RestClient& client) : client_(client) {}

  // The resources of one group/version ("" group for core), cached.
  Result<std::vector<ApiResource>> ResourcesFor(const std::string& group,
                                                const std::string& version);
  // The resource with plural `name_or_kind`, or with that kind (top-level resources only).
  Result<GroupVersionResource> Find(const std::string& group, const std::string& version,
                                    const std::string& name_or_kind);
  void Invalidate();

  // How many discovery requests were sent (for tests).
  int fetches() const;

 private:
  Result<std::vector<ApiResource>> Fetch(const std::string& group, const std::string& version);

  RestClient& client_;
  mutable std::mutex mu_;
  std::map<std::string, std::vector<ApiResource>> cache_;
  int fetches_ = 0;
};

}  // namespace sluice::kube
