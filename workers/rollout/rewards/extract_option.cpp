#include "workers/rollout/rewards/extract_option.h"

#include <string>

#include "common/json/options_reader.h"

namespace sluice::rollout {

Result<bool> ParseExtractOption(const nlohmann::json& options) {
  bool extract = true;
  const auto read = [&]() -> Status {
    SLUICE_ASSIGN_OR_RETURN(JsonOptions reader, JsonOptions::Create(options));
    SLUICE_RETURN_IF_ERROR(reader.Bool("extract", extract));
    return reader.RejectUnknown();
  };
  SLUICE_RETURN_IF_ERROR(PrefixField(read(), "reward.options"));
  return extract;
}

}  // namespace sluice::rollout
