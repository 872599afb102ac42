// Authorization of the local API server's requests (rbac_authorizer.h decides): what a request
// asks for, the RBAC policy as stored, impersonation (`kubectl --as`), and the review APIs
// kubectl's `auth can-i` and `auth whoami` call.
//
// Thread safety: pure functions, except ReadRbacPolicy (as safe as storage is).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "localcluster/apiserver/rbac_authorizer.h"
#include "localcluster/apiserver/request_info.h"
#include "localcluster/apiserver/storage.h"
#include "localcluster/apiserver/user_info.h"

namespace sluice::apiserver {

// Storage keys (ObjectKey::resource) of the RBAC resources.
inline constexpr char kRolesKey[] = "rbac.authorization.k8s.io/roles";
inline constexpr char kClusterRolesKey[] = "rbac.authorization.k8s.io/clusterroles";
inline constexpr char kRoleBindingsKey[] = "rbac.authorization.k8s.io/rolebindings";
inline constexpr char kClusterRoleBindingsKey[] = "rbac.authorization.k8s.io/clusterrolebindings";

// The attributes of a parsed request. Non-resource requests: the lowercased HTTP method as the
// verb and the path. A list or watch whose field selector is exactly `metadata.name=<n>` is asked
// for object <n>, as kube-apiserver does (so resourceNames rules admit single-object watches).
AuthorizationAttributes AttributesOf(const RequestInfo& info, std::string_view method,
                                     std::string_view field_selector);

// Every Role, ClusterRole, RoleBinding and ClusterRoleBinding in storage.
Result<RbacPolicy> ReadRbacPolicy(Storage& storage);

// An impersonation request (kube's headers Impersonate-User, Impersonate-Group (repeated),
// Impersonate-Uid): the user the request then runs as, and what the requester must be allowed
// for it: verb "impersonate" on users/<name> (or serviceaccounts/<name> in its namespace for
// "system:serviceaccount:<ns>:<name>"), groups/<group> for each group, uids/<uid>.
struct Impersonation {
  UserInfo user;
  std::vector<AuthorizationAttributes> checks;
};

// nullopt without Impersonate-* headers; InvalidArgument (kube's 400) for groups or a uid
// without a user. The impersonated user's groups are the ones given, else a ServiceAccount's
// own (system:serviceaccounts, system:serviceaccounts:<ns>); system:authenticated is added when
// no group was given, as kube does.
Result<std::optional<Impersonation>> ImpersonationOf(const std::string& user,
                                                     const std::vector<std::string>& groups,
                                                     const std::string& uid);

// Impersonation headers as sent (empty when absent).
struct ImpersonationHeaders {
  std::string user;
  std::vector<std::string> groups;
  std::string uid;
};

// Decides a request of `*user`: impersonation first (each check authorized for the requester;
// `*user` becomes the impersonated user), then the request's own attributes. Members of
// system:masters skip the policy read. Returns the metav1.Status body to answer with when the
// request may not proceed: 400 for malformed impersonation, 403 Forbidden with kube's message
// (ForbiddenMessage) and details {group, kind: resource, name}, 500 when storage fails.
std::optional<nlohmann::json> AuthorizeRequest(Storage& storage, UserInfo* user,
                                               const RequestInfo& info, std::string_view method,
                                               std::string_view field_selector,
                                               const ImpersonationHeaders& impersonation);

// The resources whose create is answered, not stored: authorization.k8s.io/v1
// selfsubjectaccessreviews, subjectaccessreviews, localsubjectaccessreviews and
// authentication.k8s.io/v1 selfsubjectreviews.
bool IsReviewResource(std::string_view group, std::string_view plural);

// The answer to a create of review resource `plural` with `body` by `user` (for
// localsubjectaccessreviews, in `namespace_`): the object with status filled, as kube returns it
// (SubjectAccessReviewStatus {allowed, reason}, or SelfSubjectReview status.userInfo).
// A spec that sets both or neither of resourceAttributes and nonResourceAttributes is
// Unprocessable naming spec.resourceAttributes; a localsubjectaccessreview whose
// resourceAttributes.namespace differs from the path's is Unprocessable naming it.
Result<nlohmann::json> AnswerReview(std::string_view plural, nlohmann::json body,
                                    const UserInfo& user, const std::string& namespace_,
                                    const RbacPolicy& policy);

}  // namespace sluice::apiserver
