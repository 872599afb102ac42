// Authenticator: who sent an API request, from its "Authorization: Bearer <token>" header. Two
// kinds of token are accepted, as kube-apiserver runs several token authenticators:
//   - the admin token (access_token.h; the one in the kubeconfig `sluice up` writes, used by
//     kubectl, the operator and the node agent): user "sluice-admin" in system:masters and
//     system:authenticated, kube's superuser group, so a later RBAC step allows it everything;
//   - a service-account token this server issued (service_account_token.h), checked against the
//     ServiceAccount, pod or Secret it names as they are in storage now, so deleting one revokes
//     its tokens at once.
// Without an admin token (--insecure-http, loopback only) nothing is checked: every request is
// "system:unsecured" in system:masters, as kube's old insecure port treated requests.
//
// Each request is checked afresh (kube caches token results for ~10 s; storage reads are cheap
// here). Failures are Unauthenticated carrying the reason, for the server's access log; clients
// get only kube's bare 401 (UnauthorizedStatusJson), since kube never says why a token failed.
//
// Ownership: `storage` and `clock` must outlive the authenticator.
// Thread safety: Authenticate may be called from any thread.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>

#include "common/clock.h"
#include "common/http/bearer_token.h"
#include "common/status.h"
#include "localcluster/apiserver/service_account_token.h"
#include "localcluster/apiserver/storage.h"
#include "localcluster/apiserver/user_info.h"

namespace sluice::apiserver {

class Authenticator {
 public:
  // `admin_token` null: no authentication (see the file comment).
  Authenticator(std::shared_ptr<http::TokenSource> admin_token, TokenSettings settings,
                Storage* storage, Clock* clock);

  // The user whose credentials `authorization_header` (the header's value, "" when absent)
  // carries; Unauthenticated with the reason otherwise.
  Result<UserInfo> Authenticate(std::string_view authorization_header) const;

  // The user of a service-account token alone (no admin token, no header parsing).
  Result<UserInfo> AuthenticateServiceAccountToken(std::string_view token) const;

  const TokenSettings& settings() const { return settings_; }

 private:
  std::shared_ptr<http::TokenSource> admin_token_;
  TokenSettings settings_;
  Storage* storage_;
  Clock* clock_;
};

// kube-apiserver's answer to a request it cannot authenticate: a Failure Status, code 401,
// reason and message "Unauthorized". (kubectl prints "error: You must be logged in to the server
// (Unauthorized)".)
nlohmann::json UnauthorizedStatusJson();

}  // namespace sluice::apiserver
