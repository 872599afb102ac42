#include "localcluster/apiserver/authenticator.h"

#include <optional>
#include <string>

#include "localcluster/apiserver/api_errors.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

// The object at `key` as stored; nullopt when absent. Other storage errors are returned.
Result<std::optional<json>> Lookup(Storage& storage, ObjectKey key) {
  Result<Stored> stored = storage.Get(key);
  if (stored.ok()) return std::optional<json>(std::move(stored->object));
  if (stored.status().code() == StatusCode::kNotFound) return std::optional<json>();
  return Status::Unauthenticated("cannot read " + key.ToString() +
                                 " to check a service account token: " + stored.status().message());
}

}  // namespace

Authenticator::Authenticator(std::shared_ptr<http::TokenSource> admin_token, TokenSettings settings,
                             Storage* storage, Clock* clock)
    : admin_token_(std::move(admin_token)),
      settings_(std::move(settings)),
      storage_(storage),
      clock_(clock) {}

Result<UserInfo> Authenticator::Authenticate(std::string_view authorization_header) const {
  if (!admin_token_) return UnsecuredUser();
  const std::optional<std::string_view> token = http::ParseBearerHeader(authorization_header);
  if (!token) {
    return Status::Unauthenticated(authorization_header.empty()
                                       ? "no bearer token"
                                       : "the Authorization header is not \"Bearer <token>\"");
  }
  if (http::TokensEqual(*token, admin_token_->Get())) return AdminUser();
  return AuthenticateServiceAccountToken(*token);
}

Result<UserInfo> Authenticator::AuthenticateServiceAccountToken(std::string_view token) const {
  SLUICE_ASSIGN_OR_RETURN(const ServiceAccountClaims claims,
                          ReadToken(token, settings_.signing_key));
  const Clock::WallTime now = clock_->WallNow();
  SLUICE_RETURN_IF_ERROR(CheckClaims(claims, settings_.issuer, settings_.ApiAudiences(), now));
  BoundObjects objects;
  SLUICE_ASSIGN_OR_RETURN(objects.service_account,
                          Lookup(*storage_, ObjectKey{"core/serviceaccounts", claims.namespace_,
                                                      claims.service_account.name}));
  if (claims.pod) {
    SLUICE_ASSIGN_OR_RETURN(objects.pod, Lookup(*storage_, ObjectKey{"core/pods", claims.namespace_,
                                                                     claims.pod->name}));
  }
  if (claims.secret) {
    SLUICE_ASSIGN_OR_RETURN(
        objects.secret,
        Lookup(*storage_, ObjectKey{"core/secrets", claims.namespace_, claims.secret->name}));
  }
  return UserForClaims(claims, objects, now);
}

json UnauthorizedStatusJson() { return StatusJson(401, "Unauthorized", "Unauthorized"); }

}  // namespace sluice::apiserver
