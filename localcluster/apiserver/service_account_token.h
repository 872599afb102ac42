// Service-account tokens: the claims of the JWTs (jwt.h) the local API server issues for
// ServiceAccounts (token_request.h) and the checks that turn one into a user (authenticator.h),
// following kube-apiserver's token generator and validator (pkg/serviceaccount).
//
// Claims, in kube's names and shapes:
//   iss            the issuer (TokenSettings::issuer)
//   sub            "system:serviceaccount:<namespace>:<name>"
//   aud            the audiences, always an array
//   exp, iat, nbf  seconds since the Unix epoch; iat = nbf = the time of issue
//   jti            a random UUID: the credential id
//   kubernetes.io  {namespace, serviceaccount {name, uid}, pod {name, uid} when pod-bound,
//                  secret {name, uid} when secret-bound, node {name, uid} when the bound pod is
//                  scheduled (as 1.30+ adds)}
//
// A token is a user when, in this order (CheckClaims, then UserForClaims):
//   1. its signature is ours and its claims are complete and consistent (sub matches
//      kubernetes.io);
//   2. its issuer is ours and one of its audiences is one the API server accepts;
//   3. it has not expired and is valid already, each with go-jose's 60 s leeway as in kube;
//   4. its ServiceAccount exists with the token's uid and is not being deleted (a ServiceAccount
//      deleted and created again under the same name has a new uid: old tokens stop working);
//   5. when pod-bound, the pod exists with the token's uid and has not been terminating for more
//      than 60 s (kube keeps a terminating pod's token valid that long); when secret-bound, the
//      same for the Secret.
// The user: system:serviceaccount:<ns>:<name>, uid the ServiceAccount's, groups
// system:serviceaccounts, system:serviceaccounts:<ns>, system:authenticated; extra
// authentication.kubernetes.io/pod-name and pod-uid (pod-bound), node-name and node-uid (when the
// token names a node), credential-id ("JTI=<jti>").
//
// Errors are Unauthenticated with kube's validator wording ("service account token has expired",
// "service account token has been invalidated", "service account UID (x) does not match claim
// (y)"), for the server's log: clients get kube's bare 401.
//
// Thread safety: pure functions (NewClaims draws a random jti).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "localcluster/apiserver/user_info.h"

namespace sluice::apiserver {

// Kube's default issuer and API audience (kubeadm, kind and most clusters use it).
inline constexpr char kDefaultTokenIssuer[] = "https://kubernetes.default.svc.cluster.local";
// Clock skew tolerated on exp, nbf and iat (go-jose's DefaultLeeway, which kube relies on).
inline constexpr int64_t kTokenLeewaySeconds = 60;
// A pod's (or Secret's) token keeps working this long after its deletion started.
inline constexpr int64_t kBoundObjectDeletionGraceSeconds = 60;

// How tokens are signed and which ones the API server accepts.
struct TokenSettings {
  std::string signing_key;  // HMAC-SHA256 key; any non-empty byte string.
  std::string issuer = kDefaultTokenIssuer;
  // The audiences the API server identifies as (kube's --api-audiences); empty: {issuer}. A
  // TokenRequest without audiences gets these.
  std::vector<std::string> audiences;

  std::vector<std::string> ApiAudiences() const;
};

struct ObjectRef {
  std::string name;
  std::string uid;
  friend bool operator==(const ObjectRef&, const ObjectRef&) = default;
};

struct ServiceAccountClaims {
  std::string issuer;
  std::vector<std::string> audiences;
  int64_t issued_at = 0;  // iat; seconds since the Unix epoch, like the two below.
  int64_t not_before = 0;
  int64_t expiry = 0;
  std::string id;  // jti.
  std::string namespace_;
  ObjectRef service_account;
  std::optional<ObjectRef> pod;
  std::optional<ObjectRef> secret;
  std::optional<ObjectRef> node;
  friend bool operator==(const ServiceAccountClaims&, const ServiceAccountClaims&) = default;
};

// metadata.name and metadata.uid of an object (empty strings when absent).
ObjectRef RefOf(const nlohmann::json& object);

// Claims for a token of `service_account` (the stored object) issued at `now`, valid for
// `expiration_seconds`, for `audiences`, with a fresh random jti. Bindings are set by the caller.
ServiceAccountClaims NewClaims(const nlohmann::json& service_account, std::string issuer,
                               std::vector<std::string> audiences, Clock::WallTime now,
                               int64_t expiration_seconds);

// The JWT payload of `claims` (sub derived from the namespace and ServiceAccount name).
nlohmann::json ClaimsJson(const ServiceAccountClaims& claims);
// The claims of a payload; Unauthenticated ("malformed token: ...") when a claim is missing, of
// the wrong type, or sub does not name the ServiceAccount in kubernetes.io.
Result<ServiceAccountClaims> ParseClaims(const nlohmann::json& payload);

// The signed token for `claims`.
std::string SignToken(const ServiceAccountClaims& claims, std::string_view key);
// Steps 1 of the file comment: the claims of a token signed with `key`.
Result<ServiceAccountClaims> ReadToken(std::string_view token, std::string_view key);

// Steps 2 and 3 of the file comment.
Status CheckClaims(const ServiceAccountClaims& claims, std::string_view issuer,
                   const std::vector<std::string>& audiences, Clock::WallTime now);

// The objects a token names, as stored now; nullopt: not found. pod and secret are looked up
// only for tokens bound to one.
struct BoundObjects {
  std::optional<nlohmann::json> service_account;
  std::optional<nlohmann::json> pod;
  std::optional<nlohmann::json> secret;
};

// Steps 4 and 5 of the file comment, then the user.
Result<UserInfo> UserForClaims(const ServiceAccountClaims& claims, const BoundObjects& objects,
                               Clock::WallTime now);

}  // namespace sluice::apiserver
