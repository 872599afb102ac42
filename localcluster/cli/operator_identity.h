// The operator's least-privilege identity on the local cluster, as `sluice up` sets it up before
// starting sluice-operator: namespace sluice-system, ServiceAccount sluice-operator, the RBAC
// objects of api/operator_rbac.h (created, or updated to the table), a token for the
// ServiceAccount from the TokenRequest API, and <state>/operator/kubeconfig: the admin
// kubeconfig with that token instead of the admin's. The operator then has exactly the table's
// rights: a call the table lacks is a 403.
//
// The token lasts a year (the operator runs outside a pod, so nothing refreshes it); every
// `sluice up` issues a new one.
//
// Thread safety: plain functions; the RestClient is thread-safe.
#pragma once

#include <string>

#include "common/status.h"
#include "kube/rest_client.h"
#include "localcluster/cli/state_layout.h"

namespace sluice::cli {

inline constexpr int64_t kOperatorTokenSeconds = 365LL * 24 * 3600;

// `admin_kubeconfig` with users[*].user.token replaced by `token` (YAML text in, YAML text out).
Result<std::string> KubeconfigWithToken(const std::string& admin_kubeconfig,
                                        const std::string& token);

// Creates or updates everything above through `client` (the admin's) and writes the operator's
// kubeconfig (mode 0600) next to the layout's kubeconfig. Errors name the object.
Status EnsureOperatorIdentity(kube::RestClient& client, const StateLayout& layout);

}  // namespace sluice::cli
