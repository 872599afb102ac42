// The real sluice-rollout against the real sluice-dataflow (and, for the closed loop, the real
// sluice-trainer): the worker leases arithmetic tasks, generates with the built-in tiny model,
// scores and submits the groups; the trainer trains on them and publishes versions, which the
// worker fetches and loads; SIGTERM drains it and it exits 0. A live worker renews its leases; one
// killed mid-episode leaves them to expire, and another worker runs the re-issued tasks.
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
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/tls/certificates.h"
#include "tests/e2e/apiserver_process.h"
#include "tests/e2e/child_process.h"
#include "tests/e2e/dataflow_process.h"
#include "tests/support/wait_until.h"

namespace sluice::e2e {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr char kToken[] = "rollout-e2e-token";
constexpr char kControlToken[] = "rollout-e2e-control-token";

bool HaveBinaries() {
  return fs::exists(BinDir() + "/sluice-rollout") && fs::exists(BinDir() + "/sluice-trainer");
}

json GetJson(http::Client& c, const std::string& path) {
  Result<http::Response> r = c.Get(path);
  if (!r.ok() || r->status != 200) return json();
  return json::parse(r->body, nullptr, false);
}

// Polls `probe` every 100 ms until it returns true or `timeout` passes.
template <typename F>
bool Eventually(F probe, std::chrono::seconds timeout) {
  return ::sluice::test_support::WaitUntil(probe, timeout, std::chrono::milliseconds(100));
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

// A CA in dir/ca.crt and, for each of `components`, a serving certificate for 127.0.0.1 in
// dir/<component>.crt and .key; returns the flags that give `component` its certificate and
// the CA that verifies its peers.
std::vector<std::string> TlsFlags(const std::string& dir, const std::string& component) {
  const std::string cert = dir + "/" + component + ".crt";
  const std::string key = dir + "/" + component + ".key";
  return {"--tls-cert-file=" + cert, "--tls-key-file=" + key, "--tls-ca-file=" + dir + "/ca.crt"};
}

bool IssueTlsFiles(const std::string& dir, const std::vector<std::string>& components) {
  const Clock::WallTime now = SystemClock::Instance().WallNow();
  Result<tls::CertifiedKey> ca =
      tls::NewCertificateAuthority({"e2e-ca", now, std::chrono::hours(24)});
  if (!ca.ok()) return false;
  std::ofstream(dir + "/ca.crt") << ca->cert_pem;
  for (const std::string& c : components) {
    Result<tls::CertifiedKey> s =
        tls::IssueServingCertificate(*ca, {c, now, std::chrono::hours(24)}, {"127.0.0.1"});
    if (!s.ok()) return false;
    std::ofstream(dir + "/" + c + ".crt") << s->cert_pem;
    std::ofstream(dir + "/" + c + ".key") << s->key_pem;
  }
  return true;
}

std::vector<std::string> Concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The whole loop over TLS: the dataflow, the trainer and the worker each serve HTTPS with a
// certificate from one CA and verify each other with it (--tls-ca-file); the worker fetches the
// trainer's weights from the https:// URL the trainer announces.
TEST(RolloutProcessTest, ClosedLoopWithTheTrainerOverTlsThenDrainsOnSigterm) {
  ASSERT_TRUE(HaveBinaries()) << "sluice-rollout or sluice-trainer is not built in " << BinDir();
  const std::string dir = ::testing::TempDir() + "/rollout_e2e_" + std::to_string(getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  ASSERT_TRUE(IssueTlsFiles(dir, {"dataflow", "trainer", "rollout"}));
  http::ClientTlsOptions verify;
  verify.ca_file = dir + "/ca.crt";
  DataflowProcess df(dir, kToken, verify);
  const json workflow = {{"type", "single-turn"},
                         {"roles", {{{"name", "solver"}, {"policy", "actor"}}}},
                         {"reward", {{"type", "math"}}}};
  ASSERT_TRUE(df.Start(
      Concat({"--policies=actor", "--group-size=4", "--groups-per-batch=2", "--capacity=64",
              "--max-wait=2s", "--builtin-count=1000", "--workflow=" + workflow.dump(),
              R"(--sampling={"temperature": 1.0, "maxNewTokens": 8})"},
             TlsFlags(dir, "dataflow"))))
      << df.Log();
  ASSERT_EQ(df.base_url().rfind("https://", 0), 0u) << df.base_url();
  {
    // Plain HTTP to it, or TLS trusting no CA of ours, gets nothing.
    http::ClientOptions plain;
    plain.base_url = "http" + df.base_url().substr(5);
    plain.max_attempts = 1;
    Result<http::Response> r = http::Client::Create(plain).value()->Get("/readyz");
    EXPECT_FALSE(r.ok() && r->status == 200);
    http::ClientOptions system_cas;
    system_cas.base_url = df.base_url();
    system_cas.max_attempts = 1;
    EXPECT_FALSE(http::Client::Create(system_cas).value()->Get("/readyz").ok());
  }
  std::ofstream(dir + "/rollout.json")
      << json({{"policies", json::array({json::parse(kPolicy)})}}).dump();

  // The operator's token for the replica (--control-token-file); the rollout token (which its
  // peers hold too) then reads only what the replica relays.
  std::ofstream(dir + "/control-token") << kControlToken << "\n";
  ChildProcess rollout("sluice-rollout",
                       Concat(Concat(RolloutFlags(dir, df.base_url(), "gen-0"),
                                     {"--control-token-file=" + dir + "/control-token"}),
                              TlsFlags(dir, "rollout")),
                       dir + "/rollout.log");
  std::unique_ptr<http::Client> rc = rollout.Connect(kControlToken, verify);
  ASSERT_NE(rc, nullptr) << rollout.Log();
  std::unique_ptr<http::Client> peer = rollout.Connect(kToken, verify);
  ASSERT_NE(peer, nullptr) << rollout.Log();
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

  // The trainer trains twelve steps on them and publishes versions 1..12.
  const json trainer_config = json::parse(std::string(R"({
    "trainerJob": {"metadata": {"name": "train", "namespace": "rl"},
      "spec": {"policyRef": {"name": "actor"}, "dataflowRef": {"name": "arith"}, "steps": 12,
               "microBatchTokens": 256, "optimizer": {"lr": 0.01}}},
    "policy": )") + kPolicy + R"(,
    "dataflow": {"metadata": {"name": "arith", "namespace": "rl"},
      "spec": {"dataset": {"builtin": {}},
               "workflow": {"type": "single-turn", "roles": [{"name": "solver", "policy": "actor"}]}}}
  })");
  std::ofstream(dir + "/trainer.json") << trainer_config.dump();
  ChildProcess trainer("sluice-trainer",
                       Concat({"--config=" + dir + "/trainer.json",
                               "--dataflow-url=" + df.base_url(), "--token-file=" + dir + "/token",
                               "--address=127.0.0.1", "--port=0", "--batch-wait=2s", "--threads=1"},
                              TlsFlags(dir, "trainer")),
                       dir + "/trainer.log");
  // While it trains, the worker loads its versions (checked before it exits: a trainer that is
  // gone serves nothing, so the last versions it announces cannot be fetched).
  ASSERT_TRUE(Eventually(
      [&] {
        const json s = GetJson(*rc, "/v1/status");
        return s.is_object() && !s["policies"].empty() && s["policies"][0].value("version", 0) >= 1;
      },
      std::chrono::seconds(180)))
      << GetJson(*rc, "/v1/status").dump() << "\n"
      << trainer.Log() << "\n"
      << rollout.Log();
  {
    // A peer's token reads the relayed versions and nothing else of the replica's.
    Result<http::Response> relayed = peer->Get("/v1/relay/actor/v1/weights");
    ASSERT_TRUE(relayed.ok()) << relayed.status().message();
    EXPECT_EQ(relayed->status, 200) << relayed->body;
    for (const auto& [method, path] : std::vector<std::pair<std::string, std::string>>{
             {"POST", "/v1/drain"}, {"POST", "/v1/relay"}, {"GET", "/v1/status"}}) {
      Result<http::Response> r = method == "GET"
                                     ? peer->Get(path)
                                     : peer->Post(path, R"({"url": ""})", "application/json");
      ASSERT_TRUE(r.ok()) << path << ": " << r.status().message();
      EXPECT_EQ(r->status, 403) << method << " " << path << ": " << r->body;
    }
  }
  const int status = trainer.Wait(std::chrono::seconds(240));
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << "\n"
                                                             << trainer.Log() << "\n"
                                                             << rollout.Log();
  const std::string log = rollout.Log();
  EXPECT_NE(log.find("\"msg\":\"weights updated\""), std::string::npos) << log;
  // From the trainer's https:// URL (versions announced with it).
  const json versions = GetJson(df.client(), "/v1/versions");
  EXPECT_NE(versions.dump().find("https://127.0.0.1:"), std::string::npos) << versions.dump();
  EXPECT_NE(log.find("\"blas_threads\":1"), std::string::npos) << log;  // --blas-threads' default.
  Result<http::Response> metrics = rc->Get("/metrics");
  ASSERT_TRUE(metrics.ok());
  EXPECT_NE(metrics->body.find("sluice_rollout_weight_fetches_total{"), std::string::npos);
  EXPECT_NE(metrics->body.find("sluice_rollout_episodes_total{outcome=\"submitted\"}"),
            std::string::npos)
      << metrics->body;
  // The trainer acknowledged a batch per step.
  const json ds = GetJson(df.client(), "/v1/status");
  EXPECT_GE(ds.value("/policies/actor/acked_batches"_json_pointer, 0), 12) << ds.dump();

  // SIGTERM: drain and exit 0.
  rollout.Signal(SIGTERM);
  const int rstatus = rollout.Wait(std::chrono::seconds(30));
  EXPECT_TRUE(WIFEXITED(rstatus) && WEXITSTATUS(rstatus) == 0) << rstatus << "\n" << rollout.Log();
  EXPECT_NE(rollout.Log().find("\"msg\":\"draining\""), std::string::npos);
}

TEST(RolloutProcessTest, AKilledWorkersLeasesAreRunAgainByAnother) {
  ASSERT_TRUE(HaveBinaries()) << "sluice-rollout or sluice-trainer is not built in " << BinDir();
  const std::string dir = ::testing::TempDir() + "/rollout_e2e_kill_" + std::to_string(getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);

  // A multi-turn environment that holds /reset while `hold` is set, so the first worker's
  // episodes are in flight when it is killed. It records the Authorization headers it is sent:
  // never the experiment's token, only the environment's own (--environment-token-file).
  std::atomic<bool> hold{true};
  std::mutex auth_mu;
  std::set<std::string> auth_seen;
  auto record_auth = [&](const httplib::Request& req) {
    std::lock_guard<std::mutex> lock(auth_mu);
    auth_seen.insert(req.get_header_value("Authorization"));
  };
  httplib::Server env;
  env.Post("/reset", [&](const httplib::Request& req, httplib::Response& res) {
    record_auth(req);
    for (int i = 0; i < 300 && hold; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    res.set_content(R"({"observation": "", "session": "s"})", "application/json");
  });
  env.Post("/step", [&](const httplib::Request& req, httplib::Response& res) {
    record_auth(req);
    res.set_content(R"({"observation": "ok", "done": true, "reward": 1})", "application/json");
  });
  const int env_port = env.bind_to_any_port("127.0.0.1");
  std::thread env_thread([&] { env.listen_after_bind(); });
  // stop() is a no-op until the accept loop runs; wait for it so teardown cannot hang.
  while (!env.is_running()) std::this_thread::yield();
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
    ChildProcess first("sluice-rollout", RolloutFlags(dir, df.base_url(), "gen-0"),
                       dir + "/first.log");
    ASSERT_TRUE(Eventually(
        [&] {
          const json s = GetJson(df.client(), "/v1/status");
          granted_before_kill = s.value("/leases/granted"_json_pointer, int64_t{0});
          return s.value("leases_in_flight", 0) >= 2;
        },
        std::chrono::seconds(60)))
        << GetJson(df.client(), "/v1/status").dump() << "\n"
        << first.Log();
    // Its episodes reached the environment (held in /reset) before it is killed.
    ASSERT_TRUE(Eventually(
        [&] {
          std::lock_guard<std::mutex> lock(auth_mu);
          return !auth_seen.empty();
        },
        std::chrono::seconds(30)))
        << first.Log();
    // While it lives, the worker renews its leases (every second for a 3 s lease): none expires.
    std::this_thread::sleep_for(std::chrono::milliseconds(4500));
    const json alive = GetJson(df.client(), "/v1/status");
    EXPECT_EQ(alive.value("/leases/expired"_json_pointer, -1), 0) << alive.dump();
    EXPECT_GE(alive.value("leases_in_flight", 0), 2) << alive.dump();
    first.Signal(SIGKILL);
    first.Wait(std::chrono::seconds(10));
  }
  {
    // The first worker had no --environment-token-file: no Authorization header at all.
    std::lock_guard<std::mutex> lock(auth_mu);
    EXPECT_EQ(auth_seen, std::set<std::string>{""});
    auth_seen.clear();
  }
  // Its leases expire (3 s) and go back to the queue.
  ASSERT_TRUE(Eventually(
      [&] {
        return GetJson(df.client(), "/v1/status").value("/leases/expired"_json_pointer, 0) >= 2;
      },
      std::chrono::seconds(30)))
      << GetJson(df.client(), "/v1/status").dump();

  hold = false;
  std::ofstream(dir + "/environment-token") << "environment-only-token\n";
  std::vector<std::string> second_flags = RolloutFlags(dir, df.base_url(), "gen-1");
  second_flags.push_back("--environment-token-file=" + dir + "/environment-token");
  ChildProcess second("sluice-rollout", second_flags, dir + "/second.log");
  ASSERT_TRUE(Eventually(
      [&] {
        return GetJson(df.client(), "/v1/status").value("/submits/accepted"_json_pointer, 0) >= 2;
      },
      std::chrono::seconds(60)))
      << GetJson(df.client(), "/v1/status").dump() << "\n"
      << second.Log();
  EXPECT_GT(granted_before_kill, 0);
  {
    // The second worker sends the environment's own token, never the experiment's. (A call of
    // the killed worker still queued in the environment server may add "" after the clear.)
    std::lock_guard<std::mutex> lock(auth_mu);
    EXPECT_TRUE(auth_seen.count("Bearer environment-only-token"))
        << testing::PrintToString(auth_seen);
    EXPECT_FALSE(auth_seen.count(std::string("Bearer ") + kToken))
        << testing::PrintToString(auth_seen);
  }
  std::unique_ptr<http::Client> rc = second.Connect(kToken);
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
