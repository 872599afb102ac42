#include "localcluster/node/node_flags.h"

#include <chrono>

#include "common/service/service_main.h"

namespace sluice::node {

config::Spec NodeFlagSpec() {
  using config::Option;
  using std::chrono::seconds;
  config::Spec spec("SLUICE_NODE");
  spec.Add(Option::String("kubeconfig", "", "Kubeconfig of the API server (sluice up writes it).")
               .Required())
      .Add(Option::String("cluster-config", "",
                          "YAML file describing the simulated nodes (examples/local-cluster.yaml).")
               .Required())
      .Add(Option::String("state-dir", ".sluice/node",
                          "Where pods' directories, PVC directories and the hosts file live."))
      .Add(Option::String("image-map", "",
                          "YAML image map (image -> executable); empty: sluice/<name> images run "
                          "<bin-dir>/sluice-<name>."))
      .Add(Option::String("bin-dir", "",
                          "Directory of the sluice-* binaries; empty: this binary's directory."))
      .Add(Option::String("name", "sluice-node",
                          "This agent's name; its Nodes carry the label sluice.dev/node-agent."))
      .Add(Option::String("address", "127.0.0.1",
                          "Address of the kubelet endpoint (logs, health, metrics); published as "
                          "the Nodes' InternalIP."))
      .Add(Option::Int("port", 10250, "Port of the kubelet endpoint; 0 picks a free one.")
               .Min(0)
               .Max(65535))
      .Add(
          Option::String("pod-ip-prefix", "127.1",
                         "Pods get addresses <prefix>.x.y (a /16 of 127.0.0.0/8); agents sharing a "
                         "machine need different prefixes."))
      .Add(Option::String("prometheus-targets-file", "",
                          "Keep the Prometheus file_sd targets of the pods annotated "
                          "prometheus.io/scrape=true in this file (sluice up --prometheus); empty: "
                          "none."))
      .Add(Option::Duration("heartbeat-interval", seconds(10),
                            "How often each node's Lease and status are renewed."))
      .Add(Option::Duration("node-monitor-grace-period", seconds(40),
                            "A node whose Lease is older than this becomes Ready=Unknown and "
                            "unreachable."))
      .Add(Option::Duration("pod-eviction-timeout", seconds(30),
                            "How long pods of an unreachable node keep their phase before they "
                            "are marked Failed (NodeLost)."))
      .Add(Option::Duration("crash-backoff", seconds(10),
                            "CrashLoopBackOff's first delay (doubles per restart)."))
      .Add(Option::Duration("crash-backoff-max", seconds(300), "CrashLoopBackOff's longest delay."))
      .Add(Option::Duration("sync-period", std::chrono::milliseconds(200),
                            "How often scheduling, pods and services are reconciled."))
      .Add(Option::Duration("shutdown-grace", seconds(10),
                            "On SIGTERM, how long containers get between SIGTERM and SIGKILL."))
      .Add(Option::Enum("log-level", {"debug", "info", "warn", "error"}, "info",
                        "Minimum level of the JSON log lines on stderr."));
  return spec;
}

}  // namespace sluice::node
