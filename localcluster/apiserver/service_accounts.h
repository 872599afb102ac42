// ServiceAccounts in the local API server, beyond storing them: the `default` ServiceAccount every
// namespace has (kube's serviceaccounts controller: made when a namespace is created, for the
// namespaces there at start, and again when it is deleted while its namespace lives) and the
// ServiceAccount admission of new pods (kube's ServiceAccount admission plugin).
//
// Unlike kube's plugin, admission adds no kube-api-access volume to the pod: the node agent mounts
// the token itself (localcluster/node/service_account_volume.h), so pods keep the spec they were
// created with.
//
// Thread safety: stateless; the functions that use storage are as safe as storage is.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "localcluster/apiserver/resource_registry.h"
#include "localcluster/apiserver/storage.h"

namespace sluice::apiserver {

// The ServiceAccount every namespace gets and pods run as by default.
inline constexpr char kDefaultServiceAccount[] = "default";

// The core/v1 serviceaccounts resource.
bool IsServiceAccounts(const ResourceInfo& info);

// The ServiceAccount a pod runs as: spec.serviceAccountName, else the deprecated
// spec.serviceAccount, else "default" (what admission sets, for pods stored before it did).
std::string PodServiceAccountName(const nlohmann::json& pod);

// Kube's defaulting of a new pod: spec.serviceAccountName and the deprecated spec.serviceAccount
// both set to PodServiceAccountName. Returns the name.
std::string DefaultPodServiceAccount(nlohmann::json& pod);

// The 403 kube's admission answers for a pod whose ServiceAccount does not exist:
// `pods "x" is forbidden: error looking up service account ns/sa: serviceaccount "sa" not found`.
Status MissingServiceAccountError(const std::string& pod, const std::string& namespace_,
                                  const std::string& service_account);

// Admission of a new pod in `namespace_`: DefaultPodServiceAccount, then the ServiceAccount must
// exist (MissingServiceAccountError). Storage errors are returned as they are.
Status AdmitPodServiceAccount(Storage& storage, nlohmann::json& pod, const std::string& namespace_);

// Creates the `default` ServiceAccount of `namespace_` (prepared as a create of
// `service_accounts` at `now`) unless it exists or the namespace is missing or terminating.
Status EnsureDefaultServiceAccount(Storage& storage, const ResourceInfo& service_accounts,
                                   const std::string& namespace_, Clock::WallTime now);
// EnsureDefaultServiceAccount for every namespace (at start, for namespaces stored before).
Status EnsureDefaultServiceAccounts(Storage& storage, const ResourceInfo& service_accounts,
                                    Clock::WallTime now);

}  // namespace sluice::apiserver
