#include "localcluster/node/probe.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <optional>
#include <thread>

#include "common/http/client.h"
#include "common/json/fields.h"

namespace sluice::node {

namespace {

// Real time for I/O timeouts and latencies; decisions read a sluice::Clock (common/clock.h).
using Steady = std::chrono::steady_clock;
using nlohmann::json;

constexpr size_t kMaxExecOutput = 10 * 1024;
constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// A probe's integer setting, as the kubelet reads it: below `minimum` means the default.
int64_t IntAtLeast(const json& j, const char* key, int64_t fallback, int64_t minimum) {
  const int64_t v = IntField(j, key, fallback);
  return v < minimum ? fallback : v;
}

// Go's style for error texts: lower-case first letter ("connection refused").
std::string ErrnoText(int err) {
  std::string s = std::strerror(err);
  if (!s.empty()) s[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[0])));
  return s;
}

std::string HostPort(const std::string& host, int port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

// The port a probe names: a number, a numeric string, or a container port's name.
std::optional<int> ResolvePort(const json& port, const json& container, std::string* error) {
  if (port.is_number_integer()) {
    const int64_t p = port.get<int64_t>();
    if (p > 0 && p < 65536) return static_cast<int>(p);
    *error = "invalid port number: " + std::to_string(p);
    return std::nullopt;
  }
  if (!port.is_string()) {
    *error = "probe has no port";
    return std::nullopt;
  }
  const std::string name = port.get<std::string>();
  if (!name.empty() && std::all_of(name.begin(), name.end(), ::isdigit) && name.size() < 6) {
    const int p = std::stoi(name);
    if (p > 0 && p < 65536) return p;
  }
  if (container.is_object() && container.contains("ports") && container["ports"].is_array()) {
    for (const json& cp : container["ports"]) {
      if (StringField(cp, "name") == name) {
        const int64_t p = IntAtLeast(cp, "containerPort", 0, 1);
        if (p > 0 && p < 65536) return static_cast<int>(p);
      }
    }
  }
  *error = "couldn't find port: " + name + " in container";
  return std::nullopt;
}

// Opens a TCP connection within `timeout`. nullopt on success, else Go's dial error text.
std::optional<std::string> Dial(const std::string& host, int port,
                                std::chrono::milliseconds timeout) {
  const std::string what = "dial tcp " + HostPort(host, port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return "dial tcp: lookup " + host + ": " + ::gai_strerror(rc);
  }
  const int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    const int e = errno;
    ::freeaddrinfo(found);
    return what + ": socket: " + ErrnoText(e);
  }
  int rc = ::connect(fd, found->ai_addr, found->ai_addrlen);
  ::freeaddrinfo(found);
  int err = rc == 0 ? 0 : errno;
  if (err == EINPROGRESS) {
    const auto deadline = Steady::now() + timeout;
    for (;;) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Steady::now());
      if (left.count() <= 0) {
        ::close(fd);
        return what + ": i/o timeout";
      }
      pollfd p{fd, POLLOUT, 0};
      rc = ::poll(&p, 1, static_cast<int>(left.count()) + 1);
      if (rc < 0 && errno == EINTR) continue;
      if (rc <= 0) continue;  // Timed out: reported at the top of the loop.
      socklen_t len = sizeof(err);
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      break;
    }
  }
  ::close(fd);
  if (err == 0) return std::nullopt;
  return what + ": connect: " + ErrnoText(err);
}

ProbeResult HttpProbe(const json& action, const std::string& pod_ip, const json& container,
                      std::chrono::milliseconds timeout) {
  std::string scheme = StringField(action, "scheme");
  std::transform(scheme.begin(), scheme.end(), scheme.begin(), ::toupper);
  if (scheme.empty()) scheme = "HTTP";
  if (scheme != "HTTP" && scheme != "HTTPS") return {false, "unsupported scheme: " + scheme};
  const bool https = scheme == "HTTPS";
  std::string host = StringField(action, "host");
  if (host.empty()) host = pod_ip.empty() ? "127.0.0.1" : pod_ip;
  std::string error;
  std::optional<int> port = ResolvePort(
      action.is_object() && action.contains("port") ? action["port"] : json(), container, &error);
  if (!port) return {false, error};
  std::string path = StringField(action, "path");
  if (path.empty() || path[0] != '/') path = "/" + path;
  const std::string base = (https ? "https://" : "http://") + HostPort(host, *port);
  const std::string url = base + path;

  http::ClientOptions options;
  options.base_url = base;
  options.connect_timeout = timeout;
  options.read_timeout = timeout;
  options.write_timeout = timeout;
  options.max_attempts = 1;
  options.max_idle_connections = 0;
  options.user_agent = "kube-probe/1.31";
  // As the kubelet: an HTTPS probe checks that the container answers, not who it is (the
  // certificate names a Service or role, not the pod IP probed here).
  options.tls.insecure_skip_verify = https;
  Result<std::unique_ptr<http::Client>> client = http::Client::Create(options);
  if (!client.ok()) return {false, "Get \"" + url + "\": " + client.status().message()};

  http::Request request;
  request.method = "GET";
  request.path = path;
  bool has_accept = false;
  if (action.contains("httpHeaders") && action["httpHeaders"].is_array()) {
    for (const json& h : action["httpHeaders"]) {
      const std::string name = StringField(h, "name");
      if (name.empty()) continue;
      std::string lower = name;
      std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
      if (lower == "accept") has_accept = true;
      request.headers.emplace(name, StringField(h, "value"));
    }
  }
  if (!has_accept) request.headers.emplace("Accept", "*/*");

  Result<http::Response> response = (*client)->Send(std::move(request));
  if (!response.ok()) {
    if (response.status().code() == StatusCode::kDeadlineExceeded) {
      return {false, "Get \"" + url +
                         "\": context deadline exceeded (Client.Timeout exceeded while awaiting "
                         "headers)"};
    }
    // The client's message is generic; a second dial names the socket error as Go would.
    if (std::optional<std::string> dial = Dial(host, *port, timeout)) {
      return {false, "Get \"" + url + "\": " + *dial};
    }
    std::string message = response.status().message();
    const std::string prefix = "GET " + url + ": ";  // The client names the request itself.
    if (message.rfind(prefix, 0) == 0) message.erase(0, prefix.size());
    return {false, "Get \"" + url + "\": " + message};
  }
  if (response->status >= 200 && response->status < 400) return {true, ""};
  return {false, "HTTP probe failed with statuscode: " + std::to_string(response->status)};
}

ProbeResult TcpProbe(const json& action, const std::string& pod_ip, const json& container,
                     std::chrono::milliseconds timeout) {
  std::string host = StringField(action, "host");
  if (host.empty()) host = pod_ip.empty() ? "127.0.0.1" : pod_ip;
  std::string error;
  std::optional<int> port = ResolvePort(
      action.is_object() && action.contains("port") ? action["port"] : json(), container, &error);
  if (!port) return {false, error};
  if (std::optional<std::string> dial = Dial(host, *port, timeout)) return {false, *dial};
  return {true, ""};
}

// The executable for `name`: itself when it has a '/', else the first match in PATH.
std::optional<std::string> LookPath(const std::string& name,
                                    const std::vector<std::pair<std::string, std::string>>& env) {
  if (name.find('/') != std::string::npos) return name;
  std::string path = kDefaultPath;
  for (const auto& [k, v] : env) {
    if (k == "PATH") path = v;
  }
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return std::nullopt;
}

ProbeResult ExecProbe(const json& action,
                      const std::vector<std::pair<std::string, std::string>>& env,
                      std::chrono::milliseconds timeout) {
  std::vector<std::string> command;
  if (action.is_object() && action.contains("command") && action["command"].is_array()) {
    for (const json& c : action["command"]) {
      if (c.is_string()) command.push_back(c.get<std::string>());
    }
  }
  if (command.empty()) return {false, "exec probe has no command"};
  std::string joined;
  for (const std::string& c : command) joined += (joined.empty() ? "" : " ") + c;
  std::optional<std::string> exe = LookPath(command[0], env);
  if (!exe) return {false, "exec: \"" + command[0] + "\": executable file not found in $PATH"};

  std::vector<char*> argv;
  for (std::string& c : command) argv.push_back(c.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return {false, "pipe: " + ErrnoText(errno)};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setpgroup(&attr, 0);  // Its own group, so a timeout kills all it started.
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, exe->c_str(), &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(pipe_fds[1]);
  if (rc != 0) {
    ::close(pipe_fds[0]);
    return {false, "exec " + *exe + ": " + ErrnoText(rc)};
  }
  ::fcntl(pipe_fds[0], F_SETFL, ::fcntl(pipe_fds[0], F_GETFL) | O_NONBLOCK);

  std::string output;
  auto drain = [&] {
    char buf[4096];
    for (;;) {
      const ssize_t n = ::read(pipe_fds[0], buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      output.append(buf, std::min(static_cast<size_t>(n),
                                  kMaxExecOutput - std::min(kMaxExecOutput, output.size())));
    }
  };
  const auto deadline = Steady::now() + timeout;
  bool exited = false;
  for (;;) {
    drain();
    siginfo_t info;
    std::memset(&info, 0, sizeof(info));
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid != 0) {
      exited = true;
      break;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Steady::now());
    if (left.count() <= 0) break;
    pollfd p{pipe_fds[0], POLLIN, 0};
    // After EOF poll returns at once (POLLHUP); then sleep instead of spinning.
    if (::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 20))) > 0 &&
        !(p.revents & POLLIN)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  // Whether it finished or timed out, nothing it started outlives the probe. The main process
  // is not reaped yet, so its group id cannot have been reused.
  ::kill(-pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  drain();
  ::close(pipe_fds[0]);
  if (!exited) return {false, "command \"" + joined + "\" timed out"};
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (code == 0) return {true, output};
  while (!output.empty() && (output.back() == '\n' || output.back() == '\r')) output.pop_back();
  if (output.empty()) {
    return {false, "command \"" + joined + "\" exited with code " + std::to_string(code)};
  }
  return {false, output};
}

}  // namespace

ProbeResult RunProbe(const json& probe, const std::string& pod_ip, const json& container,
                     const std::vector<std::pair<std::string, std::string>>& env) {
  if (!probe.is_object()) return {false, "probe is not an object"};
  const std::chrono::milliseconds timeout = ProbeTimingOf(probe).timeout;
  if (probe.contains("httpGet")) return HttpProbe(probe["httpGet"], pod_ip, container, timeout);
  if (probe.contains("tcpSocket")) {
    return TcpProbe(probe["tcpSocket"], pod_ip, container, timeout);
  }
  if (probe.contains("exec")) return ExecProbe(probe["exec"], env, timeout);
  if (probe.contains("grpc")) return {false, "grpc probes are not supported"};
  return {false, "probe has no action (httpGet, tcpSocket, exec or grpc)"};
}

ProbeTiming ProbeTimingOf(const json& probe) {
  ProbeTiming t;
  t.initial_delay = std::chrono::seconds(IntAtLeast(probe, "initialDelaySeconds", 0, 0));
  t.period = std::chrono::seconds(IntAtLeast(probe, "periodSeconds", 10, 1));
  t.timeout = std::chrono::seconds(IntAtLeast(probe, "timeoutSeconds", 1, 1));
  t.success_threshold = static_cast<int>(IntAtLeast(probe, "successThreshold", 1, 1));
  t.failure_threshold = static_cast<int>(IntAtLeast(probe, "failureThreshold", 3, 1));
  return t;
}

ProbeState::ProbeState(bool initially_passing, int success_threshold, int failure_threshold)
    : passing_(initially_passing),
      success_threshold_(std::max(1, success_threshold)),
      failure_threshold_(std::max(1, failure_threshold)) {}

ProbeState ProbeState::Readiness(const ProbeTiming& timing) {
  return ProbeState(false, timing.success_threshold, timing.failure_threshold);
}

ProbeState ProbeState::Liveness(const ProbeTiming& timing) {
  return ProbeState(true, timing.success_threshold, timing.failure_threshold);
}

ProbeState ProbeState::Startup(const ProbeTiming& timing) {
  return ProbeState(false, timing.success_threshold, timing.failure_threshold);
}

bool ProbeState::Observe(bool success) {
  if (success) {
    failures_ = 0;
    ++successes_;
    if (successes_ >= success_threshold_) passing_ = true;
  } else {
    successes_ = 0;
    ++failures_;
    if (failures_ >= failure_threshold_) passing_ = false;
  }
  return passing_;
}

bool ProbeState::Observe(const ProbeResult& result) {
  last_message_ = result.message;
  return Observe(result.success);
}

}  // namespace sluice::node
