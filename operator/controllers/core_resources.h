// The core Kubernetes resources the controllers create and watch, named once for all of them.
//
// Thread safety: immutable constants.
#pragma once

#include "kube/dynamic_client.h"

namespace sluice::controllers {

inline const kube::GroupVersionResource kPods{"", "v1", "pods", true};
inline const kube::GroupVersionResource kServices{"", "v1", "services", true};
inline const kube::GroupVersionResource kConfigMaps{"", "v1", "configmaps", true};
inline const kube::GroupVersionResource kSecrets{"", "v1", "secrets", true};
inline const kube::GroupVersionResource kClaims{"", "v1", "persistentvolumeclaims", true};

}  // namespace sluice::controllers
