// UserInfo: who sent an API request, in the shape kube's authenticators report it (user.Info):
// a name, a uid, groups and extra attributes. The authenticator (authenticator.h) fills one per
// request; authorization (RBAC, a later step) decides on it and the access log names it.
//
// Thread safety: values and pure functions.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::apiserver {

// Every authenticated user is in this group.
inline constexpr char kAuthenticatedGroup[] = "system:authenticated";
// Kube's superuser group: RBAC allows its members everything without any binding.
inline constexpr char kMastersGroup[] = "system:masters";
// Every ServiceAccount is in this group, and in kServiceAccountsGroup + ":" + namespace.
inline constexpr char kServiceAccountsGroup[] = "system:serviceaccounts";
// The admin token's user (the token in the kubeconfigs `sluice up` writes).
inline constexpr char kAdminUser[] = "sluice-admin";
// Everyone when the server runs without authentication (--insecure-http), as kube's insecure
// port called its requests.
inline constexpr char kUnsecuredUser[] = "system:unsecured";

struct UserInfo {
  std::string name;                 // "system:serviceaccount:ml:runner", "sluice-admin".
  std::string uid;                  // The ServiceAccount's metadata.uid; "" for the admin.
  std::vector<std::string> groups;  // In kube's order: specific groups first, then
                                    // system:authenticated.
  // Authenticator-specific facts, kube's keys: "authentication.kubernetes.io/pod-name",
  // ".../pod-uid", ".../node-name", ".../node-uid", ".../credential-id".
  std::map<std::string, std::vector<std::string>> extra;

  bool InGroup(std::string_view group) const;
};

// "system:serviceaccount:<namespace>:<name>", kube's username for a ServiceAccount.
std::string ServiceAccountUsername(std::string_view namespace_, std::string_view name);

// The admin token's user: kAdminUser in system:masters and system:authenticated.
UserInfo AdminUser();
// The user of every request to a server without authentication: kUnsecuredUser in
// system:masters and system:authenticated.
UserInfo UnsecuredUser();

}  // namespace sluice::apiserver
