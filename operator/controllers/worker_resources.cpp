#include "operator/controllers/worker_resources.h"

#include <cstdint>
#include <string>

namespace sluice::controllers {

using nlohmann::json;

namespace {

// A Kubernetes quantity as the string form the API server returns.
json Quantity(const json& value) { return value.is_string() ? value : json(value.dump()); }

}  // namespace

json WorkerResources(const json& resources, const DefaultRequests& defaults) {
  const json res = resources.is_object() ? resources : json::object();
  json limits = json::object();
  if (res.contains("cpu")) limits["cpu"] = Quantity(res["cpu"]);
  if (res.contains("memory")) limits["memory"] = Quantity(res["memory"]);
  const int64_t gpus = res.value("gpus", int64_t{0});
  if (gpus > 0) {
    limits[res.value("gpuResourceName", std::string("nvidia.com/gpu"))] = std::to_string(gpus);
  }
  json requests = limits;
  if (!requests.contains("cpu")) requests["cpu"] = defaults.cpu;
  if (!requests.contains("memory")) requests["memory"] = defaults.memory;
  json out = {{"requests", requests}};
  if (!limits.empty()) out["limits"] = limits;
  return out;
}

}  // namespace sluice::controllers
