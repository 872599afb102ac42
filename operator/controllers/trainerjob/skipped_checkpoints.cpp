#include "operator/controllers/trainerjob/skipped_checkpoints.h"

#include <algorithm>
#include <string>

namespace sluice::controllers {

SkippedCheckpointsMerge MergeSkippedCheckpoints(const nlohmann::json& told,
                                                const nlohmann::json& reported) {
  SkippedCheckpointsMerge out;
  if (told.is_array()) out.status = told;
  if (!reported.is_array()) return out;
  for (const nlohmann::json& c : reported) {
    if (!c.is_object() || !c.contains("step") || !c["step"].is_number_integer()) continue;
    const nlohmann::json& reason = c.contains("reason") ? c["reason"] : nlohmann::json();
    const nlohmann::json entry = {
        {"step", c["step"]},
        {"reason", reason.is_string() ? reason.get<std::string>().substr(0, kMaxSkippedReason)
                                      : std::string()}};
    if (std::find(out.status.begin(), out.status.end(), entry) != out.status.end()) continue;
    out.status.push_back(entry);
    out.fresh.push_back(entry);
  }
  while (out.status.size() > kMaxSkippedCheckpoints) out.status.erase(out.status.begin());
  return out;
}

}  // namespace sluice::controllers
