// RolloutWorker keeps the leases of running episodes alive (docs/rollout.md): every third of the
// dataflow's lease_seconds of the worker's clock it renews each running episode's lease, and a
// renewal the dataflow refuses with 404 (the lease was withdrawn: it expired, or the task was
// handed to another worker) cancels the episode and hands the task back. Under a FakeClock: an
// episode that runs for a long real time renews nothing until the clock passes the period.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/http/bearer_token.h"
#include "common/http/client.h"
#include "common/http/json_body.h"
#include "common/http/server.h"
#include "common/logging/logger.h"
#include "common/metrics/exposition.h"
#include "common/metrics/registry.h"
#include "tests/support/test_client.h"
#include "tests/support/wait_until.h"
#include "tests/unit/workers/rollout/workflows/scripted_backend.h"
#include "workers/rollout/rollout_worker.h"

namespace sluice::rollout {
namespace rollout_worker_lease_test {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr char kToken[] = "lease-test-token";

// Holds every generation until its episode is cancelled (or the test ends).
class HeldBackend final : public GenerationBackend {
 public:
  Result<std::vector<Completion>> Generate(const GenerateRequest&,
                                           const CancellationToken& cancel) override {
    ++calls_;
    while (!cancel.IsCancelled() && !end_.load()) std::this_thread::sleep_for(milliseconds(5));
    ++returned_;
    return Status::Cancelled("held until cancelled");
  }
  int calls() const { return calls_.load(); }
  int returned() const { return returned_.load(); }
  void End() { end_ = true; }

 private:
  std::atomic<int> calls_{0}, returned_{0};
  std::atomic<bool> end_{false};
};

// The dataflow's lease routes: one task on the first lease request, then none; renewals counted
// and answered 200 until Withdraw(), then 404; releases recorded.
class LeaseDataflow {
 public:
  LeaseDataflow() {
    http::ServerOptions so;
    so.name = "dataflow";
    so.address = "127.0.0.1";
    so.auth = http::TokenSource::FromValue(kToken);
    so.access_log = false;
    so.shutdown_grace = milliseconds(500);
    server_ = std::make_unique<http::Server>(so, nullptr, logger_);
    server_->Get("/v1/versions", [](const httplib::Request&, httplib::Response& res) {
      http::ReplyJson(res, {{"versions", json::array()}});
    });
    server_->Post("/v1/leases", [this](const httplib::Request&, httplib::Response& res) {
      ++lease_requests_;
      if (busy_answers_.fetch_sub(1) > 0) {  // As many idle replicas wait as may: come back.
        res.set_header("Retry-After", "0");
        return http::ReplyError(res, Status::TooManyRequests("lease requests are already waiting"));
      }
      json tasks = json::array();
      if (!leased_.exchange(true)) tasks.push_back(Task());
      if (tasks.empty()) std::this_thread::sleep_for(milliseconds(20));  // A short long poll.
      http::ReplyJson(res, {{"tasks", tasks}, {"versions", json::array()}, {"lease_seconds", 30}});
    });
    server_->Post(R"(/v1/leases/([^/]+)/renew)",
                  [this](const httplib::Request& req, httplib::Response& res) {
                    std::lock_guard<std::mutex> lock(mu_);
                    renewed_.push_back(req.matches[1]);
                    if (withdrawn_) {
                      return http::ReplyError(res, Status::NotFound("no such lease"));
                    }
                    http::ReplyJson(res, json::object());
                  });
    server_->Post(R"(/v1/leases/([^/]+)/release)",
                  [this](const httplib::Request& req, httplib::Response& res) {
                    std::lock_guard<std::mutex> lock(mu_);
                    released_.push_back(req.matches[1]);
                    http::ReplyJson(res, json::object());
                  });
    EXPECT_TRUE(server_->Start().ok());
  }
  ~LeaseDataflow() { server_->Shutdown(); }

  static json Task() {
    return {{"task_id", "t1"},
            {"lease_id", "L1"},
            {"attempt", 1},
            {"prompt", "1+1"},
            {"answer", "2"},
            {"samples", 1},
            {"workflow",
             {{"type", "single-turn"},
              {"roles", {{{"name", "policy"}, {"policy", "actor"}}}},
              {"reward", {{"type", "exact-match"}}}}}};
  }
  void Withdraw() {
    std::lock_guard<std::mutex> lock(mu_);
    withdrawn_ = true;
  }
  std::vector<std::string> renewed() {
    std::lock_guard<std::mutex> lock(mu_);
    return renewed_;
  }
  std::vector<std::string> released() {
    std::lock_guard<std::mutex> lock(mu_);
    return released_;
  }
  std::string url() const { return server_->BaseUrl(); }
  // The next `n` lease requests are answered 429 (the dataflow's cap on waiting lease polls).
  void AnswerBusy(int n) { busy_answers_ = n; }
  int lease_requests() const { return lease_requests_.load(); }

 private:
  log::Logger logger_{"dataflow", SystemClock::Instance(), [](std::string_view) {}};
  std::unique_ptr<http::Server> server_;
  std::atomic<bool> leased_{false};
  std::atomic<int> busy_answers_{0};
  std::atomic<int> lease_requests_{0};
  std::mutex mu_;
  bool withdrawn_ = false;
  std::vector<std::string> renewed_, released_;
};

bool WaitFor(const std::function<bool()>& done, milliseconds limit = seconds(10)) {
  return ::sluice::test_support::WaitUntil(done, limit, milliseconds(5));
}

dataflow::DataflowClient ClientOf(const LeaseDataflow& dataflow) {
  return dataflow::DataflowClient(
      std::shared_ptr<http::Client>(::sluice::test_support::TestClient(dataflow.url(), kToken)));
}

// One replica that leases without long polls and retries quickly.
RolloutWorkerOptions LeaseTestOptions() {
  RolloutWorkerOptions options;
  options.worker_id = "pool-0";
  options.pool = "pool";
  options.lease_wait = seconds(0);
  options.retry_delay = milliseconds(10);
  return options;
}

TEST(RolloutWorkerLeaseTest, RenewsEveryThirdOfTheLeaseOnItsClockAndAWithdrawnLeaseEndsTheEpisode) {
  FakeClock clock;
  LeaseDataflow dataflow;
  HeldBackend backend;
  dataflow::DataflowClient client = ClientOf(dataflow);
  RolloutWorkerOptions options = LeaseTestOptions();
  options.clock = &clock;
  RolloutWorker worker(options, &client, &backend, {{"actor", test_support::PlainCharPolicy()}},
                       nullptr, EngineGauges{}, nullptr);
  CancellationSource stop;
  std::thread run([&] { worker.Run(stop.Token()); });

  ASSERT_TRUE(WaitFor([&] { return backend.calls() == 1; }));  // The episode runs.
  // Real time passes, the worker's clock does not: no renewal, however long the episode runs.
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_TRUE(dataflow.renewed().empty());
  clock.Advance(seconds(9));  // Under a third of the 30 s lease.
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_TRUE(dataflow.renewed().empty());

  clock.Advance(seconds(1));  // 10 s: a third of the lease.
  ASSERT_TRUE(WaitFor([&] { return dataflow.renewed().size() == 1; }));
  EXPECT_EQ(dataflow.renewed()[0], "L1");
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_EQ(dataflow.renewed().size(), 1u);  // Once a period, not once a loop.
  clock.Advance(seconds(10));
  ASSERT_TRUE(WaitFor([&] { return dataflow.renewed().size() == 2; }));
  EXPECT_EQ(backend.returned(), 0);  // A renewed lease keeps its episode running.

  dataflow.Withdraw();
  clock.Advance(seconds(10));
  ASSERT_TRUE(WaitFor([&] { return backend.returned() == 1; }));  // Cancelled.
  ASSERT_TRUE(WaitFor([&] { return dataflow.released().size() == 1; }));
  EXPECT_EQ(dataflow.released()[0], "L1");  // The task is handed back.
  EXPECT_TRUE(WaitFor([&] { return worker.in_flight() == 0; }));

  backend.End();
  stop.Cancel();
  run.join();
}

// The dataflow's 429 for a lease (as many idle replicas wait as it lets wait) means "no work
// now": the worker asks again after its retry delay and counts no lease error; its episode
// starts once a lease is answered.
TEST(RolloutWorkerLeaseTest, ABusyDataflowsLeaseAnswerIsNoWorkNotAnError) {
  LeaseDataflow dataflow;
  dataflow.AnswerBusy(3);
  HeldBackend backend;
  dataflow::DataflowClient client = ClientOf(dataflow);
  const RolloutWorkerOptions options = LeaseTestOptions();
  metrics::Registry registry;
  RolloutWorker worker(options, &client, &backend, {{"actor", test_support::PlainCharPolicy()}},
                       nullptr, EngineGauges{}, &registry);
  CancellationSource stop;
  std::thread run([&] { worker.Run(stop.Token()); });
  ASSERT_TRUE(WaitFor([&] { return backend.calls() == 1; }));  // Leased after three 429s.
  EXPECT_GE(dataflow.lease_requests(), 4);
  // No lease error: the series is absent or 0.
  const std::string text = metrics::ExposeText(registry);
  const std::string series = "sluice_rollout_errors_total{operation=\"lease\"} ";
  const size_t at = text.find(series);
  EXPECT_TRUE(at == std::string::npos || text.compare(at + series.size(), 2, "0\n") == 0) << text;
  backend.End();
  stop.Cancel();
  run.join();
}

}  // namespace rollout_worker_lease_test
}  // namespace sluice::rollout
