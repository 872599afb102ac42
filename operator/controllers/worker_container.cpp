#include "operator/controllers/worker_container.h"

namespace sluice::controllers {

using nlohmann::json;

json WorkerContainer(const WorkerContainerSpec& spec) {
  json readiness = {{"path", "/readyz"}, {"port", "http"}};
  json liveness = {{"path", "/healthz"}, {"port", "http"}};
  if (spec.https) {
    readiness["scheme"] = "HTTPS";
    liveness["scheme"] = "HTTPS";
  }
  json ports =
      json::array({{{"name", "http"}, {"containerPort", spec.http_port}, {"protocol", "TCP"}}});
  for (const json& p : spec.extra_ports) ports.push_back(p);
  return {
      {"name", spec.name},
      {"image", spec.image},
      {"imagePullPolicy", spec.pull_policy},
      {"args", spec.args},
      {"env", spec.env},
      {"ports", ports},
      {"readinessProbe", {{"httpGet", readiness}, {"periodSeconds", 2}, {"failureThreshold", 3}}},
      {"livenessProbe", {{"httpGet", liveness}, {"periodSeconds", 10}, {"failureThreshold", 6}}},
      {"resources", spec.resources},
      {"volumeMounts", spec.mounts}};
}

}  // namespace sluice::controllers
