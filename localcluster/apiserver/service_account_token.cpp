#include "localcluster/apiserver/service_account_token.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "common/json/fields.h"
#include "common/time_format.h"
#include "localcluster/apiserver/deletion.h"
#include "localcluster/apiserver/jwt.h"
#include "localcluster/apiserver/object_rules.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

constexpr char kPrivateClaims[] = "kubernetes.io";
constexpr char kExtraPrefix[] = "authentication.kubernetes.io/";

int64_t EpochSeconds(Clock::WallTime t) {
  return std::chrono::floor<std::chrono::seconds>(t.time_since_epoch()).count();
}

Status MalformedToken(const std::string& what) {
  return Status::Unauthenticated("malformed token: " + what);
}

json RefJson(const ObjectRef& ref) {
  json out = json::object();  // kube's ref has omitempty fields.
  if (!ref.name.empty()) out["name"] = ref.name;
  if (!ref.uid.empty()) out["uid"] = ref.uid;
  return out;
}

// A string claim; `required` ones must be present and non-empty.
Result<std::string> StringClaim(const json& object, const char* key, const std::string& where,
                                bool required) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) {
    if (required) return MalformedToken(where + key + " is missing");
    return std::string();
  }
  if (!it->is_string()) return MalformedToken(where + key + " is not a string");
  if (required && it->get_ref<const std::string&>().empty()) {
    return MalformedToken(where + key + " is empty");
  }
  return it->get<std::string>();
}

// A NumericDate claim (JSON number of seconds; go-jose accepts fractions too). 0 when absent and
// not `required`.
Result<int64_t> TimeClaim(const json& object, const char* key, bool required) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) {
    if (required) return MalformedToken(std::string(key) + " is missing");
    return int64_t{0};
  }
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_number_float()) {
    const double v = it->get<double>();
    if (std::isfinite(v) && std::fabs(v) < 1e15) return static_cast<int64_t>(std::floor(v));
  }
  return MalformedToken(std::string(key) + " is not a number of seconds");
}

// kubernetes.io.<key>: {name, uid}; nullopt when absent and not `required`.
Result<std::optional<ObjectRef>> RefClaim(const json& k8s, const char* key, bool required) {
  auto it = k8s.find(key);
  if (it == k8s.end() || it->is_null()) {
    if (required) return MalformedToken(std::string(kPrivateClaims) + "." + key + " is missing");
    return std::optional<ObjectRef>();
  }
  if (!it->is_object()) {
    return MalformedToken(std::string(kPrivateClaims) + "." + key + " is not an object");
  }
  const std::string where = std::string(kPrivateClaims) + "." + key + ".";
  ObjectRef ref;
  SLUICE_ASSIGN_OR_RETURN(ref.name, StringClaim(*it, "name", where, true));
  SLUICE_ASSIGN_OR_RETURN(ref.uid, StringClaim(*it, "uid", where, true));
  return std::optional<ObjectRef>(std::move(ref));
}

std::string Quoted(const std::vector<std::string>& values) {
  return json(values).dump(-1, ' ', false, json::error_handler_t::replace);
}

// True when `object` has been terminating for longer than the grace kube allows its tokens:
// deletionTimestamp (for pods the end of their grace period) more than 60 s before `now`. An
// unreadable deletionTimestamp counts as long past.
bool DeletedTooLongAgo(const json& object, Clock::WallTime now) {
  const std::string deleted = StringAt(object, "/metadata/deletionTimestamp");
  if (deleted.empty()) return false;
  const std::optional<Clock::WallTime> at = TryParseTime(deleted);
  return !at || *at < now - std::chrono::seconds(kBoundObjectDeletionGraceSeconds);
}

// Step 4/5 for one bound object: it exists with the uid of `ref` and is not long deleted.
Status CheckBound(const char* kind, const std::string& namespace_, const ObjectRef& ref,
                  const std::optional<json>& object, Clock::WallTime now) {
  const std::string what = std::string(kind) + " \"" + namespace_ + "/" + ref.name + "\"";
  if (!object) {
    return Status::Unauthenticated("service account token has been invalidated: " + what +
                                   " not found");
  }
  if (DeletedTooLongAgo(*object, now)) {
    return Status::Unauthenticated("service account token has been invalidated: " + what +
                                   " has been deleted");
  }
  const std::string uid = StringAt(*object, "/metadata/uid");
  if (uid != ref.uid) {
    // "service account UID (a) does not match claim (b)", "pod UID ...": kube's words.
    const std::string label = std::string(kind) == "serviceaccount" ? "service account" : kind;
    return Status::Unauthenticated(label + " UID (" + uid + ") does not match claim (" + ref.uid +
                                   ")");
  }
  return Status::Ok();
}

}  // namespace

std::vector<std::string> TokenSettings::ApiAudiences() const {
  return audiences.empty() ? std::vector<std::string>{issuer} : audiences;
}

ObjectRef RefOf(const json& object) {
  return ObjectRef{StringAt(object, "/metadata/name"), StringAt(object, "/metadata/uid")};
}

ServiceAccountClaims NewClaims(const json& service_account, std::string issuer,
                               std::vector<std::string> audiences, Clock::WallTime now,
                               int64_t expiration_seconds) {
  ServiceAccountClaims claims;
  claims.issuer = std::move(issuer);
  claims.audiences = std::move(audiences);
  claims.issued_at = EpochSeconds(now);
  claims.not_before = claims.issued_at;
  claims.expiry = claims.issued_at + expiration_seconds;
  claims.id = NewUid();
  claims.namespace_ = StringAt(service_account, "/metadata/namespace");
  claims.service_account = RefOf(service_account);
  return claims;
}

json ClaimsJson(const ServiceAccountClaims& claims) {
  json k8s = {{"namespace", claims.namespace_},
              {"serviceaccount", RefJson(claims.service_account)}};
  if (claims.pod) k8s["pod"] = RefJson(*claims.pod);
  if (claims.secret) k8s["secret"] = RefJson(*claims.secret);
  if (claims.node) k8s["node"] = RefJson(*claims.node);
  json payload = json::object();
  payload["aud"] = claims.audiences;
  payload["exp"] = claims.expiry;
  payload["iat"] = claims.issued_at;
  payload["iss"] = claims.issuer;
  if (!claims.id.empty()) payload["jti"] = claims.id;
  payload[kPrivateClaims] = std::move(k8s);
  payload["nbf"] = claims.not_before;
  payload["sub"] = ServiceAccountUsername(claims.namespace_, claims.service_account.name);
  return payload;
}

Result<ServiceAccountClaims> ParseClaims(const json& payload) {
  if (!payload.is_object()) return MalformedToken("the claims are not a JSON object");
  ServiceAccountClaims claims;
  SLUICE_ASSIGN_OR_RETURN(claims.issuer, StringClaim(payload, "iss", "", true));
  SLUICE_ASSIGN_OR_RETURN(const std::string subject, StringClaim(payload, "sub", "", true));
  SLUICE_ASSIGN_OR_RETURN(claims.id, StringClaim(payload, "jti", "", false));
  const json aud = payload.value("aud", json());
  if (aud.is_string()) {
    claims.audiences.push_back(aud.get<std::string>());
  } else if (aud.is_array()) {
    for (const json& a : aud) {
      if (!a.is_string()) return MalformedToken("aud holds a non-string");
      claims.audiences.push_back(a.get<std::string>());
    }
  } else {
    return MalformedToken("aud is missing");
  }
  SLUICE_ASSIGN_OR_RETURN(claims.expiry, TimeClaim(payload, "exp", true));
  SLUICE_ASSIGN_OR_RETURN(claims.issued_at, TimeClaim(payload, "iat", false));
  SLUICE_ASSIGN_OR_RETURN(claims.not_before, TimeClaim(payload, "nbf", false));

  auto k8s = payload.find(kPrivateClaims);
  if (k8s == payload.end() || !k8s->is_object()) {
    return MalformedToken(std::string(kPrivateClaims) + " is missing");
  }
  const std::string where = std::string(kPrivateClaims) + ".";
  SLUICE_ASSIGN_OR_RETURN(claims.namespace_, StringClaim(*k8s, "namespace", where, true));
  SLUICE_ASSIGN_OR_RETURN(std::optional<ObjectRef> account, RefClaim(*k8s, "serviceaccount", true));
  claims.service_account = std::move(*account);
  SLUICE_ASSIGN_OR_RETURN(claims.pod, RefClaim(*k8s, "pod", false));
  SLUICE_ASSIGN_OR_RETURN(claims.secret, RefClaim(*k8s, "secret", false));
  SLUICE_ASSIGN_OR_RETURN(claims.node, RefClaim(*k8s, "node", false));
  const std::string expected =
      ServiceAccountUsername(claims.namespace_, claims.service_account.name);
  if (subject != expected) {
    return MalformedToken("sub \"" + subject + "\" does not name the token's service account \"" +
                          expected + "\"");
  }
  return claims;
}

std::string SignToken(const ServiceAccountClaims& claims, std::string_view key) {
  return EncodeJwtHs256(ClaimsJson(claims), key);
}

Result<ServiceAccountClaims> ReadToken(std::string_view token, std::string_view key) {
  SLUICE_ASSIGN_OR_RETURN(const json payload, DecodeJwtHs256(token, key));
  return ParseClaims(payload);
}

Status CheckClaims(const ServiceAccountClaims& claims, std::string_view issuer,
                   const std::vector<std::string>& audiences, Clock::WallTime now) {
  if (claims.issuer != issuer) {
    return Status::Unauthenticated("token issuer \"" + claims.issuer + "\" is not \"" +
                                   std::string(issuer) + "\"");
  }
  const bool audience_ok =
      std::any_of(claims.audiences.begin(), claims.audiences.end(), [&](const std::string& a) {
        return std::find(audiences.begin(), audiences.end(), a) != audiences.end();
      });
  if (!audience_ok) {
    return Status::Unauthenticated("token audiences " + Quoted(claims.audiences) +
                                   " is invalid for the target audiences " + Quoted(audiences));
  }
  const int64_t t = EpochSeconds(now);
  if (t - kTokenLeewaySeconds > claims.expiry) {
    return Status::Unauthenticated("service account token has expired");
  }
  if (claims.not_before != 0 && t + kTokenLeewaySeconds < claims.not_before) {
    return Status::Unauthenticated("service account token is not valid yet");
  }
  if (claims.issued_at != 0 && t + kTokenLeewaySeconds < claims.issued_at) {
    return Status::Unauthenticated("service account token is issued in the future");
  }
  return Status::Ok();
}

Result<UserInfo> UserForClaims(const ServiceAccountClaims& claims, const BoundObjects& objects,
                               Clock::WallTime now) {
  SLUICE_RETURN_IF_ERROR(CheckBound("serviceaccount", claims.namespace_, claims.service_account,
                                    objects.service_account, now));
  if (claims.pod) {
    SLUICE_RETURN_IF_ERROR(CheckBound("pod", claims.namespace_, *claims.pod, objects.pod, now));
  }
  if (claims.secret) {
    SLUICE_RETURN_IF_ERROR(
        CheckBound("secret", claims.namespace_, *claims.secret, objects.secret, now));
  }
  UserInfo user;
  user.name = ServiceAccountUsername(claims.namespace_, claims.service_account.name);
  user.uid = claims.service_account.uid;
  user.groups = {kServiceAccountsGroup,
                 std::string(kServiceAccountsGroup) + ":" + claims.namespace_, kAuthenticatedGroup};
  const std::string prefix = kExtraPrefix;
  if (claims.pod) {
    user.extra[prefix + "pod-name"] = {claims.pod->name};
    user.extra[prefix + "pod-uid"] = {claims.pod->uid};
  }
  if (claims.node) {
    user.extra[prefix + "node-name"] = {claims.node->name};
    user.extra[prefix + "node-uid"] = {claims.node->uid};
  }
  if (!claims.id.empty()) user.extra[prefix + "credential-id"] = {"JTI=" + claims.id};
  return user;
}

}  // namespace sluice::apiserver
