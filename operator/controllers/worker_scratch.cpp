#include "operator/controllers/worker_scratch.h"

namespace sluice::controllers {

using nlohmann::json;

json EmptyDirVolume(const std::string& name) {
  return {{"name", name}, {"emptyDir", json::object()}};
}

json WritableMount(const std::string& name, const std::string& path) {
  return {{"name", name}, {"mountPath", path}};
}

json ScratchEnv(bool cuda) {
  json env = json::array({{{"name", "TMPDIR"}, {"value", kScratchDir}}});
  if (cuda) env.push_back({{"name", "CUDA_CACHE_PATH"}, {"value", kCudaCacheDir}});
  return env;
}

}  // namespace sluice::controllers
