// JSON Merge Patch (RFC 7386), the `application/merge-patch+json` patch type of the local API
// server (`kubectl patch --type merge`, and every patch of a custom resource).
//
// Ownership: takes const references, returns a new document; the inputs are never modified.
// Thread safety: pure function.
#pragma once

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace sluice::apiserver {

// Applies `patch` to `target`: a patch object's members are merged recursively into the target
// (a target that is not an object is treated as {}), a null member deletes the key, and any
// other patch value (array, string, number, ...) replaces the target whole. Never fails on
// well-formed JSON; the Result is for symmetry with the other patch types.
Result<nlohmann::json> ApplyMergePatch(const nlohmann::json& target, const nlohmann::json& patch);

}  // namespace sluice::apiserver
