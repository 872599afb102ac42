// NodeAgent: the scheduler, the kubelets and the small controllers of the local cluster, for the
// simulated nodes of one cluster config (docs/local-cluster.md, "sluice-node").
//
// - Registration and heartbeats: each configured node is created (or its labels, capacity and
//   addresses merged into the stored Node), and every `heartbeat_interval` its Lease in
//   kube-node-lease is renewed and its status conditions refreshed.
// - Node lifecycle: a node whose Lease is older than `node_monitor_grace`, and which a completed
//   heartbeat round skipped (node_liveness.h: a slow agent loses no node), goes Ready=Unknown
//   with the node.kubernetes.io/unreachable taints; `pod_eviction_timeout` later its pods are
//   marked Failed (reason NodeLost), freeing their capacity. A node annotated
//   sluice.dev/simulated-failure=true stops heartbeating and its processes are SIGKILLed, as if
//   the machine died (`sluice node fail`).
// - Scheduling: pending pods without a nodeName, oldest first, bound (pods/binding) to the node
//   SchedulePod picks; one that fits nowhere gets PodScheduled=False/Unschedulable with kube's
//   message and a FailedScheduling event, and is retried on every pass.
// - Kubelet: a PodWorker per pod bound to a live node here (pod IP from 127.1.0.0/16, GPU device
//   indices per node, the pod's service-account token from the TokenRequest API).
// - Workloads: the Deployment and ReplicaSet controllers (workload_controller.h).
// - Services: a ClusterIP for each ClusterIP Service without one, Endpoints for Services with a
//   selector, and the hosts file (`<state>/hosts`) the pods resolve names with.
// - Scrape targets (with `prometheus_targets_file`): the Prometheus file_sd targets of its pods
//   annotated prometheus.io/scrape (scrape_targets.h), rewritten when they change.
//
// Ownership: owns its informers, threads and workers; `rest` must outlive it.
// Thread safety: Start/Stop from one thread; the query methods from any.
#pragma once

#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/logging/logger.h"
#include "common/metrics/registry.h"
#include "common/process/cancellation.h"
#include "common/status.h"
#include "kube/dynamic_client.h"
#include "kube/event_recorder.h"
#include "kube/informer.h"
#include "localcluster/node/cluster_config.h"
#include "localcluster/node/image_map.h"
#include "localcluster/node/pod_worker.h"
#include "localcluster/node/workload_controller.h"

namespace sluice::node {

struct NodeAgentOptions {
  std::string agent_name = "sluice-node";
  ClusterConfig cluster;
  ImageMap image_map;
  std::filesystem::path state_dir;  // pods/, claims/, hosts.
  std::filesystem::path bin_dir;    // Where sluice/<name> images' binaries are.
  KubeletEndpoint endpoint;         // Published on the Nodes (log requests come here).
  std::vector<std::pair<std::string, std::string>> base_env;  // Every container's first vars.
  // The API server's CA bundle (PEM), written as ca.crt beside each pod's service-account token.
  std::string api_ca_pem;
  // Pod IPs are <prefix>.x.y; two agents on one machine need different prefixes.
  std::string pod_ip_prefix = "127.1";
  std::chrono::milliseconds heartbeat_interval{10000};
  std::chrono::milliseconds node_monitor_grace{40000};
  std::chrono::milliseconds pod_eviction_timeout{30000};
  std::chrono::milliseconds sync_period{200};  // Scheduling and controller passes.
  std::chrono::milliseconds backoff_base{10000};
  std::chrono::milliseconds backoff_max{300000};
  std::chrono::milliseconds shutdown_grace{10000};  // Containers get this on agent shutdown.
  // Where to keep the file_sd target list of the pods (`sluice up --prometheus` passes
  // DIR/prometheus/targets/pods.json); empty: not written.
  std::filesystem::path prometheus_targets_file;
  // sluice_node_* metrics go here; null: none. Must outlive the agent.
  metrics::Registry* registry = nullptr;
  // The time of heartbeats, node liveness, eviction, the pods' crash back-off and probes, and
  // the timestamps written; null: the system clock. Must outlive the agent. The loops still wait in
  // real time (sync_period, heartbeat_interval), so a test with a FakeClock advances it and lets a
  // pass run.
  Clock* clock = nullptr;
};

class NodeAgent {
 public:
  NodeAgent(kube::RestClient& rest, NodeAgentOptions options);
  ~NodeAgent();
  NodeAgent(const NodeAgent&) = delete;
  NodeAgent& operator=(const NodeAgent&) = delete;

  // Registers the nodes, starts the informers and loops. Errors: a node cannot be registered.
  Status Start();
  // Stops the loops and the pods' processes (SIGTERM, shutdown_grace, SIGKILL); pods stay in the
  // API as they are (a restarted agent restarts their containers).
  void Stop();
  // Nodes registered and caches synced.
  bool Ready() const { return ready_.load(); }

  // The log file of a container: the current run, or the one before with `previous`.
  Result<std::filesystem::path> LogFile(const std::string& ns, const std::string& pod,
                                        const std::string& container, bool previous) const;
  // Whether the container's current process still runs (a follower stops when it ends).
  bool ContainerRunning(const std::string& ns, const std::string& pod,
                        const std::string& container) const;

  const std::filesystem::path& hosts_file() const { return hosts_file_; }

 private:
  struct NodeRuntime;
  Status RegisterNode(const NodeSpec& spec);
  void HeartbeatLoop();
  void SyncLoop();
  void Schedule();
  void SyncWorkers();
  void SyncServices();
  void SyncScrapeTargets();
  void MonitorNodes();
  std::vector<nlohmann::json> Pods() const;
  PodWorkerContext MakeContext();
  void Event(const nlohmann::json& object, const std::string& type, const std::string& reason,
             const std::string& message);
  // The clock's wall time as Kubernetes writes it: RFC 3339 seconds, and micro-time for Leases.
  std::string Now() const;
  std::string MicroNow() const;

  kube::RestClient& rest_;
  NodeAgentOptions options_;
  Clock& clock_;
  log::Logger log_;
  kube::DynamicClient client_;
  kube::EventRecorder events_;
  std::filesystem::path hosts_file_;
  std::string last_hosts_text_;
  std::string last_targets_text_;  // These two: the sync loop only (and Start, before it).
  bool targets_write_failed_ = false;

  std::unique_ptr<kube::Informer> pods_, nodes_, services_, endpoints_, config_maps_, secrets_;
  std::unique_ptr<WorkloadController> workloads_;  // Deployments and ReplicaSets.
  std::vector<kube::Informer*> informers_;
  CancellationSource stop_;
  std::vector<std::thread> threads_;
  std::atomic<bool> ready_{false};

  PodWorkerContext context_;
  mutable std::mutex mu_;                           // Guards the fields below.
  std::map<std::string, NodeRuntime> nodes_state_;  // By node name.
  // When the newest completed heartbeat round began (node_liveness.h); epoch before the first.
  Clock::MonoTime heartbeat_round_start_{};
  std::map<std::string, std::unique_ptr<PodWorker>> workers_;  // By pod uid.
  std::map<std::string, std::string> worker_node_;             // uid -> node name.
  std::map<std::string, std::vector<int>> gpu_indices_;        // uid -> simulated GPU indices.
  std::set<std::string> used_ips_;
  std::map<std::string, std::string> unschedulable_message_;  // uid -> last message written.

  // Metrics (null without a registry).
  metrics::CounterFamily* scheduling_ = nullptr;  // {result}
  metrics::CounterFamily* heartbeat_errors_ = nullptr;
  metrics::CallbackFamily* pods_gauge_ = nullptr;
};

}  // namespace sluice::node
