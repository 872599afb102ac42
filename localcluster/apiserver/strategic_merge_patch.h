// Strategic merge patch: the `application/strategic-merge-patch+json` patch type of the local
// API server for built-in kinds (what `kubectl patch` sends by default and `kubectl apply` uses).
//
// Like a JSON merge patch (RFC 7386), except that some lists are merged instead of replaced:
//  - a list with a merge key (Pod spec.containers by "name") merges item by item: a patch item
//    whose key matches an existing item is merge-patched into it (recursively, so a container's
//    env merges by name), others are appended in patch order;
//  - a list of primitives with the "merge" strategy (metadata.finalizers) is merged as a set:
//    patch values not yet present are appended;
//  - every other list is replaced whole, as in a merge patch.
// Which lists merge, and by which key, is the caller's PatchMeta (DefaultPatchMeta has the
// built-in kinds'). Directives, never left in the result:
//   {"$patch": "replace"}   on a map: replace the map by the rest of the patch map; as a list
//                           item: replace the list by the other patch items;
//   {"$patch": "delete"}    on a map: remove the map (the whole object at the top level, which
//                           then becomes {}); on a merge-keyed list item: delete the item with
//                           that key;
//   "$deleteFromPrimitiveList/<field>": [values]   remove those values from the list <field>;
//   "$setElementOrder/<field>": [items or {key: v}] reorder <field>: the items it names take the
//                           positions they occupy, in its order; unnamed items keep theirs;
//   "$retainKeys": [fields]  drop every original field of this map not named (union types).
// Errors: a patch or target that is not an object, an unknown or ill-typed directive, a
// merge-keyed item without its key are InvalidArgument (400); patch fields outside
// $retainKeys are Unprocessable (422).
//
// Ownership: takes const references, returns a new document; PatchMeta is a plain value.
// Thread safety: pure functions.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>

#include "common/status.h"

namespace sluice::apiserver {

// How the lists of one kind merge. A list's path is the dotted field names from the object root,
// list items adding no segment: "spec.containers", "spec.containers.env".
struct PatchMeta {
  // Lists of objects merged by the named field.
  std::map<std::string, std::string> merge_keys;
  // Lists of primitives merged as sets.
  std::set<std::string> set_lists;
};

// The list strategies of a built-in kind ("Pod", "Deployment" and "ReplicaSet" (their pod
// template's), "Service", "Node", "PersistentVolumeClaim", "ServiceAccount"; every kind gets
// metadata.ownerReferences by uid and metadata.finalizers as a set, which is all an unknown kind
// gets).
PatchMeta DefaultPatchMeta(std::string_view kind);

// Applies a strategic merge patch to `target` (both JSON objects) and returns the result.
Result<nlohmann::json> ApplyStrategicMergePatch(const nlohmann::json& target,
                                                const nlohmann::json& patch, const PatchMeta& meta);

}  // namespace sluice::apiserver
