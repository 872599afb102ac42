#include "workers/rollout/rewards/extract_option.h"

#include <string>

namespace sluice::rollout {

Result<bool> ParseExtractOption(const nlohmann::json& options, std::string_view reward) {
  if (!options.is_object()) {
    return Status::InvalidArgument("must be an object, got " + std::string(options.type_name()),
                                   "reward.options");
  }
  bool extract = true;
  for (const auto& [key, value] : options.items()) {
    const std::string field = "reward.options." + key;
    if (key != "extract") {
      return Status::InvalidArgument(
          "unknown option for " + std::string(reward) + "; the only one is \"extract\"", field);
    }
    if (!value.is_boolean()) {
      return Status::InvalidArgument("must be a boolean, got " + std::string(value.type_name()),
                                     field);
    }
    extract = value.get<bool>();
  }
  return extract;
}

}  // namespace sluice::rollout
