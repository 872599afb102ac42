#include "localcluster/node/node_agent.h"

#include <signal.h>

#include <algorithm>
#include <fstream>

#include "common/file/atomic_file.h"
#include "common/json/fields.h"
#include "common/time_format.h"
#include "localcluster/node/node_liveness.h"
#include "localcluster/node/resource_quantity.h"
#include "localcluster/node/scheduling.h"
#include "localcluster/node/scrape_targets.h"
#include "localcluster/node/service_account_volume.h"
#include "localcluster/node/service_records.h"

namespace sluice::node {

using nlohmann::json;

namespace {

const kube::GroupVersionResource kPods{"", "v1", "pods", true};
const kube::GroupVersionResource kNodes{"", "v1", "nodes", false};
const kube::GroupVersionResource kServices{"", "v1", "services", true};
const kube::GroupVersionResource kEndpoints{"", "v1", "endpoints", true};
const kube::GroupVersionResource kConfigMaps{"", "v1", "configmaps", true};
const kube::GroupVersionResource kSecrets{"", "v1", "secrets", true};
const kube::GroupVersionResource kServiceAccounts{"", "v1", "serviceaccounts", true};
const kube::GroupVersionResource kLeases{"coordination.k8s.io", "v1", "leases", true};

constexpr char kUnreachableTaint[] = "node.kubernetes.io/unreachable";

bool Terminal(const json& pod) {
  const std::string phase = StringAt(pod, "/status/phase");
  return phase == "Succeeded" || phase == "Failed";
}

bool Deleting(const json& obj) { return obj.contains("/metadata/deletionTimestamp"_json_pointer); }

bool HasUnreachableTaint(const json& node) {
  for (const json& t : node.value("/spec/taints"_json_pointer, json::array())) {
    if (t.value("key", "") == kUnreachableTaint) return true;
  }
  return false;
}

bool SimulatedFailure(const json& node) {
  return StringAt(node, "/metadata/annotations/sluice.dev~1simulated-failure") == "true";
}

// Write then rename, so a reader (a pod's resolver, Prometheus) never sees half a file.
bool ReplaceFile(const std::filesystem::path& path, const std::string& text) {
  return file::WriteFileAtomic(path, text, 0644).ok();
}

int64_t GpuRequest(const json& pod) {
  Result<ResourceList> requests = PodRequests(pod);
  if (!requests.ok()) return 0;
  auto it = requests->find(kGpuResource);
  return it == requests->end() ? 0 : (it->second + 999) / 1000;
}

}  // namespace

struct NodeAgent::NodeRuntime {
  NodeSpec spec;
  std::set<int> gpus_in_use;  // Indices 0..gpus-1.
  bool failed = false;        // Simulated failure: no heartbeats, processes killed.
  Clock::MonoTime last_heartbeat{};
  std::optional<Clock::MonoTime> unreachable_since;
};

NodeAgent::NodeAgent(kube::RestClient& rest, NodeAgentOptions options)
    : rest_(rest),
      options_(std::move(options)),
      clock_(ClockOrSystem(options_.clock)),
      log_("node"),
      client_(rest),
      events_(client_, kube::EventRecorderOptions{"kubelet", "", 1.0, 25, 4096, nullptr}) {
  hosts_file_ = options_.state_dir / "hosts";
  for (const NodeSpec& spec : options_.cluster.nodes) {
    NodeRuntime& n = nodes_state_[spec.name];
    n.spec = spec;
    n.last_heartbeat = clock_.Now();  // Registration counts as one.
  }
  auto make = [&](const kube::GroupVersionResource& gvr) {
    auto informer = std::make_unique<kube::Informer>(client_.Resource(gvr));
    informers_.push_back(informer.get());
    return informer;
  };
  pods_ = make(kPods);
  nodes_ = make(kNodes);
  services_ = make(kServices);
  endpoints_ = make(kEndpoints);
  config_maps_ = make(kConfigMaps);
  secrets_ = make(kSecrets);
  WorkloadControllerOptions workload_options;
  workload_options.pods = pods_.get();
  workloads_ = std::make_unique<WorkloadController>(rest_, workload_options);
  for (kube::Informer* informer : workloads_->informers()) informers_.push_back(informer);
  context_ = MakeContext();
  if (options_.registry != nullptr) {
    metrics::Registry& r = *options_.registry;
    scheduling_ = &r.AddCounter("sluice_node_scheduling_attempts_total",
                                "Scheduling attempts of pending pods, by result (scheduled, "
                                "unschedulable, error).",
                                {"result"});
    heartbeat_errors_ = &r.AddCounter("sluice_node_heartbeat_errors_total",
                                      "Lease renewals or node status updates that failed.");
    pods_gauge_ = &r.AddCallbackGauge("sluice_node_pods",
                                      "Pods whose containers this agent runs, by node.", {"node"});
    for (const NodeSpec& spec : options_.cluster.nodes) {
      pods_gauge_->Set({spec.name}, [this, name = spec.name] {
        std::lock_guard<std::mutex> lock(mu_);
        double n = 0;
        for (const auto& [_, node] : worker_node_) n += node == name ? 1 : 0;
        return n;
      });
    }
  }
}

NodeAgent::~NodeAgent() {
  Stop();
  if (pods_gauge_ != nullptr) {
    for (const NodeSpec& spec : options_.cluster.nodes) pods_gauge_->Remove({spec.name});
  }
}

PodWorkerContext NodeAgent::MakeContext() {
  PodWorkerContext ctx;
  ctx.bin_dir = options_.bin_dir;
  ctx.image_map = &options_.image_map;
  ctx.pods_dir = options_.state_dir / "pods";
  ctx.claims_dir = options_.state_dir / "claims";
  ctx.hosts_file = hosts_file_;
  ctx.base_env = options_.base_env;
  ctx.clock = &clock_;  // Crash back-off, probes, token refresh and status stamps.
  ctx.backoff_base = options_.backoff_base;
  ctx.backoff_max = options_.backoff_max;
  ctx.lookups = [this](const std::string& ns) {
    ObjectLookup lookup;
    lookup.config_map = [this, ns](const std::string& name) -> std::optional<json> {
      kube::ObjectPtr o = config_maps_->store().Get(ns + "/" + name);
      if (o) return *o;
      // The cache may lag a just-created object: ask the server.
      Result<json> live = client_.Resource(kConfigMaps, ns).Get(name);
      if (live.ok()) return *live;
      return std::nullopt;
    };
    lookup.secret = [this, ns](const std::string& name) -> std::optional<json> {
      kube::ObjectPtr o = secrets_->store().Get(ns + "/" + name);
      if (o) return *o;
      Result<json> live = client_.Resource(kSecrets, ns).Get(name);
      if (live.ok()) return *live;
      return std::nullopt;
    };
    return lookup;
  };
  ctx.write_status = [this](const json& pod, const json& status) -> Status {
    const std::string patch = json{{"status", status}}.dump();
    Result<json> r =
        client_.Resource(kPods, StringAt(pod, "/metadata/namespace"))
            .Patch(StringAt(pod, "/metadata/name"), kube::PatchType::kMerge, patch, {}, "status");
    return r.ok() ? Status::Ok() : r.status();
  };
  ctx.remove_pod = [this](const json& pod) -> Status {
    kube::DeleteOptions options;
    options.grace_period_seconds = 0;
    options.precondition_uid = StringAt(pod, "/metadata/uid");
    Result<json> r = client_.Resource(kPods, StringAt(pod, "/metadata/namespace"))
                         .Delete(StringAt(pod, "/metadata/name"), options);
    return r.ok() ? Status::Ok() : r.status();
  };
  ctx.event = [this](const json& pod, const std::string& type, const std::string& reason,
                     const std::string& message) { Event(pod, type, reason, message); };
  ctx.service_account = [this](const std::string& ns, const std::string& name) -> Result<json> {
    return client_.Resource(kServiceAccounts, ns).Get(name);
  };
  ctx.create_token = [this](const json& pod, const json& request) -> Result<json> {
    kube::RestRequest post;
    post.method = "POST";
    post.path = kube::ResourcePath(kServiceAccounts, PodNamespace(pod), PodServiceAccountName(pod),
                                   "token");
    post.body = request.dump();
    return rest_.DoJson(post);
  };
  ctx.api_ca_pem = options_.api_ca_pem;
  return ctx;
}

void NodeAgent::Event(const json& object, const std::string& type, const std::string& reason,
                      const std::string& message) {
  json involved = object;
  if (!involved.contains("kind")) involved["kind"] = "Pod";
  if (!involved.contains("apiVersion")) involved["apiVersion"] = "v1";
  Status s = events_.Record(involved, type, reason, message);
  if (!s.ok() && s.code() != StatusCode::kTooManyRequests) {
    log_.Debug("event not recorded", {{"reason", reason}, {"error", s.ToString()}});
  }
}

Status NodeAgent::RegisterNode(const NodeSpec& spec) {
  kube::ResourceClient nodes = client_.Resource(kNodes);
  const std::string now = Now();
  for (int attempt = 0; attempt < 5; ++attempt) {
    Result<json> existing = nodes.Get(spec.name);
    if (!existing.ok() && existing.status().code() == StatusCode::kNotFound) {
      Result<json> created =
          nodes.Create(NodeObject(spec, options_.agent_name, options_.endpoint, now));
      if (created.ok()) break;
      if (created.status().code() == StatusCode::kAlreadyExists) continue;
      return created.status();
    }
    if (!existing.ok()) return existing.status();
    json node = *existing;
    const json labels = NodeLabels(spec, options_.agent_name);
    for (const auto& [k, v] : labels.items()) node["metadata"]["labels"][k] = v;
    // Taints from the config are (re)applied; others (cordon, unreachable) are kept.
    json taints = json::array();
    for (const json& t : node.value("/spec/taints"_json_pointer, json::array())) {
      bool configured = false;
      for (const json& c : spec.taints) {
        if (c["key"] == t.value("key", json()) && c["effect"] == t.value("effect", json())) {
          configured = true;
        }
      }
      if (!configured) taints.push_back(t);
    }
    for (const json& c : spec.taints) taints.push_back(c);
    if (taints.empty()) {
      node["spec"].erase("taints");
    } else {
      node["spec"]["taints"] = taints;
    }
    Result<json> updated = nodes.Update(node);
    if (!updated.ok() && updated.status().code() == StatusCode::kConflict) continue;
    if (!updated.ok()) return updated.status();
    break;
  }
  return Status::Ok();
}

Status NodeAgent::Start() {
  std::error_code ec;
  std::filesystem::create_directories(options_.state_dir / "pods", ec);
  std::filesystem::create_directories(options_.state_dir / "claims", ec);
  if (!std::filesystem::exists(hosts_file_)) {
    std::ofstream(hosts_file_) << "# Written by sluice-node.\n";
  }
  for (const NodeSpec& spec : options_.cluster.nodes) {
    Status s = RegisterNode(spec);
    if (!s.ok()) {
      return Status(s.code(), "registering node " + spec.name + ": " + s.message());
    }
  }
  // Nodes this agent registered before that the config no longer has are removed.
  kube::ListOptions mine;
  mine.label_selector = std::string(kAgentLabel) + "=" + options_.agent_name;
  Result<kube::ObjectList> listed = client_.Resource(kNodes).List(mine);
  if (listed.ok()) {
    for (const kube::ObjectPtr& n : listed->items) {
      const std::string name = StringAt(*n, "/metadata/name");
      if (!nodes_state_.count(name)) {
        log_.Info("removing a node no longer in the cluster config", {{"node", name}});
        (void)client_.Resource(kNodes).Delete(name);
      }
    }
  }
  CancellationToken token = stop_.Token();
  for (kube::Informer* informer : informers_) {
    threads_.emplace_back([informer, token] { informer->Run(token); });
  }
  for (kube::Informer* informer : informers_) {
    if (!informer->WaitForSync(token)) return Status::Cancelled("stopped before the caches synced");
  }
  // Before Prometheus starts (it follows the agent in `sluice up`), so its file exists.
  SyncScrapeTargets();
  threads_.emplace_back([this] { HeartbeatLoop(); });
  threads_.emplace_back([this] { SyncLoop(); });
  ready_ = true;
  log_.Info("node agent started",
            {{"nodes", options_.cluster.nodes.size()}, {"kubelet_port", options_.endpoint.port}});
  return Status::Ok();
}

void NodeAgent::Stop() {
  if (stop_.IsCancelled() && threads_.empty()) return;
  ready_ = false;
  stop_.Cancel();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
  std::map<std::string, std::unique_ptr<PodWorker>> workers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    workers.swap(workers_);
  }
  for (auto& [_, w] : workers) w->Shutdown(options_.shutdown_grace);
  workers.clear();  // Joins each worker after its processes are gone.
}

std::string NodeAgent::Now() const { return FormatTime(clock_.WallNow()); }

std::string NodeAgent::MicroNow() const { return FormatMicroTime(clock_.WallNow()); }

std::vector<json> NodeAgent::Pods() const {
  std::vector<json> pods;
  for (const kube::ObjectPtr& p : pods_->store().List()) pods.push_back(*p);
  return pods;
}

void NodeAgent::HeartbeatLoop() {
  CancellationToken token = stop_.Token();
  kube::ResourceClient leases = client_.Resource(kLeases, "kube-node-lease");
  kube::ResourceClient nodes = client_.Resource(kNodes);
  do {
    const auto round_start = clock_.Now();
    for (const NodeSpec& spec : options_.cluster.nodes) {
      kube::ObjectPtr node = nodes_->store().Get(spec.name);
      if (node && SimulatedFailure(*node)) continue;
      const int64_t duration_s = std::max<int64_t>(
          1, std::chrono::duration_cast<std::chrono::seconds>(options_.node_monitor_grace).count());
      json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                    {"kind", "Lease"},
                    {"metadata", {{"name", spec.name}, {"namespace", "kube-node-lease"}}},
                    {"spec",
                     {{"holderIdentity", spec.name},
                      {"leaseDurationSeconds", duration_s},
                      {"renewTime", MicroNow()}}}};
      Result<json> existing = leases.Get(spec.name);
      bool renewed = false;
      if (existing.ok()) {
        json updated = *existing;
        updated["spec"] = lease["spec"];
        renewed = leases.Update(updated).ok();
      } else if (existing.status().code() == StatusCode::kNotFound) {
        renewed = leases.Create(lease).ok();
      }
      if (!renewed && heartbeat_errors_ != nullptr) heartbeat_errors_->WithLabels({}).Inc();
      const json old_conditions =
          node ? node->value("/status/conditions"_json_pointer, json::array()) : json::array();
      json status = NodeStatus(spec, options_.endpoint, Now(), old_conditions);
      Result<json> patched = nodes.Patch(spec.name, kube::PatchType::kMerge,
                                         json{{"status", status}}.dump(), {}, "status");
      if (!patched.ok() && patched.status().code() == StatusCode::kNotFound) {
        (void)RegisterNode(spec);
      }
      std::lock_guard<std::mutex> lock(mu_);
      nodes_state_[spec.name].last_heartbeat = clock_.Now();
    }
    std::lock_guard<std::mutex> lock(mu_);
    heartbeat_round_start_ = round_start;
  } while (!token.WaitFor(options_.heartbeat_interval));
}

void NodeAgent::SyncLoop() {
  CancellationToken token = stop_.Token();
  do {
    MonitorNodes();
    workloads_->Sync();  // Before scheduling, so its new pods are placed in this pass.
    Schedule();
    SyncWorkers();
    SyncServices();
    SyncScrapeTargets();
  } while (!token.WaitFor(options_.sync_period));
}

void NodeAgent::MonitorNodes() {
  const auto now = clock_.Now();
  kube::ResourceClient nodes = client_.Resource(kNodes);
  for (const NodeSpec& spec : options_.cluster.nodes) {
    kube::ObjectPtr node = nodes_->store().Get(spec.name);
    if (!node) continue;
    const bool failing = SimulatedFailure(*node);
    std::vector<std::unique_ptr<PodWorker>> killed;
    bool became_unreachable = false, unreachable = false, evict = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      NodeRuntime& n = nodes_state_[spec.name];
      if (failing && !n.failed) {
        n.failed = true;
        log_.Warn("simulated node failure: killing its processes", {{"node", spec.name}});
        for (auto it = workers_.begin(); it != workers_.end();) {
          if (worker_node_[it->first] == spec.name) {
            it->second->Fail();
            used_ips_.erase(it->second->assignment().pod_ip);
            for (int d : gpu_indices_[it->first]) n.gpus_in_use.erase(d);
            gpu_indices_.erase(it->first);
            worker_node_.erase(it->first);
            killed.push_back(std::move(it->second));
            it = workers_.erase(it);
          } else {
            ++it;
          }
        }
      } else if (!failing && n.failed) {
        n.failed = false;
        log_.Info("simulated node failure ended", {{"node", spec.name}});
      }
      const bool stale = NodeHeartbeatLost(now, n.last_heartbeat, heartbeat_round_start_,
                                           options_.node_monitor_grace);
      if (stale && !n.unreachable_since) {
        n.unreachable_since = now;
        became_unreachable = true;
      } else if (!stale && n.unreachable_since) {
        n.unreachable_since.reset();
      }
      unreachable = n.unreachable_since.has_value();
      evict = n.unreachable_since && now - *n.unreachable_since >= options_.pod_eviction_timeout;
    }
    killed.clear();  // Joins the failed node's workers (their processes are SIGKILLed).
    if (became_unreachable) {
      log_.Warn("node stopped heartbeating", {{"node", spec.name}});
      json conditions = node->value("/status/conditions"_json_pointer, json::array());
      for (json& c : conditions) {
        c["status"] = "Unknown";
        c["reason"] = "NodeStatusUnknown";
        c["message"] = "Kubelet stopped posting node status.";
        c["lastTransitionTime"] = Now();
      }
      (void)nodes.Patch(spec.name, kube::PatchType::kMerge,
                        json{{"status", {{"conditions", conditions}}}}.dump(), {}, "status");
      Event(json{{"apiVersion", "v1"},
                 {"kind", "Node"},
                 {"metadata", {{"name", spec.name}, {"uid", StringAt(*node, "/metadata/uid")}}}},
            "Normal", "NodeNotReady", "Node " + spec.name + " status is now: NodeNotReady");
    }
    // Level-triggered: a taint write that failed or was lost (a patch refused under load) is
    // made again next round, instead of leaving a recovered node tainted for good.
    if (HasUnreachableTaint(*node) != unreachable) {
      json taints = json::array();
      for (const json& t : node->value("/spec/taints"_json_pointer, json::array())) {
        if (t.value("key", "") != kUnreachableTaint) taints.push_back(t);
      }
      if (unreachable) {
        for (const char* effect : {"NoSchedule", "NoExecute"}) {
          taints.push_back({{"key", kUnreachableTaint}, {"effect", effect}, {"timeAdded", Now()}});
        }
      }
      Result<json> patched =
          nodes.Patch(spec.name, kube::PatchType::kMerge,
                      json{{"spec", {{"taints", taints.empty() ? json() : taints}}}}.dump());
      if (!patched.ok()) {
        log_.Warn("cannot update the node's unreachable taint; retrying next round",
                  {{"node", spec.name}, {"error", patched.status().ToString()}});
      }
    }
    if (evict) {
      for (const kube::ObjectPtr& p : pods_->store().List()) {
        if (StringAt(*p, "/spec/nodeName") != spec.name || Terminal(*p)) continue;
        json status = p->value("status", json::object());
        status["phase"] = "Failed";
        status["reason"] = "NodeLost";
        status["message"] = "Node " + spec.name + " which was running pod " +
                            StringAt(*p, "/metadata/name") + " is unresponsive";
        json conditions = status.value("conditions", json::array());
        for (json& c : conditions) {
          if (c.value("type", "") == "Ready" || c.value("type", "") == "ContainersReady") {
            c["status"] = "False";
            c["reason"] = "NodeLost";
            c["lastTransitionTime"] = Now();
          }
        }
        status["conditions"] = conditions;
        json statuses = status.value("containerStatuses", json::array());
        for (json& cs : statuses) {
          cs["ready"] = false;
          if (cs.contains("state") && cs["state"].contains("running")) {
            cs["state"] = {{"terminated",
                            {{"exitCode", 137},
                             {"reason", "NodeLost"},
                             {"startedAt", cs["state"]["running"].value("startedAt", Now())},
                             {"finishedAt", Now()}}}};
          }
        }
        status["containerStatuses"] = statuses;
        Result<json> r = client_.Resource(kPods, StringAt(*p, "/metadata/namespace"))
                             .Patch(StringAt(*p, "/metadata/name"), kube::PatchType::kMerge,
                                    json{{"status", status}}.dump(), {}, "status");
        if (r.ok()) {
          log_.Warn("pod marked Failed: its node is unresponsive",
                    {{"pod", StringAt(*p, "/metadata/name")}, {"node", spec.name}});
          Event(*p, "Warning", "NodeLost", status["message"].get<std::string>());
        }
      }
    }
  }
}

void NodeAgent::Schedule() {
  std::vector<json> pods = Pods();
  std::vector<const json*> pending;
  std::map<std::string, ResourceList> requested;
  for (const json& pod : pods) {
    const std::string node = StringAt(pod, "/spec/nodeName");
    if (!node.empty()) {
      if (Terminal(pod)) continue;
      Result<ResourceList> r = PodRequests(pod);
      if (!r.ok()) continue;
      for (const auto& [k, v] : *r) requested[node][k] += v;
      continue;
    }
    const std::string scheduler = StringAt(pod, "/spec/schedulerName", "default-scheduler");
    if (scheduler != "default-scheduler" || Terminal(pod) || Deleting(pod)) continue;
    pending.push_back(&pod);
  }
  if (pending.empty()) return;
  std::sort(pending.begin(), pending.end(), [](const json* a, const json* b) {
    const std::string ta = StringAt(*a, "/metadata/creationTimestamp");
    const std::string tb = StringAt(*b, "/metadata/creationTimestamp");
    if (ta != tb) return ta < tb;
    return StringAt(*a, "/metadata/name") < StringAt(*b, "/metadata/name");
  });
  std::vector<json> nodes;
  for (const kube::ObjectPtr& n : nodes_->store().List()) nodes.push_back(*n);
  for (const json* pod : pending) {
    std::vector<NodeState> states;
    for (const json& n : nodes) states.push_back({&n, requested[StringAt(n, "/metadata/name")]});
    ScheduleDecision decision = SchedulePod(*pod, states);
    const std::string ns = StringAt(*pod, "/metadata/namespace");
    const std::string name = StringAt(*pod, "/metadata/name");
    const std::string uid = StringAt(*pod, "/metadata/uid");
    if (decision.node_name.empty()) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (unschedulable_message_[uid] == decision.message) continue;
      }
      json condition = {{"type", "PodScheduled"},    {"status", "False"},
                        {"reason", "Unschedulable"}, {"message", decision.message},
                        {"lastProbeTime", nullptr},  {"lastTransitionTime", Now()}};
      Result<json> r = client_.Resource(kPods, ns).Patch(
          name, kube::PatchType::kMerge,
          json{{"status", {{"phase", "Pending"}, {"conditions", json::array({condition})}}}}.dump(),
          {}, "status");
      if (r.ok()) {
        std::lock_guard<std::mutex> lock(mu_);
        unschedulable_message_[uid] = decision.message;
      }
      Event(*pod, "Warning", "FailedScheduling", decision.message);
      if (scheduling_ != nullptr) scheduling_->WithLabels({"unschedulable"}).Inc();
      continue;
    }
    json binding = {
        {"apiVersion", "v1"},
        {"kind", "Binding"},
        {"metadata", {{"name", name}, {"namespace", ns}, {"uid", uid}}},
        {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", decision.node_name}}}};
    kube::RestRequest request;
    request.method = "POST";
    request.path = kube::ResourcePath(kPods, ns, name, "binding");
    request.body = binding.dump();
    Result<kube::RestResponse> r = rest_.Do(request);
    if (!r.ok() || r->status >= 300) {
      log_.Warn("binding failed", {{"pod", name},
                                   {"node", decision.node_name},
                                   {"error", r.ok() ? r->body : r.status().ToString()}});
      if (scheduling_ != nullptr) scheduling_->WithLabels({"error"}).Inc();
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      unschedulable_message_.erase(uid);
    }
    Result<ResourceList> req = PodRequests(*pod);
    if (req.ok()) {
      for (const auto& [k, v] : *req) requested[decision.node_name][k] += v;
    }
    if (scheduling_ != nullptr) scheduling_->WithLabels({"scheduled"}).Inc();
    Event(*pod, "Normal", "Scheduled",
          "Successfully assigned " + ns + "/" + name + " to " + decision.node_name);
    log_.Info("pod scheduled", {{"pod", ns + "/" + name}, {"node", decision.node_name}});
  }
}

void NodeAgent::SyncWorkers() {
  std::vector<json> pods = Pods();
  std::set<std::string> seen;
  std::vector<std::unique_ptr<PodWorker>> finished;
  for (const json& pod : pods) {
    const std::string node = StringAt(pod, "/spec/nodeName");
    const std::string uid = StringAt(pod, "/metadata/uid");
    std::unique_lock<std::mutex> lock(mu_);
    auto ns_it = nodes_state_.find(node);
    if (ns_it == nodes_state_.end() || ns_it->second.failed) continue;
    seen.insert(uid);
    auto it = workers_.find(uid);
    if (it != workers_.end()) {
      it->second->Update(pod);
      continue;
    }
    if (Terminal(pod) || Deleting(pod)) {
      // Nothing of ours runs for it (finished, or its worker already stopped it): a deletion
      // needs no grace. What a previous agent process may have left running is killed.
      if (Deleting(pod)) {
        lock.unlock();
        const std::filesystem::path dir =
            context_.pods_dir / (StringAt(pod, "/metadata/namespace") + "_" +
                                 StringAt(pod, "/metadata/name") + "_" + uid);
        std::error_code ec;
        for (const auto& entry : std::filesystem::directory_iterator(dir / "run", ec)) {
          std::ifstream in(entry.path());
          pid_t pgid = 0;
          if (in >> pgid && pgid > 1) ::kill(-pgid, SIGKILL);
        }
        (void)context_.remove_pod(pod);
        std::filesystem::remove_all(dir, ec);
      }
      continue;
    }
    // A new pod for this node: an address and its GPUs.
    PodAssignment a;
    a.host_ip = options_.endpoint.address;
    const std::string previous_ip = StringAt(pod, "/status/podIP");
    if (!previous_ip.empty() && !used_ips_.count(previous_ip)) {
      a.pod_ip = previous_ip;
    } else {
      for (int i = 2; i < 65534 && a.pod_ip.empty(); ++i) {
        if (i % 256 == 0 || i % 256 == 255) continue;
        std::string ip =
            options_.pod_ip_prefix + "." + std::to_string(i / 256) + "." + std::to_string(i % 256);
        if (!used_ips_.count(ip)) a.pod_ip = ip;
      }
    }
    used_ips_.insert(a.pod_ip);
    NodeRuntime& n = ns_it->second;
    const int64_t gpus = GpuRequest(pod);
    for (int d = 0; d < n.spec.gpus && static_cast<int64_t>(a.gpu_devices.size()) < gpus; ++d) {
      if (!n.gpus_in_use.count(d)) {
        n.gpus_in_use.insert(d);
        a.gpu_devices.push_back(d);
      }
    }
    std::vector<int> physical;
    for (int d : a.gpu_devices) {
      physical.push_back(n.spec.gpu_devices.empty() ? d : n.spec.gpu_devices[d]);
    }
    PodAssignment assignment = a;
    assignment.gpu_devices = physical;
    log_.Info("starting pod", {{"pod", StringAt(pod, "/metadata/namespace") + "/" +
                                           StringAt(pod, "/metadata/name")},
                               {"node", node},
                               {"pod_ip", a.pod_ip}});
    workers_[uid] = std::make_unique<PodWorker>(pod, assignment, context_);
    worker_node_[uid] = node;
    // Remember the simulated indices for release (the worker holds physical ones).
    gpu_indices_[uid] = a.gpu_devices;
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = workers_.begin(); it != workers_.end();) {
    const std::string& uid = it->first;
    const bool gone = !seen.count(uid);
    if (gone && !it->second->Done()) {
      // Deleted from the API without our doing (a force delete): stop its processes.
      it->second->Shutdown(std::chrono::seconds(0));
    }
    if (it->second->Done() || gone) {
      used_ips_.erase(it->second->assignment().pod_ip);
      auto node_it = nodes_state_.find(worker_node_[uid]);
      if (node_it != nodes_state_.end()) {
        for (int d : gpu_indices_[uid]) node_it->second.gpus_in_use.erase(d);
      }
      gpu_indices_.erase(uid);
      worker_node_.erase(uid);
      finished.push_back(std::move(it->second));
      it = workers_.erase(it);
    } else {
      ++it;
    }
  }
  // `finished` is destroyed (joining the workers, which are done or stopping) on return, after
  // the lock is released.
}

void NodeAgent::SyncServices() {
  std::vector<json> pods = Pods();
  std::vector<json> services;
  for (const kube::ObjectPtr& s : services_->store().List()) services.push_back(*s);
  std::set<std::string> used;
  for (const json& s : services) {
    if (const std::string ip = StringAt(s, "/spec/clusterIP"); !ip.empty() && ip != "None") {
      used.insert(ip);
    }
  }
  for (json& s : services) {
    const std::string type = StringAt(s, "/spec/type", "ClusterIP");
    if (type == "ExternalName" || !StringAt(s, "/spec/clusterIP").empty() || Deleting(s)) continue;
    const std::string ip = AllocateClusterIp(used);
    if (ip.empty()) continue;
    json updated = s;
    updated["spec"]["clusterIP"] = ip;
    updated["spec"]["clusterIPs"] = json::array({ip});
    Result<json> r =
        client_.Resource(kServices, StringAt(s, "/metadata/namespace")).Update(updated);
    if (r.ok()) {
      used.insert(ip);
      s = *r;
    }
  }
  for (const json& s : services) {
    if (Deleting(s)) continue;
    std::optional<json> desired = DesiredEndpoints(s, pods);
    if (!desired) continue;
    const std::string ns = StringAt(s, "/metadata/namespace");
    const std::string name = StringAt(s, "/metadata/name");
    kube::ObjectPtr current = endpoints_->store().Get(ns + "/" + name);
    kube::ResourceClient endpoints = client_.Resource(kEndpoints, ns);
    if (!current) {
      Result<json> r = endpoints.Create(*desired);
      if (!r.ok() && r.status().code() != StatusCode::kAlreadyExists) {
        log_.Warn("creating endpoints failed",
                  {{"service", ns + "/" + name}, {"error", r.status().ToString()}});
      }
    } else if (!SameSubsets(*current, *desired)) {
      json updated = *current;
      updated["subsets"] = (*desired)["subsets"];
      (void)endpoints.Update(updated);
    }
  }
  const std::string text = HostsFileText(services, pods);
  if (text != last_hosts_text_ && ReplaceFile(hosts_file_, text)) last_hosts_text_ = text;
}

void NodeAgent::SyncScrapeTargets() {
  const std::filesystem::path& file = options_.prometheus_targets_file;
  if (file.empty()) return;
  std::vector<json> mine;  // Another agent's pods are its to list.
  for (json& pod : Pods()) {
    const std::string node = StringAt(pod, "/spec/nodeName");
    for (const NodeSpec& spec : options_.cluster.nodes) {
      if (spec.name == node) {
        mine.push_back(std::move(pod));
        break;
      }
    }
  }
  const std::string text = PodScrapeTargets(mine).dump(2) + "\n";
  if (text == last_targets_text_) return;
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  if (ReplaceFile(file, text)) {
    last_targets_text_ = text;
    targets_write_failed_ = false;
  } else if (!targets_write_failed_) {
    targets_write_failed_ = true;  // Retried every pass; said once.
    log_.Warn("cannot write the Prometheus targets file", {{"file", file.string()}});
  }
}

Result<std::filesystem::path> NodeAgent::LogFile(const std::string& ns, const std::string& pod,
                                                 const std::string& container,
                                                 bool previous) const {
  kube::ObjectPtr p = pods_->store().Get(ns + "/" + pod);
  if (!p) return Status::NotFound("pods \"" + pod + "\" not found");
  const std::filesystem::path dir = options_.state_dir / "pods" /
                                    (ns + "_" + pod + "_" + StringAt(*p, "/metadata/uid")) /
                                    "logs" / container;
  std::vector<int> runs;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string stem = entry.path().stem().string();
    if (!stem.empty() && std::all_of(stem.begin(), stem.end(), ::isdigit)) {
      runs.push_back(std::stoi(stem));
    }
  }
  std::sort(runs.begin(), runs.end());
  if (previous) {
    if (runs.size() < 2) {
      return Status::InvalidArgument("previous terminated container \"" + container +
                                     "\" in pod \"" + pod + "\" not found");
    }
    return dir / (std::to_string(runs[runs.size() - 2]) + ".log");
  }
  if (runs.empty()) {
    return Status::InvalidArgument("container \"" + container + "\" in pod \"" + pod +
                                   "\" is waiting to start: ContainerCreating");
  }
  return dir / (std::to_string(runs.back()) + ".log");
}

bool NodeAgent::ContainerRunning(const std::string& ns, const std::string& pod,
                                 const std::string& container) const {
  kube::ObjectPtr p = pods_->store().Get(ns + "/" + pod);
  if (!p) return false;
  for (const json& s : p->value("/status/containerStatuses"_json_pointer, json::array())) {
    if (s.value("name", "") == container) {
      return s.contains("state") &&
             (s["state"].contains("running") || s["state"].contains("waiting"));
    }
  }
  return false;
}

}  // namespace sluice::node
