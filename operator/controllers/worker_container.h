// WorkerContainer: the container of a Sluice worker pod (dataflow, rollout replica, trainer
// rank), which every worker serves the same way (the worker contract: /healthz, /readyz and its
// API on one HTTP port named "http"):
//
//   ports           "http" (TCP) first, then the worker's extra named ports (the trainer's
//                   rendezvous)
//   readinessProbe  GET /readyz on "http" every 2 s, unready after 3 failures: a worker is ready
//                   once it can serve (models loaded, gang formed, log replayed)
//   livenessProbe   GET /healthz on "http" every 10 s, restarted after 6 failures (a minute), so
//                   a long model load or log replay is not mistaken for a hang
//
// The caller gives the name, image, pull policy, args, env, resources and mounts.
//
// Thread safety: a pure function.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace sluice::controllers {

struct WorkerContainerSpec {
  std::string name;  // "dataflow", "rollout", "trainer".
  std::string image;
  std::string pull_policy;  // imagePullPolicy.
  nlohmann::json args = nlohmann::json::array();
  nlohmann::json env = nlohmann::json::array();
  int32_t http_port = 8080;
  // More ports, each {"name", "containerPort", "protocol"}.
  nlohmann::json extra_ports = nlohmann::json::array();
  nlohmann::json resources = nlohmann::json::object();
  nlohmann::json mounts = nlohmann::json::array();  // volumeMounts.
  bool https = false;  // The port serves TLS: the probes use scheme HTTPS.
};

nlohmann::json WorkerContainer(const WorkerContainerSpec& spec);

}  // namespace sluice::controllers
