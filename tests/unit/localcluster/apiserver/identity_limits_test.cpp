// The API server's limits per identity (a user: one ServiceAccount, the admin): open watches
// (WatchQuota, watch_quota.h, on its own and through the server) and the request rate
// (ClientRateLimiter keyed by user). One identity over its share gets 429 with Retry-After while
// the others are still served.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/process/cancellation.h"
#include "localcluster/apiserver/watch_quota.h"
#include "tests/support/wait_until.h"
#include "tests/unit/localcluster/apiserver/in_process_api_server.h"

namespace sluice::apiserver {
namespace {

using std::chrono::seconds;

TEST(WatchQuotaTest, EachIdentityHoldsAtMostItsShare) {
  WatchQuota quota(2);
  WatchQuota::Slot a1 = quota.TryAcquire("a");
  WatchQuota::Slot a2 = quota.TryAcquire("a");
  EXPECT_TRUE(a1.held());
  EXPECT_TRUE(a2.held());
  EXPECT_FALSE(quota.TryAcquire("a").held());
  EXPECT_EQ(quota.open("a"), 2u);
  // Another identity has its own share.
  WatchQuota::Slot b = quota.TryAcquire("b");
  EXPECT_TRUE(b.held());
  EXPECT_EQ(quota.open("b"), 1u);

  // A slot gives its place back when it goes, and a moved slot only once.
  {
    WatchQuota::Slot moved = std::move(a1);
    EXPECT_FALSE(a1.held());  // NOLINT(bugprone-use-after-move): checking the moved-from state.
    EXPECT_TRUE(moved.held());
    EXPECT_EQ(quota.open("a"), 2u);
  }
  EXPECT_EQ(quota.open("a"), 1u);
  WatchQuota::Slot again = quota.TryAcquire("a");
  EXPECT_TRUE(again.held());
  // Assigning over a held slot gives its old place back.
  again = quota.TryAcquire("c");
  EXPECT_EQ(quota.open("a"), 1u);
  EXPECT_EQ(quota.open("c"), 1u);
  a2 = WatchQuota::Slot();
  EXPECT_EQ(quota.open("a"), 0u);
  EXPECT_EQ(quota.open("never"), 0u);
}

TEST(WatchQuotaTest, ZeroMeansNoLimit) {
  WatchQuota quota(0);
  std::vector<WatchQuota::Slot> slots;
  for (int i = 0; i < 1000; ++i) slots.push_back(quota.TryAcquire("a"));
  for (const WatchQuota::Slot& s : slots) EXPECT_TRUE(s.held());
  EXPECT_EQ(quota.open("a"), 1000u);
  slots.clear();
  EXPECT_EQ(quota.open("a"), 0u);
}

class IdentityLimitsApiTest : public InProcessApiServerTest {
 protected:
  static constexpr size_t kShare = 4;
  void Configure(ApiServerOptions& options) override {
    options.http.worker_threads = 16;  // Room for the hostile watches and everyone else.
    options.http.max_queued_connections = 16;
    options.max_watches_per_identity = kShare;
    if (rate_limited_) {
      options.rate_limit_qps = 0.01;  // Nothing refills during the test.
      options.rate_limit_burst = 20;
    }
  }
  bool rate_limited_ = false;

  // Opens a watch on ConfigMaps as `client` on a thread of its own; it lasts until `stop` is
  // cancelled. `status` gets the HTTP status of its answer.
  std::thread OpenWatch(http::Client& client, const CancellationSource& stop,
                        std::atomic<int>* status) {
    return std::thread([&client, token = stop.Token(), status] {
      http::Request request;
      request.path = "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=60";
      request.cancel = token;
      (void)client.Stream(
          std::move(request),
          [status](const http::Response& head) {
            status->store(head.status);
            return true;
          },
          [](std::string_view) { return true; });
    });
  }

  bool Eventually(const std::function<bool()>& done) {
    return ::sluice::test_support::WaitUntil(done, std::chrono::seconds(10),
                                             std::chrono::milliseconds(20));
  }
};

TEST_F(IdentityLimitsApiTest, AnIdentityOverItsWatchShareGets429AndOthersAreStillServed) {
  LetServiceAccountsView();
  const std::string user = "system:serviceaccount:default:hostile";
  const std::string identity = "user:" + user;
  // Idle watches send nothing: a read timeout longer than the test, however loaded the machine.
  std::unique_ptr<http::Client> hostile = Client(ServiceAccountToken("hostile"), seconds(120));
  std::unique_ptr<http::Client> admin_watcher = Client(kInProcessAdminToken, seconds(120));
  ASSERT_NE(hostile, nullptr);

  // The hostile client fills its share.
  std::vector<CancellationSource> stops(kShare);
  std::vector<std::atomic<int>> statuses(kShare);
  std::vector<std::thread> watches;
  for (size_t i = 0; i < kShare; ++i)
    watches.push_back(OpenWatch(*hostile, stops[i], &statuses[i]));
  ASSERT_TRUE(Eventually([&] { return server_->open_watches(identity) == kShare; }))
      << server_->open_watches(identity);

  // One more: 429, Retry-After, a message naming the user and the limit; nothing held.
  http::Request request;
  request.path = "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=60";
  Result<http::Response> refused = hostile->Send(std::move(request));
  ASSERT_TRUE(refused.ok()) << refused.status().ToString();
  EXPECT_EQ(refused->status, 429) << refused->body;
  EXPECT_EQ(refused->Header("Retry-After"), "1");
  EXPECT_EQ(Body(*refused).value("reason", ""), "TooManyRequests");
  EXPECT_NE(Body(*refused)
                .value("message", "")
                .find("too many open watches for user \"" + user + "\" (at most 4)"),
            std::string::npos)
      << refused->body;
  EXPECT_EQ(server_->open_watches(identity), kShare);

  // Everyone else is still served: the admin watches, writes and reads.
  CancellationSource admin_stop;
  std::atomic<int> admin_status{0};
  std::thread admin_watch = OpenWatch(*admin_watcher, admin_stop, &admin_status);
  EXPECT_TRUE(Eventually([&] { return admin_status.load() == 200; })) << admin_status.load();
  EXPECT_EQ(Post("/api/v1/namespaces/default/configmaps",
                 {{"metadata", {{"name", "still-served"}}}, {"data", {{"k", "v"}}}})
                .status,
            201);
  EXPECT_EQ(Get("/api/v1/namespaces/default/configmaps/still-served").status, 200);

  // When one of its watches ends, the hostile client may open another.
  stops[0].Cancel();
  watches[0].join();
  ASSERT_TRUE(Eventually([&] { return server_->open_watches(identity) == kShare - 1; }));
  CancellationSource last_stop;
  std::atomic<int> last_status{0};
  std::thread last = OpenWatch(*hostile, last_stop, &last_status);
  EXPECT_TRUE(Eventually([&] { return last_status.load() == 200; })) << last_status.load();

  for (size_t i = 1; i < kShare; ++i) stops[i].Cancel();
  admin_stop.Cancel();
  last_stop.Cancel();
  for (size_t i = 1; i < kShare; ++i) watches[i].join();
  admin_watch.join();
  last.join();
  EXPECT_TRUE(Eventually([&] { return server_->open_watches(identity) == 0; }));
  for (size_t i = 0; i < kShare; ++i) EXPECT_EQ(statuses[i].load(), 200);
}

class RateLimitedApiTest : public IdentityLimitsApiTest {
 protected:
  void SetUp() override {
    rate_limited_ = true;
    IdentityLimitsApiTest::SetUp();
  }
};

// Two tokens of one ServiceAccount draw on one bucket: a client cannot escape its rate limit by
// asking for more tokens. Other identities keep their own.
TEST_F(RateLimitedApiTest, TheTokensOfOneServiceAccountShareOneBucket) {
  LetServiceAccountsView();
  std::unique_ptr<http::Client> first = Client(ServiceAccountToken("greedy"));
  std::unique_ptr<http::Client> second = Client(ServiceAccountToken("greedy"));
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  // The greedy identity has 20 requests, whichever token sends them (the admin's setup requests
  // come out of the admin's own 20).
  int served = 0;
  for (int i = 0; i < 20; ++i) {
    http::Client& client = i % 2 == 0 ? *first : *second;
    if (Send(client, "GET", "/api/v1/namespaces/default/configmaps").status == 200) ++served;
  }
  EXPECT_EQ(served, 20);
  for (http::Client* client : {first.get(), second.get()}) {
    const http::Response refused = Send(*client, "GET", "/api/v1/namespaces/default/configmaps");
    EXPECT_EQ(refused.status, 429) << refused.body;
    EXPECT_FALSE(refused.Header("Retry-After").empty());
  }
  // A fresh token of the same account is the same identity: refused too.
  std::unique_ptr<http::Client> third = Client(ServiceAccountToken("greedy"));
  ASSERT_NE(third, nullptr);
  EXPECT_EQ(Send(*third, "GET", "/api/v1/namespaces/default/configmaps").status, 429);
  // Another identity is served.
  std::unique_ptr<http::Client> other = Client(ServiceAccountToken("patient"));
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(Send(*other, "GET", "/api/v1/namespaces/default/configmaps").status, 200);
}

}  // namespace
}  // namespace sluice::apiserver
