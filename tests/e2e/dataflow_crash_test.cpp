// Crash test of the real sluice-dataflow binary: a scripted load (lease, submit, take batch, ack,
// with duplicate submits and batches left unacknowledged) while the process is killed with
// SIGKILL at random moments, restarted on the same write-ahead log, and driven on. Checks:
//   - every submit answered "accepted" is served for training in exactly one batch (a batch id
//     has one content however often it is re-served), after a final drain;
//   - no task is in two different batches, and no batch is served again after its ack was
//     answered;
//   - once a submit was answered "accepted", every later submit of that task is a duplicate;
//   - a final SIGTERM stops the process cleanly (exit 0).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/http/client.h"
#include "tests/e2e/apiserver_process.h"
#include "tests/e2e/dataflow_process.h"
#include "workers/dataflow/client/trajectory_codec.h"

namespace sluice::e2e {
namespace {

using nlohmann::json;
using Steady = std::chrono::steady_clock;

constexpr char kToken[] = "crash-test-token";

// The crash test's service: small buffers, short leases and ack timeouts, frequent snapshots.
const std::vector<std::string> kFlags = {
    "--builtin-count=20000", "--shuffle=false", "--group-size=2", "--capacity=64",
    "--groups-per-batch=2", "--ack-timeout=1s", "--lease-duration=2s", "--snapshot-bytes=64Ki",
    "--maintenance-interval=50ms", "--max-wait=3s", "--shutdown-grace=5s",
    // Nothing announces versions here: a staleness budget (maxStaleness + 1 batches of 2) larger
    // than --capacity keeps the load as heavy as the test needs.
    "--max-staleness=40"};

std::string GroupFor(const json& task, std::mt19937& rng) {
  dataflow::TrajectoryGroup g;
  g.task_id = task["task_id"].get<std::string>();
  g.attempt = task["attempt"].get<uint32_t>();
  g.lease_id = task["lease_id"].get<std::string>();
  g.worker_id = "crash-test";
  g.prompt_id = task["prompt_id"].get<std::string>();
  for (int i = 0; i < 2; ++i) {
    dataflow::Sample s;
    s.tokens = {1, 2, static_cast<int32_t>(rng() % 1000), static_cast<int32_t>(rng() % 1000)};
    s.loss_mask = {0, 0, 1, 1};
    s.behaviour_logprobs = {0, 0, -0.5f, -0.25f};
    s.versions = {-1, -1, 0, 0};
    s.reward = static_cast<double>(i);
    s.finish_reason = "stop";
    g.samples.push_back(std::move(s));
  }
  std::string out;
  EXPECT_TRUE(dataflow::EncodeTrajectoryGroup(g, &out).ok());
  return out;
}

// What the driver has learnt from replies (only answered requests count).
struct Ledger {
  std::map<std::string, std::string> body_of;            // task -> its group frame
  std::set<std::string> accepted;                        // submits answered accepted
  std::map<std::string, std::set<std::string>> batches;  // batch id -> its tasks
  std::set<std::string> acked;                           // acks answered 200
  std::vector<std::string> failures;

  void Fail(const std::string& what) { failures.push_back(what); }

  void OnSubmitReply(const std::string& task, const json& reply) {
    const bool dup = reply.value("duplicate", false);
    if (!dup && accepted.count(task) > 0) Fail("task " + task + " accepted twice");
    if (!dup) accepted.insert(task);
  }

  void OnBatch(const dataflow::Batch& b) {
    if (acked.count(b.batch_id) > 0) Fail("batch " + b.batch_id + " served after its ack");
    std::set<std::string> tasks;
    for (const dataflow::Sample& s : b.samples) tasks.insert(s.task_id);
    auto [it, fresh] = batches.emplace(b.batch_id, tasks);
    if (!fresh && it->second != tasks) Fail("batch " + b.batch_id + " changed content");
  }
};

// Runs operations until a request gets no reply (the process died). Returns operations done.
int Drive(http::Client& client, Ledger& ledger, std::vector<json>& held, std::mt19937& rng,
          Steady::time_point until) {
  int ops = 0;
  auto submit = [&](const std::string& task, const std::string& body) -> bool {
    Result<http::Response> r = client.Post("/v1/trajectories", body, "application/octet-stream");
    if (!r.ok()) return false;
    if (r->status == 200) {
      ledger.OnSubmitReply(task, json::parse(r->body));
    } else {
      ledger.Fail("submit " + task + ": " + std::to_string(r->status) + " " + r->body);
    }
    return true;
  };
  while (Steady::now() < until) {
    ++ops;
    const unsigned dice = rng() % 10;
    if (dice < 3 || held.empty()) {
      json req = {{"worker_id", "crash"}, {"capacity", 1 + rng() % 3}};
      Result<http::Response> r = client.Post("/v1/leases", req.dump(), "application/json");
      if (!r.ok()) return ops;
      if (r->status == 200) {
        const json reply = json::parse(r->body);
        for (const json& t : reply["tasks"]) held.push_back(t);
      }
    } else if (dice < 6) {
      const json task = held.back();
      const std::string id = task["task_id"].get<std::string>();
      std::string& body = ledger.body_of[id];
      if (body.empty()) body = GroupFor(task, rng);
      if (!submit(id, body)) return ops;
      held.pop_back();
    } else if (dice < 7 && !ledger.body_of.empty()) {
      // A duplicate of some earlier submit.
      auto it = ledger.body_of.begin();
      std::advance(it, static_cast<long>(rng() % ledger.body_of.size()));
      if (!submit(it->first, it->second)) return ops;
    } else {
      Result<http::Response> r = client.Get("/v1/batches/actor?groups=2&wait=0");
      if (!r.ok()) return ops;
      if (r->status != 200) continue;
      Result<dataflow::Batch> b = dataflow::DecodeBatch(r->body);
      if (!b.ok()) {
        ledger.Fail("undecodable batch: " + b.status().ToString());
        continue;
      }
      ledger.OnBatch(*b);
      if (rng() % 5 == 0) continue;  // Leave it unacknowledged: it must come back.
      Result<http::Response> ack =
          client.Post("/v1/batches/" + b->batch_id + "/ack", "{}", "application/json");
      if (!ack.ok()) return ops;
      if (ack->status == 200) ledger.acked.insert(b->batch_id);
    }
  }
  return ops;
}

TEST(DataflowCrashTest, KillNineAtRandomPointsLosesAndDuplicatesNothing) {
  const std::string binary = BinDir() + "/sluice-dataflow";
  ASSERT_TRUE(std::filesystem::exists(binary)) << binary << " is not built";
  char tmpl[] = "/tmp/sluice-dataflow-crash-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const auto test_began = Steady::now();
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  Ledger ledger;
  std::vector<json> held;
  DataflowProcess process(dir, kToken);
  int total_ops = 0;

  constexpr int kCrashes = 10;
  for (int round = 0; round < kCrashes; ++round) {
    ASSERT_TRUE(process.Start(kFlags)) << process.Log();
    const auto kill_after = std::chrono::milliseconds(100 + rng() % 600);
    std::thread killer([&process, kill_after] {
      std::this_thread::sleep_for(kill_after);
      process.Kill(SIGKILL);
    });
    total_ops +=
        Drive(process.client(), ledger, held, rng, Steady::now() + std::chrono::seconds(5));
    killer.join();
  }

  // Final incarnation: submit what is still held, then drain every batch.
  ASSERT_TRUE(process.Start(kFlags)) << process.Log();
  http::Client& client = process.client();
  for (const json& task : held) {
    const std::string id = task["task_id"].get<std::string>();
    std::string& body = ledger.body_of[id];
    if (body.empty()) body = GroupFor(task, rng);
    Result<http::Response> r = client.Post("/v1/trajectories", body, "application/octet-stream");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    if (r->status == 200) ledger.OnSubmitReply(id, json::parse(r->body));
  }
  const auto drain_until = Steady::now() + std::chrono::seconds(10);
  int empty_polls = 0;
  while (Steady::now() < drain_until && empty_polls < 2) {
    Result<http::Response> r = client.Get("/v1/batches/actor?groups=1&wait=1.5");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    if (r->status == 204) {
      ++empty_polls;
      continue;
    }
    ASSERT_EQ(r->status, 200) << r->body;
    empty_polls = 0;
    Result<dataflow::Batch> b = dataflow::DecodeBatch(r->body);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    ledger.OnBatch(*b);
    Result<http::Response> ack =
        client.Post("/v1/batches/" + b->batch_id + "/ack", "{}", "application/json");
    ASSERT_TRUE(ack.ok() && ack->status == 200);
    ledger.acked.insert(b->batch_id);
  }
  Result<http::Response> status = client.Get("/v1/status");
  ASSERT_TRUE(status.ok() && status->status == 200);
  const json s = json::parse(status->body);
  EXPECT_EQ(s["policies"]["actor"]["buffered_groups"], 0) << s.dump();
  EXPECT_EQ(s["policies"]["actor"]["unacked_batches"], 0) << s.dump();

  // Every task in exactly one batch id; every accepted submit among them.
  std::map<std::string, int> served;
  for (const auto& [id, tasks] : ledger.batches) {
    for (const std::string& t : tasks) ++served[t];
  }
  for (const auto& [task, count] : served) {
    EXPECT_EQ(count, 1) << "task " << task << " served in " << count << " batches";
    EXPECT_EQ(ledger.body_of.count(task), 1U) << "task " << task << " was never submitted";
  }
  for (const std::string& task : ledger.accepted) {
    EXPECT_EQ(served.count(task), 1U) << "accepted task " << task << " was never served";
  }
  for (const std::string& f : ledger.failures) ADD_FAILURE() << f;
  EXPECT_GT(ledger.accepted.size(), 20U) << "the load did too little to mean anything";
  EXPECT_GT(total_ops, 100);

  const int wait_status = process.Kill(SIGTERM);
  EXPECT_TRUE(WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0) << wait_status << "\n"
                                                                       << process.Log();
  EXPECT_LT(Steady::now() - test_began, std::chrono::seconds(30));
  std::cout << "crash test: " << kCrashes << " kills, " << total_ops << " operations, "
            << ledger.accepted.size() << " accepted submits, " << ledger.batches.size()
            << " batches, " << ledger.acked.size() << " acks\n";
  if (!HasFailure()) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sluice::e2e
