#include "localcluster/apiserver/token_request.h"

#include <chrono>

#include "common/json/fields.h"
#include "common/time_format.h"
#include "localcluster/apiserver/api_errors.h"
#include "localcluster/apiserver/object_rules.h"
#include "localcluster/apiserver/service_accounts.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

constexpr char kGroupVersion[] = "authentication.k8s.io/v1";
constexpr char kKind[] = "TokenRequest";

Status BadField(const std::string& field, const std::string& expected) {
  return Status::InvalidArgument(field + ": must be " + expected, field);
}

// body[key] as a string; "" when absent or null.
Result<std::string> OptionalStringField(const json& object, const char* key,
                                        const std::string& field) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::string();
  if (!it->is_string()) return BadField(field, "a string");
  return it->get<std::string>();
}

Result<std::optional<BoundObjectReference>> ParseBoundObject(const json& spec) {
  auto it = spec.find("boundObjectRef");
  if (it == spec.end() || it->is_null()) return std::optional<BoundObjectReference>();
  if (!it->is_object()) return BadField("spec.boundObjectRef", "an object");
  BoundObjectReference ref;
  SLUICE_ASSIGN_OR_RETURN(ref.kind, OptionalStringField(*it, "kind", "spec.boundObjectRef.kind"));
  SLUICE_ASSIGN_OR_RETURN(ref.api_version,
                          OptionalStringField(*it, "apiVersion", "spec.boundObjectRef.apiVersion"));
  SLUICE_ASSIGN_OR_RETURN(ref.name, OptionalStringField(*it, "name", "spec.boundObjectRef.name"));
  SLUICE_ASSIGN_OR_RETURN(ref.uid, OptionalStringField(*it, "uid", "spec.boundObjectRef.uid"));
  return std::optional<BoundObjectReference>(std::move(ref));
}

TokenRequestReply Fail(const Status& status, const ErrorSubject& subject) {
  json body = StatusJson(status, subject);
  const int code = CodeOf(body);
  return {code, std::move(body)};
}

// Go's schema.GroupVersionKind.String(): "apps/v1, Kind=Deployment", "/v1, Kind=Node".
std::string GvkString(const BoundObjectReference& ref) {
  const size_t slash = ref.api_version.find('/');
  const std::string group = slash == std::string::npos ? "" : ref.api_version.substr(0, slash);
  const std::string version =
      slash == std::string::npos ? ref.api_version : ref.api_version.substr(slash + 1);
  return group + "/" + version + ", Kind=" + ref.kind;
}

bool IsCoreKind(const BoundObjectReference& ref, const char* kind) {
  return ref.kind == kind && ref.api_version.find('/') == std::string::npos;
}

// The uid precondition of a bound object reference (409 as kube words it).
Status CheckBoundUid(const BoundObjectReference& ref, const json& object) {
  const std::string uid = StringAt(object, "/metadata/uid");
  if (ref.uid.empty() || ref.uid == uid) return Status::Ok();
  return Status::Conflict("Operation cannot be fulfilled on " + ref.kind + " \"" + ref.name +
                          "\": the UID in the bound object reference (" + ref.uid +
                          ") does not match the UID in record (" + uid +
                          "). The object might have been deleted and then recreated");
}

}  // namespace

Result<TokenRequestSpec> ParseTokenRequestSpec(const json& body,
                                               const std::string& path_namespace) {
  if (!body.is_object()) return Status::InvalidArgument("the request body must be an object");
  SLUICE_ASSIGN_OR_RETURN(const std::string api_version,
                          OptionalStringField(body, "apiVersion", "apiVersion"));
  if (!api_version.empty() && api_version != kGroupVersion) {
    return Status::InvalidArgument("the API version in the data (" + api_version +
                                   ") does not match the expected API version (" + kGroupVersion +
                                   ")");
  }
  SLUICE_ASSIGN_OR_RETURN(const std::string kind, OptionalStringField(body, "kind", "kind"));
  if (!kind.empty() && kind != kKind) {
    return Status::InvalidArgument("the kind in the data (" + kind +
                                   ") does not match the expected kind (" + kKind + ")");
  }
  const std::string body_namespace = StringAt(body, "/metadata/namespace");
  if (!body_namespace.empty() && body_namespace != path_namespace) {
    return Status::InvalidArgument(
        "the namespace of the provided object does not match the namespace sent on the request");
  }
  TokenRequestSpec spec;
  auto it = body.find("spec");
  if (it == body.end() || it->is_null()) return spec;
  if (!it->is_object()) return BadField("spec", "an object");
  const json& s = *it;
  if (auto a = s.find("audiences"); a != s.end() && !a->is_null()) {
    if (!a->is_array()) return BadField("spec.audiences", "a list of strings");
    for (const json& audience : *a) {
      if (!audience.is_string()) return BadField("spec.audiences", "a list of strings");
      spec.audiences.push_back(audience.get<std::string>());
    }
  }
  if (auto e = s.find("expirationSeconds"); e != s.end() && !e->is_null()) {
    if (!e->is_number_integer()) return BadField("spec.expirationSeconds", "an integer");
    spec.expiration_seconds = e->get<int64_t>();
    // kube's field.Invalid message: "Invalid value: <value>: <detail>".
    const std::string invalid = "Invalid value: " + std::to_string(spec.expiration_seconds) + ": ";
    if (spec.expiration_seconds < kMinTokenExpirationSeconds) {
      return Status::Unprocessable(invalid + "may not specify a duration less than 10 minutes",
                                   "spec.expirationSeconds");
    }
    if (spec.expiration_seconds > kMaxTokenExpirationSeconds) {
      return Status::Unprocessable(invalid + "may not specify a duration larger than 2^32 seconds",
                                   "spec.expirationSeconds");
    }
  }
  SLUICE_ASSIGN_OR_RETURN(spec.bound_object, ParseBoundObject(s));
  return spec;
}

json TokenRequestJson(const std::string& namespace_, const std::string& name,
                      const TokenRequestSpec& spec, const std::string& token,
                      Clock::WallTime expires) {
  json bound = nullptr;
  if (spec.bound_object) {
    bound = json::object();  // Every field of BoundObjectReference is omitempty.
    const BoundObjectReference& ref = *spec.bound_object;
    if (!ref.kind.empty()) bound["kind"] = ref.kind;
    if (!ref.api_version.empty()) bound["apiVersion"] = ref.api_version;
    if (!ref.name.empty()) bound["name"] = ref.name;
    if (!ref.uid.empty()) bound["uid"] = ref.uid;
  }
  json out = json::object();
  out["kind"] = kKind;
  out["apiVersion"] = kGroupVersion;
  out["metadata"] = {{"name", name}, {"namespace", namespace_}, {"creationTimestamp", nullptr}};
  out["spec"] = {{"audiences", spec.audiences},
                 {"expirationSeconds", spec.expiration_seconds},
                 {"boundObjectRef", std::move(bound)}};
  out["status"] = {{"token", token}, {"expirationTimestamp", FormatTime(expires)}};
  return out;
}

TokenRequestReply ServeTokenRequest(Storage& storage, const TokenSettings& settings,
                                    const std::string& namespace_, const std::string& name,
                                    const json& body, Clock::WallTime now) {
  const ErrorSubject account_subject{"", "serviceaccounts", name};
  Result<TokenRequestSpec> spec = ParseTokenRequestSpec(body, namespace_);
  if (!spec.ok()) {
    const Status& error = spec.status();
    if (error.code() != StatusCode::kUnprocessable) return Fail(error, account_subject);
    return {422,
            InvalidStatusJson("TokenRequest.authentication.k8s.io", name, "authentication.k8s.io",
                              kKind, {{error.field(), error.message()}})};
  }
  Result<Stored> account = storage.Get(ObjectKey{"core/serviceaccounts", namespace_, name});
  if (!account.ok()) return Fail(account.status(), account_subject);
  if (spec->audiences.empty()) spec->audiences = settings.ApiAudiences();
  ServiceAccountClaims claims =
      NewClaims(account->object, settings.issuer, spec->audiences, now, spec->expiration_seconds);

  if (spec->bound_object) {
    const BoundObjectReference& ref = *spec->bound_object;
    if (IsCoreKind(ref, "Pod")) {
      Result<Stored> pod = storage.Get(ObjectKey{"core/pods", namespace_, ref.name});
      if (!pod.ok()) return Fail(pod.status(), {"", "pods", ref.name});
      const std::string runs_as = PodServiceAccountName(pod->object);
      if (runs_as != name) {
        return Fail(
            Status::InvalidArgument("cannot bind token for serviceaccount \"" + name +
                                    "\" to pod running with serviceaccount \"" + runs_as + "\""),
            account_subject);
      }
      if (Status s = CheckBoundUid(ref, pod->object); !s.ok()) {
        return Fail(s, {"", ref.kind, ref.name});
      }
      claims.pod = RefOf(pod->object);
      const std::string node_name = StringAt(pod->object, "/spec/nodeName");
      if (!node_name.empty()) {
        // The node is extra information in the token; a node that is gone leaves it out.
        Result<Stored> node = storage.Get(ObjectKey{"core/nodes", "", node_name});
        if (node.ok()) claims.node = RefOf(node->object);
      }
    } else if (IsCoreKind(ref, "Secret")) {
      Result<Stored> secret = storage.Get(ObjectKey{"core/secrets", namespace_, ref.name});
      if (!secret.ok()) return Fail(secret.status(), {"", "secrets", ref.name});
      if (Status s = CheckBoundUid(ref, secret->object); !s.ok()) {
        return Fail(s, {"", ref.kind, ref.name});
      }
      claims.secret = RefOf(secret->object);
    } else {
      return Fail(Status::InvalidArgument("cannot bind token to object of type " + GvkString(ref)),
                  account_subject);
    }
  }
  const std::string token = SignToken(claims, settings.signing_key);
  const Clock::WallTime expires{std::chrono::seconds(claims.expiry)};
  return {201, TokenRequestJson(namespace_, name, *spec, token, expires)};
}

}  // namespace sluice::apiserver
