// The real sluice-dataflow binary as a child process for end-to-end tests: started on a state
// directory with extra flags, its stderr (JSON logs) in a file per start, ready once its
// "listening" log line gives the port and /readyz answers 200.
#pragma once

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/http/client.h"
#include "tests/e2e/apiserver_process.h"
#include "tests/e2e/spawned_process.h"
#include "tests/support/read_file.h"

namespace sluice::e2e {

class DataflowProcess {
 public:
  // `dir` holds the write-ahead log (dir/wal) and the logs; with a `token`, it is written to
  // dir/token and required of clients. With `tls`, client() speaks HTTPS verified by it (Start's
  // flags must then give the binary its certificate).
  explicit DataflowProcess(std::string dir, std::string token = "",
                           std::optional<http::ClientTlsOptions> tls = std::nullopt)
      : dir_(std::move(dir)), token_(std::move(token)), tls_(std::move(tls)) {
    if (!token_.empty()) std::ofstream(dir_ + "/token") << token_;
  }
  ~DataflowProcess() { Kill(SIGKILL); }
  DataflowProcess(const DataflowProcess&) = delete;
  DataflowProcess& operator=(const DataflowProcess&) = delete;

  // Starts the binary with `flags` after the base ones (loopback, port 0, dir/wal, info logs);
  // true once /readyz answers 200, false if the process exits first (exit_status() then says
  // how) or 20 s pass.
  bool Start(const std::vector<std::string>& flags) {
    ++starts_;
    std::vector<std::string> args = {BinDir() + "/sluice-dataflow", "--address=127.0.0.1",
                                     "--port=0", "--wal-dir=" + dir_ + "/wal", "--log-level=info"};
    if (!token_.empty()) args.push_back("--token-file=" + dir_ + "/token");
    args.insert(args.end(), flags.begin(), flags.end());
    pid_ = SpawnLogged(std::move(args), LogPath(), /*append=*/false);
    return AwaitReady(
        pid_,
        [&] {
          const std::optional<int> port = ListeningPort(Log());
          if (!port) return false;
          http::ClientOptions co;
          co.base_url =
              std::string(tls_ ? "https" : "http") + "://127.0.0.1:" + std::to_string(*port);
          if (tls_) co.tls = *tls_;
          base_url_ = co.base_url;
          co.max_attempts = 1;
          if (!token_.empty()) co.token = http::TokenSource::FromValue(token_);
          client_ = std::move(http::Client::Create(co)).value();
          Result<http::Response> ready = client_->Get("/readyz");
          return ready.ok() && ready->status == 200;
        },
        std::chrono::seconds(20), std::chrono::milliseconds(10), &exit_status_);
  }

  // Sends `signal` and reaps the process; returns its wait status (the last one when it is not
  // running).
  int Kill(int signal) {
    if (pid_ <= 0) return exit_status_;
    exit_status_ = KillAndReap(pid_, signal);
    return exit_status_;
  }

  // GET /v1/status, or null when it fails.
  nlohmann::json Status() {
    Result<http::Response> res = client_->Get("/v1/status");
    if (!res.ok() || res->status != 200) return nlohmann::json();
    return nlohmann::json::parse(res->body, nullptr, false);
  }

  http::Client& client() { return *client_; }
  // "http://127.0.0.1:<port>" (or https) of the current start.
  const std::string& base_url() const { return base_url_; }
  int exit_status() const { return exit_status_; }
  // The current (latest) start's log.
  std::string LogPath() const { return dir_ + "/dataflow-" + std::to_string(starts_) + ".log"; }
  std::string Log() const { return test_support::ReadFileOrEmpty(LogPath()); }

 private:
  std::string dir_;
  std::string token_;
  std::optional<http::ClientTlsOptions> tls_;
  std::string base_url_;
  pid_t pid_ = -1;
  int exit_status_ = -1;
  int starts_ = 0;
  std::unique_ptr<http::Client> client_;
};

}  // namespace sluice::e2e
