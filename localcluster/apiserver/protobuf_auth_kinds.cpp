// Kube protobuf schema tables for rbac.authorization.k8s.io/v1, the authorization.k8s.io/v1
// access and rules reviews and authentication.k8s.io/v1 SelfSubjectReview; see
// protobuf_schema.h.
#include "localcluster/apiserver/protobuf_schema.h"

namespace sluice::apiserver::kube_protobuf {

// Field numbers, JSON names and Go pointer/omitempty shapes as in k8s.io/api v0.32
// (generated.proto and types.go). Messages are defined leaves first.

// rbac.authorization.k8s.io/v1 (`kubectl create role|clusterrole|rolebinding|clusterrolebinding`).
SLUICE_MESSAGE(kPolicyRule, "PolicyRule", StrsA(1, "verbs"), Strs(2, "apiGroups"),
               Strs(3, "resources"), Strs(4, "resourceNames"), Strs(5, "nonResourceURLs"));
SLUICE_MESSAGE(kAggregationRule, "AggregationRule",
               Objs(1, "clusterRoleSelectors", kLabelSelector));
SLUICE_MESSAGE(kRole, "Role", Obj(1, "metadata", kObjectMeta), ObjsA(2, "rules", kPolicyRule));
SLUICE_MESSAGE(kClusterRole, "ClusterRole", Obj(1, "metadata", kObjectMeta),
               ObjsA(2, "rules", kPolicyRule), ObjP(3, "aggregationRule", kAggregationRule));
SLUICE_MESSAGE(kSubject, "Subject", StrA(1, "kind"), Str(2, "apiGroup"), StrA(3, "name"),
               Str(4, "namespace"));
SLUICE_MESSAGE(kRoleRef, "RoleRef", StrA(1, "apiGroup"), StrA(2, "kind"), StrA(3, "name"));
// RoleBinding and ClusterRoleBinding.
SLUICE_MESSAGE(kRoleBinding, "RoleBinding", Obj(1, "metadata", kObjectMeta),
               Objs(2, "subjects", kSubject), Obj(3, "roleRef", kRoleRef));

// authorization.k8s.io/v1 (`kubectl auth can-i`, and the reviews other clients post).
// LabelSelectorAttributes and FieldSelectorAttributes.
SLUICE_MESSAGE(kSelectorAttributes, "SelectorAttributes", Str(1, "rawSelector"),
               Objs(2, "requirements", kLabelSelectorRequirement));
SLUICE_MESSAGE(kResourceAttributes, "ResourceAttributes", Str(1, "namespace"), Str(2, "verb"),
               Str(3, "group"), Str(4, "version"), Str(5, "resource"), Str(6, "subresource"),
               Str(7, "name"), ObjP(8, "fieldSelector", kSelectorAttributes),
               ObjP(9, "labelSelector", kSelectorAttributes));
SLUICE_MESSAGE(kNonResourceAttributes, "NonResourceAttributes", Str(1, "path"), Str(2, "verb"));
SLUICE_MESSAGE(kSelfSubjectAccessReviewSpec, "SelfSubjectAccessReviewSpec",
               ObjP(1, "resourceAttributes", kResourceAttributes),
               ObjP(2, "nonResourceAttributes", kNonResourceAttributes));
SLUICE_MESSAGE(kSubjectAccessReviewSpec, "SubjectAccessReviewSpec",
               ObjP(1, "resourceAttributes", kResourceAttributes),
               ObjP(2, "nonResourceAttributes", kNonResourceAttributes), Str(3, "user"),
               Strs(4, "groups"), StrListMap(5, "extra"), Str(6, "uid"));
SLUICE_MESSAGE(kSubjectAccessReviewStatus, "SubjectAccessReviewStatus", BoolA(1, "allowed"),
               Bool(4, "denied"), Str(2, "reason"), Str(3, "evaluationError"));
// SubjectAccessReview and LocalSubjectAccessReview.
SLUICE_MESSAGE(kSubjectAccessReview, "SubjectAccessReview", Obj(1, "metadata", kObjectMeta),
               Obj(2, "spec", kSubjectAccessReviewSpec),
               Obj(3, "status", kSubjectAccessReviewStatus));
SLUICE_MESSAGE(kSelfSubjectAccessReview, "SelfSubjectAccessReview", Obj(1, "metadata", kObjectMeta),
               Obj(2, "spec", kSelfSubjectAccessReviewSpec),
               Obj(3, "status", kSubjectAccessReviewStatus));
SLUICE_MESSAGE(kSelfSubjectRulesReviewSpec, "SelfSubjectRulesReviewSpec", Str(1, "namespace"));
SLUICE_MESSAGE(kResourceRule, "ResourceRule", StrsA(1, "verbs"), Strs(2, "apiGroups"),
               Strs(3, "resources"), Strs(4, "resourceNames"));
SLUICE_MESSAGE(kNonResourceRule, "NonResourceRule", StrsA(1, "verbs"), Strs(2, "nonResourceURLs"));
SLUICE_MESSAGE(kSubjectRulesReviewStatus, "SubjectRulesReviewStatus",
               ObjsA(1, "resourceRules", kResourceRule),
               ObjsA(2, "nonResourceRules", kNonResourceRule), BoolA(3, "incomplete"),
               Str(4, "evaluationError"));
SLUICE_MESSAGE(kSelfSubjectRulesReview, "SelfSubjectRulesReview", Obj(1, "metadata", kObjectMeta),
               Obj(2, "spec", kSelfSubjectRulesReviewSpec),
               Obj(3, "status", kSubjectRulesReviewStatus));
// authentication.k8s.io/v1 SelfSubjectReview (`kubectl auth whoami`): the client sends only
// metadata; the status is the server's answer.
SLUICE_MESSAGE(kUserInfo, "UserInfo", Str(1, "username"), Str(2, "uid"), Strs(3, "groups"),
               StrListMap(4, "extra"));
SLUICE_MESSAGE(kSelfSubjectReviewStatus, "SelfSubjectReviewStatus", Obj(1, "userInfo", kUserInfo));
SLUICE_MESSAGE(kSelfSubjectReview, "SelfSubjectReview", Obj(1, "metadata", kObjectMeta),
               Obj(2, "status", kSelfSubjectReviewStatus));

namespace {

constexpr KindDef kAuthKinds[] = {
    {"rbac.authorization.k8s.io/v1", "Role", &kRole},
    {"rbac.authorization.k8s.io/v1", "ClusterRole", &kClusterRole},
    {"rbac.authorization.k8s.io/v1", "RoleBinding", &kRoleBinding},
    {"rbac.authorization.k8s.io/v1", "ClusterRoleBinding", &kRoleBinding},
    {"authorization.k8s.io/v1", "SelfSubjectAccessReview", &kSelfSubjectAccessReview},
    {"authorization.k8s.io/v1", "SubjectAccessReview", &kSubjectAccessReview},
    {"authorization.k8s.io/v1", "LocalSubjectAccessReview", &kSubjectAccessReview},
    {"authorization.k8s.io/v1", "SelfSubjectRulesReview", &kSelfSubjectRulesReview},
    {"authentication.k8s.io/v1", "SelfSubjectReview", &kSelfSubjectReview},
};

}  // namespace

std::span<const KindDef> AuthKinds() { return kAuthKinds; }

}  // namespace sluice::apiserver::kube_protobuf
