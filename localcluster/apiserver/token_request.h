// The TokenRequest subresource: POST /api/v1/namespaces/{ns}/serviceaccounts/{name}/token with
// an authentication.k8s.io/v1 TokenRequest issues a service-account token
// (service_account_token.h), as kube-apiserver's TokenREST does. `kubectl create token NAME` uses
// it, and the node agent does for every pod that mounts its ServiceAccount's token.
//
// The request (ParseTokenRequestSpec):
//   spec.audiences          empty: the API server's own audiences (TokenSettings::ApiAudiences).
//   spec.expirationSeconds  default 3600; below 600 or above 2^32 is 422 Invalid
//                           ("may not specify a duration less than 10 minutes").
//   spec.boundObjectRef     {kind Pod or Secret, apiVersion v1, name, uid}: the object must exist
//                           in the namespace (404), match `uid` when one is given (409 Conflict:
//                           "the UID in the bound object reference (a) does not match the UID in
//                           record (b). The object might have been deleted and then recreated"),
//                           and a pod must run as this ServiceAccount (400 "cannot bind token for
//                           serviceaccount \"a\" to pod running with serviceaccount \"b\""). Other
//                           kinds are 400 "cannot bind token to object of type <gvk>".
// The ServiceAccount must exist (404 `serviceaccounts "x" not found`). A pod-bound token also names
// the pod's node when it is scheduled (kubernetes.io.node), as kube 1.30+ does.
//
// The reply: 201 with the TokenRequest as kube prints it: metadata {name: the ServiceAccount,
// namespace, creationTimestamp: null}, spec as defaulted (boundObjectRef null when unbound),
// status {token, expirationTimestamp}.
//
// Differences from kube: no --service-account-max-token-expiration (no maximum below 2^32 s), and
// the kubelet's 3607 s tokens are not stretched to a year (--service-account-extend-token-
// expiration): the node agent refreshes tokens before they expire instead. dryRun issues a token
// too (nothing is stored either way).
//
// Thread safety: ParseTokenRequestSpec and TokenRequestJson are pure; ServeTokenRequest is as safe
// as storage.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "localcluster/apiserver/service_account_token.h"
#include "localcluster/apiserver/storage.h"

namespace sluice::apiserver {

// kube's default and limits of spec.expirationSeconds.
inline constexpr int64_t kDefaultTokenExpirationSeconds = 3600;
inline constexpr int64_t kMinTokenExpirationSeconds = 600;
inline constexpr int64_t kMaxTokenExpirationSeconds = int64_t{1} << 32;

struct BoundObjectReference {
  std::string kind;         // "Pod" or "Secret".
  std::string api_version;  // "v1".
  std::string name;
  std::string uid;  // May be empty: the object's current uid is used.
};

struct TokenRequestSpec {
  std::vector<std::string> audiences;  // Empty: the API server's.
  int64_t expiration_seconds = kDefaultTokenExpirationSeconds;
  std::optional<BoundObjectReference> bound_object;
};

// The spec of a TokenRequest body (JSON, or protobuf already decoded). InvalidArgument (400) for
// a body that is not a TokenRequest (wrong apiVersion/kind, fields of the wrong type, a namespace
// other than `path_namespace`); Unprocessable (422) with the field for an expirationSeconds out of
// range.
Result<TokenRequestSpec> ParseTokenRequestSpec(const nlohmann::json& body,
                                               const std::string& path_namespace);

// The TokenRequest returned for a token of ServiceAccount `name` in `namespace_`.
nlohmann::json TokenRequestJson(const std::string& namespace_, const std::string& name,
                                const TokenRequestSpec& spec, const std::string& token,
                                Clock::WallTime expires);

// What ServeTokenRequest answers: an HTTP code and its JSON body (a TokenRequest or a Status).
struct TokenRequestReply {
  int code = 0;
  nlohmann::json body;
};

// Serves the request (see the file comment): reads the ServiceAccount and bound object from
// `storage`, signs with `settings`.
TokenRequestReply ServeTokenRequest(Storage& storage, const TokenSettings& settings,
                                    const std::string& namespace_, const std::string& name,
                                    const nlohmann::json& body, Clock::WallTime now);

}  // namespace sluice::apiserver
