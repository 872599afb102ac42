#include "kube/exec_credential.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "common/time_format.h"

extern char** environ;

namespace sluice::kube {
namespace {

constexpr size_t kMaxOutput = 1 << 20;
constexpr auto kExpirySkew = std::chrono::seconds(10);

}  // namespace

Result<ExecCredential> ParseExecCredential(std::string_view text,
                                           std::string_view expected_api_version) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(std::string("exec plugin output is not JSON: ") + e.what());
  }
  if (!doc.is_object()) return Status::InvalidArgument("exec plugin output is not a JSON object");
  const std::string api_version = doc.value("apiVersion", "");
  if (api_version != expected_api_version) {
    return Status::InvalidArgument("exec plugin returned apiVersion \"" + api_version +
                                   "\", kubeconfig asked for \"" +
                                   std::string(expected_api_version) + "\"");
  }
  if (doc.value("kind", "") != "ExecCredential") {
    return Status::InvalidArgument("exec plugin output has kind \"" + doc.value("kind", "") +
                                   "\", expected ExecCredential");
  }
  const auto status = doc.find("status");
  if (status == doc.end() || !status->is_object()) {
    return Status::InvalidArgument("exec plugin output has no status");
  }
  ExecCredential cred;
  const auto token = status->find("token");
  if (token == status->end() || !token->is_string() || token->get<std::string>().empty()) {
    if (status->contains("clientCertificateData")) {
      return Status::InvalidArgument(
          "exec plugin returned a client certificate; only token credentials are supported");
    }
    return Status::InvalidArgument("exec plugin output has no status.token");
  }
  cred.token = token->get<std::string>();
  const auto exp = status->find("expirationTimestamp");
  if (exp != status->end() && !exp->is_null()) {
    if (!exp->is_string()) {
      return Status::InvalidArgument("exec plugin status.expirationTimestamp is not a string");
    }
    Result<Clock::WallTime> t = ParseTime(exp->get<std::string>());
    if (!t.ok()) return t.status().WithContext("exec plugin status.expirationTimestamp");
    cred.expiration = *t;
  }
  return cred;
}

Result<CommandOutput> RunCommand(const std::vector<std::string>& argv,
                                 const std::vector<std::pair<std::string, std::string>>& extra_env,
                                 std::chrono::milliseconds timeout) {
  if (argv.empty() || argv[0].empty()) return Status::InvalidArgument("no command to run");
  // Everything the child needs is built before fork: only async-signal-safe calls after it.
  std::map<std::string, std::string> env_map;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    const size_t eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    env_map[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
  }
  for (const auto& [k, v] : extra_env) env_map[k] = v;
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : env_map) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> argp;
  for (std::string& s : args) argp.push_back(s.data());
  argp.push_back(nullptr);

  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return Status::Internal(std::strerror(errno));
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    return Status::Internal(std::strerror(errno));
  }
  const pid_t pid = fork();
  if (pid < 0) {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) close(fd);
    return Status::Internal(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    const int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    execvpe(argp[0], argp.data(), envp.data());
    const char msg[] = "exec failed\n";
    (void)!write(2, msg, sizeof(msg) - 1);
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  CommandOutput result;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool out_open = true, err_open = true, timed_out = false;
  char buf[4096];
  while (out_open || err_open) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd fds[2] = {{out_open ? out_pipe[0] : -1, POLLIN, 0},
                     {err_open ? err_pipe[0] : -1, POLLIN, 0}};
    const int n = poll(fds, 2, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t got = read(fds[i].fd, buf, sizeof(buf));
      if (got <= 0) {
        (i == 0 ? out_open : err_open) = false;
        continue;
      }
      std::string& dst = i == 0 ? result.out : result.err;
      if (dst.size() < kMaxOutput) dst.append(buf, static_cast<size_t>(got));
    }
  }
  close(out_pipe[0]);
  close(err_pipe[0]);
  if (timed_out) kill(pid, SIGKILL);
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return Status::DeadlineExceeded("command " + argv[0] + " did not finish within " +
                                    std::to_string(timeout.count()) + " ms");
  }
  result.exit_code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
  return result;
}

ExecCredentialProvider::ExecCredentialProvider(ExecConfig config, const Clock& clock,
                                               std::chrono::milliseconds timeout)
    : config_(std::move(config)), clock_(clock), timeout_(timeout) {}

Status ExecCredentialProvider::Validate(const ExecConfig& config) {
  if (config.api_version != kExecApiV1 && config.api_version != kExecApiV1beta1) {
    return Status::InvalidArgument("exec plugin apiVersion \"" + config.api_version +
                                   "\" is not supported (use " + kExecApiV1 + " or " +
                                   kExecApiV1beta1 + ")");
  }
  if (config.command.empty()) return Status::InvalidArgument("exec plugin has no command");
  if (config.interactive_mode == "Always") {
    return Status::InvalidArgument(
        "exec plugin interactiveMode Always is not supported: the operator has no terminal");
  }
  return Status::Ok();
}

Result<std::string> ExecCredentialProvider::Token() {
  std::lock_guard<std::mutex> lock(mu_);
  if (cached_ && (!cached_->expiration || clock_.WallNow() + kExpirySkew < *cached_->expiration)) {
    return cached_->token;
  }
  cached_.reset();
  SLUICE_RETURN_IF_ERROR(Validate(config_));
  std::vector<std::string> argv = {config_.command};
  argv.insert(argv.end(), config_.args.begin(), config_.args.end());
  std::vector<std::pair<std::string, std::string>> env = config_.env;
  const nlohmann::json info = {{"apiVersion", config_.api_version},
                               {"kind", "ExecCredential"},
                               {"spec", {{"interactive", false}}}};
  env.emplace_back("KUBERNETES_EXEC_INFO", info.dump());
  ++runs_;
  Result<CommandOutput> out = RunCommand(argv, env, timeout_);
  const std::string hint = config_.install_hint.empty() ? "" : " (" + config_.install_hint + ")";
  if (!out.ok()) return out.status().WithContext("exec plugin " + config_.command + hint);
  if (out->exit_code != 0) {
    std::string err = out->err.substr(0, 512);
    while (!err.empty() && (err.back() == '\n' || err.back() == '\r')) err.pop_back();
    return Status::Unauthenticated("exec plugin " + config_.command + " exited with code " +
                                   std::to_string(out->exit_code) + hint +
                                   (err.empty() ? "" : ": " + err));
  }
  Result<ExecCredential> cred = ParseExecCredential(out->out, config_.api_version);
  if (!cred.ok()) return Status::Unauthenticated(cred.status().message());
  cached_ = *cred;
  return cached_->token;
}

void ExecCredentialProvider::Invalidate(const std::string& token) {
  std::lock_guard<std::mutex> lock(mu_);
  if (cached_ && cached_->token == token) cached_.reset();
}

int ExecCredentialProvider::runs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return runs_;
}

}  // namespace sluice::kube
