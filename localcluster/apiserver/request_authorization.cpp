#include "localcluster/apiserver/request_authorization.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "common/ascii.h"
#include "common/json/fields.h"
#include "localcluster/apiserver/api_errors.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

constexpr char kServiceAccountPrefix[] = "system:serviceaccount:";

Status ReadAll(Storage& storage, const std::string& resource, std::vector<json>* out) {
  std::string token;
  do {
    SLUICE_ASSIGN_OR_RETURN(ListResult page, storage.List(resource, std::nullopt, 500, token));
    for (Stored& s : page.items) out->push_back(std::move(s.object));
    token = page.continue_token;
  } while (!token.empty());
  return Status::Ok();
}

// "system:serviceaccount:<ns>:<name>" split into {ns, name}; nullopt for other names.
std::optional<std::pair<std::string, std::string>> ServiceAccountOf(const std::string& user) {
  const std::string prefix = kServiceAccountPrefix;
  if (user.rfind(prefix, 0) != 0) return std::nullopt;
  const std::string rest = user.substr(prefix.size());
  const size_t colon = rest.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size()) return std::nullopt;
  return std::make_pair(rest.substr(0, colon), rest.substr(colon + 1));
}

// The attributes a (Self|Local)SubjectAccessReview spec asks about.
Result<AuthorizationAttributes> ReviewedAttributes(const json& spec) {
  const json* resource =
      spec.contains("resourceAttributes") && !spec["resourceAttributes"].is_null()
          ? &spec["resourceAttributes"]
          : nullptr;
  const json* non_resource =
      spec.contains("nonResourceAttributes") && !spec["nonResourceAttributes"].is_null()
          ? &spec["nonResourceAttributes"]
          : nullptr;
  if ((resource == nullptr) == (non_resource == nullptr)) {
    return Status::Unprocessable(
        "Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes "
        "must be specified",
        "spec.resourceAttributes");
  }
  AuthorizationAttributes a;
  if (resource != nullptr) {
    a.verb = StringField(*resource, "verb");
    a.group = StringField(*resource, "group");
    a.resource = StringField(*resource, "resource");
    a.subresource = StringField(*resource, "subresource");
    a.name = StringField(*resource, "name");
    a.namespace_ = StringField(*resource, "namespace");
  } else {
    a.resource_request = false;
    a.verb = StringField(*non_resource, "verb");
    a.path = StringField(*non_resource, "path");
  }
  return a;
}

json ReviewStatus(const AuthorizationDecision& decision) {
  json status = {{"allowed", decision.allowed}};
  if (!decision.reason.empty()) status["reason"] = decision.reason;
  return status;
}

}  // namespace

AuthorizationAttributes AttributesOf(const RequestInfo& info, std::string_view method,
                                     std::string_view field_selector) {
  AuthorizationAttributes a;
  if (!info.is_resource_request) {
    a.resource_request = false;
    a.verb = AsciiLower(method);
    a.path = info.path;
    return a;
  }
  a.verb = info.verb;
  a.group = info.group;
  a.resource = info.resource;
  a.subresource = info.subresource;
  a.name = info.name;
  a.namespace_ = info.namespace_;
  constexpr std::string_view kNameField = "metadata.name=";
  if ((a.verb == "list" || a.verb == "watch") && a.name.empty() &&
      field_selector.rfind(kNameField, 0) == 0) {
    const std::string_view value = field_selector.substr(kNameField.size());
    if (!value.empty() && value.find(',') == std::string_view::npos) a.name = std::string(value);
  }
  return a;
}

Result<RbacPolicy> ReadRbacPolicy(Storage& storage) {
  RbacPolicy policy;
  SLUICE_RETURN_IF_ERROR(ReadAll(storage, kRolesKey, &policy.roles));
  SLUICE_RETURN_IF_ERROR(ReadAll(storage, kClusterRolesKey, &policy.cluster_roles));
  SLUICE_RETURN_IF_ERROR(ReadAll(storage, kRoleBindingsKey, &policy.role_bindings));
  SLUICE_RETURN_IF_ERROR(ReadAll(storage, kClusterRoleBindingsKey, &policy.cluster_role_bindings));
  return policy;
}

Result<std::optional<Impersonation>> ImpersonationOf(const std::string& user,
                                                     const std::vector<std::string>& groups,
                                                     const std::string& uid) {
  if (user.empty()) {
    if (!groups.empty() || !uid.empty()) {
      return Status::InvalidArgument(
          "requested impersonation of groups or a uid without impersonating a user");
    }
    return std::optional<Impersonation>();
  }
  Impersonation out;
  out.user.name = user;
  out.user.uid = uid;
  AuthorizationAttributes as_user;
  as_user.verb = "impersonate";
  as_user.name = user;
  if (auto account = ServiceAccountOf(user)) {
    as_user.resource = "serviceaccounts";
    as_user.namespace_ = account->first;
    as_user.name = account->second;
    if (groups.empty()) {
      out.user.groups = {kServiceAccountsGroup,
                         std::string(kServiceAccountsGroup) + ":" + account->first};
    }
  } else {
    as_user.resource = "users";
  }
  out.checks.push_back(as_user);
  for (const std::string& g : groups) {
    AuthorizationAttributes as_group;
    as_group.verb = "impersonate";
    as_group.resource = "groups";
    as_group.name = g;
    out.checks.push_back(as_group);
    out.user.groups.push_back(g);
  }
  if (!uid.empty()) {
    AuthorizationAttributes as_uid;
    as_uid.verb = "impersonate";
    as_uid.group = "authentication.k8s.io";
    as_uid.resource = "uids";
    as_uid.name = uid;
    out.checks.push_back(as_uid);
  }
  if (groups.empty() && !out.user.InGroup(kAuthenticatedGroup)) {
    out.user.groups.push_back(kAuthenticatedGroup);
  }
  return std::optional<Impersonation>(std::move(out));
}

std::optional<json> AuthorizeRequest(Storage& storage, UserInfo* user, const RequestInfo& info,
                                     std::string_view method, std::string_view field_selector,
                                     const ImpersonationHeaders& impersonation) {
  Result<std::optional<Impersonation>> acting =
      ImpersonationOf(impersonation.user, impersonation.groups, impersonation.uid);
  if (!acting.ok()) return StatusJson(acting.status());
  std::optional<RbacPolicy> policy;  // Read once, when a non-master needs it.
  auto decide = [&](const UserInfo& who, const AuthorizationAttributes& a) -> std::optional<json> {
    if (who.InGroup(kMastersGroup)) return std::nullopt;
    if (!policy) {
      Result<RbacPolicy> read = ReadRbacPolicy(storage);
      if (!read.ok()) return StatusJson(read.status());
      policy = std::move(*read);
    }
    const AuthorizationDecision decision = Authorize(who, a, *policy);
    if (decision.allowed) return std::nullopt;
    return StatusJson(
        403, "Forbidden", ForbiddenMessage(who, a, decision.reason),
        a.resource_request ? ErrorSubject{a.group, a.resource, a.name} : ErrorSubject{});
  };
  if (acting->has_value()) {
    for (const AuthorizationAttributes& check : (*acting)->checks) {
      if (std::optional<json> denied = decide(*user, check)) return denied;
    }
    *user = std::move((*acting)->user);
  }
  return decide(*user, AttributesOf(info, method, field_selector));
}

bool IsReviewResource(std::string_view group, std::string_view plural) {
  if (group == "authorization.k8s.io") {
    return plural == "selfsubjectaccessreviews" || plural == "subjectaccessreviews" ||
           plural == "localsubjectaccessreviews";
  }
  return group == "authentication.k8s.io" && plural == "selfsubjectreviews";
}

Result<json> AnswerReview(std::string_view plural, json body, const UserInfo& user,
                          const std::string& namespace_, const RbacPolicy& policy) {
  if (!body.is_object()) return Status::InvalidArgument("the request body must be an object");
  if (!body.contains("metadata") || !body["metadata"].is_object()) {
    body["metadata"] = json::object();
  }
  body["metadata"]["creationTimestamp"] = nullptr;
  if (plural == "selfsubjectreviews") {
    json info = {{"username", user.name}, {"groups", user.groups}};
    if (!user.uid.empty()) info["uid"] = user.uid;
    if (!user.extra.empty()) info["extra"] = user.extra;
    body["status"] = {{"userInfo", info}};
    return body;
  }
  const json spec = body.value("spec", json::object());
  SLUICE_ASSIGN_OR_RETURN(AuthorizationAttributes attributes, ReviewedAttributes(spec));
  UserInfo subject = user;
  if (plural != "selfsubjectaccessreviews") {
    subject = UserInfo{};
    subject.name = StringField(spec, "user");
    subject.uid = StringField(spec, "uid");
    for (const json& g : spec.value("groups", json::array())) {
      if (g.is_string()) subject.groups.push_back(g.get<std::string>());
    }
    if (subject.name.empty() && subject.groups.empty()) {
      return Status::Unprocessable(
          "Invalid value: \"\": at least one of user or group must be "
          "specified",
          "spec.user");
    }
  }
  if (plural == "localsubjectaccessreviews") {
    if (!attributes.resource_request || attributes.namespace_ != namespace_) {
      return Status::Unprocessable(
          "Invalid value: \"" + attributes.namespace_ + "\": must match metadata.namespace",
          "spec.resourceAttributes.namespace");
    }
  }
  body["status"] = ReviewStatus(Authorize(subject, attributes, policy));
  return body;
}

}  // namespace sluice::apiserver
