#include "operator/controllers/trainerjob/final_weights.h"

#include <algorithm>

namespace sluice::controllers {

using nlohmann::json;

std::vector<std::string> PoolsWithoutFinalWeights(const std::vector<json>& pools,
                                                  const std::string& policy,
                                                  int64_t final_version) {
  std::vector<std::string> out;
  for (const json& pool : pools) {
    if (pool.contains("/metadata/deletionTimestamp"_json_pointer)) continue;
    const json hosted = pool.value("/spec/policies"_json_pointer, json::array());
    if (std::find(hosted.begin(), hosted.end(), json(policy)) == hosted.end()) continue;
    const int64_t replicas = pool.value("/status/replicas"_json_pointer, int64_t{0});
    if (replicas <= 0) continue;
    const std::string name = pool.value("/metadata/name"_json_pointer, "");
    const int64_t ready = pool.value("/status/readyReplicas"_json_pointer, int64_t{0});
    if (ready < replicas) {
      out.push_back(name + " (" + std::to_string(replicas - ready) + " of " +
                    std::to_string(replicas) + " replicas not ready)");
      continue;
    }
    int64_t version = -1;
    for (const json& p : pool.value("/status/policies"_json_pointer, json::array())) {
      if (p.value("name", "") == policy && p.contains("version") &&
          p["version"].is_number_integer()) {
        version = p["version"].get<int64_t>();
      }
    }
    if (version < final_version) {
      out.push_back(name + " (version " + (version < 0 ? "unknown" : std::to_string(version)) +
                    " of " + std::to_string(final_version) + ")");
    }
  }
  return out;
}

bool KeepRanksForFinalWeights(const std::vector<std::string>& lagging, int64_t completion_s,
                              int64_t now_s) {
  if (lagging.empty() || completion_s <= 0) return false;
  return now_s < completion_s + kFinalWeightsGrace.count();
}

}  // namespace sluice::controllers
