// The real sluice-rollout against the real sluice-dataflow (and, for the closed loop, the real
// sluice-trainer): the worker leases arithmetic tasks, generates with the built-in tiny model,
// scores and submits the groups; the trainer trains on them and publishes versions, which the
// worker fetches and loads; SIGTERM drains it and it exits 0. A worker killed mid-episode leaves
// its leases to expire, and another worker runs the re-issued tasks.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/apiserver_process.h"
#include "tests/e2e/dataflow_process.h"

namespace sluice::e2e {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr char kToken[] = "rollout-e2e-token";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool HaveBinaries() {
  return fs::exists(BinDir() + "/sluice-rollout") && fs::exists(BinDir() + "/sluice-trainer");
}

// A child process running one of the built binaries, stderr to a log file.
class Child {
 public:
  Child(const std::string& program, std::vector<std::string> flags, std::string log)
      : log_(std::move(log)) {
    const std::string binary = BinDir() + "/" + program;
    std::vector<std::string> args = {binary};
    args.insert(args.end(), flags.begin(), flags.end());
    pid_ = fork();
    if (pid_ == 0) {
      FILE* out = std::freopen(log_.c_str(), "w", stderr);
      (void)out;
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(binary.c_str(), argv.data());
      _exit(127);
    }
  }
  ~Child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  std::string Log() const { return ReadFile(log_); }
  void Signal(int sig) {
    if (pid_ > 0) ::kill(pid_, sig);
  }
  // The wait status once exited within `timeout`; -1 otherwise (then killed).
  int Wait(std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    int status = 0;
    while (waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        pid_ = -1;
        return -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    pid_ = -1;
    return status;
  }
  // A client of the HTTP server the child logged it listens on (within 60 s).
  std::unique_ptr<http::Client> Connect() {
    const std::regex port_re("\"msg\":\"listening\",\"url\":\"http://[0-9.]+:([0-9]+)\"");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      std::smatch m;
      const std::string log = Log();
      if (std::regex_search(log, m, port_re)) {
        http::ClientOptions co;
        co.base_url = "http://127.0.0.1:" + std::string(m[1]);
        co.max_attempts = 1;
        co.token = http::TokenSource::FromValue(kToken);
        return std::move(http::Client::Create(co)).value();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return nullptr;
  }

 private:
  pid_t pid_ = -1;
  std::string log_;
};

json GetJson(http::Client& c, const std::string& path) {
  Result<http::Response> r = c.Get(path);
  if (!r.ok() || r->status != 200) return json();
  return json::parse(r->body, nullptr, false);
}

// Polls `probe` every 100 ms until it returns true or `timeout` passes.
template <typename F>
bool Eventually(F probe, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (probe()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return probe();
}

constexpr char kPolicy[] = R"({"metadata": {"name": "actor", "namespace": "rl"},
  "spec": {"model": {"dtype": "float32", "source": {"builtin": {"layers": 1, "hiddenSize": 32,
           "heads": 2, "kvHeads": 2, "intermediateSize": 64, "maxSequenceLength": 128}}}}})";

std::vector<std::string> RolloutFlags(const std::string& dir, const std::string& df_url,
                                      const std::string& replica) {
  return {"--dataflow-url=" + df_url,
          "--token-file=" + dir + "/token",
          "--policies=actor",
          "--policy-config=" + dir + "/rollout.json",
          "--address=127.0.0.1",
          "--port=0",
          "--replica=" + replica,
          "--max-episodes=4",
          "--max-concurrent-sequences=32",
          "--kv-cache-max-bytes=16777216",
          "--lease-wait=1s",
          "--drain-grace=10s",
          "--staging-dir=" + dir + "/staging-" + replica,
          "--threads=1"};
}

TEST(RolloutProcessTest, ClosedLoopWithTheTrainerThenDrainsOnSigterm) {
  if (!HaveBinaries()) GTEST_SKIP() << "sluice-rollout/sluice-trainer not built (no libtorch)";
  const std::string dir = ::testing::TempDir() + "/rollout_e2e_" + std::to_string(getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  DataflowProcess df(dir, kToken);
  const json workflow = {{"type", "single-turn"},
                         {"roles", {{{"name", "solver"}, {"policy", "actor"}}}},
                         {"reward", {{"type", "math"}}}};
  ASSERT_TRUE(
      df.Start({"--policies=actor", "--group-size=4", "--groups-per-batch=2", "--capacity=64",
                "--max-wait=2s", "--builtin-count=1000", "--workflow=" + workflow.dump(),
                R"(--sampling={"temperature": 1.0, "maxNewTokens": 8})"}))
      << df.Log();
  std::ofstream(dir + "/rollout.json")
      << json({{"policies", json::array({json::parse(kPolicy)})}}).dump();

  Child rollout("sluice-rollout", RolloutFlags(dir, df.base_url(), "gen-0"), dir + "/rollout.log");
  std::unique_ptr<http::Client> rc = rollout.Connect();
  ASSERT_NE(rc, nullptr) << rollout.Log();
  ASSERT_TRUE(Eventually(
      [&] {
        Result<http::Response> r = rc->Get("/readyz");
        return r.ok() && r->status == 200;
      },
      std::chrono::seconds(60)))
      << rollout.Log();

  // The worker's groups reach the dataflow.
  ASSERT_TRUE(Eventually(
      [&] {
        const json s = GetJson(df.client(), "/v1/status");
        return s.is_object() && s.value("/submits/accepted"_json_pointer, 0) >= 4;
      },
      std::chrono::seconds(60)))
      << GetJson(df.client(), "/v1/status").dump() << "\n"
      << rollout.Log();

  // The trainer trains three steps on them and publishes versions 1..3.
  const json trainer_config = json::parse(std::string(R"({
    "trainerJob": {"metadata": {"name": "train", "namespace": "rl"},
      "spec": {"policyRef": {"name": "actor"}, "dataflowRef": {"name": "arith"}, "steps": 3,
               "microBatchTokens": 256, "optimizer": {"lr": 0.01}}},
    "policy": )") + kPolicy + R"(,
    "dataflow": {"metadata": {"name": "arith", "namespace": "rl"},
      "spec": {"dataset": {"builtin": {}},
               "workflow": {"type": "single-turn", "roles": [{"name": "solver", "policy": "actor"}]}}}
  })");
  std::ofstream(dir + "/trainer.json") << trainer_config.dump();
  Child trainer("sluice-trainer",
                {"--config=" + dir + "/trainer.json", "--dataflow-url=" + df.base_url(),
                 "--token-file=" + dir + "/token", "--address=127.0.0.1", "--port=0",
                 "--batch-wait=2s", "--threads=1"},
                dir + "/trainer.log");
  const int status = trainer.Wait(std::chrono::seconds(240));
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << "\n"
                                                             << trainer.Log() << "\n"
                                                             << rollout.Log();

  // The worker loaded the newest version it was told of (the trainer is gone now, so at least
  // the ones announced while it lived): version >= 1, reported in /v1/status and the metrics.
  ASSERT_TRUE(Eventually(
      [&] {
        const json s = GetJson(*rc, "/v1/status");
        return s.is_object() && !s["policies"].empty() && s["policies"][0].value("version", 0) >= 1;
      },
      std::chrono::seconds(30)))
      << GetJson(*rc, "/v1/status").dump() << "\n"
      << rollout.Log();
  const std::string log = rollout.Log();
  EXPECT_NE(log.find("\"msg\":\"weights updated\""), std::string::npos) << log;
  Result<http::Response> metrics = rc->Get("/metrics");
  ASSERT_TRUE(metrics.ok());
  EXPECT_NE(metrics->body.find("sluice_rollout_weight_fetches_total{"), std::string::npos);
  EXPECT_NE(metrics->body.find("sluice_rollout_episodes_total{outcome=\"submitted\"}"),
            std::string::npos)
      << metrics->body;
  // Trained-on samples carry versions: the dataflow's buffer saw samples of version >= 1 or the
  // trainer's batches did (it acked three).
  const json ds = GetJson(df.client(), "/v1/status");
  EXPECT_GE(ds.value("/policies/actor/acked_batches"_json_pointer, 0), 3) << ds.dump();

  // SIGTERM: drain and exit 0.
  rollout.Signal(SIGTERM);
  const int rstatus = rollout.Wait(std::chrono::seconds(30));
  EXPECT_TRUE(WIFEXITED(rstatus) && WEXITSTATUS(rstatus) == 0) << rstatus << "\n" << rollout.Log();
  EXPECT_NE(rollout.Log().find("\"msg\":\"draining\""), std::string::npos);
}

TEST(RolloutProcessTest, AKilledWorkersLeasesAreRunAgainByAnother) {
  if (!HaveBinaries()) GTEST_SKIP() << "sluice-rollout not built (no libtorch)";
  const std::string dir = ::testing::TempDir() + "/rollout_e2e_kill_" + std::to_string(getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);

  // A multi-turn environment that holds /reset while `hold` is set, so the first worker's
  // episodes are in flight when it is killed.
  std::atomic<bool> hold{true};
  httplib::Server env;
  env.Post("/reset", [&](const httplib::Request&, httplib::Response& res) {
    for (int i = 0; i < 300 && hold; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    res.set_content(R"({"observation": "", "session": "s"})", "application/json");
  });
  env.Post("/step", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"observation": "ok", "done": true, "reward": 1})", "application/json");
  });
  const int env_port = env.bind_to_any_port("127.0.0.1");
  std::thread env_thread([&] { env.listen_after_bind(); });
  struct Stop {
    httplib::Server& s;
    std::thread& t;
    std::atomic<bool>& hold;
    ~Stop() {
      hold = false;
      s.stop();
      if (t.joinable()) t.join();
    }
  } stop_env{env, env_thread, hold};

  DataflowProcess df(dir, kToken);
  const json workflow = {
      {"type", "multi-turn"},
      {"roles", {{{"name", "agent"}, {"policy", "actor"}}}},
      {"maxTurns", 2},
      {"environment",
       {{"url", "http://127.0.0.1:" + std::to_string(env_port)}, {"timeoutSeconds", 60}}},
      {"reward", {{"type", "exact-match"}}}};
  ASSERT_TRUE(
      df.Start({"--policies=actor", "--group-size=2", "--capacity=64", "--max-wait=2s",
                "--builtin-count=50", "--lease-duration=3s", "--workflow=" + workflow.dump(),
                R"(--sampling={"temperature": 1.0, "maxNewTokens": 6})"}))
      << df.Log();
  std::ofstream(dir + "/rollout.json")
      << json({{"policies", json::array({json::parse(kPolicy)})}}).dump();

  int64_t granted_before_kill = 0;
  {
    Child first("sluice-rollout", RolloutFlags(dir, df.base_url(), "gen-0"), dir + "/first.log");
    ASSERT_TRUE(Eventually(
        [&] {
          const json s = GetJson(df.client(), "/v1/status");
          granted_before_kill = s.value("/leases/granted"_json_pointer, int64_t{0});
          return s.value("leases_in_flight", 0) >= 2;
        },
        std::chrono::seconds(60)))
        << GetJson(df.client(), "/v1/status").dump() << "\n"
        << first.Log();
    first.Signal(SIGKILL);
    first.Wait(std::chrono::seconds(10));
  }
  // Its leases expire (3 s) and go back to the queue.
  ASSERT_TRUE(Eventually(
      [&] {
        return GetJson(df.client(), "/v1/status").value("/leases/expired"_json_pointer, 0) >= 2;
      },
      std::chrono::seconds(30)))
      << GetJson(df.client(), "/v1/status").dump();

  hold = false;
  Child second("sluice-rollout", RolloutFlags(dir, df.base_url(), "gen-1"), dir + "/second.log");
  ASSERT_TRUE(Eventually(
      [&] {
        return GetJson(df.client(), "/v1/status").value("/submits/accepted"_json_pointer, 0) >= 2;
      },
      std::chrono::seconds(60)))
      << GetJson(df.client(), "/v1/status").dump() << "\n"
      << second.Log();
  EXPECT_GT(granted_before_kill, 0);
  std::unique_ptr<http::Client> rc = second.Connect();
  ASSERT_NE(rc, nullptr);
  // The operator names the region's weight relay; a malformed one is refused naming the field.
  Result<http::Response> relay =
      rc->Post("/v1/relay", R"({"url": "http://10.1.2.3:8080"})", "application/json");
  ASSERT_TRUE(relay.ok());
  EXPECT_EQ(relay->status, 200) << relay->body;
  EXPECT_EQ(GetJson(*rc, "/v1/status").value("/weights/relay"_json_pointer, ""),
            "http://10.1.2.3:8080");
  relay = rc->Post("/v1/relay", R"({"url": "ftp://x"})", "application/json");
  ASSERT_TRUE(relay.ok());
  EXPECT_EQ(relay->status, 400);
  EXPECT_NE(relay->body.find("\"field\":\"url\""), std::string::npos) << relay->body;

  // The drain endpoint: stop leasing, then report drained once nothing is in flight.
  Result<http::Response> drain = rc->Post("/v1/drain?grace=5", "", "application/json");
  ASSERT_TRUE(drain.ok());
  EXPECT_EQ(drain->status, 200) << drain->body;
  EXPECT_TRUE(Eventually(
      [&] {
        const json s = GetJson(*rc, "/v1/status");
        return s.value("drained", false) && s.value("in_flight", -1) == 0;
      },
      std::chrono::seconds(20)))
      << GetJson(*rc, "/v1/status").dump();
}

}  // namespace
}  // namespace sluice::e2e
