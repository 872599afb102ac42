// The watch decoder (chunks split at every byte, bookmarks, ERROR events), the indexer, and the
// informer against a scripted API server: list-then-watch, resume after a dropped stream,
// relist on 410 Gone, handlers with old and new objects, resync.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <thread>

#include "kube/errors.h"
#include "kube/indexer.h"
#include "kube/informer.h"
#include "kube/watch_decoder.h"
#include "tests/unit/kube/test_server.h"

namespace sluice::kube {
namespace {

using testing::ScriptedServer;

std::string Pod(const std::string& name, const std::string& rv, const std::string& owner = "") {
  nlohmann::json p = {{"kind", "Pod"},
                      {"apiVersion", "v1"},
                      {"metadata", {{"name", name}, {"namespace", "ns"}, {"resourceVersion", rv}}}};
  if (!owner.empty()) p["metadata"]["ownerReferences"] = {{{"uid", owner}, {"kind", "X"}}};
  return p.dump();
}

std::string Event(const std::string& type, const std::string& object) {
  return R"({"type":")" + type + R"(","object":)" + object + "}\n";
}

TEST(WatchDecoderTest, DecodesChunksSplitAtEveryByte) {
  const std::string stream =
      Event("ADDED", Pod("a", "1")) + Event("MODIFIED", Pod("a", "2")) + "\r\n" +
      Event("BOOKMARK", R"({"kind":"Pod","metadata":{"resourceVersion":"5"}})") +
      Event("DELETED", Pod("a", "6"));
  for (size_t split = 0; split <= stream.size(); ++split) {
    for (size_t split2 = split; split2 <= stream.size(); split2 += 7) {
      WatchDecoder decoder;
      std::vector<WatchEvent> events;
      auto sink = [&](WatchEvent e) {
        events.push_back(std::move(e));
        return true;
      };
      ASSERT_TRUE(decoder.Feed(std::string_view(stream).substr(0, split), sink).ok());
      ASSERT_TRUE(decoder.Feed(std::string_view(stream).substr(split, split2 - split), sink).ok());
      ASSERT_TRUE(decoder.Feed(std::string_view(stream).substr(split2), sink).ok());
      ASSERT_EQ(events.size(), 4u) << split << "," << split2;
      EXPECT_EQ(events[0].type, WatchEventType::kAdded);
      EXPECT_EQ(events[1].type, WatchEventType::kModified);
      EXPECT_EQ(events[2].type, WatchEventType::kBookmark);
      EXPECT_EQ(events[2].ResourceVersion(), "5");
      EXPECT_EQ(events[3].type, WatchEventType::kDeleted);
      EXPECT_EQ(events[3].ResourceVersion(), "6");
      EXPECT_EQ(decoder.buffered(), 0u);
    }
  }
}

TEST(WatchDecoderTest, ErrorEventsCarryTheStatusAndBadLinesFail) {
  WatchDecoder decoder;
  std::vector<WatchEvent> events;
  ASSERT_TRUE(
      decoder
          .Feed(Event("ERROR", R"j({"kind":"Status","reason":"Expired",)j"
                               R"j("message":"too old resource version: 1 (5)","code":410})j"),
                [&](WatchEvent e) {
                  events.push_back(e);
                  return true;
                })
          .ok());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, WatchEventType::kError);
  EXPECT_TRUE(IsGone(events[0].ErrorStatus()));
  EXPECT_NE(events[0].ErrorStatus().message().find("too old"), std::string::npos);

  auto ignore = [](WatchEvent) { return true; };
  EXPECT_EQ(WatchDecoder().Feed("not json\n", ignore).code(), StatusCode::kCorruption);
  EXPECT_EQ(WatchDecoder()
                .Feed(R"({"type":"WHAT","object":{}})"
                      "\n",
                      ignore)
                .code(),
            StatusCode::kCorruption);
  WatchDecoder small(16);
  EXPECT_EQ(small.Feed(std::string(40, 'x'), ignore).code(), StatusCode::kTooLarge);
  EXPECT_FALSE(small.Feed("\n", ignore).ok());  // Stays failed.
}

TEST(WatchDecoderTest, ErrorEventsOfAnyShapeAndTooDeepLines) {
  std::vector<WatchEvent> events;
  auto keep = [&](WatchEvent e) {
    events.push_back(e);
    return true;
  };
  // A code of another type, or out of HTTP's range, reads as 500 instead of throwing.
  ASSERT_TRUE(WatchDecoder().Feed(Event("ERROR", R"({"code":"410","kind":5})"), keep).ok());
  ASSERT_TRUE(WatchDecoder().Feed(Event("ERROR", R"({"code":1e10})"), keep).ok());
  ASSERT_TRUE(WatchDecoder().Feed(Event("ERROR", R"({"code":-7})"), keep).ok());
  ASSERT_EQ(events.size(), 3u);
  for (const WatchEvent& e : events) EXPECT_EQ(e.ErrorStatus().code(), StatusCode::kInternal);
  // A line nesting past kMaxJsonDepth is refused before it is parsed.
  const std::string deep = R"({"type":"ADDED","object":{"a":)" + std::string(2000, '[') +
                           std::string(2000, ']') + "}}\n";
  const Status s = WatchDecoder().Feed(deep, keep);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_NE(s.message().find("deeper than"), std::string::npos) << s.message();
  EXPECT_EQ(events.size(), 3u);
}

TEST(IndexerTest, IndexesByNamespaceOwnerAndCustomFunctions) {
  Indexer store;
  ASSERT_TRUE(store
                  .AddIndex("by-rv",
                            [](const nlohmann::json& o) {
                              return std::vector<std::string>{ResourceVersionOf(o)};
                            })
                  .ok());
  EXPECT_EQ(store.AddIndex("by-rv", nullptr).code(), StatusCode::kAlreadyExists);
  auto obj = [](const std::string& s) {
    return std::make_shared<const nlohmann::json>(nlohmann::json::parse(s));
  };
  EXPECT_EQ(store.Upsert(obj(Pod("a", "1", "owner-1"))), nullptr);
  EXPECT_NE(store.Upsert(obj(Pod("a", "2", "owner-2"))), nullptr);
  store.Upsert(obj(Pod("b", "3", "owner-2")));
  EXPECT_EQ(store.size(), 2u);
  EXPECT_EQ(store.ByIndex(kOwnerUidIndex, "owner-1")->size(), 0u);
  EXPECT_EQ(store.ByIndex(kOwnerUidIndex, "owner-2")->size(), 2u);
  EXPECT_EQ(store.ByIndex(kNamespaceIndex, "ns")->size(), 2u);
  EXPECT_EQ(store.ByIndex("by-rv", "2")->size(), 1u);
  EXPECT_FALSE(store.ByIndex("nope", "x").ok());
  EXPECT_EQ(store.ListKeys(), (std::vector<std::string>{"ns/a", "ns/b"}));
  ObjectPtr removed = store.Remove("ns/a");
  ASSERT_NE(removed, nullptr);
  EXPECT_EQ(ResourceVersionOf(*removed), "2");
  EXPECT_EQ(store.ByIndex(kOwnerUidIndex, "owner-2")->size(), 1u);
  const ReplaceDiff diff = store.Replace({obj(Pod("b", "4")), obj(Pod("c", "5"))});
  EXPECT_EQ(diff.added.size(), 1u);
  EXPECT_EQ(diff.updated.size(), 1u);
  EXPECT_EQ(ResourceVersionOf(*diff.updated[0].first), "3");
  EXPECT_EQ(diff.deleted.size(), 0u);
  EXPECT_EQ(store.ByIndex(kOwnerUidIndex, "owner-2")->size(), 0u);
  EXPECT_EQ(ObjectKey(nlohmann::json{{"metadata", {{"name", "n"}}}}), "n");
}

// A scripted API server for pods in "ns": the test sets what each list returns and which watch
// streams are served. A queued stream ends after its lines unless its last line is "HOLD"; with
// none queued, a watch gets a silent stream held open until the test ends ("410": HTTP 410).
class FakePodServer {
 public:
  FakePodServer() {
    server_.SetHandler([this](const httplib::Request& req, httplib::Response& res) {
      if (req.path != "/api/v1/namespaces/ns/pods")
        return testing::ReplyStatus(res, 404, "NotFound", "");
      if (req.get_param_value("watch") != "true") {
        std::lock_guard<std::mutex> lock(mu_);
        ++lists_;
        res.set_content(list_bodies_.front(), "application/json");
        if (list_bodies_.size() > 1) list_bodies_.erase(list_bodies_.begin());
        return;
      }
      std::vector<std::string> lines;
      bool hold = true;  // With nothing queued: a silent stream, held open.
      int status = 200;
      {
        std::lock_guard<std::mutex> lock(mu_);
        watch_rvs_.push_back(req.get_param_value("resourceVersion"));
        watch_params_.push_back(req.params);
        if (!watches_.empty()) {
          lines = watches_.front();
          watches_.erase(watches_.begin());
          hold = !lines.empty() && lines.back() == "HOLD";
          if (hold) lines.pop_back();
        }
        if (!lines.empty() && lines[0] == "410") status = 410;
      }
      if (status == 410) {
        return testing::ReplyStatus(res, 410, "Expired", "too old resource version");
      }
      res.set_chunked_content_provider(
          "application/json",
          [this, lines, hold, i = size_t(0)](size_t, httplib::DataSink& sink) mutable {
            if (i < lines.size()) {
              const std::string& l = lines[i++];
              return sink.write(l.data(), l.size());
            }
            // Hold the stream open (silent) until the test ends.
            while (hold && hold_ && !stop_) {
              std::this_thread::sleep_for(std::chrono::milliseconds(2));
            }
            sink.done();
            return true;
          });
    });
  }
  ~FakePodServer() { stop_ = true; }

  // Each list returns the next body queued; the last one is repeated.
  void QueueList(const std::string& body) {
    std::lock_guard<std::mutex> lock(mu_);
    list_bodies_.push_back(body);
  }
  void QueueWatch(std::vector<std::string> lines) {
    std::lock_guard<std::mutex> lock(mu_);
    watches_.push_back(std::move(lines));
  }
  int lists() {
    std::lock_guard<std::mutex> lock(mu_);
    return lists_;
  }
  std::vector<std::string> watch_rvs() {
    std::lock_guard<std::mutex> lock(mu_);
    return watch_rvs_;
  }
  httplib::Params watch_params(size_t i) {
    std::lock_guard<std::mutex> lock(mu_);
    return watch_params_.at(i);
  }
  std::string Url() const { return server_.Url(); }
  std::atomic<bool> hold_{false};

 private:
  std::mutex mu_;
  std::vector<std::string> list_bodies_;
  std::vector<std::vector<std::string>> watches_;
  std::vector<std::string> watch_rvs_;
  std::vector<httplib::Params> watch_params_;
  int lists_ = 0;
  std::atomic<bool> stop_{false};
  // Last: destroyed first, so its handler threads are joined before the state they use goes.
  ScriptedServer server_;
};

// Records handler calls as "add a 1", "update a 1->2", "delete a".
struct Recorder {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> calls;
  EventHandlers Handlers() {
    return {
        [this](const ObjectPtr& o) { Push("add " + NameOf(*o) + " " + ResourceVersionOf(*o)); },
        [this](const ObjectPtr& a, const ObjectPtr& b) {
          Push("update " + NameOf(*b) + " " + ResourceVersionOf(*a) + "->" + ResourceVersionOf(*b));
        },
        [this](const ObjectPtr& o) { Push("delete " + NameOf(*o)); }};
  }
  void Push(std::string s) {
    std::lock_guard<std::mutex> lock(mu);
    calls.push_back(std::move(s));
    cv.notify_all();
  }
  // Waits (bounded, real time) until `n` calls were recorded.
  std::vector<std::string> WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, std::chrono::seconds(10), [&] { return calls.size() >= n; });
    return calls;
  }
};

std::string List(const std::string& rv, const std::vector<std::string>& pods) {
  std::string items;
  for (const std::string& p : pods) items += (items.empty() ? "" : ",") + p;
  return R"({"kind":"PodList","metadata":{"resourceVersion":")" + rv + R"("},"items":[)" + items +
         "]}";
}

class InformerTest : public ::testing::Test {
 protected:
  void Start(InformerOptions options = {}, RestClientOptions rest = {}) {
    RestConfig cfg;
    cfg.host = server_.Url();
    cfg.qps = 0;
    client_ = std::move(RestClient::Create(cfg, rest).value());
    options.reflector.watch.backoff = {std::chrono::milliseconds(1), std::chrono::milliseconds(2),
                                       2.0, 0.5};
    options.reflector.relist_backoff = options.reflector.watch.backoff;
    options.reflector.watch.timeout_seconds = 60;
    informer_ = std::make_unique<Informer>(ResourceClient(*client_, kPodsGvr(), "ns"), options);
    informer_->AddEventHandler(recorder_.Handlers());
    thread_ = std::thread([this] { informer_->Run(stop_.Token()); });
  }
  static GroupVersionResource kPodsGvr() { return {"", "v1", "pods", true}; }
  void TearDown() override {
    stop_.Cancel();
    server_.hold_ = false;
    if (thread_.joinable()) thread_.join();
  }

  FakePodServer server_;
  Recorder recorder_;
  std::unique_ptr<RestClient> client_;
  std::unique_ptr<Informer> informer_;
  CancellationSource stop_;
  std::thread thread_;
};

TEST_F(InformerTest, ListsThenWatchesAndResumesFromTheLastResourceVersion) {
  server_.QueueList(List("10", {Pod("a", "8", "owner"), Pod("b", "9")}));
  server_.QueueWatch({Event("MODIFIED", Pod("a", "11", "owner")), Event("ADDED", Pod("c", "12"))});
  // The first stream ends (a dropped connection); the second resumes from 12.
  server_.QueueWatch({Event("BOOKMARK", R"({"kind":"Pod","metadata":{"resourceVersion":"15"}})"),
                      Event("DELETED", Pod("b", "16")), "HOLD"});
  server_.hold_ = true;
  Start();
  CancellationSource never;
  ASSERT_TRUE(informer_->WaitForSync(never.Token()));
  const std::vector<std::string> calls = recorder_.WaitFor(5);
  ASSERT_EQ(calls.size(), 5u);
  // The list's order is the store's; check as a set for the first two.
  EXPECT_EQ(std::set<std::string>(calls.begin(), calls.begin() + 2),
            (std::set<std::string>{"add a 8", "add b 9"}));
  EXPECT_EQ(calls[2], "update a 8->11");
  EXPECT_EQ(calls[3], "add c 12");
  EXPECT_EQ(calls[4], "delete b");
  EXPECT_TRUE(informer_->HasSynced());
  EXPECT_EQ(informer_->store().ListKeys(), (std::vector<std::string>{"ns/a", "ns/c"}));
  EXPECT_EQ(informer_->store().ByIndex(kOwnerUidIndex, "owner")->size(), 1u);
  const std::vector<std::string> rvs = server_.watch_rvs();
  ASSERT_GE(rvs.size(), 2u);
  EXPECT_EQ(rvs[0], "10");
  EXPECT_EQ(rvs[1], "12");
  EXPECT_EQ(server_.lists(), 1);  // Resumed without a list.
  const httplib::Params params = server_.watch_params(0);
  EXPECT_EQ(params.find("allowWatchBookmarks")->second, "true");
  const int timeout = std::stoi(params.find("timeoutSeconds")->second);
  EXPECT_GE(timeout, 60);
  EXPECT_LT(timeout, 120);
  EXPECT_EQ(informer_->last_sync_resource_version(), "16");
}

TEST_F(InformerTest, RelistsOnGoneAndDeliversTheDifference) {
  server_.QueueList(List("10", {Pod("a", "8"), Pod("b", "9")}));
  // After the first watch fails with Gone, the next list shows a changed world.
  server_.QueueList(List("20", {Pod("a", "18"), Pod("c", "19")}));
  server_.QueueWatch({Event("ERROR", R"({"kind":"Status","code":410,"reason":"Expired",)"
                                     R"("message":"too old resource version"})")});
  server_.QueueWatch({"410"});  // The HTTP form of Gone: list once more.
  server_.hold_ = true;
  Start();
  const std::vector<std::string> calls = recorder_.WaitFor(7);
  ASSERT_EQ(calls.size(), 7u);
  // Second list: b deleted (last known state), c added, a updated.
  EXPECT_EQ(calls[2], "delete b");
  EXPECT_EQ(calls[3], "add c 19");
  EXPECT_EQ(calls[4], "update a 8->18");
  // Third list, unchanged: every object is delivered as an update (a relist is a resync).
  EXPECT_EQ(std::set<std::string>(calls.begin() + 5, calls.end()),
            (std::set<std::string>{"update a 18->18", "update c 19->19"}));
  EXPECT_EQ(server_.lists(), 3);
  // The third watch follows the third list's handlers; wait for it (bounded).
  for (int i = 0; i < 5000 && server_.watch_rvs().size() < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(server_.watch_rvs(), (std::vector<std::string>{"10", "20", "20"}));
  EXPECT_EQ(informer_->store().ListKeys(), (std::vector<std::string>{"ns/a", "ns/c"}));
}

TEST_F(InformerTest, StalledAndTruncatedStreamsAreResumedWithoutARelist) {
  server_.QueueList(List("10", {}));
  // 1: one event, then silence: detected as a stall and re-opened from 11.
  server_.QueueWatch({Event("ADDED", Pod("a", "11")), "HOLD"});
  // 2: the connection drops in the middle of an event; the half line is discarded.
  const std::string next = Event("ADDED", Pod("c", "13"));
  server_.QueueWatch({Event("MODIFIED", Pod("a", "12")), next.substr(0, next.size() / 2)});
  // 3: the event again, in full.
  server_.QueueWatch({next, "HOLD"});
  server_.hold_ = true;
  RestClientOptions rest;
  rest.watch_stall_timeout = std::chrono::milliseconds(150);
  Start({}, rest);
  const std::vector<std::string> calls = recorder_.WaitFor(3);
  EXPECT_EQ(calls, (std::vector<std::string>{"add a 11", "update a 11->12", "add c 13"}));
  const std::vector<std::string> rvs = server_.watch_rvs();
  ASSERT_GE(rvs.size(), 3u);
  EXPECT_EQ(std::vector<std::string>(rvs.begin(), rvs.begin() + 3),
            (std::vector<std::string>{"10", "11", "12"}));
  EXPECT_EQ(server_.lists(), 1);
}

TEST_F(InformerTest, ResyncDeliversEveryObjectAsAnUpdate) {
  server_.QueueList(List("10", {Pod("a", "8")}));
  server_.hold_ = true;
  Start();
  recorder_.WaitFor(1);
  informer_->Resync();
  const std::vector<std::string> calls = recorder_.WaitFor(2);
  EXPECT_EQ(calls.back(), "update a 8->8");
  // A handler added late first sees every cached object.
  Recorder late;
  informer_->AddEventHandler(late.Handlers());
  EXPECT_EQ(late.WaitFor(1), (std::vector<std::string>{"add a 8"}));
  // Stopping interrupts the silent watch at once (no wait for the stall timeout).
  const auto start = std::chrono::steady_clock::now();
  stop_.Cancel();
  thread_.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

}  // namespace
}  // namespace sluice::kube
