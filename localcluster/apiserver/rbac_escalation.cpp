#include "localcluster/apiserver/rbac_escalation.h"

#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "common/go_quote.h"
#include "common/json/fields.h"
#include "localcluster/apiserver/rbac_objects.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;
using Strings = std::vector<std::string>;

constexpr char kRbacApiGroup[] = "rbac.authorization.k8s.io";

bool Has(const Strings& list, const std::string& value) {
  for (const std::string& item : list) {
    if (item == value) return true;
  }
  return false;
}

// The start of kube's errors.NewForbidden message.
std::string ForbiddenPrefix(const std::string& qualified_resource, const std::string& name) {
  if (name.empty()) return qualified_resource + " is forbidden: ";
  return qualified_resource + " " + GoQuote(name) + " is forbidden: ";
}

// kube's errors.NewNotFound for an RBAC resource.
Status RbacNotFound(const char* resource, const std::string& name) {
  return Status::NotFound(std::string(resource) + "." + kRbacApiGroup + " " + GoQuote(name) +
                          " not found");
}

// The rules of the role `role_ref` names, for a binding in `binding_namespace` ("" for a
// ClusterRoleBinding): kube's GetRoleReferenceRules, with the errors kube-apiserver reports.
Result<json> RoleReferenceRules(const json& role_ref, const std::string& binding_namespace,
                                const RbacPolicy& policy) {
  const std::string kind = StringField(role_ref, "kind");
  const std::string name = StringField(role_ref, "name");
  const json* role = nullptr;
  if (kind == "Role") {
    if (binding_namespace.empty()) {
      return Status::InvalidArgument("Namespace parameter required.");
    }
    role = FindRbacRole(policy.roles, name, binding_namespace);
    if (role == nullptr) return RbacNotFound("roles", name);
  } else if (kind == "ClusterRole") {
    role = FindRbacRole(policy.cluster_roles, name, "");
    if (role == nullptr) return RbacNotFound("clusterroles", name);
  } else {
    return Status::Internal("unsupported role reference kind: " + GoQuote(kind));
  }
  const json& rules = AnyField(*role, "rules");
  return rules.is_array() ? rules : json::array();
}

// Whether one of the binding's subjects is `user` (kube's appliesTo); a ServiceAccount subject
// without a namespace is in the binding's, and names nobody in a ClusterRoleBinding.
bool AppliesTo(const json& binding, const UserInfo& user, const std::string& binding_namespace) {
  const json& subjects = AnyField(binding, "subjects");
  if (!subjects.is_array()) return false;
  for (const json& subject : subjects) {
    const std::string kind = StringField(subject, "kind");
    const std::string name = StringField(subject, "name");
    if (kind == "User" && name == user.name) return true;
    if (kind == "Group" && user.InGroup(name)) return true;
    if (kind == "ServiceAccount") {
      std::string ns = StringField(subject, "namespace");
      if (ns.empty()) ns = binding_namespace;
      if (!ns.empty() && ServiceAccountUsername(ns, name) == user.name) return true;
    }
  }
  return false;
}

// One atomic rule of kube's breakdown.
struct AtomicRule {
  bool resource_rule = true;
  std::string group;
  std::string resource;
  std::string verb;
  bool named = false;
  std::string name;
  std::string url;  // Non-resource rules.

  json ToJson() const {
    json rule;
    if (resource_rule) {
      rule["apiGroups"] = Strings{group};
      rule["resources"] = Strings{resource};
      if (named) rule["resourceNames"] = Strings{name};
    } else {
      rule["nonResourceURLs"] = Strings{url};
    }
    rule["verbs"] = Strings{verb};
    return rule;
  }
};

std::vector<AtomicRule> Breakdown(const json& rule) {
  std::vector<AtomicRule> out;
  const Strings groups = RbacStringList(rule, "apiGroups");
  const Strings resources = RbacStringList(rule, "resources");
  const Strings verbs = RbacStringList(rule, "verbs");
  const Strings names = RbacStringList(rule, "resourceNames");
  const Strings urls = RbacStringList(rule, "nonResourceURLs");
  for (const std::string& group : groups) {
    for (const std::string& resource : resources) {
      for (const std::string& verb : verbs) {
        AtomicRule atomic;
        atomic.group = group;
        atomic.resource = resource;
        atomic.verb = verb;
        if (names.empty()) {
          out.push_back(atomic);
          continue;
        }
        atomic.named = true;
        for (const std::string& name : names) {
          atomic.name = name;
          out.push_back(atomic);
        }
      }
    }
  }
  for (const std::string& url : urls) {
    for (const std::string& verb : verbs) {
      AtomicRule atomic;
      atomic.resource_rule = false;
      atomic.url = url;
      atomic.verb = verb;
      out.push_back(std::move(atomic));
    }
  }
  return out;
}

// A held rule, its lists read once.
struct HeldRule {
  explicit HeldRule(const json& rule)
      : verbs(RbacStringList(rule, "verbs")),
        groups(RbacStringList(rule, "apiGroups")),
        resources(RbacStringList(rule, "resources")),
        names(RbacStringList(rule, "resourceNames")),
        urls(RbacStringList(rule, "nonResourceURLs")) {}

  Strings verbs;
  Strings groups;
  Strings resources;
  Strings names;
  Strings urls;
};

bool ResourceCovered(const Strings& held, const std::string& resource) {
  if (Has(held, "*") || Has(held, resource)) return true;
  const size_t slash = resource.find('/');
  return slash != std::string::npos && Has(held, "*/" + resource.substr(slash + 1));
}

bool UrlCovered(const Strings& held, const std::string& url) {
  for (const std::string& owner : held) {
    if (owner == url) return true;
    if (!owner.empty() && owner.back() == '*') {
      const size_t end = owner.find_last_not_of('*');
      const std::string prefix = end == std::string::npos ? "" : owner.substr(0, end + 1);
      if (url.starts_with(prefix)) return true;
    }
  }
  return false;
}

// kube's ruleCovers for an atomic rule: a non-resource atomic rule has no group or resource to
// match, a resource one no URL.
bool Covers(const HeldRule& held, const AtomicRule& atomic) {
  if (!Has(held.verbs, "*") && !Has(held.verbs, atomic.verb)) return false;
  if (atomic.resource_rule) {
    if (!Has(held.groups, "*") && !Has(held.groups, atomic.group)) return false;
    if (!ResourceCovered(held.resources, atomic.resource)) return false;
  } else if (!UrlCovered(held.urls, atomic.url)) {
    return false;
  }
  if (!atomic.named) return held.names.empty();
  return held.names.empty() || Has(held.names, atomic.name);
}

// kube's utilerrors aggregate message: one error as it is, several (deduplicated) bracketed.
std::string AggregateMessage(const std::vector<std::string>& errors) {
  std::vector<std::string> unique;
  for (const std::string& e : errors) {
    if (!Has(unique, e)) unique.push_back(e);
  }
  if (unique.size() == 1) return unique[0];
  std::string out = "[";
  for (size_t i = 0; i < unique.size(); ++i) {
    if (i > 0) out += ", ";
    out += unique[i];
  }
  return out + "]";
}

bool HasAggregationRule(const json& cluster_role) {
  const json& selectors =
      AnyField(AnyField(cluster_role, "aggregationRule"), "clusterRoleSelectors");
  return selectors.is_array() && !selectors.empty();
}

// `*` on `*.*` and on every URL: what setting an aggregationRule takes.
json FullAuthority() {
  return json::array(
      {{{"verbs", Strings{"*"}}, {"apiGroups", Strings{"*"}}, {"resources", Strings{"*"}}},
       {{"verbs", Strings{"*"}}, {"nonResourceURLs", Strings{"*"}}}});
}

// kube's IsOnlyMutatingGCFields: the update changes no more than owner references, finalizers
// and selfLink (managedFields, which the server rewrites, are ignored too).
bool OnlyGcFieldsChange(const json& object, const json& old_object) {
  json copy = object;
  json old_copy = old_object;
  if (!copy.is_object() || !old_copy.is_object()) return false;
  json& meta = copy["metadata"];
  json& old_meta = old_copy["metadata"];
  if (!meta.is_object() || !old_meta.is_object()) return false;
  for (const char* key : {"ownerReferences", "finalizers", "selfLink"}) {
    if (old_meta.contains(key)) {
      meta[key] = old_meta[key];
    } else {
      meta.erase(key);
    }
  }
  meta.erase("managedFields");
  old_meta.erase("managedFields");
  return copy == old_copy;
}

// Whether RBAC gives `user` the `bind` verb on the role `role_ref` names, in `namespace_`.
bool BindAuthorized(const UserInfo& user, const json& role_ref, const std::string& namespace_,
                    const RbacPolicy& policy) {
  const std::string kind = StringField(role_ref, "kind");
  AuthorizationAttributes bind;
  bind.verb = "bind";
  bind.group = StringField(role_ref, "apiGroup");
  bind.name = StringField(role_ref, "name");
  bind.namespace_ = namespace_;
  if (kind == "ClusterRole") {
    bind.resource = "clusterroles";
  } else if (kind == "Role") {
    bind.resource = "roles";
  } else {
    return false;
  }
  return Authorize(user, bind, policy).allowed;
}

}  // namespace

bool IsEscalationChecked(std::string_view group, std::string_view resource) {
  return group == kRbacApiGroup &&
         (resource == "roles" || resource == "clusterroles" || resource == "rolebindings" ||
          resource == "clusterrolebindings");
}

std::vector<json> RulesHeldBy(const UserInfo& user, const std::string& namespace_,
                              const RbacPolicy& policy,
                              std::vector<std::string>* resolution_errors) {
  std::vector<json> held;
  auto add = [&](const json& binding, const std::string& binding_namespace) {
    if (!AppliesTo(binding, user, binding_namespace)) return;
    Result<json> rules =
        RoleReferenceRules(AnyField(binding, "roleRef"), binding_namespace, policy);
    if (!rules.ok()) {
      if (resolution_errors != nullptr) resolution_errors->push_back(rules.status().message());
      return;
    }
    for (const json& rule : *rules) held.push_back(rule);
  };
  for (const json& binding : policy.cluster_role_bindings) add(binding, "");
  if (namespace_.empty()) return held;
  for (const json& binding : policy.role_bindings) {
    if (RbacMetadata(binding, "namespace") == namespace_) add(binding, namespace_);
  }
  return held;
}

std::vector<json> UncoveredRules(const std::vector<json>& held, const json& requested_rules) {
  std::vector<json> uncovered;
  if (!requested_rules.is_array()) return uncovered;
  std::vector<HeldRule> owners;
  owners.reserve(held.size());
  for (const json& rule : held) owners.emplace_back(rule);
  for (const json& rule : requested_rules) {
    for (const AtomicRule& atomic : Breakdown(rule)) {
      bool covered = false;
      for (const HeldRule& owner : owners) {
        if (Covers(owner, atomic)) {
          covered = true;
          break;
        }
      }
      if (!covered) uncovered.push_back(atomic.ToJson());
    }
  }
  return uncovered;
}

std::string CompactRuleString(const json& rule) {
  std::string out = "{";
  bool first = true;
  auto part = [&](const char* label, const char* key) {
    const Strings values = RbacStringList(rule, key);
    if (values.empty()) return;
    if (!first) out += ", ";
    first = false;
    out += label;
    out += ':';
    out += GoQuoteList(values);
  };
  part("APIGroups", "apiGroups");
  part("Resources", "resources");
  part("NonResourceURLs", "nonResourceURLs");
  part("ResourceNames", "resourceNames");
  part("Verbs", "verbs");
  return out + "}";
}

std::vector<std::string> MissingRuleDescriptions(const std::vector<json>& uncovered) {
  // kube's CompactRules: a rule with one apiGroup, one resource, at most one resourceName and
  // no URL is "simple"; simple rules with the same (group, resource, name) merge their verbs.
  using SimpleKey = std::tuple<std::string, std::string, bool, std::string>;
  std::vector<json> compacted;
  std::map<SimpleKey, size_t> simple;  // Index into compacted.
  for (const json& rule : uncovered) {
    const Strings groups = RbacStringList(rule, "apiGroups");
    const Strings resources = RbacStringList(rule, "resources");
    const Strings names = RbacStringList(rule, "resourceNames");
    const bool is_simple = RbacStringList(rule, "nonResourceURLs").empty() && names.size() <= 1 &&
                           groups.size() == 1 && resources.size() == 1;
    if (!is_simple) {
      compacted.push_back(rule);
      continue;
    }
    SimpleKey key{groups[0], resources[0], !names.empty(), names.empty() ? "" : names[0]};
    auto it = simple.find(key);
    if (it == simple.end()) {
      simple.emplace(std::move(key), compacted.size());
      compacted.push_back(rule);
      continue;
    }
    json& merged = compacted[it->second]["verbs"];
    if (!merged.is_array()) merged = json::array();
    for (const std::string& verb : RbacStringList(rule, "verbs")) merged.push_back(verb);
  }
  std::set<std::string> lines;
  for (const json& rule : compacted) lines.insert(CompactRuleString(rule));
  return {lines.begin(), lines.end()};
}

std::string EscalationMessage(const std::string& qualified_resource, const std::string& name,
                              const UserInfo& user, const std::vector<json>& uncovered,
                              const std::vector<std::string>& resolution_errors) {
  std::string message = ForbiddenPrefix(qualified_resource, name);
  message += "user " + GoQuote(user.name) + " (groups=" + GoQuoteList(user.groups) +
             ") is attempting to grant RBAC permissions not currently held:\n";
  const std::vector<std::string> lines = MissingRuleDescriptions(uncovered);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) message += '\n';
    message += lines[i];
  }
  if (!resolution_errors.empty()) {
    message += "; resolution errors: [" + AggregateMessage(resolution_errors) + "]";
  }
  return message;
}

Status ConfirmNoEscalation(const UserInfo& user, const RbacWrite& write, const json& object,
                           const RbacPolicy& policy, const json* old_object) {
  if (!IsEscalationChecked(write.group, write.resource) || user.InGroup(kMastersGroup)) {
    return Status::Ok();
  }
  if (old_object != nullptr && OnlyGcFieldsChange(object, *old_object)) return Status::Ok();
  const std::string qualified = write.resource + "." + write.group;
  const std::string name = RbacMetadata(object, "name");
  json rules = json::array();
  if (write.resource == "roles" || write.resource == "clusterroles") {
    AuthorizationAttributes escalate;
    escalate.verb = "escalate";
    escalate.group = write.group;
    escalate.resource = write.resource;
    escalate.name = write.name;
    escalate.namespace_ = write.namespace_;
    if (Authorize(user, escalate, policy).allowed) return Status::Ok();
    const json& own = AnyField(object, "rules");
    if (own.is_array()) rules = own;
  } else {
    const json& role_ref = AnyField(object, "roleRef");
    if (BindAuthorized(user, role_ref, write.namespace_, policy)) return Status::Ok();
    Result<json> referenced = RoleReferenceRules(role_ref, write.namespace_, policy);
    if (!referenced.ok()) return referenced.status();
    rules = std::move(*referenced);
  }
  std::vector<std::string> resolution_errors;
  const std::vector<json> held = RulesHeldBy(user, write.namespace_, policy, &resolution_errors);
  const std::vector<json> uncovered = UncoveredRules(held, rules);
  if (!uncovered.empty()) {
    return Status::PermissionDenied(
        EscalationMessage(qualified, name, user, uncovered, resolution_errors));
  }
  if (write.resource == "clusterroles" &&
      (HasAggregationRule(object) || (old_object != nullptr && HasAggregationRule(*old_object))) &&
      !UncoveredRules(held, FullAuthority()).empty()) {
    return Status::PermissionDenied(
        ForbiddenPrefix(qualified, name) +
        "must have cluster-admin privileges to use the aggregationRule");
  }
  return Status::Ok();
}

Status AdmitRbacWrite(const UserInfo& user, const RbacWrite& write, const json& object,
                      const json* old_object,
                      const std::function<Result<RbacPolicy>()>& read_policy) {
  if (!IsEscalationChecked(write.group, write.resource) || user.InGroup(kMastersGroup)) {
    return Status::Ok();
  }
  if (old_object != nullptr && OnlyGcFieldsChange(object, *old_object)) return Status::Ok();
  Result<RbacPolicy> policy = read_policy();
  if (!policy.ok()) return policy.status();
  return ConfirmNoEscalation(user, write, object, *policy, old_object);
}

}  // namespace sluice::apiserver
