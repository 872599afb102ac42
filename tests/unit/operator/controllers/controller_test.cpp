// The generic controller runner against informers fed by an in-memory API server that serves
// lists and live watch streams: events enqueue keys (primary, owned, mapped), errors back off,
// requeue_after re-runs, one key is never reconciled twice at once, Run stops cleanly, metrics.
//
// Every wait is on a condition with a generous real-time bound; no test asserts that something
// happened within a time, only (for delays) that it did not happen too early.
#include "operator/controllers/controller.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "common/metrics/exposition.h"
#include "kube/dynamic_client.h"
#include "kube/errors.h"
#include "kube/informer.h"
#include "kube/rest_client.h"
#include "tests/support/wait_until.h"
#include "tests/unit/kube/test_server.h"

namespace sluice::controllers {
namespace {

using std::chrono::milliseconds;
using Json = nlohmann::json;

constexpr auto kWaitLimit = std::chrono::seconds(30);

const kube::GroupVersionResource kPools{"sluice.dev", "v1alpha1", "rolloutpools", true};
const kube::GroupVersionResource kPods{"", "v1", "pods", true};
const kube::GroupVersionResource kConfigMaps{"", "v1", "configmaps", true};

std::string CollectionPath(const kube::GroupVersionResource& gvr) {
  return kube::ResourcePath(gvr, "ns");
}

// Polls `pred` (real time, bounded); returns its last value.
bool WaitUntil(const std::function<bool()>& pred) {
  return ::sluice::test_support::WaitUntil(pred, kWaitLimit, milliseconds(1));
}

// An API server holding objects per collection path (namespace "ns") that answers lists with the
// current content and watches with a live stream of every change after the requested
// resourceVersion. Tests change objects directly with Put and Delete.
class LiveApiServer {
 public:
  LiveApiServer() {
    server_.SetHandler([this](const httplib::Request& req, httplib::Response& res) {
      if (req.method != "GET") return kube::testing::ReplyStatus(res, 405, "MethodNotAllowed", "");
      if (req.get_param_value("watch") == "true") return Watch(req, res);
      std::lock_guard<std::mutex> lock(mu_);
      Json items = Json::array();
      for (const auto& [name, object] : objects_[req.path]) items.push_back(object);
      const Json list = {{"kind", "List"},
                         {"apiVersion", "v1"},
                         {"metadata", {{"resourceVersion", std::to_string(rv_)}}},
                         {"items", items}};
      res.set_content(list.dump(), "application/json");
    });
  }
  ~LiveApiServer() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
  }

  std::string Url() const { return server_.Url(); }

  // Creates or replaces the object (its metadata.name) in `collection`.
  void Put(const std::string& collection, Json object) {
    std::lock_guard<std::mutex> lock(mu_);
    object["metadata"]["namespace"] = "ns";
    object["metadata"]["resourceVersion"] = std::to_string(++rv_);
    const std::string name = object["metadata"]["name"].get<std::string>();
    auto& objects = objects_[collection];
    const bool exists = objects.count(name) > 0;
    objects[name] = object;
    events_[collection].push_back({rv_, exists ? "MODIFIED" : "ADDED", object});
    cv_.notify_all();
  }
  void Delete(const std::string& collection, const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& objects = objects_[collection];
    auto it = objects.find(name);
    if (it == objects.end()) return;
    Json last = it->second;
    objects.erase(it);
    last["metadata"]["resourceVersion"] = std::to_string(++rv_);
    events_[collection].push_back({rv_, "DELETED", last});
    cv_.notify_all();
  }

 private:
  struct Event {
    int64_t rv;
    std::string type;
    Json object;
  };

  void Watch(const httplib::Request& req, httplib::Response& res) {
    const std::string rv_param = req.get_param_value("resourceVersion");
    const int64_t start = rv_param.empty() ? 0 : std::stoll(rv_param);
    res.set_chunked_content_provider(
        "application/json",
        [this, path = req.path, from = start](size_t, httplib::DataSink& sink) mutable {
          std::string out;
          {
            std::unique_lock<std::mutex> lock(mu_);
            auto pending = [&] {
              const auto& events = events_[path];
              return !events.empty() && events.back().rv > from;
            };
            cv_.wait_for(lock, milliseconds(50), [&] { return stop_ || pending(); });
            if (stop_) {
              sink.done();
              return true;
            }
            for (const Event& e : events_[path]) {
              if (e.rv <= from) continue;
              out += Json{{"type", e.type}, {"object", e.object}}.dump() + "\n";
              from = e.rv;
            }
          }
          if (out.empty()) return true;
          return sink.write(out.data(), out.size());
        });
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::map<std::string, Json>> objects_;  // collection -> name -> object
  std::map<std::string, std::vector<Event>> events_;            // collection -> changes
  int64_t rv_ = 100;
  bool stop_ = false;
  // Last: destroyed first, so its handler threads are joined before the state they use goes.
  kube::testing::ScriptedServer server_;
};

Json Object(const std::string& kind, const std::string& name, Json extra = Json::object()) {
  Json o = {{"kind", kind}, {"metadata", {{"name", name}}}};
  o.merge_patch(extra);
  return o;
}

Json OwnedPod(const std::string& name, const std::string& owner_kind, const std::string& owner,
              bool controller) {
  return Object("Pod", name,
                {{"metadata",
                  {{"ownerReferences",
                    {{{"apiVersion", "sluice.dev/v1alpha1"},
                      {"kind", owner_kind},
                      {"name", owner},
                      {"uid", "uid-" + owner},
                      {"controller", controller}}}}}}});
}

// Records reconciles: the keys in order, with the time (of `clock`) each started.
class Recorder {
 public:
  explicit Recorder(Clock& clock = SystemClock::Instance()) : clock_(clock) {}

  void Record(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back({key, clock_.Now()});
  }
  int Count(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    int n = 0;
    for (const auto& c : calls_) n += c.first == key ? 1 : 0;
    return n;
  }
  std::set<std::string> Keys() {
    std::lock_guard<std::mutex> lock(mu_);
    std::set<std::string> keys;
    for (const auto& c : calls_) keys.insert(c.first);
    return keys;
  }
  std::vector<Clock::MonoTime> Times(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Clock::MonoTime> times;
    for (const auto& c : calls_) {
      if (c.first == key) times.push_back(c.second);
    }
    return times;
  }
  // Waits (bounded) until `key` was reconciled at least `n` times.
  bool WaitForCount(const std::string& key, int n) {
    return WaitUntil([&] { return Count(key) >= n; });
  }

 private:
  Clock& clock_;
  std::mutex mu_;
  std::vector<std::pair<std::string, Clock::MonoTime>> calls_;
};

// Runs a controller on its own thread; stops it and waits for Run to return when destroyed.
// Declare it after the controller (and what its reconcile captures).
class Running {
 public:
  explicit Running(Controller& c)
      : thread_([this, &c] {
          c.Run(stop_.Token());
          returned_ = true;
        }) {}
  ~Running() { Stop(); }
  void Cancel() { stop_.Cancel(); }
  void Stop() {
    stop_.Cancel();
    if (thread_.joinable()) thread_.join();
  }
  bool returned() const { return returned_; }

 private:
  CancellationSource stop_;
  std::atomic<bool> returned_{false};
  std::thread thread_;
};

Result<ReconcileResult> Ok() { return ReconcileResult{}; }

class ControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kube::RestConfig cfg;
    cfg.host = server_.Url();
    cfg.qps = 0;
    client_ = std::move(kube::RestClient::Create(cfg).value());
  }
  void TearDown() override {
    stop_informers_.Cancel();
    for (std::thread& t : informer_threads_) t.join();
  }

  // An informer on `gvr` in "ns"; Start() runs every informer made so far.
  kube::Informer& MakeInformer(const kube::GroupVersionResource& gvr) {
    kube::InformerOptions options;
    options.reflector.watch.backoff = {milliseconds(1), milliseconds(2), 2.0, 0.5};
    options.reflector.relist_backoff = options.reflector.watch.backoff;
    options.reflector.watch.timeout_seconds = 60;
    informers_.push_back(
        std::make_unique<kube::Informer>(kube::ResourceClient(*client_, gvr, "ns"), options));
    return *informers_.back();
  }
  void StartInformers() {
    for (size_t i = informer_threads_.size(); i < informers_.size(); ++i) {
      informer_threads_.emplace_back([this, i] { informers_[i]->Run(stop_informers_.Token()); });
    }
  }

  LiveApiServer server_;
  std::unique_ptr<kube::RestClient> client_;
  std::vector<std::unique_ptr<kube::Informer>> informers_;
  CancellationSource stop_informers_;
  std::vector<std::thread> informer_threads_;
};

TEST(ControllerOwnerKeyTest, FindsTheControllerReferenceOfTheKind) {
  Json pod = OwnedPod("p", "RolloutPool", "pool", true);
  pod["metadata"]["namespace"] = "ns";
  EXPECT_EQ(ControllerOwnerKey(pod, "RolloutPool"), "ns/pool");
  EXPECT_EQ(ControllerOwnerKey(pod, "Dataflow"), std::nullopt);
  EXPECT_EQ(ControllerOwnerKey(OwnedPod("p", "RolloutPool", "pool", false), "RolloutPool"),
            std::nullopt);
  // A non-controller reference of the kind does not hide a later controller one.
  Json two = pod;
  two["metadata"]["ownerReferences"].insert(two["metadata"]["ownerReferences"].begin(),
                                            Json{{"kind", "RolloutPool"}, {"name", "other"}});
  EXPECT_EQ(ControllerOwnerKey(two, "RolloutPool"), "ns/pool");
  // Malformed metadata is ignored, not thrown on.
  EXPECT_EQ(ControllerOwnerKey(Json{{"metadata", {{"ownerReferences", "x"}}}}, "RolloutPool"),
            std::nullopt);
  EXPECT_EQ(
      ControllerOwnerKey(
          Json{{"metadata",
                {{"ownerReferences", {1, {{"kind", "RolloutPool"}, {"controller", "true"}}}}}}},
          "RolloutPool"),
      std::nullopt);
  EXPECT_EQ(ControllerOwnerKey(Json::array(), "RolloutPool"), std::nullopt);
  // Cluster-scoped owned object: the owner key has no namespace.
  EXPECT_EQ(ControllerOwnerKey(OwnedPod("p", "RolloutPool", "pool", true), "RolloutPool"), "pool");
}

TEST_F(ControllerTest, ReconcilesCreatedUpdatedAndDeletedObjects) {
  server_.Put(CollectionPath(kPools), Object("RolloutPool", "pre"));
  kube::Informer& pools = MakeInformer(kPools);
  Recorder recorder;
  std::mutex mu;
  std::vector<std::string> seen;  // "<key> present|absent"
  Controller controller({.name = "pools"}, pools, [&](const std::string& key) {
    recorder.Record(key);
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(key + (pools.store().Get(key) ? " present" : " absent"));
    return Ok();
  });
  StartInformers();
  Running running(controller);

  ASSERT_TRUE(recorder.WaitForCount("ns/pre", 1));
  server_.Put(CollectionPath(kPools), Object("RolloutPool", "a"));
  ASSERT_TRUE(recorder.WaitForCount("ns/a", 1));
  server_.Put(CollectionPath(kPools), Object("RolloutPool", "a", {{"spec", {{"replicas", 2}}}}));
  ASSERT_TRUE(recorder.WaitForCount("ns/a", 2));
  server_.Delete(CollectionPath(kPools), "a");
  ASSERT_TRUE(recorder.WaitForCount("ns/a", 3));
  {
    std::lock_guard<std::mutex> lock(mu);
    // The deleted object is reconciled and finds itself gone from the cache.
    EXPECT_EQ(seen.back(), "ns/a absent");
    EXPECT_EQ(seen.front(), "ns/pre present");
  }
  // Enqueue reconciles any key, existing or not.
  controller.Enqueue("ns/by-hand");
  ASSERT_TRUE(recorder.WaitForCount("ns/by-hand", 1));
  EXPECT_EQ(recorder.Keys(), (std::set<std::string>{"ns/pre", "ns/a", "ns/by-hand"}));
}

TEST_F(ControllerTest, AnErrorIsRetriedWithBackoffUntilItSucceeds) {
  server_.Put(CollectionPath(kPools), Object("RolloutPool", "a"));
  kube::Informer& pools = MakeInformer(kPools);
  metrics::Registry registry;
  Recorder recorder;
  std::atomic<int> attempts{0};
  Controller controller({.name = "pools", .registry = &registry}, pools,
                        [&](const std::string& key) -> Result<ReconcileResult> {
                          recorder.Record(key);
                          if (++attempts <= 3) return Status::Unavailable("not yet");
                          return ReconcileResult{};
                        });
  StartInformers();
  Running running(controller);

  ASSERT_TRUE(recorder.WaitForCount("ns/a", 4));
  const std::vector<Clock::MonoTime> times = recorder.Times("ns/a");
  // Per-key exponential backoff: 5 ms, 10 ms, 20 ms at least between attempts (nothing else
  // enqueues the key, so only the backoff can bring it back).
  EXPECT_GE(times[1] - times[0], milliseconds(5));
  EXPECT_GE(times[2] - times[1], milliseconds(10));
  EXPECT_GE(times[3] - times[2], milliseconds(20));
  const std::string text = [&] {
    std::string t;
    WaitUntil([&] {
      t = metrics::ExposeText(registry);
      return t.find(
                 R"(controller_runtime_reconcile_total{controller="pools",result="success"} 1)") !=
             std::string::npos;
    });
    return t;
  }();
  EXPECT_NE(text.find(R"(controller_runtime_reconcile_errors_total{controller="pools"} 3)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(controller_runtime_reconcile_total{controller="pools",result="error"} 3)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(workqueue_retries_total{name="pools"} 3)"), std::string::npos) << text;
  // Success ended the retries: the key is not reconciled again on its own.
  controller.Enqueue("ns/marker");
  ASSERT_TRUE(recorder.WaitForCount("ns/marker", 1));
  EXPECT_EQ(recorder.Count("ns/a"), 4);
}

TEST_F(ControllerTest, ATerminatingNamespaceIsNeitherAnErrorNorRetried) {
  server_.Put(CollectionPath(kPools), Object("RolloutPool", "a"));
  kube::Informer& pools = MakeInformer(kPools);
  metrics::Registry registry;
  Recorder recorder;
  Controller controller({.name = "pools", .registry = &registry}, pools,
                        [&](const std::string& key) -> Result<ReconcileResult> {
                          recorder.Record(key);
                          if (key == "ns/a") {
                            return Status::PermissionDenied(
                                "unable to create new content in namespace ns because it is "
                                "being terminated");
                          }
                          return ReconcileResult{};
                        });
  StartInformers();
  Running running(controller);

  ASSERT_TRUE(recorder.WaitForCount("ns/a", 1));
  // Long enough for the first backoff retries (5, 10, 20 ms) had it been an error.
  std::this_thread::sleep_for(milliseconds(100));
  controller.Enqueue("ns/marker");
  ASSERT_TRUE(recorder.WaitForCount("ns/marker", 1));
  EXPECT_EQ(recorder.Count("ns/a"), 1);
  const std::string text = metrics::ExposeText(registry);
  EXPECT_NE(text.find(R"(controller_runtime_reconcile_errors_total{controller="pools"} 0)"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find(R"(workqueue_retries_total{name="pools"} 1)"), std::string::npos) << text;
  // Any other Forbidden is an error, retried.
  EXPECT_FALSE(kube::IsNamespaceTerminating(Status::PermissionDenied("pods is forbidden")));
  EXPECT_FALSE(kube::IsNamespaceTerminating(Status::Internal("because it is being terminated")));
}

TEST_F(ControllerTest, RequeueAfterRunsTheKeyAgainOnceTheDelayHasPassed) {
  server_.Put(CollectionPath(kPools), Object("RolloutPool", "a"));
  kube::Informer& pools = MakeInformer(kPools);
  FakeClock clock;
  Recorder recorder(clock);
  std::atomic<int> runs{0};
  Controller controller({.name = "pools", .clock = &clock}, pools, [&](const std::string& key) {
    recorder.Record(key);
    ReconcileResult r;
    if (++runs == 1) r.requeue_after = std::chrono::hours(1);
    return Result<ReconcileResult>(r);
  });
  StartInformers();
  Running running(controller);

  ASSERT_TRUE(recorder.WaitForCount("ns/a", 1));
  // Move the fake clock on until the key comes back (the queue polls the clock every 10 ms).
  ASSERT_TRUE(WaitUntil([&] {
    if (recorder.Count("ns/a") >= 2) return true;
    clock.Advance(std::chrono::minutes(10));
    return false;
  }));
  const std::vector<Clock::MonoTime> times = recorder.Times("ns/a");
  EXPECT_GE(times[1] - times[0], std::chrono::hours(1));
  // The second run asked for nothing more.
  controller.Enqueue("ns/marker");
  ASSERT_TRUE(recorder.WaitForCount("ns/marker", 1));
  clock.Advance(std::chrono::hours(2));
  controller.Enqueue("ns/marker2");
  ASSERT_TRUE(recorder.WaitForCount("ns/marker2", 1));
  EXPECT_EQ(recorder.Count("ns/a"), 2);
}

TEST_F(ControllerTest, AnOwnedObjectsChangeEnqueuesItsControllerOwnerOnly) {
  server_.Put(CollectionPath(kPools), Object("RolloutPool", "p1"));
  kube::Informer& pools = MakeInformer(kPools);
  kube::Informer& pods = MakeInformer(kPods);
  Recorder recorder;
  // One worker: keys are reconciled in the order they were enqueued, so once a key enqueued
  // later has been reconciled, any wrongly enqueued earlier key would have been too.
  Controller controller({.name = "pools"}, pools, [&](const std::string& key) {
    recorder.Record(key);
    return Ok();
  });
  controller.WatchOwned(pods, "RolloutPool");
  StartInformers();
  Running running(controller);

  ASSERT_TRUE(recorder.WaitForCount("ns/p1", 1));
  const std::string pods_path = CollectionPath(kPods);
  server_.Put(pods_path, OwnedPod("x1", "RolloutPool", "c", /*controller=*/false));
  server_.Put(pods_path, OwnedPod("x2", "Dataflow", "d", /*controller=*/true));
  server_.Put(pods_path, Object("Pod", "x3"));
  server_.Put(pods_path, OwnedPod("x4", "RolloutPool", "p1", /*controller=*/true));
  ASSERT_TRUE(recorder.WaitForCount("ns/p1", 2));
  EXPECT_EQ(recorder.Keys(), (std::set<std::string>{"ns/p1"}));

  // The owner changes: the old and the new owner are both enqueued.
  server_.Put(pods_path, OwnedPod("x4", "RolloutPool", "p2", /*controller=*/true));
  ASSERT_TRUE(recorder.WaitForCount("ns/p2", 1));
  ASSERT_TRUE(recorder.WaitForCount("ns/p1", 3));
  // Deleting the owned object enqueues its owner.
  server_.Delete(pods_path, "x4");
  ASSERT_TRUE(recorder.WaitForCount("ns/p2", 2));
  EXPECT_EQ(recorder.Keys(), (std::set<std::string>{"ns/p1", "ns/p2"}));
}

TEST_F(ControllerTest, WatchEnqueuesTheMappedKeysOfOldAndNewState) {
  kube::Informer& pools = MakeInformer(kPools);
  kube::Informer& policies = MakeInformer(kConfigMaps);
  Recorder recorder;
  Controller controller({.name = "pools"}, pools, [&](const std::string& key) {
    recorder.Record(key);
    return Ok();
  });
  // A "policy" lists the pools using it in data.pools, comma-separated.
  controller.Watch(policies, [](const Json& policy) {
    std::vector<std::string> keys;
    const std::string pools = policy.value("data", Json::object()).value("pools", "");
    size_t start = 0;
    while (start < pools.size()) {
      size_t end = pools.find(',', start);
      if (end == std::string::npos) end = pools.size();
      keys.push_back(kube::ObjectKey(kube::NamespaceOf(policy), pools.substr(start, end - start)));
      start = end + 1;
    }
    if (pools == "throw") throw std::runtime_error("bad policy");
    return keys;
  });
  StartInformers();
  Running running(controller);

  const std::string path = CollectionPath(kConfigMaps);
  server_.Put(path, Object("ConfigMap", "pol1", {{"data", {{"pools", "a,b"}}}}));
  server_.Put(path, Object("ConfigMap", "pol2"));                                    // No keys.
  server_.Put(path, Object("ConfigMap", "pol3", {{"data", {{"pools", "throw"}}}}));  // Logged.
  server_.Put(path, Object("ConfigMap", "pol4", {{"data", {{"pools", "c"}}}}));
  ASSERT_TRUE(recorder.WaitForCount("ns/a", 1));
  ASSERT_TRUE(recorder.WaitForCount("ns/b", 1));
  ASSERT_TRUE(recorder.WaitForCount("ns/c", 1));
  // pool "a" is no longer referenced: both the old (a, b) and the new (b) references are
  // enqueued, so "a" learns that it lost the policy.
  server_.Put(path, Object("ConfigMap", "pol1", {{"data", {{"pools", "b"}}}}));
  ASSERT_TRUE(recorder.WaitForCount("ns/a", 2));
  ASSERT_TRUE(recorder.WaitForCount("ns/b", 2));
  EXPECT_EQ(recorder.Keys(), (std::set<std::string>{"ns/a", "ns/b", "ns/c"}));
}

TEST_F(ControllerTest, TheSameKeyIsNeverReconciledConcurrently) {
  server_.Put(CollectionPath(kPools), Object("RolloutPool", "a"));
  server_.Put(CollectionPath(kPools), Object("RolloutPool", "b"));
  kube::Informer& pools = MakeInformer(kPools);
  std::mutex mu;
  std::map<std::string, int> in_flight, max_in_flight, last_generation_seen;
  int total_in_flight = 0, max_total_in_flight = 0;
  std::atomic<int> generation{0};
  Controller controller({.name = "pools", .max_concurrent_reconciles = 2}, pools,
                        [&](const std::string& key) {
                          const int gen = generation.load();
                          {
                            std::lock_guard<std::mutex> lock(mu);
                            max_in_flight[key] = std::max(max_in_flight[key], ++in_flight[key]);
                            max_total_in_flight = std::max(max_total_in_flight, ++total_in_flight);
                          }
                          std::this_thread::sleep_for(milliseconds(2));  // A slow reconcile.
                          std::lock_guard<std::mutex> lock(mu);
                          --in_flight[key];
                          --total_in_flight;
                          last_generation_seen[key] = gen;
                          return Ok();
                        });
  StartInformers();
  Running running(controller);

  constexpr int kRounds = 100;
  for (int i = 1; i <= kRounds; ++i) {
    generation = i;
    if (i % 10 == 0) {
      server_.Put(CollectionPath(kPools),
                  Object("RolloutPool", i % 20 == 0 ? "a" : "b", {{"spec", {{"replicas", i}}}}));
    }
    controller.Enqueue("ns/a");
    controller.Enqueue("ns/b");
    if (i % 10 == 0) std::this_thread::sleep_for(milliseconds(1));  // Let workers interleave.
  }
  // A reconcile that started after the last Enqueue comes for each key (an add during a
  // reconcile re-queues the key when it is done).
  ASSERT_TRUE(WaitUntil([&] {
    std::lock_guard<std::mutex> lock(mu);
    return last_generation_seen["ns/a"] == kRounds && last_generation_seen["ns/b"] == kRounds;
  }));
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(max_in_flight["ns/a"], 1);
  EXPECT_EQ(max_in_flight["ns/b"], 1);
  EXPECT_LE(max_total_in_flight, 2);
}

TEST_F(ControllerTest, RunReturnsAfterCancelOnceNoReconcileIsInFlight) {
  server_.Put(CollectionPath(kPools), Object("RolloutPool", "a"));
  kube::Informer& pools = MakeInformer(kPools);
  Recorder recorder;
  std::mutex mu;
  std::condition_variable cv;
  bool entered = false, release = false, finished = false;
  std::atomic<int> in_flight{0};
  Controller controller({.name = "pools"}, pools, [&](const std::string& key) {
    ++in_flight;
    recorder.Record(key);
    if (key == "ns/a") {
      std::unique_lock<std::mutex> lock(mu);
      entered = true;
      cv.notify_all();
      cv.wait(lock, [&] { return release; });
      finished = true;
    }
    --in_flight;
    return Ok();
  });
  StartInformers();
  auto running = std::make_unique<Running>(controller);
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, kWaitLimit, [&] { return entered; }));
  }
  controller.Enqueue("ns/queued");  // Waits behind "a" on the single worker.
  running->Cancel();
  // Run cannot return while "a" is being reconciled.
  EXPECT_FALSE(running->returned());
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
    cv.notify_all();
  }
  running->Stop();  // Joins Run.
  EXPECT_TRUE(running->returned());
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_TRUE(finished);
  }
  EXPECT_EQ(in_flight.load(), 0);
  // The key still queued at cancellation was not started, and later events are dropped.
  EXPECT_EQ(recorder.Count("ns/queued"), 0);
  controller.Enqueue("ns/late");
  server_.Put(CollectionPath(kPools), Object("RolloutPool", "late2"));
  EXPECT_EQ(recorder.Keys(), (std::set<std::string>{"ns/a"}));
}

TEST_F(ControllerTest, RunWithAnIdleQueueReturnsOnCancelEvenBeforeTheInformersSync) {
  kube::Informer& pools = MakeInformer(kPools);  // Never started: never syncs.
  Controller controller({.name = "pools"}, pools, [](const std::string&) { return Ok(); });
  Running running(controller);
  running.Stop();
  EXPECT_TRUE(running.returned());
}

// The value of the child of family `name` with `labels`, or -1 when absent.
double Value(const metrics::Registry& registry, const std::string& name,
             const std::vector<std::string>& labels) {
  for (const metrics::FamilySnapshot& f : registry.Collect()) {
    if (f.name != name) continue;
    for (const metrics::ChildSnapshot& c : f.children) {
      if (c.label_values != labels) continue;
      return f.type == metrics::MetricType::kHistogram ? static_cast<double>(c.histogram.count)
                                                       : c.value;
    }
  }
  return -1;
}

TEST_F(ControllerTest, ExportsControllerRuntimeMetricsPerController) {
  for (const char* name : {"ok", "err", "req"}) {
    server_.Put(CollectionPath(kPools), Object("RolloutPool", name));
  }
  kube::Informer& pools = MakeInformer(kPools);
  metrics::Registry registry;
  Recorder alpha_calls, beta_calls;
  std::atomic<bool> err_failed{false}, req_requeued{false};
  Controller alpha({.name = "alpha", .max_concurrent_reconciles = 2, .registry = &registry}, pools,
                   [&](const std::string& key) -> Result<ReconcileResult> {
                     alpha_calls.Record(key);
                     if (key == "ns/err" && !err_failed.exchange(true)) {
                       return Status::Internal("boom");
                     }
                     ReconcileResult r;
                     if (key == "ns/req" && !req_requeued.exchange(true)) {
                       r.requeue_after = milliseconds(1);
                     }
                     return r;
                   });
  // A second controller on the same registry registers the same families without a clash.
  Controller beta({.name = "beta", .registry = &registry}, pools, [&](const std::string& key) {
    beta_calls.Record(key);
    return Ok();
  });
  EXPECT_EQ(Value(registry, "controller_runtime_max_concurrent_reconciles", {"alpha"}), 2);
  EXPECT_EQ(Value(registry, "controller_runtime_max_concurrent_reconciles", {"beta"}), 1);
  EXPECT_EQ(Value(registry, "controller_runtime_reconcile_total", {"alpha", "error"}), 0);
  StartInformers();
  Running run_alpha(alpha);
  Running run_beta(beta);

  // alpha: ok 1 success; err 1 error + 1 success; req 1 requeue_after + 1 success.
  const std::string reconcile_time = "controller_runtime_reconcile_time_seconds";
  ASSERT_TRUE(WaitUntil([&] { return Value(registry, reconcile_time, {"alpha"}) == 5; }));
  ASSERT_TRUE(WaitUntil([&] { return Value(registry, reconcile_time, {"beta"}) == 3; }));
  ASSERT_TRUE(WaitUntil([&] {
    return Value(registry, "controller_runtime_active_workers", {"alpha"}) == 0 &&
           Value(registry, "controller_runtime_active_workers", {"beta"}) == 0;
  }));
  EXPECT_EQ(alpha_calls.Count("ns/ok"), 1);
  EXPECT_EQ(alpha_calls.Count("ns/err"), 2);
  EXPECT_EQ(alpha_calls.Count("ns/req"), 2);
  EXPECT_EQ(Value(registry, "controller_runtime_reconcile_total", {"alpha", "success"}), 3);
  EXPECT_EQ(Value(registry, "controller_runtime_reconcile_total", {"alpha", "error"}), 1);
  EXPECT_EQ(Value(registry, "controller_runtime_reconcile_total", {"alpha", "requeue_after"}), 1);
  EXPECT_EQ(Value(registry, "controller_runtime_reconcile_errors_total", {"alpha"}), 1);
  EXPECT_EQ(Value(registry, "controller_runtime_reconcile_total", {"beta", "success"}), 3);
  EXPECT_EQ(Value(registry, "controller_runtime_reconcile_total", {"beta", "error"}), 0);
  EXPECT_EQ(Value(registry, "controller_runtime_reconcile_errors_total", {"beta"}), 0);
  // The workqueue's metrics, under the controller's name.
  EXPECT_GE(Value(registry, "workqueue_adds_total", {"alpha"}), 5);
  EXPECT_EQ(Value(registry, "workqueue_retries_total", {"alpha"}), 1);
  EXPECT_EQ(Value(registry, "workqueue_retries_total", {"beta"}), 0);

  const std::string text = metrics::ExposeText(registry);
  EXPECT_NE(text.find("# TYPE controller_runtime_reconcile_time_seconds histogram"),
            std::string::npos);
  EXPECT_NE(
      text.find(
          R"(controller_runtime_reconcile_time_seconds_bucket{controller="alpha",le="0.005"})"),
      std::string::npos);
  EXPECT_NE(
      text.find(R"(controller_runtime_reconcile_time_seconds_bucket{controller="alpha",le="60"})"),
      std::string::npos);
  EXPECT_NE(
      text.find(R"(controller_runtime_reconcile_total{controller="alpha",result="success"} 3)"),
      std::string::npos)
      << text;
}

}  // namespace
}  // namespace sluice::controllers
