// PodWorker: the kubelet's work for one pod bound to a simulated node. It prepares the pod's
// directory and volumes, runs init containers then containers as local processes (image map,
// env, argv, mount-path remapping), restarts them per restartPolicy with CrashLoopBackOff, runs
// readiness/liveness/startup probes, reports status, and on deletion stops the processes
// (SIGTERM, the grace period, SIGKILL) and removes the pod from the API.
//
// The pod's directory, <pods_dir>/<namespace>_<name>_<uid>/, holds `volumes/` (emptyDir and
// materialised configMap/secret/downwardAPI volumes, refreshed every volume_refresh_period as
// kubelet refreshes them: a changed ConfigMap or Secret, a renewed certificate, reaches the
// running containers' files, each replaced whole; what cannot be refreshed keeps its content),
// `var/run/secrets/kubernetes.io/ serviceaccount/` (the service-account token, ca.crt and
// namespace, refreshed before the token expires; service_account_volume.h),
// `logs/<container>/<restart>.log` (CRI format; kubectl logs reads the newest, --previous the one
// before) and `run/<container>.pid` (the process group, so a restarted agent can kill what a
// crashed one left behind). PersistentVolumeClaims live under <claims_dir> and outlive the pod.
//
// Ownership: the worker owns its thread and processes; the agent owns the worker and the
// PodWorkerContext it points to, which must outlive it.
// Thread safety: Update, Fail and the accessors may be called from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/logging/logger.h"
#include "common/status.h"
#include "localcluster/node/container_env.h"
#include "localcluster/node/image_map.h"
#include "localcluster/node/pod_volumes.h"
#include "localcluster/node/service_account_volume.h"

namespace sluice::node {

struct PodWorkerContext {
  std::filesystem::path bin_dir;
  const ImageMap* image_map = nullptr;
  std::filesystem::path pods_dir;
  std::filesystem::path claims_dir;
  std::filesystem::path hosts_file;
  // Variables every container gets first (PATH, KUBERNETES_SERVICE_HOST, ...).
  std::vector<std::pair<std::string, std::string>> base_env;
  // ConfigMaps and Secrets of a namespace (from the agent's informer caches).
  std::function<ObjectLookup(const std::string& namespace_)> lookups;
  // Writes `status` to the pod (the status subresource). Called from the worker's thread.
  std::function<Status(const nlohmann::json& pod, const nlohmann::json& status)> write_status;
  // Removes the pod from the API (grace 0, uid precondition) once its processes are gone.
  std::function<Status(const nlohmann::json& pod)> remove_pod;
  // Records an Event about the pod (type Normal/Warning).
  std::function<void(const nlohmann::json& pod, const std::string& type, const std::string& reason,
                     const std::string& message)>
      event;
  // Service-account tokens (service_account_volume.h). Reads a ServiceAccount (NotFound when
  // absent), for its automountServiceAccountToken.
  std::function<Result<nlohmann::json>(const std::string& namespace_, const std::string& name)>
      service_account;
  // Posts `request` (a TokenRequest) to the token subresource of the pod's ServiceAccount and
  // returns the reply. Null: no pod gets a token.
  std::function<Result<nlohmann::json>(const nlohmann::json& pod, const nlohmann::json& request)>
      create_token;
  std::string api_ca_pem;  // The API server's CA bundle (PEM): the ca.crt beside the token.
  // Crash back-off, probe periods, token refresh and the status timestamps (a stopping
  // container's grace is real time). Must outlive the worker.
  Clock* clock = &SystemClock::Instance();
  std::chrono::milliseconds tick{100};  // How often processes and probes are checked.
  // CrashLoopBackOff: restart n waits base * 2^(n-1), at most max (kube: 10 s, 300 s).
  std::chrono::milliseconds backoff_base{10000};
  std::chrono::milliseconds backoff_max{300000};
  // How often configMap, secret and downwardAPI volumes are brought up to date (kubelet: about a
  // minute; here the informer caches make it cheap, and unchanged files are not rewritten).
  std::chrono::milliseconds volume_refresh_period{5000};
};

struct PodAssignment {
  std::string pod_ip;
  std::string host_ip;
  std::vector<int> gpu_devices;  // Device indices for NVIDIA/CUDA_VISIBLE_DEVICES.
};

class PodWorker {
 public:
  PodWorker(nlohmann::json pod, PodAssignment assignment, const PodWorkerContext& context);
  ~PodWorker();  // Kills any process still running (the agent stops them first on shutdown).
  PodWorker(const PodWorker&) = delete;
  PodWorker& operator=(const PodWorker&) = delete;

  // The newest state of the pod from the API (deletionTimestamp starts termination).
  void Update(nlohmann::json pod);
  // The node died: SIGKILL every process, stop reporting; the worker then ends.
  void Fail();
  // Agent shutdown: stop the processes (SIGTERM, `grace`, SIGKILL) without touching the API.
  void Shutdown(std::chrono::milliseconds grace);
  // The worker's thread ended (the pod was removed, the node failed or the agent stopped).
  bool Done() const { return done_.load(); }

  const PodAssignment& assignment() const { return assignment_; }
  const std::filesystem::path& pod_dir() const { return pod_dir_; }
  std::string uid() const;

 private:
  struct Container;
  void Run();
  bool Setup();
  void Step();
  void StartContainer(Container& c);
  void CheckExit(Container& c);
  // After an exit: CrashLoopBackOff bookkeeping, or never again per restartPolicy.
  void ScheduleRestart(Container& c, const nlohmann::json& pod, std::chrono::seconds ran);
  void RunProbes(Container& c);
  // The service-account token: decided and written in Setup (errors fail the setup, as a failed
  // mount does), refreshed from Step when due (a failure keeps the old token and retries).
  Status MountServiceAccountToken(const nlohmann::json& pod);
  Status FetchServiceAccountToken(const nlohmann::json& pod);
  void RefreshServiceAccountToken();
  // Brings the volumes up to date when due (from Step).
  void RefreshVolumes();
  void Terminate();
  void ReportStatus(bool force);
  void StopAll(std::chrono::milliseconds grace);
  nlohmann::json PodSnapshot() const;

  const PodWorkerContext& ctx_;
  const PodAssignment assignment_;
  log::Logger log_;
  std::filesystem::path pod_dir_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  nlohmann::json pod_;  // Guarded by mu_.
  bool failed_ = false, shutdown_ = false;
  std::chrono::milliseconds shutdown_grace_{0};

  // Worker-thread state.
  std::vector<std::unique_ptr<Container>> init_;
  std::vector<std::unique_ptr<Container>> containers_;
  size_t next_init_ = 0;
  bool setup_done_ = false;
  std::string setup_error_;  // The last volume error (an event is recorded when it changes).
  std::chrono::steady_clock::time_point setup_retry_at_{};
  VolumeDirs volumes_;
  std::optional<ServiceAccountToken> token_;  // Set while the pod has its token mounted.
  Clock::MonoTime token_retry_at_{};          // After a failed refresh.
  Clock::MonoTime volumes_refresh_at_{};
  std::string refresh_error_;  // The last refresh's error (logged when it changes).
  std::string start_time_;
  nlohmann::json last_status_;
  std::chrono::steady_clock::time_point last_report_{};
  bool write_failed_ = false;

  std::atomic<bool> done_{false};
  std::thread thread_;
};

}  // namespace sluice::node
