#include "localcluster/node/pod_worker.h"

#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <optional>

#include "common/file/atomic_file.h"
#include "common/json/fields.h"
#include "common/time_format.h"
#include "localcluster/node/container_process.h"
#include "localcluster/node/pod_status.h"
#include "localcluster/node/pod_volumes.h"
#include "localcluster/node/probe.h"
#include "localcluster/node/restart_backoff.h"

namespace sluice::node {

using nlohmann::json;
using Mono = std::chrono::steady_clock;
using State = ContainerStatus::State;

namespace {

std::string Now(const Clock& clock) { return FormatTime(clock.WallNow()); }

// When one probe (readiness, liveness or startup) of a container runs next, and its state.
struct ProbeTracker {
  json probe;  // null: no probe.
  ProbeTiming timing;
  Mono::time_point next{};
  ProbeState state{false, 1, 1};

  bool Present() const { return probe.is_object(); }
  bool passing() const { return state.passing(); }
  int failures() const { return state.consecutive_failures(); }
  const std::string& message() const { return state.last_message(); }
  void Reset(Mono::time_point started, bool initially_passing) {
    if (Present()) timing = ProbeTimingOf(probe);
    next = started + timing.initial_delay;
    state = ProbeState(initially_passing, timing.success_threshold, timing.failure_threshold);
  }
  // Runs the probe when due; returns true when it ran.
  bool MaybeRun(Mono::time_point now, const std::string& pod_ip, const json& container,
                const std::vector<std::pair<std::string, std::string>>& env) {
    if (!Present() || now < next) return false;
    state.Observe(RunProbe(probe, pod_ip, container, env));
    next = now + timing.period;
    return true;
  }
};

bool ExistsExecutable(const std::filesystem::path& p) {
  return ::access(p.c_str(), X_OK) == 0 && !std::filesystem::is_directory(p);
}

std::filesystem::path SearchPath(const std::string& name, const std::string& path_env) {
  size_t start = 0;
  while (start <= path_env.size()) {
    size_t end = path_env.find(':', start);
    if (end == std::string::npos) end = path_env.size();
    std::filesystem::path dir = path_env.substr(start, end - start);
    if (!dir.empty() && ExistsExecutable(dir / name)) return dir / name;
    start = end + 1;
  }
  return {};
}

std::string JoinInts(const std::vector<int>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + std::to_string(v[i]);
  return out;
}

}  // namespace

struct PodWorker::Container {
  json spec;
  bool init = false;
  ContainerStatus status;
  std::unique_ptr<ContainerProcess> process;
  Mono::time_point started{};
  Mono::time_point backoff_until{};
  int backoff_exponent = 0;    // Restarts since the last long run.
  bool never_restart = false;  // Terminated for good (restartPolicy).
  bool killed_by_probe = false;
  bool ran_before = false;  // Started (or failed to start) in this worker already.
  std::vector<std::pair<std::string, std::string>> env;
  ProbeTracker readiness, liveness, startup;
};

PodWorker::PodWorker(json pod, PodAssignment assignment, const PodWorkerContext& context)
    : ctx_(context), assignment_(std::move(assignment)), log_("node"), pod_(std::move(pod)) {
  const std::string ns = StringAt(pod_, "/metadata/namespace", "default");
  pod_dir_ = ctx_.pods_dir /
             (ns + "_" + StringAt(pod_, "/metadata/name") + "_" + StringAt(pod_, "/metadata/uid"));
  start_time_ = StringAt(pod_, "/status/startTime", Now(*ctx_.clock));
  // Restart counts survive an agent restart: they come from the stored status.
  auto restarts = [&](const char* list, const std::string& name) {
    for (const json& s : pod_.value(json::json_pointer(list), json::array())) {
      if (s.value("name", "") == name) {
        // A container the status says ran (or runs) is restarted now: count it.
        const bool ran = s.contains("state") && !s["state"].contains("waiting");
        return s.value("restartCount", 0) + (ran ? 1 : 0);
      }
    }
    return 0;
  };
  auto make = [&](const json& spec, bool init, const char* list) {
    auto c = std::make_unique<Container>();
    c->spec = spec;
    c->init = init;
    c->status.name = spec.value("name", "");
    c->status.image = spec.value("image", "");
    c->status.reason = "ContainerCreating";
    c->status.restart_count = restarts(list, c->status.name);
    c->readiness.probe = spec.value("readinessProbe", json());
    c->liveness.probe = spec.value("livenessProbe", json());
    c->startup.probe = spec.value("startupProbe", json());
    return c;
  };
  for (const json& c : pod_.value("/spec/initContainers"_json_pointer, json::array())) {
    init_.push_back(make(c, true, "/status/initContainerStatuses"));
  }
  for (const json& c : pod_.value("/spec/containers"_json_pointer, json::array())) {
    containers_.push_back(make(c, false, "/status/containerStatuses"));
  }
  // A pod whose init containers all completed before an agent restart does not rerun them.
  if (!init_.empty() && StringAt(pod_, "/status/phase") == "Running") next_init_ = init_.size();
  thread_ = std::thread([this] { Run(); });
}

PodWorker::~PodWorker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failed_ && !shutdown_) {
      shutdown_ = true;
      shutdown_grace_ = std::chrono::milliseconds(0);
    }
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::string PodWorker::uid() const {
  std::lock_guard<std::mutex> lock(mu_);
  return StringAt(pod_, "/metadata/uid");
}

void PodWorker::Update(json pod) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pod_ = std::move(pod);
  }
  cv_.notify_all();
}

void PodWorker::Fail() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    failed_ = true;
  }
  cv_.notify_all();
}

void PodWorker::Shutdown(std::chrono::milliseconds grace) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutdown_ = true;
    shutdown_grace_ = grace;
  }
  cv_.notify_all();
}

json PodWorker::PodSnapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pod_;
}

void PodWorker::Run() {
  while (true) {
    bool deleting = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (failed_) {
        lock.unlock();
        StopAll(std::chrono::milliseconds(0));
        break;
      }
      if (shutdown_) {
        const auto grace = shutdown_grace_;
        lock.unlock();
        StopAll(grace);
        break;
      }
      deleting = pod_.contains("/metadata/deletionTimestamp"_json_pointer);
    }
    if (deleting) {
      Terminate();
      break;
    }
    if (!setup_done_ && ctx_.clock->Now() >= setup_retry_at_) setup_done_ = Setup();
    if (setup_done_) Step();
    ReportStatus(false);
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, ctx_.tick, [&] {
      return failed_ || shutdown_ || pod_.contains("/metadata/deletionTimestamp"_json_pointer);
    });
  }
  done_ = true;
}

bool PodWorker::Setup() {
  std::error_code ec;
  for (const char* sub : {"volumes", "logs", "run", "home"}) {
    std::filesystem::create_directories(pod_dir_ / sub, ec);
  }
  // Kill what a previous agent process left running for this pod.
  for (const auto& entry : std::filesystem::directory_iterator(pod_dir_ / "run", ec)) {
    if (file::IsAtomicWriteTemp(entry.path().filename().string())) {
      std::filesystem::remove(entry.path(), ec);  // An interrupted write: it names nothing.
      continue;
    }
    std::ifstream in(entry.path());
    pid_t pgid = 0;
    if (in >> pgid && pgid > 1) ::kill(-pgid, SIGKILL);
    std::filesystem::remove(entry.path(), ec);
  }
  const json pod = PodSnapshot();
  Result<VolumeDirs> dirs = MaterializeVolumes(pod, pod_dir_, ctx_.claims_dir,
                                               ctx_.lookups(StringAt(pod, "/metadata/namespace")));
  const Status mounted = dirs.ok() ? MountServiceAccountToken(pod) : dirs.status();
  if (!mounted.ok()) {
    if (setup_error_ != mounted.message() && ctx_.event) {
      ctx_.event(pod, "Warning", "FailedMount", mounted.message());
    }
    setup_retry_at_ = ctx_.clock->Now() + std::chrono::seconds(2);
    setup_error_ = mounted.message();
    for (auto& c : containers_) {
      c->status.reason = "ContainerCreating";
      c->status.message = setup_error_;
    }
    return false;
  }
  setup_error_.clear();
  volumes_ = *dirs;
  volumes_refresh_at_ = ctx_.clock->Now() + ctx_.volume_refresh_period;
  return true;
}

void PodWorker::Step() {
  RefreshServiceAccountToken();
  RefreshVolumes();
  const Mono::time_point now = ctx_.clock->Now();
  if (next_init_ < init_.size()) {
    Container& c = *init_[next_init_];
    if (c.process) CheckExit(c);
    if (!c.process) {
      if (c.status.state == State::kTerminated && c.status.exit_code == 0) {
        ++next_init_;
      } else if (!c.never_restart && now >= c.backoff_until) {
        StartContainer(c);
      }
    }
    if (next_init_ < init_.size()) return;
  }
  for (auto& cp : containers_) {
    Container& c = *cp;
    if (c.process) {
      CheckExit(c);
      if (c.process) RunProbes(c);
    }
    if (!c.process && !c.never_restart && now >= c.backoff_until &&
        c.status.state != State::kRunning) {
      StartContainer(c);
    }
  }
}

void PodWorker::StartContainer(Container& c) {
  const json pod = PodSnapshot();
  const std::string name = c.status.name;
  auto wait_with = [&](const std::string& reason, const std::string& message,
                       std::chrono::milliseconds retry) {
    if (c.status.reason != reason || c.status.message != message) {
      if (ctx_.event)
        ctx_.event(pod, "Warning", reason == "ErrImagePull" ? "Failed" : reason,
                   "Error: " + message);
      log_.Warn("container cannot start", {{"pod", StringAt(pod, "/metadata/name")},
                                           {"container", name},
                                           {"reason", reason},
                                           {"message", message}});
    }
    c.status.state = State::kWaiting;
    c.status.reason = reason;
    c.status.message = message;
    c.backoff_until = ctx_.clock->Now() + retry;
  };
  const std::string image = c.spec.value("image", "");
  Result<std::filesystem::path> executable = ctx_.image_map->Resolve(image, ctx_.bin_dir);
  if (!executable.ok()) {
    wait_with("ErrImagePull", executable.status().message(), std::chrono::seconds(10));
    return;
  }
  const std::string ns = StringAt(pod, "/metadata/namespace");
  PodFacts facts{assignment_.pod_ip, StringAt(pod, "/spec/nodeName"), assignment_.host_ip};
  Result<std::vector<std::pair<std::string, std::string>>> resolved =
      ResolveEnv(pod, c.spec, facts, ctx_.lookups(ns));
  if (!resolved.ok()) {
    wait_with("CreateContainerConfigError", resolved.status().message(), std::chrono::seconds(2));
    return;
  }
  Result<std::vector<PathMapping>> mounts = ContainerMounts(c.spec, volumes_);
  if (!mounts.ok()) {
    wait_with("CreateContainerConfigError", mounts.status().message(), std::chrono::seconds(2));
    return;
  }
  if (token_) AddServiceAccountMount(*mounts, ServiceAccountDir(pod_dir_));
  // The environment: the agent's base, then the pod's facts, then the container's own.
  std::vector<std::pair<std::string, std::string>> env = ctx_.base_env;
  auto set = [&](const std::string& k, const std::string& v) {
    for (auto& [key, value] : env) {
      if (key == k) {
        value = v;
        return;
      }
    }
    env.emplace_back(k, v);
  };
  set("HOSTNAME", StringAt(pod, "/spec/hostname", StringAt(pod, "/metadata/name")));
  set("HOME", (pod_dir_ / "home").string());
  set("SLUICE_ROOT", pod_dir_.string());
  set("SLUICE_HOSTS_FILE", ctx_.hosts_file.string());
  // Simulated GPUs: the indices this pod holds; none hides real GPUs from CPU pods.
  set("NVIDIA_VISIBLE_DEVICES",
      assignment_.gpu_devices.empty() ? "void" : JoinInts(assignment_.gpu_devices));
  set("CUDA_VISIBLE_DEVICES", JoinInts(assignment_.gpu_devices));
  for (auto& [k, v] : *resolved) set(k, RemapPath(v, *mounts));
  c.env = env;

  std::vector<std::string> argv = ContainerArgv(c.spec, env);
  const bool has_command = c.spec.contains("command") && !c.spec["command"].empty();
  for (std::string& a : argv) a = RemapPath(a, *mounts);
  std::string path_env;
  for (const auto& [k, v] : env) {
    if (k == "PATH") path_env = v;
  }
  if (!has_command) {
    argv.insert(argv.begin(), executable->string());
  } else if (!argv.empty() && argv[0].find('/') == std::string::npos) {
    // A bare command name: the bin dir first (our binaries), then PATH.
    if (ExistsExecutable(ctx_.bin_dir / argv[0])) {
      argv[0] = (ctx_.bin_dir / argv[0]).string();
    } else if (std::filesystem::path found = SearchPath(argv[0], path_env); !found.empty()) {
      argv[0] = found.string();
    }
  }
  std::filesystem::path cwd = pod_dir_ / "home";
  if (const std::string wd = c.spec.value("workingDir", ""); !wd.empty()) {
    cwd = RemapPath(wd, *mounts);
    std::error_code ec;
    std::filesystem::create_directories(cwd, ec);
  }
  // restartCount counts starts after the first, as kubelet's does (each run has its own log).
  if (c.ran_before) ++c.status.restart_count;
  c.ran_before = true;
  const std::filesystem::path log_dir = pod_dir_ / "logs" / name;
  std::error_code ec;
  std::filesystem::create_directories(log_dir, ec);
  ProcessSpec spec{argv, env, cwd, log_dir / (std::to_string(c.status.restart_count) + ".log")};
  Result<std::unique_ptr<ContainerProcess>> process = ContainerProcess::Start(spec);
  if (!process.ok()) {
    // Like a runtime's StartError: counts as a failed run and backs off.
    c.status.state = State::kTerminated;
    c.status.reason = "StartError";
    c.status.message = process.status().message();
    c.status.exit_code = 128;
    c.status.started_at = c.status.finished_at = Now(*ctx_.clock);
    if (ctx_.event) ctx_.event(pod, "Warning", "Failed", "Error: " + c.status.message);
    ScheduleRestart(c, pod, std::chrono::seconds(0));
    return;
  }
  c.process = std::move(*process);
  c.started = ctx_.clock->Now();
  c.killed_by_probe = false;
  // Lets a restarted agent kill this process group (Setup). Atomic: a torn file could name
  // another process. Best effort, as a failure here must not stop a container that runs.
  (void)file::WriteFileAtomic(pod_dir_ / "run" / name, std::to_string(c.process->pid()) + "\n");
  c.status.state = State::kRunning;
  c.status.reason.clear();
  c.status.message.clear();
  c.status.started_at = Now(*ctx_.clock);
  c.status.container_id = "sluice://" + std::to_string(c.process->pid());
  c.status.started = !c.startup.Present();
  c.status.ready = false;
  c.startup.Reset(c.started, false);
  c.liveness.Reset(c.started, true);
  c.readiness.Reset(c.started, false);
  if (ctx_.event) {
    ctx_.event(pod, "Normal", "Started", "Started container " + name);
  }
}

void PodWorker::CheckExit(Container& c) {
  std::optional<int> code = c.process->TryWait();
  if (!code) return;
  const json pod = PodSnapshot();
  const auto ran = ctx_.clock->Now() - c.started;
  c.process.reset();
  std::error_code ec;
  std::filesystem::remove(pod_dir_ / "run" / c.status.name, ec);
  c.status.state = State::kTerminated;
  c.status.exit_code = *code;
  c.status.signal = *code > 128 ? *code - 128 : 0;
  c.status.reason = *code == 0 ? "Completed" : "Error";
  c.status.message.clear();
  c.status.finished_at = Now(*ctx_.clock);
  c.status.ready = false;
  c.status.started = false;
  ScheduleRestart(c, pod, std::chrono::duration_cast<std::chrono::seconds>(ran));
}

void PodWorker::ScheduleRestart(Container& c, const json& pod, std::chrono::seconds ran) {
  const std::string policy = StringAt(pod, "/spec/restartPolicy", "Always");
  // Init containers are retried on failure unless the policy is Never; they never rerun after
  // success.
  const std::string effective = c.init ? (policy == "Never" ? "Never" : "OnFailure") : policy;
  if (!ShouldRestart(effective, c.status.exit_code)) {
    c.never_restart = true;
    return;
  }
  c.backoff_exponent = BackoffExponentAfterRun(c.backoff_exponent, ran);
  const std::chrono::milliseconds delay =
      RestartDelay(c.backoff_exponent, ctx_.backoff_base, ctx_.backoff_max);
  c.status.last_state = json{{"terminated", ContainerStatusJson(c.status)["state"]["terminated"]}};
  c.status.state = State::kWaiting;
  c.status.reason = delay.count() > 0 ? "CrashLoopBackOff" : "ContainerCreating";
  c.status.message = delay.count() > 0
                         ? "back-off " + std::to_string((delay.count() + 999) / 1000) +
                               "s restarting failed container=" + c.status.name +
                               " pod=" + StringAt(pod, "/metadata/name") + "_" +
                               StringAt(pod, "/metadata/namespace") + "(" +
                               StringAt(pod, "/metadata/uid") + ")"
                         : "";
  if (delay.count() > 0 && ctx_.event) {
    ctx_.event(pod, "Warning", "BackOff",
               "Back-off restarting failed container " + c.status.name + " in pod " +
                   StringAt(pod, "/metadata/name"));
  }
  c.backoff_until = ctx_.clock->Now() + delay;
}

void PodWorker::RunProbes(Container& c) {
  const Mono::time_point now = ctx_.clock->Now();
  const json pod = PodSnapshot();
  if (c.startup.Present() && !c.status.started) {
    if (c.startup.MaybeRun(now, assignment_.pod_ip, c.spec, c.env)) {
      if (c.startup.passing()) {
        c.status.started = true;
        c.liveness.Reset(now, true);
        c.readiness.Reset(now, false);
      } else if (c.startup.failures() >= c.startup.timing.failure_threshold) {
        c.killed_by_probe = true;
      }
    }
  } else {
    c.status.started = true;
    if (c.liveness.MaybeRun(now, assignment_.pod_ip, c.spec, c.env) && !c.liveness.passing()) {
      c.killed_by_probe = true;
    }
    if (c.readiness.Present()) {
      c.readiness.MaybeRun(now, assignment_.pod_ip, c.spec, c.env);
      if (c.readiness.passing() != c.status.ready && !c.readiness.passing() && ctx_.event &&
          c.readiness.failures() > 0) {
        ctx_.event(pod, "Warning", "Unhealthy", "Readiness probe failed: " + c.readiness.message());
      }
      c.status.ready = c.readiness.passing();
    } else {
      c.status.ready = true;
    }
  }
  if (c.killed_by_probe) {
    const std::string which = c.status.started ? "liveness" : "startup";
    const std::string message = (c.status.started ? c.liveness : c.startup).message();
    if (ctx_.event) {
      ctx_.event(
          pod, "Warning", "Unhealthy",
          std::string(c.status.started ? "Liveness" : "Startup") + " probe failed: " + message);
      ctx_.event(pod, "Normal", "Killing",
                 "Container " + c.status.name + " failed " + which + " probe, will be restarted");
    }
    const int64_t grace = pod.value("/spec/terminationGracePeriodSeconds"_json_pointer, 30);
    c.status.ready = false;
    c.process->StopGracefully(std::chrono::seconds(grace));
    CheckExit(c);
    c.status.last_state["terminated"]["reason"] = "Error";
  }
}

Status PodWorker::MountServiceAccountToken(const json& pod) {
  token_.reset();
  if (ctx_.create_token) {
    std::optional<json> account;
    if (!PodDecidesAutomount(pod) && ctx_.service_account) {
      Result<json> got = ctx_.service_account(PodNamespace(pod), PodServiceAccountName(pod));
      if (got.ok()) {
        account = std::move(*got);
      } else if (got.status().code() != StatusCode::kNotFound) {
        return Status(got.status().code(), "MountVolume.SetUp failed for volume \"" +
                                               std::string(kServiceAccountVolume) +
                                               "\" : " + got.status().message());
      }
    }
    if (AutomountServiceAccountToken(pod, account)) return FetchServiceAccountToken(pod);
  }
  // No token for this pod: drop what an earlier setup (or agent) may have written.
  std::error_code ec;
  std::filesystem::remove_all(ServiceAccountDir(pod_dir_), ec);
  return Status::Ok();
}

Status PodWorker::FetchServiceAccountToken(const json& pod) {
  Result<json> reply = ctx_.create_token(pod, PodTokenRequest(pod));
  Result<ServiceAccountToken> token =
      reply.ok() ? TokenFromTokenRequest(*reply) : Result<ServiceAccountToken>(reply.status());
  if (!token.ok()) {
    // kubelet's words for a token it cannot get.
    return Status(token.status().code(),
                  "MountVolume.SetUp failed for volume \"" + std::string(kServiceAccountVolume) +
                      "\" : failed to fetch token: " + token.status().message());
  }
  SLUICE_RETURN_IF_ERROR(WriteServiceAccountFiles(ServiceAccountDir(pod_dir_), token->token,
                                                  ctx_.api_ca_pem, PodNamespace(pod)));
  token_ = std::move(*token);
  return Status::Ok();
}

void PodWorker::RefreshServiceAccountToken() {
  if (!token_ || ctx_.clock->WallNow() < TokenRefreshTime(*token_) ||
      ctx_.clock->Now() < token_retry_at_) {
    return;
  }
  const json pod = PodSnapshot();
  if (Status s = FetchServiceAccountToken(pod); !s.ok()) {
    // The current token stays in place until it expires; kubelet retries the same way.
    token_retry_at_ = ctx_.clock->Now() + std::chrono::seconds(10);
    log_.Warn("refreshing the service-account token failed; will retry",
              {{"pod", StringAt(pod, "/metadata/name")}, {"error", s.ToString()}});
  }
}

void PodWorker::RefreshVolumes() {
  const Clock::MonoTime now = ctx_.clock->Now();
  if (now < volumes_refresh_at_) return;
  volumes_refresh_at_ = now + ctx_.volume_refresh_period;
  const json pod = PodSnapshot();
  // The same layout as Setup's (the directories do not move); a volume whose object is gone or
  // broken keeps its last content, as kubelet keeps it.
  Result<VolumeDirs> dirs = MaterializeVolumes(pod, pod_dir_, ctx_.claims_dir,
                                               ctx_.lookups(StringAt(pod, "/metadata/namespace")));
  const std::string error = dirs.ok() ? "" : dirs.status().ToString();
  if (!error.empty() && error != refresh_error_) {
    log_.Warn("refreshing the pod's volumes failed; they keep their last content",
              {{"pod", StringAt(pod, "/metadata/name")}, {"error", error}});
  }
  refresh_error_ = error;
}

void PodWorker::StopAll(std::chrono::milliseconds grace) {
  std::vector<Container*> running;
  for (auto* list : {&init_, &containers_}) {
    for (auto& c : *list) {
      if (c->process) running.push_back(c.get());
    }
  }
  if (running.empty()) return;
  if (grace.count() > 0) {
    for (Container* c : running) c->process->Signal(SIGTERM);
    // Real time, not the context's clock: the processes' grace passes in the real world.
    const Mono::time_point deadline = Mono::now() + grace;
    while (Mono::now() < deadline) {
      bool all = true;
      for (Container* c : running) {
        if (!c->process->TryWait()) all = false;
      }
      if (all) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  for (Container* c : running) {
    if (!c->process->TryWait()) c->process->Signal(SIGKILL);
    const int code = c->process->Wait();
    c->process.reset();
    c->status.state = State::kTerminated;
    c->status.exit_code = code;
    c->status.signal = code > 128 ? code - 128 : 0;
    c->status.reason = code == 0 ? "Completed" : "Error";
    c->status.finished_at = Now(*ctx_.clock);
    c->status.ready = false;
    c->never_restart = true;
    std::error_code ec;
    std::filesystem::remove(pod_dir_ / "run" / c->status.name, ec);
  }
}

void PodWorker::Terminate() {
  json pod = PodSnapshot();
  int64_t grace = pod.value("/spec/terminationGracePeriodSeconds"_json_pointer, 30);
  if (pod.contains("/metadata/deletionGracePeriodSeconds"_json_pointer)) {
    grace = pod.value("/metadata/deletionGracePeriodSeconds"_json_pointer, grace);
  }
  if (ctx_.event) {
    for (auto& c : containers_) {
      if (c->process) ctx_.event(pod, "Normal", "Killing", "Stopping container " + c->status.name);
    }
  }
  StopAll(std::chrono::seconds(std::max<int64_t>(grace, 0)));
  ReportStatus(true);
  for (int attempt = 0; attempt < 5; ++attempt) {
    Status s = ctx_.remove_pod(PodSnapshot());
    if (s.ok() || s.code() == StatusCode::kNotFound || s.code() == StatusCode::kConflict) break;
    log_.Warn("removing a terminated pod failed; retrying",
              {{"pod", StringAt(pod, "/metadata/name")}, {"error", s.ToString()}});
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  std::error_code ec;
  std::filesystem::remove_all(pod_dir_, ec);
}

void PodWorker::ReportStatus(bool force) {
  const json pod = PodSnapshot();
  PodRuntimeStatus runtime;
  for (auto& c : init_) runtime.init_containers.push_back(c->status);
  for (auto& c : containers_) runtime.containers.push_back(c->status);
  runtime.initialized = next_init_ >= init_.size();
  runtime.pod_ip = assignment_.pod_ip;
  runtime.host_ip = assignment_.host_ip;
  runtime.start_time = start_time_;
  const json old_status = pod.value("status", json::object());
  json status = PodStatusJson(runtime, StringAt(pod, "/spec/restartPolicy", "Always"), old_status,
                              Now(*ctx_.clock), QosClass(pod));
  // Condition timestamps only move when a status changes, so equal JSON means nothing new.
  if (!force && status == last_status_) return;
  const Mono::time_point now = ctx_.clock->Now();
  // After a failed write, wait a second before the next attempt (the API may be down).
  if (!force && write_failed_ && now - last_report_ < std::chrono::seconds(1)) return;
  Status s = ctx_.write_status(pod, status);
  last_report_ = now;
  write_failed_ = !s.ok();
  if (s.ok()) {
    last_status_ = status;
  } else if (s.code() != StatusCode::kNotFound) {
    log_.Warn("writing pod status failed; will retry",
              {{"pod", StringAt(pod, "/metadata/name")}, {"error", s.ToString()}});
  }
}

}  // namespace sluice::node
