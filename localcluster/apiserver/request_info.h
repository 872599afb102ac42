// RequestInfo: what a Kubernetes API request path and method mean.
//
//   GET    /api/v1/namespaces/default/pods?watch=true  -> watch pods in "default"
//   PATCH  /apis/sluice.dev/v1alpha1/namespaces/ml/rolloutpools/rp/scale -> patch, scale
//   DELETE /api/v1/namespaces/ml/configmaps            -> deletecollection
//   GET    /api/v1/namespaces/ml                        -> get the namespace "ml"
//
// Paths outside /api and /apis resource URLs (discovery, /version, /openapi, health) come back
// with is_resource_request false. The verb follows kube-apiserver's rules: GET on a collection
// is list (or watch with ?watch=true/1), DELETE on a collection is deletecollection, POST
// creates, PUT updates, PATCH patches.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace sluice::apiserver {

struct RequestInfo {
  bool is_resource_request = false;
  std::string verb;        // get, list, watch, create, update, patch, delete, deletecollection.
  std::string api_prefix;  // "api" or "apis".
  std::string group;       // "" for the core group.
  std::string version;
  std::string namespace_;   // "" for cluster-scoped or all-namespaces requests.
  std::string resource;     // Plural, e.g. "pods".
  std::string name;         // "" for collections.
  std::string subresource;  // "status", "scale", "log", or "".
  std::string path;         // The path as given, for non-resource requests.
};

// Parses a request. `watch_param` is the value of the `watch` query parameter ("" if absent).
// Malformed resource paths (too many segments, an empty name) are InvalidArgument (404 is the
// caller's answer for unknown resources, after looking them up).
Result<RequestInfo> ParseRequest(std::string_view method, std::string_view path,
                                 std::string_view watch_param);

}  // namespace sluice::apiserver
