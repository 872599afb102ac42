#include "operator/controllers/abandoned_termination.h"

#include <chrono>
#include <string>

#include "common/time_format.h"

namespace sluice::controllers {

using nlohmann::json;

bool TerminationAbandoned(const json& pod, int64_t now_seconds, int64_t grace_seconds) {
  const json deletion = pod.value("/metadata/deletionTimestamp"_json_pointer, json());
  if (!deletion.is_string()) return false;
  Result<Clock::WallTime> at = ParseTime(deletion.get<std::string>());
  if (!at.ok()) return false;
  for (const json& c : pod.value("/status/conditions"_json_pointer, json::array())) {
    if (c.value("type", "") == "Ready" && c.value("status", "") == "True") return false;
  }
  const int64_t deadline =
      std::chrono::duration_cast<std::chrono::seconds>(at->time_since_epoch()).count();
  return now_seconds - deadline >= grace_seconds;
}

}  // namespace sluice::controllers
