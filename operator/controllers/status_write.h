// Writing a custom resource's status the one way every controller does: through the status
// subresource as a merge patch, only when it differs from the status the controller read, and
// with a deleted object counting as written (there is no status left to keep).
//
// Thread safety: a function of its arguments; the client is thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "kube/dynamic_client.h"

namespace sluice::controllers {

enum class StatusPrecondition {
  kNone,  // Status recomputed from the world each time: the last writer wins.
  // Status that holds what cannot be recomputed (a restart count): the patch carries the read's
  // resourceVersion, so a write from a stale read fails with StatusCode::kConflict.
  kUnchangedSinceRead,
};

// Patches `object`'s status to `status` when they differ. `object` is the object as read (its
// metadata names it; its status is the comparison; its resourceVersion the precondition).
Status WriteStatusIfChanged(kube::DynamicClient& client, const kube::GroupVersionResource& gvr,
                            const nlohmann::json& object, const nlohmann::json& status,
                            StatusPrecondition precondition = StatusPrecondition::kNone);

}  // namespace sluice::controllers
