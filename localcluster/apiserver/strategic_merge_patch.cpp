#include "localcluster/apiserver/strategic_merge_patch.h"

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace sluice::apiserver {
namespace {

using nlohmann::json;

constexpr std::string_view kPatchDirective = "$patch";
constexpr std::string_view kRetainKeys = "$retainKeys";
constexpr std::string_view kDeleteFromPrimitiveList = "$deleteFromPrimitiveList/";
constexpr std::string_view kSetElementOrder = "$setElementOrder/";

std::string Join(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

std::string BriefPatchValue(const json& v) {
  std::string s = v.dump();
  if (s.size() > 200) s = s.substr(0, 200) + "...";
  return s;
}

bool IsDirectiveKey(std::string_view key) {
  return key == kPatchDirective || key == kRetainKeys ||
         key.starts_with(kDeleteFromPrimitiveList) || key.starts_with(kSetElementOrder);
}

// Reads a map's "$patch" value: "" when absent.
Result<std::string> PatchDirectiveOf(const json& map, const std::string& path) {
  auto it = map.find(kPatchDirective);
  if (it == map.end()) return std::string();
  if (!it->is_string()) {
    return Status::InvalidArgument("$patch must be a string, got " + BriefPatchValue(*it), path);
  }
  std::string d = it->get<std::string>();
  if (d != "replace" && d != "delete" && d != "merge") {
    return Status::InvalidArgument("unknown patch type: " + d + " in map: " + BriefPatchValue(map),
                                   path);
  }
  return d;
}

class Merger {
 public:
  explicit Merger(const PatchMeta& meta) : meta_(meta) {}

  // Merges the object `patch` into the object `original`. Sets *deleted when the patch asks to
  // delete this map ("$patch": "delete").
  Status MergeMap(json& original, const json& patch, const std::string& path, bool* deleted) {
    *deleted = false;
    SLUICE_ASSIGN_OR_RETURN(std::string directive, PatchDirectiveOf(patch, path));
    if (directive == "delete") {
      *deleted = true;
      return Status::Ok();
    }
    if (directive == "replace") original = json::object();
    if (!original.is_object()) original = json::object();

    if (auto it = patch.find(kRetainKeys); it != patch.end()) {
      SLUICE_RETURN_IF_ERROR(RetainKeys(original, patch, *it, path));
    }
    for (const auto& [key, value] : patch.items()) {
      if (!std::string_view(key).starts_with(kDeleteFromPrimitiveList)) continue;
      std::string field = key.substr(kDeleteFromPrimitiveList.size());
      if (!value.is_array()) {
        return Status::InvalidArgument("invalid patch format of primitive list", Join(path, field));
      }
      auto target = original.find(field);
      if (target == original.end() || !target->is_array()) continue;
      json kept = json::array();
      for (json& item : *target) {
        if (std::find(value.begin(), value.end(), item) == value.end()) {
          kept.push_back(std::move(item));
        }
      }
      *target = std::move(kept);
    }
    for (const auto& [key, value] : patch.items()) {
      if (IsDirectiveKey(key)) continue;
      std::string child_path = Join(path, key);
      if (value.is_null()) {
        original.erase(key);
        continue;
      }
      if (value.is_object()) {
        auto it = original.find(key);
        json child = it != original.end() && it->is_object() ? std::move(*it) : json::object();
        bool child_deleted = false;
        SLUICE_RETURN_IF_ERROR(MergeMap(child, value, child_path, &child_deleted));
        if (child_deleted) {
          original.erase(key);
        } else {
          original[key] = std::move(child);
        }
        continue;
      }
      if (value.is_array()) {
        auto it = original.find(key);
        json child = it != original.end() && it->is_array() ? std::move(*it) : json::array();
        SLUICE_RETURN_IF_ERROR(MergeList(child, value, child_path));
        original[key] = std::move(child);
        continue;
      }
      original[key] = value;
    }
    for (const auto& [key, value] : patch.items()) {
      if (!std::string_view(key).starts_with(kSetElementOrder)) continue;
      std::string field = key.substr(kSetElementOrder.size());
      if (!value.is_array()) {
        return Status::InvalidArgument("invalid patch format of setElementOrder list",
                                       Join(path, field));
      }
      auto target = original.find(field);
      if (target != original.end() && target->is_array()) {
        Reorder(*target, value, Join(path, field));
      }
    }
    return Status::Ok();
  }

 private:
  Status RetainKeys(json& original, const json& patch, const json& retain,
                    const std::string& path) {
    if (!retain.is_array() ||
        !std::all_of(retain.begin(), retain.end(), [](const json& k) { return k.is_string(); })) {
      return Status::InvalidArgument("invalid patch format of retainKeys", path);
    }
    auto retained = [&](const std::string& key) {
      return std::find(retain.begin(), retain.end(), json(key)) != retain.end();
    };
    for (const auto& [key, value] : patch.items()) {
      if (!IsDirectiveKey(key) && !value.is_null() && !retained(key)) {
        return Status::Unprocessable("patch content doesn't match retainKeys list: " + key +
                                         " is not in " + BriefPatchValue(retain),
                                     path);
      }
    }
    std::vector<std::string> drop;
    for (const auto& [key, value] : original.items()) {
      if (!retained(key)) drop.push_back(key);
    }
    for (const std::string& key : drop) original.erase(key);
    return Status::Ok();
  }

  // Merges the array `patch` into the array `original` by the strategy for `path`.
  Status MergeList(json& original, const json& patch, const std::string& path) {
    auto key_it = meta_.merge_keys.find(path);
    bool is_set = meta_.set_lists.contains(path);
    if (key_it == meta_.merge_keys.end() && !is_set) {
      original = patch;
      return Status::Ok();
    }
    // A {"$patch": "replace"} item (alone in its map) replaces the list with the other items.
    json items = json::array();
    bool replace = false;
    for (const json& item : patch) {
      if (item.is_object() && item.size() == 1 && item.contains(kPatchDirective)) {
        SLUICE_ASSIGN_OR_RETURN(std::string d, PatchDirectiveOf(item, path));
        if (d == "replace") {
          replace = true;
          continue;
        }
      }
      items.push_back(item);
    }
    if (replace) original = json::array();

    if (is_set && key_it == meta_.merge_keys.end()) {
      for (const json& item : items) {
        if (item.is_object() || item.is_array()) {
          return Status::InvalidArgument(
              "a list merged as a set takes primitive values, got " + BriefPatchValue(item), path);
        }
        if (std::find(original.begin(), original.end(), item) == original.end()) {
          original.push_back(item);
        }
      }
      return Status::Ok();
    }

    const std::string& merge_key = key_it->second;
    for (const json& item : items) {
      if (!item.is_object()) {
        return Status::InvalidArgument("list items must be objects with merge key \"" + merge_key +
                                           "\", got " + BriefPatchValue(item),
                                       path);
      }
      auto key_value = item.find(merge_key);
      if (key_value == item.end()) {
        return Status::InvalidArgument(
            "map: " + BriefPatchValue(item) + " does not contain declared merge key: " + merge_key,
            path);
      }
      auto match = [&](const json& existing) {
        if (!existing.is_object()) return false;
        auto k = existing.find(merge_key);
        return k != existing.end() && *k == *key_value;
      };
      SLUICE_ASSIGN_OR_RETURN(std::string directive, PatchDirectiveOf(item, path));
      if (directive == "delete") {
        json kept = json::array();
        for (json& existing : original) {
          if (!match(existing)) kept.push_back(std::move(existing));
        }
        original = std::move(kept);
        continue;
      }
      auto found = std::find_if(original.begin(), original.end(), match);
      bool deleted = false;
      if (found != original.end()) {
        SLUICE_RETURN_IF_ERROR(MergeMap(*found, item, path, &deleted));
      } else {
        json fresh = json::object();
        SLUICE_RETURN_IF_ERROR(MergeMap(fresh, item, path, &deleted));
        original.push_back(std::move(fresh));
      }
    }
    return Status::Ok();
  }

  // Puts the items `order` names into the positions those items hold now, in `order`'s order.
  void Reorder(json& list, const json& order, const std::string& path) {
    auto key_it = meta_.merge_keys.find(path);
    auto rank = [&](const json& item) -> std::ptrdiff_t {
      for (size_t i = 0; i < order.size(); ++i) {
        const json& o = order[i];
        if (key_it == meta_.merge_keys.end()) {
          if (o == item) return static_cast<std::ptrdiff_t>(i);
          continue;
        }
        if (!o.is_object() || !item.is_object()) continue;
        auto a = o.find(key_it->second);
        auto b = item.find(key_it->second);
        if (a != o.end() && b != item.end() && *a == *b) return static_cast<std::ptrdiff_t>(i);
      }
      return -1;
    };
    std::vector<size_t> slots;
    std::vector<std::pair<std::ptrdiff_t, json>> named;
    for (size_t i = 0; i < list.size(); ++i) {
      std::ptrdiff_t r = rank(list[i]);
      if (r < 0) continue;
      slots.push_back(i);
      named.emplace_back(r, std::move(list[i]));
    }
    std::stable_sort(named.begin(), named.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t i = 0; i < slots.size(); ++i) list[slots[i]] = std::move(named[i].second);
  }

  const PatchMeta& meta_;
};

}  // namespace

namespace {

// A PodSpec's merge keys, under `spec` ("spec" for a Pod, "spec.template.spec" for workloads).
void AddPodSpecMergeKeys(PatchMeta& meta, const std::string& spec) {
  for (const char* list : {".containers", ".initContainers", ".ephemeralContainers"}) {
    const std::string p = spec + list;
    meta.merge_keys[p] = "name";
    meta.merge_keys[p + ".env"] = "name";
    meta.merge_keys[p + ".ports"] = "containerPort";
    meta.merge_keys[p + ".volumeMounts"] = "mountPath";
    meta.merge_keys[p + ".volumeDevices"] = "devicePath";
    meta.merge_keys[p + ".resizePolicy"] = "resourceName";
  }
  meta.merge_keys[spec + ".volumes"] = "name";
  meta.merge_keys[spec + ".imagePullSecrets"] = "name";
  meta.merge_keys[spec + ".hostAliases"] = "ip";
  meta.merge_keys[spec + ".schedulingGates"] = "name";
  meta.merge_keys[spec + ".topologySpreadConstraints"] = "topologyKey";
}

}  // namespace

PatchMeta DefaultPatchMeta(std::string_view kind) {
  PatchMeta meta;
  meta.merge_keys["metadata.ownerReferences"] = "uid";
  meta.set_lists.insert("metadata.finalizers");
  if (kind == "Deployment" || kind == "ReplicaSet") {
    // `kubectl set image` patches one container of the template by name.
    AddPodSpecMergeKeys(meta, "spec.template.spec");
    meta.merge_keys["spec.template.metadata.ownerReferences"] = "uid";
    meta.merge_keys["status.conditions"] = "type";
  } else if (kind == "Pod") {
    AddPodSpecMergeKeys(meta, "spec");
    meta.merge_keys["status.conditions"] = "type";
    meta.merge_keys["status.podIPs"] = "ip";
    meta.merge_keys["status.hostIPs"] = "ip";
  } else if (kind == "Service") {
    meta.merge_keys["spec.ports"] = "port";
    meta.merge_keys["status.conditions"] = "type";
  } else if (kind == "Node") {
    meta.merge_keys["status.conditions"] = "type";
    meta.merge_keys["status.addresses"] = "type";
    meta.set_lists.insert("spec.podCIDRs");
  } else if (kind == "PersistentVolumeClaim") {
    meta.merge_keys["status.conditions"] = "type";
  } else if (kind == "ServiceAccount") {
    meta.merge_keys["secrets"] = "name";
  }
  return meta;
}

Result<json> ApplyStrategicMergePatch(const json& target, const json& patch,
                                      const PatchMeta& meta) {
  if (!target.is_object() || !patch.is_object()) {
    return Status::InvalidArgument("invalid JSON document");
  }
  try {
    json result = target;
    bool deleted = false;
    SLUICE_RETURN_IF_ERROR(Merger(meta).MergeMap(result, patch, "", &deleted));
    if (deleted) return json::object();
    return result;
  } catch (const json::exception& e) {
    return Status::Internal(std::string("strategic merge patch: ") + e.what());
  }
}

}  // namespace sluice::apiserver
