// Leader election on a Lease (hand-over between two electors, expiry when one stops renewing,
// release on shutdown, loss stops the controllers) and the event recorder (aggregation, rate
// limit), against an in-memory API server, on a FakeClock.
#include "kube/leader_election.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "common/metrics/exposition.h"
#include "kube/core_resources.h"
#include "kube/event_recorder.h"
#include "tests/unit/kube/fake_api_server.h"

namespace sluice::kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::AutoAdvance;
using testing::FakeApiServer;

constexpr char kLeasePath[] = "/apis/coordination.k8s.io/v1/namespaces/sluice/leases/sluice-op";

class LeaderElectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RestConfig cfg;
    cfg.host = server_.Url();
    cfg.qps = 0;
    RestClientOptions opts;
    opts.clock = &clock_;
    opts.max_attempts = 1;
    client_ = std::move(RestClient::Create(cfg, opts).value());
    dyn_ = std::make_unique<DynamicClient>(*client_);
  }
  LeaderElectionConfig Config(const std::string& id) {
    LeaderElectionConfig c;
    c.lease_name = "sluice-op";
    c.identity = id;
    c.registry = &registry_;
    return c;
  }
  std::unique_ptr<LeaderElector> Elector(LeaderElectionConfig c) {
    return std::make_unique<LeaderElector>(Leases(*dyn_, "sluice"), std::move(c), clock_);
  }
  std::string Holder() {
    auto lease = server_.Object(kLeasePath);
    return lease ? (*lease)["spec"].value("holderIdentity", "") : "<none>";
  }

  FakeApiServer server_;
  FakeClock clock_;
  metrics::Registry registry_;
  std::unique_ptr<RestClient> client_;
  std::unique_ptr<DynamicClient> dyn_;
};

TEST_F(LeaderElectionTest, ConfigIsValidated) {
  LeaderElectionConfig c = Config("a");
  EXPECT_TRUE(c.Validate().ok());
  c.renew_deadline = seconds(20);
  EXPECT_FALSE(c.Validate().ok());
  c = Config("");
  EXPECT_FALSE(c.Validate().ok());
  const std::string id = LeaderIdentity("sluice-operator-7d9f");
  EXPECT_EQ(id.rfind("sluice-operator-7d9f_", 0), 0u);
  EXPECT_EQ(id.size(), std::string("sluice-operator-7d9f_").size() + 8);
  EXPECT_NE(id, LeaderIdentity("sluice-operator-7d9f"));
}

TEST_F(LeaderElectionTest, SecondCandidateWaitsUntilTheLeaseExpires) {
  auto a = Elector(Config("a"));
  auto b = Elector(Config("b"));
  EXPECT_TRUE(a->TryAcquireOrRenew());  // Creates the lease.
  EXPECT_EQ(Holder(), "a");
  EXPECT_EQ((*server_.Object(kLeasePath))["spec"]["leaseDurationSeconds"], 15);
  EXPECT_FALSE(b->TryAcquireOrRenew());
  EXPECT_EQ(b->GetLeader(), "a");
  clock_.Advance(seconds(10));
  EXPECT_TRUE(a->TryAcquireOrRenew());   // Renews.
  EXPECT_FALSE(b->TryAcquireOrRenew());  // Sees the renewal: its expiry timer restarts.
  clock_.Advance(seconds(14));
  EXPECT_FALSE(b->TryAcquireOrRenew());  // 14 s since b saw a change: not expired.
  clock_.Advance(seconds(2));            // a stopped renewing 16 s ago.
  EXPECT_TRUE(b->TryAcquireOrRenew());
  EXPECT_EQ(Holder(), "b");
  EXPECT_EQ((*server_.Object(kLeasePath))["spec"]["leaseTransitions"], 1);
  EXPECT_FALSE(a->TryAcquireOrRenew());  // a has lost it and now waits in turn.
  EXPECT_FALSE(a->IsLeader());
  EXPECT_TRUE(b->IsLeader());
}

TEST_F(LeaderElectionTest, RunLeadsReleasesOnShutdownAndTheOtherTakesOverAtOnce) {
  std::atomic<bool> started{false}, controllers_stopped{false}, stopped{false};
  LeaderElectionConfig c = Config("a");
  c.on_started_leading = [&](CancellationToken leading) {
    started = true;
    leading.Wait();
    controllers_stopped = true;
  };
  c.on_stopped_leading = [&] { stopped = true; };
  auto a = Elector(c);
  CancellationSource cancel;
  AutoAdvance advance(clock_, milliseconds(500));
  std::thread run([&] { a->Run(cancel.Token()); });
  while (!started) std::this_thread::yield();
  EXPECT_TRUE(a->IsLeader());
  EXPECT_NE(
      metrics::ExposeText(registry_).find("leader_election_master_status{name=\"sluice-op\"} 1"),
      std::string::npos);
  // Let it renew a few times.
  while (advance.advanced() < seconds(10)) std::this_thread::yield();
  EXPECT_EQ(Holder(), "a");
  cancel.Cancel();
  run.join();
  EXPECT_TRUE(controllers_stopped);
  EXPECT_TRUE(stopped);
  EXPECT_EQ(Holder(), "");  // Released.
  auto b = Elector(Config("b"));
  EXPECT_TRUE(b->TryAcquireOrRenew());  // No need to wait for expiry.
}

TEST_F(LeaderElectionTest, LosingTheLeaseStopsTheControllersAtOnce) {
  std::atomic<bool> started{false};
  std::atomic<bool> stopped{false};
  std::atomic<bool> cancelled_before_stopped{false};
  CancellationToken leading_token;
  std::mutex mu;
  LeaderElectionConfig c = Config("a");
  c.on_started_leading = [&](CancellationToken leading) {
    {
      std::lock_guard<std::mutex> lock(mu);
      leading_token = leading;
    }
    started = true;
    leading.Wait();
  };
  c.on_stopped_leading = [&] {
    std::lock_guard<std::mutex> lock(mu);
    cancelled_before_stopped = leading_token.IsCancelled();
    stopped = true;
  };
  auto a = Elector(c);
  CancellationSource cancel;
  AutoAdvance advance(clock_, milliseconds(500));
  std::thread run([&] { a->Run(cancel.Token()); });
  while (!started) std::this_thread::yield();
  const auto at_failure = advance.advanced();
  server_.fail_writes = true;  // Renewals fail from now on.
  run.join();                  // Run returns by itself: leadership lost.
  EXPECT_TRUE(stopped);
  EXPECT_TRUE(cancelled_before_stopped);
  EXPECT_FALSE(a->IsLeader());
  // Lost within the renew deadline (10 s) plus one retry period.
  EXPECT_LE(advance.advanced() - at_failure, seconds(13));
  EXPECT_NE(
      metrics::ExposeText(registry_).find("leader_election_master_status{name=\"sluice-op\"} 0"),
      std::string::npos);
}

TEST_F(LeaderElectionTest, EventRecorderAggregatesAndRateLimits) {
  EventRecorderOptions options;
  options.clock = &clock_;
  options.host = "op-0";
  options.burst = 3;
  EventRecorder recorder(*dyn_, options);
  const nlohmann::json pool = {
      {"apiVersion", "sluice.dev/v1alpha1"},
      {"kind", "RolloutPool"},
      {"metadata",
       {{"name", "p"}, {"namespace", "team"}, {"uid", "u1"}, {"resourceVersion", "7"}}}};
  ASSERT_TRUE(recorder.Record(pool, kEventWarning, "BackOff", "crash loop").ok());
  clock_.Advance(seconds(30));
  ASSERT_TRUE(recorder.Record(pool, kEventWarning, "BackOff", "crash loop").ok());
  ASSERT_TRUE(recorder.Record(pool, kEventNormal, "ScaledUp", "to 3").ok());
  EXPECT_EQ(server_.Size(), 2u);  // Two distinct events; the repeat was aggregated.
  // The burst of 3 is spent: the fourth is dropped.
  EXPECT_EQ(recorder.Record(pool, kEventWarning, "BackOff", "crash loop").code(),
            StatusCode::kTooManyRequests);
  EXPECT_EQ(recorder.dropped(), 1);
  clock_.Advance(seconds(300));  // One more token.
  ASSERT_TRUE(recorder.Record(pool, kEventWarning, "BackOff", "crash loop").ok());

  std::optional<nlohmann::json> backoff;
  for (const auto& req : server_.Requests()) {
    if (req.method == "POST") {
      auto ev = nlohmann::json::parse(req.body);
      if (ev["reason"] == "BackOff")
        backoff = server_.Object(req.path + "/" + ev["metadata"]["name"].get<std::string>());
    }
  }
  ASSERT_TRUE(backoff.has_value());
  EXPECT_EQ((*backoff)["count"], 3);
  EXPECT_EQ((*backoff)["type"], "Warning");
  EXPECT_EQ((*backoff)["involvedObject"]["kind"], "RolloutPool");
  EXPECT_EQ((*backoff)["involvedObject"]["uid"], "u1");
  EXPECT_EQ((*backoff)["source"]["component"], "sluice-operator");
  EXPECT_EQ((*backoff)["source"]["host"], "op-0");
  EXPECT_EQ((*backoff)["firstTimestamp"], "2026-01-01T00:00:00Z");
  EXPECT_EQ((*backoff)["lastTimestamp"], "2026-01-01T00:05:30Z");
  EXPECT_EQ((*backoff)["metadata"]["namespace"], "team");
}

}  // namespace
}  // namespace sluice::kube
