// HTTP-level tests of the local API server's watches (api_server.h): replay from a list's
// revision and resume, expiry of evicted revisions (410), timeoutSeconds, selector transitions
// and bookmarks, and the streaming list (sendInitialEvents).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/http/client.h"
#include "localcluster/apiserver/watch_hub.h"
#include "tests/unit/localcluster/apiserver/api_server_test_support.h"

namespace sluice::apiserver {
namespace {

using api_server_testing::ApiServerTest;
using api_server_testing::Body;
using api_server_testing::ConfigMap;
using api_server_testing::ExpectStatus;
using api_server_testing::kConfigMaps;
using api_server_testing::WatchResult;
using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

// ---- Watch --------------------------------------------------------------------------------

TEST_F(ApiServerTest, WatchFromListRevisionSeesChangesInOrderAndResumes) {
  StartServer();
  MustCreate(kConfigMaps, ConfigMap("before"));
  const json list = Body(Get(kConfigMaps));
  ASSERT_EQ(list.value("kind", ""), "ConfigMapList");
  ASSERT_EQ(list["items"].size(), 1u);
  const std::string list_rv = list.value("/metadata/resourceVersion"_json_pointer, "");
  ASSERT_FALSE(list_rv.empty());

  WatchResult live;
  std::thread watcher([&] {
    live = Watch(
        std::string(kConfigMaps) + "?watch=1&resourceVersion=" + list_rv + "&timeoutSeconds=10",
        AfterEvents(3));
  });
  const json added = MustCreate(kConfigMaps, ConfigMap("w", {{"k", "1"}}));
  json changed = added;
  changed["data"]["k"] = "2";
  ASSERT_EQ(Put(std::string(kConfigMaps) + "/w", changed).status, 200);
  // Another namespace's object is not in this watch.
  MustCreate("/api/v1/namespaces/kube-system/configmaps", ConfigMap("elsewhere"));
  ASSERT_EQ(Delete(std::string(kConfigMaps) + "/w").status, 200);
  watcher.join();

  ASSERT_TRUE(live.transport.ok()) << live.transport.message();
  ASSERT_EQ(live.status, 200) << live.error_body;
  ASSERT_EQ(live.events.size(), 3u);
  const std::vector<std::string> types = {"ADDED", "MODIFIED", "DELETED"};
  const std::vector<std::string> values = {"1", "2", "2"};
  uint64_t last_rv = std::stoull(list_rv);
  for (size_t i = 0; i < 3; ++i) {
    const json& e = live.events[i];
    EXPECT_EQ(e.value("type", ""), types[i]) << e.dump();
    EXPECT_EQ(e.value("/object/kind"_json_pointer, ""), "ConfigMap");
    EXPECT_EQ(e.value("/object/metadata/name"_json_pointer, ""), "w");
    EXPECT_EQ(e.value("/object/data/k"_json_pointer, ""), values[i]);
    const uint64_t rv = std::stoull(e.value("/object/metadata/resourceVersion"_json_pointer, "0"));
    EXPECT_GT(rv, last_rv) << e.dump();
    last_rv = rv;
  }
  const std::string added_rv =
      live.events[0].value("/object/metadata/resourceVersion"_json_pointer, "");
  EXPECT_EQ(added_rv, added.value("/metadata/resourceVersion"_json_pointer, ""));

  // Resuming from the ADDED event's revision replays only what came after it; timeoutSeconds
  // ends the stream once it has nothing more to say.
  const WatchResult resumed = Watch(
      std::string(kConfigMaps) + "?watch=true&resourceVersion=" + added_rv + "&timeoutSeconds=1");
  ASSERT_TRUE(resumed.transport.ok()) << resumed.transport.message();
  ASSERT_EQ(resumed.events.size(), 2u);
  EXPECT_EQ(resumed.events[0].value("type", ""), "MODIFIED");
  EXPECT_EQ(resumed.events[1].value("type", ""), "DELETED");
  EXPECT_EQ(resumed.events[1].value("/object/metadata/resourceVersion"_json_pointer, ""),
            std::to_string(last_rv));

  // Without a resourceVersion the watch starts with the current objects as ADDED.
  const WatchResult fresh = Watch(std::string(kConfigMaps) + "?watch=1&timeoutSeconds=1");
  ASSERT_EQ(fresh.events.size(), 1u);
  EXPECT_EQ(fresh.events[0].value("type", ""), "ADDED");
  EXPECT_EQ(fresh.events[0].value("/object/metadata/name"_json_pointer, ""), "before");
}

TEST_F(ApiServerTest, WatchFromAnEvictedRevisionIsTooOld) {
  WatchHubOptions watch;
  watch.history_capacity = 5;
  StartServer(Options(), watch, /*memory=*/true);
  const std::string list_rv =
      Body(Get(kConfigMaps)).value("/metadata/resourceVersion"_json_pointer, "");
  std::vector<std::string> rvs;
  for (int i = 0; i < 10; ++i) {
    rvs.push_back(MustCreate(kConfigMaps, ConfigMap("cm-" + std::to_string(i)))
                      .value("/metadata/resourceVersion"_json_pointer, ""));
  }

  const WatchResult old =
      Watch(std::string(kConfigMaps) + "?watch=1&resourceVersion=" + list_rv + "&timeoutSeconds=2",
            AfterEvents(1));
  ASSERT_TRUE(old.transport.ok()) << old.transport.message();
  json status;
  if (old.status == 410) {
    status = json::parse(old.error_body, nullptr, false);
  } else {
    // kube's way: 200, then an ERROR event carrying the Status.
    ASSERT_EQ(old.status, 200);
    ASSERT_FALSE(old.events.empty());
    EXPECT_EQ(old.events[0].value("type", ""), "ERROR");
    status = old.events[0].value("object", json::object());
  }
  EXPECT_EQ(status.value("kind", ""), "Status") << status.dump();
  EXPECT_EQ(status.value("code", 0), 410) << status.dump();
  EXPECT_NE(status.value("message", "").find("too old resource version"), std::string::npos)
      << status.dump();

  // A revision still in the history resumes normally.
  const WatchResult recent =
      Watch(std::string(kConfigMaps) + "?watch=1&resourceVersion=" + rvs[7] + "&timeoutSeconds=1");
  ASSERT_EQ(recent.status, 200) << recent.error_body;
  ASSERT_EQ(recent.events.size(), 2u);
  EXPECT_EQ(recent.events[0].value("/object/metadata/name"_json_pointer, ""), "cm-8");
  EXPECT_EQ(recent.events[1].value("/object/metadata/name"_json_pointer, ""), "cm-9");
}

TEST_F(ApiServerTest, WatchTimeoutSecondsEndsTheStream) {
  StartServer();
  const std::string rv = Body(Get(kConfigMaps)).value("/metadata/resourceVersion"_json_pointer, "");
  const WatchResult w =
      Watch(std::string(kConfigMaps) + "?watch=1&resourceVersion=" + rv + "&timeoutSeconds=1");
  ASSERT_TRUE(w.transport.ok()) << w.transport.message();
  EXPECT_EQ(w.status, 200);
  EXPECT_TRUE(w.events.empty());
  EXPECT_GE(w.elapsed, milliseconds(900));
  EXPECT_LT(w.elapsed, milliseconds(4000));
  // A malformed timeout is rejected.
  ExpectStatus(Get(std::string(kConfigMaps) + "?watch=1&timeoutSeconds=soon"), 400, "BadRequest");
}

TEST_F(ApiServerTest, WatchTimeoutSecondsZeroMeansNoClientTimeout) {
  StartServer();
  const std::string rv = Body(Get(kConfigMaps)).value("/metadata/resourceVersion"_json_pointer, "");
  WatchResult w;
  std::thread watcher([&] {
    w = Watch(std::string(kConfigMaps) + "?watch=1&resourceVersion=" + rv + "&timeoutSeconds=0",
              AfterEvents(1));
  });
  std::this_thread::sleep_for(milliseconds(300));
  MustCreate(kConfigMaps, ConfigMap("late"));
  watcher.join();
  ASSERT_TRUE(w.transport.ok()) << w.transport.message();
  ASSERT_EQ(w.events.size(), 1u) << "the stream ended after " << w.elapsed.count() << " ms";
  EXPECT_EQ(w.events[0].value("type", ""), "ADDED");
  EXPECT_EQ(w.events[0].value("/object/metadata/name"_json_pointer, ""), "late");
}

// A selector-filtered watch delivers the events whose new state matches. kube's watch cache also
// sends DELETED when an object stops matching and ADDED when it starts to; this server judges
// the new state only (sending nothing, then MODIFIED), a difference docs/local-cluster.md lists.
TEST_F(ApiServerTest, WatchWithASelectorSendsSelectionTransitions) {
  StartServer();
  const std::string rv = Body(Get(kConfigMaps)).value("/metadata/resourceVersion"_json_pointer, "");
  json object = ConfigMap("moving");
  object["metadata"]["labels"] = {{"app", "a"}};
  MustCreate(kConfigMaps, object);
  MustCreate(kConfigMaps, ConfigMap("unlabelled"));
  const std::string path = std::string(kConfigMaps) + "/moving";
  ASSERT_EQ(Patch(path, {{"metadata", {{"labels", {{"app", "b"}}}}}}).status, 200);
  ASSERT_EQ(Patch(path, {{"data", {{"k", "v"}}}}).status, 200);
  ASSERT_EQ(Patch(path, {{"metadata", {{"labels", {{"app", "a"}}}}}}).status, 200);
  ASSERT_EQ(Patch(path, {{"data", {{"k", "w"}}}}).status, 200);
  ASSERT_EQ(Delete(path).status, 200);

  const WatchResult w = Watch(std::string(kConfigMaps) + "?watch=1&labelSelector=app%3Da" +
                              "&resourceVersion=" + rv + "&timeoutSeconds=1");
  ASSERT_TRUE(w.transport.ok()) << w.transport.message();
  std::vector<std::string> seen;
  for (const json& e : w.events) {
    seen.push_back(e.value("type", "") + " " +
                   e.value("/object/metadata/labels/app"_json_pointer, "") + " " +
                   e.value("/object/data/k"_json_pointer, "-"));
  }
  // As kube: leaving the selection is DELETED (with the new state), re-entering it ADDED, and the
  // change made while outside it is not sent.
  EXPECT_EQ(seen, (std::vector<std::string>{"ADDED a -", "DELETED b -", "ADDED a v", "MODIFIED a w",
                                            "DELETED a w"}));
}

TEST_F(ApiServerTest, WatchSendsBookmarksWhenAskedTo) {
  ApiServerOptions options = Options();
  options.bookmark_interval = seconds(1);
  StartServer(options);
  MustCreate(kConfigMaps, ConfigMap("a"));
  const std::string rv = Body(Get(kConfigMaps)).value("/metadata/resourceVersion"_json_pointer, "");
  const WatchResult w = Watch(std::string(kConfigMaps) + "?watch=1&allowWatchBookmarks=true" +
                                  "&resourceVersion=" + rv + "&timeoutSeconds=5",
                              [](const std::vector<json>& events) {
                                return events.back().value("type", "") == "BOOKMARK";
                              });
  ASSERT_TRUE(w.transport.ok()) << w.transport.message();
  ASSERT_EQ(w.events.size(), 1u);
  const json& bookmark = w.events[0];
  EXPECT_EQ(bookmark.value("type", ""), "BOOKMARK");
  EXPECT_EQ(bookmark.value("/object/kind"_json_pointer, ""), "ConfigMap");
  EXPECT_EQ(bookmark.value("/object/apiVersion"_json_pointer, ""), "v1");
  EXPECT_EQ(bookmark.value("/object/metadata/resourceVersion"_json_pointer, ""), rv);
  EXPECT_LT(w.elapsed, milliseconds(4000));

  // Without allowWatchBookmarks there are none.
  const WatchResult quiet =
      Watch(std::string(kConfigMaps) + "?watch=1&resourceVersion=" + rv + "&timeoutSeconds=1");
  EXPECT_TRUE(quiet.events.empty()) << quiet.events.size();
}

TEST_F(ApiServerTest, SendInitialEventsStreamsTheStateThenTheBookmarkThatEndsIt) {
  // client-go's streaming list (kubectl 1.35's reflectors): the current state as ADDED events,
  // one BOOKMARK annotated k8s.io/initial-events-end at the state's revision, then changes.
  ApiServerOptions options = Options();
  options.bookmark_interval = seconds(1);  // Periodic bookmarks show a watch is live.
  StartServer(options);
  MustCreate(kConfigMaps, ConfigMap("a", {{"k", "1"}}));
  MustCreate(kConfigMaps, ConfigMap("b", {{"k", "2"}}));
  MustCreate("/api/v1/namespaces/kube-system/configmaps", ConfigMap("elsewhere"));
  const std::string rv = Body(Get(kConfigMaps)).value("/metadata/resourceVersion"_json_pointer, "");
  const std::string query = "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan" +
                            std::string("&allowWatchBookmarks=true&timeoutSeconds=10");
  auto ends_initial = [](const json& e) {
    return e.value("type", "") == "BOOKMARK" &&
           e.value("/object/metadata/annotations/k8s.io~1initial-events-end"_json_pointer, "") ==
               "true";
  };
  std::vector<std::string> state = {"a", "b"};
  int round = 0;
  for (const std::string& from :
       {std::string(), std::string("&resourceVersion=0"), std::string("&resourceVersion=") + rv}) {
    const std::string created = "c" + std::to_string(round++);
    std::atomic<bool> synced{false};
    WatchResult w;
    std::thread watcher([&] {
      w = Watch(std::string(kConfigMaps) + query + from, [&](const std::vector<json>& events) {
        if (ends_initial(events.back())) synced = true;
        return events.back().value("/object/metadata/name"_json_pointer, "") == created;
      });
    });
    // Made once the state is through, the change comes after the bookmark.
    ASSERT_TRUE(Eventually([&] { return synced.load(); })) << from;
    MustCreate(kConfigMaps, ConfigMap(created));
    watcher.join();
    ASSERT_TRUE(w.transport.ok()) << w.transport.message();
    ASSERT_EQ(w.status, 200) << w.error_body;
    size_t end = 0;
    while (end < w.events.size() && !ends_initial(w.events[end])) ++end;
    ASSERT_LT(end, w.events.size()) << "no initial-events-end bookmark with " << from;
    std::vector<std::string> names;
    for (size_t i = 0; i < end; ++i) {
      EXPECT_EQ(w.events[i].value("type", ""), "ADDED") << w.events[i].dump();
      names.push_back(w.events[i].value("/object/metadata/name"_json_pointer, ""));
    }
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, state) << from;
    EXPECT_EQ(w.events[end].value("/object/kind"_json_pointer, ""), "ConfigMap");
    const uint64_t end_rv =
        std::stoull(w.events[end].value("/object/metadata/resourceVersion"_json_pointer, "0"));
    EXPECT_GE(end_rv, std::stoull(rv));
    const json& change = w.events.back();
    EXPECT_EQ(change.value("type", ""), "ADDED");
    EXPECT_GT(std::stoull(change.value("/object/metadata/resourceVersion"_json_pointer, "0")),
              end_rv);
    state.push_back(created);
  }

  // sendInitialEvents=false without a resourceVersion: changes from now, no state first.
  std::atomic<bool> live{false};
  WatchResult fresh;
  std::thread watcher([&] {
    fresh = Watch(std::string(kConfigMaps) +
                      "?watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan"
                      "&allowWatchBookmarks=true&timeoutSeconds=10",
                  [&](const std::vector<json>& events) {
                    if (events.back().value("type", "") == "BOOKMARK") live = true;
                    return events.back().value("type", "") == "ADDED";
                  });
  });
  ASSERT_TRUE(Eventually([&] { return live.load(); }));
  MustCreate(kConfigMaps, ConfigMap("late"));
  watcher.join();
  ASSERT_FALSE(fresh.events.empty());
  for (const json& e : fresh.events) {
    EXPECT_FALSE(ends_initial(e)) << e.dump();
    if (e.value("type", "") != "BOOKMARK") {
      EXPECT_EQ(e.value("/object/metadata/name"_json_pointer, ""), "late") << e.dump();
    }
  }
}

TEST_F(ApiServerTest, StreamingWatchParametersAreValidatedAsKubeDoes) {
  StartServer();
  // Without resourceVersionMatch=NotOlderThan, or without bookmarks, the client could not tell
  // where the state ends: 422 naming the field, as kube-apiserver answers.
  const http::Response no_match =
      Get(std::string(kConfigMaps) + "?watch=1&sendInitialEvents=true&allowWatchBookmarks=true");
  ExpectStatus(no_match, 422, "Invalid");
  EXPECT_NE(no_match.body.find("resourceVersionMatch: Forbidden"), std::string::npos)
      << no_match.body;
  const http::Response no_bookmarks =
      Get(std::string(kConfigMaps) +
          "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan");
  ExpectStatus(no_bookmarks, 422, "Invalid");
  EXPECT_NE(no_bookmarks.body.find("allowWatchBookmarks: Forbidden"), std::string::npos)
      << no_bookmarks.body;
  const http::Response match_alone =
      Get(std::string(kConfigMaps) + "?watch=1&resourceVersionMatch=NotOlderThan");
  ExpectStatus(match_alone, 422, "Invalid");
  // A NotOlderThan revision the server has not reached.
  const http::Response future = Get(std::string(kConfigMaps) +
                                    "?watch=1&sendInitialEvents=true&resourceVersionMatch="
                                    "NotOlderThan&allowWatchBookmarks=true&resourceVersion=999999");
  ExpectStatus(future, 504, "Timeout");
  EXPECT_NE(future.body.find("Too large resource version"), std::string::npos) << future.body;
}

}  // namespace
}  // namespace sluice::apiserver
