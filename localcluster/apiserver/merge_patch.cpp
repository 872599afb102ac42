#include "localcluster/apiserver/merge_patch.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

// RFC 7386 section 2, MergePatch(Target, Patch), in place on `target`.
void MergeInto(json& target, const json& patch) {
  if (!patch.is_object()) {
    target = patch;
    return;
  }
  if (!target.is_object()) target = json::object();
  for (const auto& [key, value] : patch.items()) {
    if (value.is_null()) {
      target.erase(key);
    } else {
      MergeInto(target[key], value);
    }
  }
}

}  // namespace

Result<json> ApplyMergePatch(const json& target, const json& patch) {
  try {
    json result = target;
    MergeInto(result, patch);
    return result;
  } catch (const json::exception& e) {
    return Status::Internal(std::string("merge patch: ") + e.what());
  }
}

}  // namespace sluice::apiserver
