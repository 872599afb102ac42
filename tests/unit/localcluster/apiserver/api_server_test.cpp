// HTTP-level tests of the local API server (api_server.h): an ApiServer runs in-process on a free
// port and the tests talk to it with sluice::http::Client, sending the JSON requests kubectl and
// client-go send. They cover optimistic concurrency, watches (replay, resume, expiry, timeouts,
// bookmarks), the status and scale subresources, garbage collection, finalizers, strategic
// merge patch, custom resource validation and defaulting, namespace lifecycle, CRD deletion,
// pods/log through a fake kubelet, and the error paths (404, 400, 401, 429, Table output).
#include "localcluster/apiserver/api_server.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/http/bearer_token.h"
#include "common/http/client.h"
#include "common/logging/logger.h"
#include "common/metrics/registry.h"
#include "common/yaml/yaml_json.h"
#include "localcluster/apiserver/memory_storage.h"
#include "localcluster/apiserver/sqlite_storage.h"
#include "localcluster/apiserver/watch_hub.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using SteadyClock = std::chrono::steady_clock;

constexpr char kToken[] = "api-server-test-token";
constexpr char kJson[] = "application/json";
constexpr char kMergePatch[] = "application/merge-patch+json";
constexpr char kStrategicPatch[] = "application/strategic-merge-patch+json";
constexpr char kRolloutPools[] = "/apis/sluice.dev/v1alpha1/namespaces/default/rolloutpools";
constexpr char kConfigMaps[] = "/api/v1/namespaces/default/configmaps";

std::filesystem::path SourceDir() {
  const char* dir = std::getenv("SLUICE_SOURCE_DIR");
  return dir != nullptr ? std::filesystem::path(dir) : std::filesystem::current_path();
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The first document of a YAML file, as JSON.
json LoadYaml(const std::filesystem::path& path) {
  Result<std::vector<json>> docs = yaml::ParseDocuments(ReadFile(path));
  if (!docs.ok() || docs->empty()) {
    ADD_FAILURE() << "cannot read " << path << ": " << docs.status().message();
    return json::object();
  }
  return docs->front();
}

// The JSON body of a response (discarded when it is not JSON).
json Body(const http::Response& r) { return json::parse(r.body, nullptr, false); }

// body[key] when it is a string, else "" (never throws, so a wrong body fails an expectation).
std::string Text(const json& body, const char* key) {
  return body.is_object() && body.contains(key) && body[key].is_string()
             ? body[key].get<std::string>()
             : std::string();
}

// Expects a metav1.Status failure body with `code` and `reason`.
void ExpectStatus(const http::Response& r, int code, const std::string& reason) {
  EXPECT_EQ(r.status, code) << r.body;
  const json body = Body(r);
  ASSERT_TRUE(body.is_object()) << r.body;
  EXPECT_EQ(Text(body, "kind"), "Status") << r.body;
  EXPECT_EQ(Text(body, "apiVersion"), "v1") << r.body;
  EXPECT_EQ(Text(body, "status"), "Failure") << r.body;
  EXPECT_EQ(Text(body, "reason"), reason) << r.body;
  EXPECT_EQ(body.contains("code") && body["code"].is_number() ? body["code"].get<int>() : 0, code)
      << r.body;
}

json ConfigMap(const std::string& name, json data = json::object()) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}}},
          {"data", std::move(data)}};
}

json RolloutPool(const std::string& name) {
  return {{"apiVersion", "sluice.dev/v1alpha1"},
          {"kind", "RolloutPool"},
          {"metadata", {{"name", name}}},
          {"spec", {{"policies", {"tiny"}}, {"dataflowRef", {{"name", "arithmetic"}}}}}};
}

// What a watch stream delivered.
struct WatchResult {
  int status = 0;          // HTTP status of the response head.
  std::string error_body;  // The body of a non-2xx answer.
  std::vector<json> events;
  Status transport;  // Non-OK when no response came back.
  milliseconds elapsed{0};
};

// A kubelet stand-in serving /containerLogs/<ns>/<pod>/<container> on 127.0.0.1.
class FakeKubelet {
 public:
  FakeKubelet() {
    server_.Get(R"(/containerLogs/([^/]+)/([^/]+)/([^/]+))", [this](const httplib::Request& req,
                                                                    httplib::Response& res) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        params_.push_back(req.params);
      }
      if (req.get_param_value("follow") == "true") {
        res.set_chunked_content_provider("text/plain", [](size_t, httplib::DataSink& sink) {
          for (const char* line : {"tick 1\n", "tick 2\n", "tick 3\n"}) {
            sink.write(line, std::strlen(line));
            std::this_thread::sleep_for(milliseconds(30));
          }
          sink.done();
          return true;
        });
        return;
      }
      std::vector<std::string> lines = {"one\n", "two\n", "three\n"};
      if (req.has_param("tailLines")) {
        const size_t n = std::stoul(req.get_param_value("tailLines"));
        lines.erase(lines.begin(), lines.end() - std::min(n, lines.size()));
      }
      std::string text =
          req.matches[1].str() + "/" + req.matches[2].str() + "/" + req.matches[3].str() + ":\n";
      for (const std::string& l : lines) text += l;
      res.set_content(text, "text/plain");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(milliseconds(1));
  }
  ~FakeKubelet() {
    server_.stop();
    thread_.join();
  }

  int port() const { return port_; }
  std::vector<httplib::Params> params() {
    std::lock_guard<std::mutex> lock(mu_);
    return params_;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<httplib::Params> params_;
};

class ApiServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "apiserver-test-XXXXXX");
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }

  void TearDown() override {
    StopServer();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
    if (HasFailure()) {
      std::lock_guard<std::mutex> lock(log_mu_);
      const size_t from = log_lines_.size() > 40 ? log_lines_.size() - 40 : 0;
      for (size_t i = from; i < log_lines_.size(); ++i) std::cerr << log_lines_[i] << "\n";
    }
  }

  static ApiServerOptions Options() {
    ApiServerOptions options;
    options.http.port = 0;
    options.http.auth = http::TokenSource::FromValue(kToken);
    options.http.shutdown_grace = milliseconds(500);
    options.http.access_log = false;
    options.gc_period = milliseconds(50);
    return options;
  }

  // Starts a server on SqliteStorage (or MemoryStorage) and a client with the token.
  void StartServer(ApiServerOptions options = Options(), WatchHubOptions watch = {},
                   bool memory = false) {
    std::unique_ptr<Storage> storage;
    if (memory) {
      storage = std::make_unique<MemoryStorage>(watch);
    } else {
      SqliteStorageOptions sqlite;
      sqlite.path = dir_ + "/store.db";
      sqlite.watch = watch;
      Result<std::unique_ptr<SqliteStorage>> opened = SqliteStorage::Open(sqlite);
      ASSERT_TRUE(opened.ok()) << opened.status().message();
      storage = std::move(*opened);
    }
    metrics_ = std::make_unique<metrics::Registry>();
    log::Logger logger("apiserver-test", clock_, [this](std::string_view line) {
      std::lock_guard<std::mutex> lock(log_mu_);
      log_lines_.emplace_back(line);
    });
    Result<std::unique_ptr<ApiServer>> server =
        ApiServer::Create(std::move(options), std::move(storage), &clock_, metrics_.get(), logger);
    ASSERT_TRUE(server.ok()) << server.status().message();
    server_ = std::move(*server);
    ASSERT_TRUE(server_->Start().ok());
    client_ = NewClient(true);
    ASSERT_NE(client_, nullptr);
  }

  void StopServer() {
    client_.reset();
    if (server_) server_->Shutdown();
    server_.reset();
  }

  std::unique_ptr<http::Client> NewClient(bool with_token) {
    http::ClientOptions options;
    options.base_url = server_->BaseUrl();
    if (with_token) options.token = http::TokenSource::FromValue(kToken);
    options.max_attempts = 1;  // Every answer (409, 429, 503) is what the test looks at.
    options.read_timeout = seconds(10);
    Result<std::unique_ptr<http::Client>> client = http::Client::Create(options);
    if (!client.ok()) {
      ADD_FAILURE() << client.status().message();
      return nullptr;
    }
    return std::move(*client);
  }

  http::Response Send(const std::string& method, const std::string& path,
                      const std::string& body = "", const std::string& content_type = kJson,
                      const httplib::Headers& headers = {}) {
    http::Request request;
    request.method = method;
    request.path = path;
    request.body = body;
    if (!body.empty()) request.content_type = content_type;
    request.headers = headers;
    Result<http::Response> reply = client_->Send(std::move(request));
    if (!reply.ok()) {
      ADD_FAILURE() << method << " " << path << ": " << reply.status().message();
      return http::Response{};
    }
    return std::move(*reply);
  }
  http::Response Get(const std::string& path, const httplib::Headers& headers = {}) {
    return Send("GET", path, "", kJson, headers);
  }
  http::Response Post(const std::string& path, const json& body) {
    return Send("POST", path, body.dump());
  }
  http::Response Put(const std::string& path, const json& body) {
    return Send("PUT", path, body.dump());
  }
  http::Response Patch(const std::string& path, const json& patch,
                       const std::string& type = kMergePatch) {
    return Send("PATCH", path, patch.dump(), type);
  }
  http::Response Delete(const std::string& path, const json& options = nullptr) {
    return Send("DELETE", path, options.is_null() ? "" : options.dump());
  }

  // Creates an object and returns it as stored (a failure is recorded when the answer is not
  // 201).
  json MustCreate(const std::string& collection, const json& object) {
    const http::Response r = Post(collection, object);
    EXPECT_EQ(r.status, 201) << collection << ": " << r.body;
    return Body(r);
  }

  // Installs crds/<file> as a client would (YAML converted to JSON, POSTed) and checks that it
  // is accepted and Established at once.
  json InstallCrd(const std::string& file) {
    const json crd = LoadYaml(SourceDir() / "crds" / file);
    const http::Response r = Post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd);
    EXPECT_EQ(r.status, 201) << r.body;
    const json created = Body(r);
    bool established = false;
    for (const json& c : created.value("/status/conditions"_json_pointer, json::array())) {
      if (c.value("type", "") == "Established") established = c.value("status", "") == "True";
    }
    EXPECT_TRUE(established) << r.body;
    return created;
  }

  // Polls `done` every 20 ms for up to `timeout`.
  static bool Eventually(const std::function<bool()>& done, milliseconds timeout = seconds(5)) {
    const auto deadline = SteadyClock::now() + timeout;
    while (SteadyClock::now() < deadline) {
      if (done()) return true;
      std::this_thread::sleep_for(milliseconds(20));
    }
    return done();
  }

  // Reads the watch at `path` line by line until `stop` says so or the stream ends.
  WatchResult Watch(const std::string& path,
                    const std::function<bool(const std::vector<json>&)>& stop = nullptr) {
    WatchResult out;
    std::string pending;
    http::Request request;
    request.path = path;
    const auto start = SteadyClock::now();
    Result<http::Response> head = client_->Stream(
        std::move(request),
        [&](const http::Response& h) {
          out.status = h.status;
          return true;
        },
        [&](std::string_view data) {
          pending.append(data);
          for (size_t nl = pending.find('\n'); nl != std::string::npos; nl = pending.find('\n')) {
            const std::string line = pending.substr(0, nl);
            pending.erase(0, nl + 1);
            if (line.empty()) continue;
            out.events.push_back(json::parse(line, nullptr, false));
            if (stop && stop(out.events)) return false;
          }
          return true;
        });
    out.elapsed = std::chrono::duration_cast<milliseconds>(SteadyClock::now() - start);
    if (!head.ok()) {
      out.transport = head.status();
    } else {
      out.status = head->status;
      out.error_body = head->body;
    }
    return out;
  }

  static std::function<bool(const std::vector<json>&)> AfterEvents(size_t n) {
    return [n](const std::vector<json>& events) { return events.size() >= n; };
  }

  SystemClock clock_;
  std::string dir_;
  std::unique_ptr<metrics::Registry> metrics_;
  std::unique_ptr<ApiServer> server_;
  std::unique_ptr<http::Client> client_;
  std::mutex log_mu_;
  std::vector<std::string> log_lines_;
};

// ---- 1. Optimistic concurrency -------------------------------------------------------------

TEST_F(ApiServerTest, ConcurrentUpdatesWithTheSameResourceVersionConflict) {
  StartServer();
  const json created = MustCreate(kConfigMaps, ConfigMap("shared", {{"v", "0"}}));
  const std::string rv = created.value("/metadata/resourceVersion"_json_pointer, "");
  ASSERT_FALSE(rv.empty());

  std::vector<http::Response> replies(2);
  std::vector<std::thread> writers;
  for (int i = 0; i < 2; ++i) {
    writers.emplace_back([&, i] {
      json update = created;
      update["data"]["v"] = "writer-" + std::to_string(i);
      replies[i] = Put(std::string(kConfigMaps) + "/shared", update);
    });
  }
  for (std::thread& t : writers) t.join();

  const int winner = replies[0].status == 200 ? 0 : 1;
  const int loser = 1 - winner;
  ASSERT_EQ(replies[winner].status, 200) << replies[winner].body;
  ExpectStatus(replies[loser], 409, "Conflict");
  const json conflict = Body(replies[loser]);
  EXPECT_NE(conflict.value("message", "").find("the object has been modified"), std::string::npos)
      << replies[loser].body;
  EXPECT_EQ(conflict.value("/details/name"_json_pointer, ""), "shared");
  EXPECT_EQ(conflict.value("/details/kind"_json_pointer, ""), "configmaps");

  // The winner's write is the stored one, with a new resourceVersion.
  const json stored = Body(Get(std::string(kConfigMaps) + "/shared"));
  EXPECT_EQ(stored.value("/data/v"_json_pointer, ""), "writer-" + std::to_string(winner));
  EXPECT_NE(stored.value("/metadata/resourceVersion"_json_pointer, ""), rv);
  EXPECT_EQ(stored.value("/metadata/resourceVersion"_json_pointer, ""),
            Body(replies[winner]).value("/metadata/resourceVersion"_json_pointer, "x"));

  // A merge patch carrying the stale resourceVersion conflicts too; without one it applies.
  ExpectStatus(Patch(std::string(kConfigMaps) + "/shared",
                     {{"metadata", {{"resourceVersion", rv}}}, {"data", {{"v", "late"}}}}),
               409, "Conflict");
  EXPECT_EQ(Patch(std::string(kConfigMaps) + "/shared", {{"data", {{"v", "late"}}}}).status, 200);
}

// ---- 2. Watch --------------------------------------------------------------------------------

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

// ---- 3. Status subresource -------------------------------------------------------------------

TEST_F(ApiServerTest, StatusSubresourceSplitsSpecAndStatus) {
  StartServer();
  InstallCrd("rolloutpools.yaml");

  // Discovery serves the new resource and its subresources at once.
  const json discovery = Body(Get("/apis/sluice.dev/v1alpha1"));
  std::vector<std::string> names;
  for (const json& r : discovery.value("resources", json::array())) {
    names.push_back(r.value("name", ""));
  }
  EXPECT_NE(std::find(names.begin(), names.end(), "rolloutpools"), names.end()) << discovery;
  EXPECT_NE(std::find(names.begin(), names.end(), "rolloutpools/status"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "rolloutpools/scale"), names.end());

  // A status in the create body is dropped.
  json pool = RolloutPool("rp");
  pool["status"] = {{"replicas", 5}};
  const json created = MustCreate(kRolloutPools, pool);
  EXPECT_FALSE(created.contains("/status/replicas"_json_pointer)) << created;
  EXPECT_EQ(created.value("/metadata/generation"_json_pointer, 0), 1);
  const std::string path = std::string(kRolloutPools) + "/rp";

  // PUT to /status takes the status and ignores the spec; the generation stays.
  json status_put = created;
  status_put["spec"]["replicas"] = 7;
  status_put["status"] = {{"replicas", 2}};
  http::Response r = Put(path + "/status", status_put);
  ASSERT_EQ(r.status, 200) << r.body;
  json after = Body(r);
  EXPECT_EQ(after.value("/status/replicas"_json_pointer, 0), 2);
  EXPECT_EQ(after.value("/spec/replicas"_json_pointer, 0), 1);
  EXPECT_EQ(after.value("/metadata/generation"_json_pointer, 0), 1);

  // PUT to the main resource takes the spec and ignores the status; the generation bumps.
  json main_put = after;
  main_put["spec"]["replicas"] = 2;
  main_put["status"]["replicas"] = 9;
  r = Put(path, main_put);
  ASSERT_EQ(r.status, 200) << r.body;
  after = Body(r);
  EXPECT_EQ(after.value("/spec/replicas"_json_pointer, 0), 2);
  EXPECT_EQ(after.value("/status/replicas"_json_pointer, 0), 2);
  EXPECT_EQ(after.value("/metadata/generation"_json_pointer, 0), 2);

  // A merge patch of the main resource cannot reach the status either.
  r = Patch(path, {{"status", {{"replicas", 10}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  after = Body(r);
  EXPECT_EQ(after.value("/status/replicas"_json_pointer, 0), 2);
  EXPECT_EQ(after.value("/metadata/generation"_json_pointer, 0), 2);

  // Metadata-only and status changes leave the generation alone.
  r = Patch(path, {{"metadata", {{"labels", {{"team", "rl"}}}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Body(r).value("/metadata/generation"_json_pointer, 0), 2);
  EXPECT_EQ(Body(r).value("/metadata/labels/team"_json_pointer, ""), "rl");
  r = Patch(path + "/status", {{"status", {{"readyReplicas", 1}}}, {"spec", {{"replicas", 4}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  after = Body(r);
  EXPECT_EQ(after.value("/status/readyReplicas"_json_pointer, 0), 1);
  EXPECT_EQ(after.value("/status/replicas"_json_pointer, 0), 2);
  EXPECT_EQ(after.value("/spec/replicas"_json_pointer, 0), 2);
  EXPECT_EQ(after.value("/metadata/generation"_json_pointer, 0), 2);

  // A spec patch bumps it again.
  r = Patch(path, {{"spec", {{"replicas", 3}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Body(r).value("/metadata/generation"_json_pointer, 0), 3);
}

// ---- 4. Scale subresource --------------------------------------------------------------------

TEST_F(ApiServerTest, ScaleSubresourceReadsAndWritesSpecReplicas) {
  StartServer();
  InstallCrd("rolloutpools.yaml");
  MustCreate(kRolloutPools, RolloutPool("rp"));
  const std::string path = std::string(kRolloutPools) + "/rp";

  http::Response r = Get(path + "/scale");
  ASSERT_EQ(r.status, 200) << r.body;
  json scale = Body(r);
  EXPECT_EQ(scale.value("apiVersion", ""), "autoscaling/v1");
  EXPECT_EQ(scale.value("kind", ""), "Scale");
  EXPECT_EQ(scale.value("/metadata/name"_json_pointer, ""), "rp");
  EXPECT_EQ(scale.value("/metadata/namespace"_json_pointer, ""), "default");
  EXPECT_EQ(scale.value("/spec/replicas"_json_pointer, -1), 1);  // The schema's default.

  r = Patch(path + "/scale", {{"spec", {{"replicas", 3}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Body(r).value("kind", ""), "Scale");
  EXPECT_EQ(Body(r).value("/spec/replicas"_json_pointer, -1), 3);
  json object = Body(Get(path));
  EXPECT_EQ(object.value("/spec/replicas"_json_pointer, -1), 3);
  EXPECT_EQ(object.value("/metadata/generation"_json_pointer, 0), 2);

  // PUT of a Scale (kubectl scale) works the same way.
  scale = Body(Get(path + "/scale"));
  scale["spec"]["replicas"] = 5;
  r = Put(path + "/scale", scale);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Body(Get(path)).value("/spec/replicas"_json_pointer, -1), 5);
  // ...and a stale one (kubectl scale --resource-version) conflicts.
  scale["spec"]["replicas"] = 6;
  ExpectStatus(Put(path + "/scale", scale), 409, "Conflict");

  // Negative replicas are invalid; nothing changes.
  ExpectStatus(Patch(path + "/scale", {{"spec", {{"replicas", -1}}}}), 422, "Invalid");
  EXPECT_EQ(Body(Get(path)).value("/spec/replicas"_json_pointer, -1), 5);
}

// ---- 5. Garbage collection -------------------------------------------------------------------

TEST_F(ApiServerTest, DependentsOfADeletedOwnerAreCollected) {
  StartServer();
  const json owner = MustCreate(kConfigMaps, ConfigMap("owner"));
  const std::string uid = owner.value("/metadata/uid"_json_pointer, "");
  ASSERT_FALSE(uid.empty());
  json dependent = ConfigMap("dependent");
  dependent["metadata"]["ownerReferences"] = {
      {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"name", "owner"}, {"uid", uid}}};
  MustCreate(kConfigMaps, dependent);
  MustCreate(kConfigMaps, ConfigMap("bystander"));

  // The owner alive, the dependent stays through several passes.
  std::this_thread::sleep_for(milliseconds(200));
  ASSERT_EQ(Get(std::string(kConfigMaps) + "/dependent").status, 200);

  ASSERT_EQ(Delete(std::string(kConfigMaps) + "/owner").status, 200);
  EXPECT_TRUE(Eventually([&] {
    return Get(std::string(kConfigMaps) + "/dependent").status == 404;
  })) << Get(std::string(kConfigMaps) + "/dependent").body;
  EXPECT_EQ(Get(std::string(kConfigMaps) + "/bystander").status, 200);
}

TEST_F(ApiServerTest, ForegroundDeletionWaitsForBlockingDependents) {
  StartServer();
  const json owner = MustCreate(kConfigMaps, ConfigMap("fg-owner"));
  json dependent = ConfigMap("fg-dependent");
  dependent["metadata"]["ownerReferences"] = {{{"apiVersion", "v1"},
                                               {"kind", "ConfigMap"},
                                               {"name", "fg-owner"},
                                               {"uid", owner["metadata"]["uid"]},
                                               {"blockOwnerDeletion", true}}};
  dependent["metadata"]["finalizers"] = {"test.sluice.dev/hold"};
  MustCreate(kConfigMaps, dependent);
  const std::string owner_path = std::string(kConfigMaps) + "/fg-owner";
  const std::string dependent_path = std::string(kConfigMaps) + "/fg-dependent";

  const http::Response r = Delete(
      owner_path,
      {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}, {"propagationPolicy", "Foreground"}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json deleting = Body(r);
  EXPECT_TRUE(deleting.contains("/metadata/deletionTimestamp"_json_pointer)) << r.body;
  EXPECT_EQ(deleting.value("/metadata/finalizers"_json_pointer, json::array()),
            json::array({"foregroundDeletion"}));

  // The collector deletes the dependent, which its finalizer keeps; the owner waits for it.
  ASSERT_TRUE(Eventually([&] {
    return Body(Get(dependent_path)).contains("/metadata/deletionTimestamp"_json_pointer);
  }));
  std::this_thread::sleep_for(milliseconds(300));  // Several collector passes.
  const http::Response held = Get(owner_path);
  ASSERT_EQ(held.status, 200) << held.body;
  EXPECT_TRUE(Body(held).contains("/metadata/deletionTimestamp"_json_pointer));

  // Releasing the dependent lets it go, and then the owner.
  const http::Response released = Patch(dependent_path, {{"metadata", {{"finalizers", nullptr}}}});
  ASSERT_EQ(released.status, 200) << released.body;
  EXPECT_EQ(Get(dependent_path).status, 404);
  EXPECT_TRUE(Eventually([&] { return Get(owner_path).status == 404; })) << Get(owner_path).body;
}

// ---- 6. Finalizers ---------------------------------------------------------------------------

TEST_F(ApiServerTest, FinalizersHoldDeletionUntilRemoved) {
  StartServer();
  json object = ConfigMap("held");
  object["metadata"]["finalizers"] = {"test.sluice.dev/cleanup"};
  MustCreate(kConfigMaps, object);
  const std::string path = std::string(kConfigMaps) + "/held";

  http::Response r = Delete(path);
  ASSERT_EQ(r.status, 200) << r.body;
  const json deleting = Body(r);
  EXPECT_TRUE(deleting.contains("/metadata/deletionTimestamp"_json_pointer)) << r.body;
  EXPECT_EQ(deleting.value("/metadata/deletionGracePeriodSeconds"_json_pointer, -1), 0);

  // Still there, marked, after collector passes.
  std::this_thread::sleep_for(milliseconds(200));
  r = Get(path);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(Body(r).contains("/metadata/deletionTimestamp"_json_pointer));

  // No new finalizers on an object being deleted.
  r = Patch(path, {{"metadata",
                    {{"finalizers", {"test.sluice.dev/cleanup", "test.sluice.dev/another"}}}}});
  ExpectStatus(r, 422, "Invalid");
  EXPECT_NE(Body(r).value("message", "").find("no new finalizers"), std::string::npos) << r.body;

  // A DELETE whose precondition fails changes nothing.
  ExpectStatus(Delete(path, {{"kind", "DeleteOptions"},
                             {"apiVersion", "v1"},
                             {"preconditions", {{"uid", "not-the-uid"}}}}),
               409, "Conflict");

  // Other changes are still allowed; removing the last finalizer removes the object.
  r = Patch(path, {{"data", {{"k", "v"}}}});
  EXPECT_EQ(r.status, 200) << r.body;
  r = Patch(path, {{"metadata", {{"finalizers", nullptr}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  ExpectStatus(Get(path), 404, "NotFound");
}

// ---- 7. Strategic merge patch ----------------------------------------------------------------

TEST_F(ApiServerTest, StrategicMergePatchMergesContainersAndEnvByName) {
  StartServer();
  const json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", "smp"}}},
      {"spec",
       {{"containers",
         {{{"name", "a"}, {"image", "img-a:1"}, {"env", {{{"name", "X"}, {"value", "1"}}}}},
          {{"name", "b"},
           {"image", "img-b:1"},
           {"env", {{{"name", "X"}, {"value", "1"}}, {{"name", "Y"}, {"value", "2"}}}}}}}}}};
  MustCreate("/api/v1/namespaces/default/pods", pod);

  const json patch = {
      {"spec",
       {{"containers",
         {{{"name", "b"},
           {"image", "img-b:2"},
           {"env", {{{"name", "Y"}, {"value", "3"}}, {{"name", "Z"}, {"value", "4"}}}}}}}}}};
  const http::Response r = Patch("/api/v1/namespaces/default/pods/smp", patch, kStrategicPatch);
  ASSERT_EQ(r.status, 200) << r.body;
  const json containers = Body(r).value("/spec/containers"_json_pointer, json::array());
  ASSERT_EQ(containers.size(), 2u) << r.body;
  EXPECT_EQ(containers[0].value("name", ""), "a");
  EXPECT_EQ(containers[0].value("image", ""), "img-a:1");
  EXPECT_EQ(containers[0]["env"], json::array({{{"name", "X"}, {"value", "1"}}}));
  EXPECT_EQ(containers[1].value("name", ""), "b");
  EXPECT_EQ(containers[1].value("image", ""), "img-b:2");
  std::map<std::string, std::string> env;
  for (const json& e : containers[1]["env"]) env[e.value("name", "")] = e.value("value", "");
  EXPECT_EQ(env, (std::map<std::string, std::string>{{"X", "1"}, {"Y", "3"}, {"Z", "4"}}));
  // Defaults the server filled in on create survive the patch.
  EXPECT_EQ(containers[0].value("imagePullPolicy", ""), "IfNotPresent");

  // Custom resources take no strategic merge patch (415, as kube answers).
  InstallCrd("rolloutpools.yaml");
  MustCreate(kRolloutPools, RolloutPool("rp"));
  ExpectStatus(
      Patch(std::string(kRolloutPools) + "/rp", {{"spec", {{"replicas", 2}}}}, kStrategicPatch),
      415, "UnsupportedMediaType");
}

// ---- 8. Schema validation, CEL, pruning and defaults ----------------------------------------

TEST_F(ApiServerTest, InvalidCustomResourcesAreRejectedNamingTheField) {
  StartServer();
  for (const char* crd :
       {"dataflows.yaml", "policies.yaml", "rolloutpools.yaml", "trainerjobs.yaml"}) {
    InstallCrd(crd);
  }
  const std::map<std::string, std::string> plurals = {{"RolloutPool", "rolloutpools"},
                                                      {"Policy", "policies"},
                                                      {"Dataflow", "dataflows"},
                                                      {"TrainerJob", "trainerjobs"}};
  int checked = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(SourceDir() / "tests/data/manifests/invalid")) {
    std::istringstream lines(ReadFile(entry.path()));
    std::string line, field;
    while (std::getline(lines, line)) {
      if (line.rfind("# expect-field: ", 0) == 0) field = line.substr(16);
    }
    if (field.empty()) continue;
    const json manifest = LoadYaml(entry.path());
    const std::string kind = manifest.value("kind", "");
    ASSERT_TRUE(plurals.count(kind)) << entry.path();
    // Unknown fields are dropped with a warning under the default fieldValidation (Warn); kubectl
    // sends Strict, as here.
    const http::Response r = Post("/apis/sluice.dev/v1alpha1/namespaces/default/" +
                                      plurals.at(kind) + "?fieldValidation=Strict",
                                  manifest);
    const json body = Body(r);
    if (r.status == 400) {  // An unknown field under Strict.
      EXPECT_NE(body.value("message", "").find("strict decoding error"), std::string::npos)
          << entry.path() << ": " << r.body;
      EXPECT_NE(body.value("message", "").find(field), std::string::npos)
          << entry.path() << ": " << r.body;
      ++checked;
      continue;
    }
    ExpectStatus(r, 422, "Invalid");
    std::vector<std::string> fields;
    for (const json& cause : body.value("/details/causes"_json_pointer, json::array())) {
      fields.push_back(cause.value("field", ""));
    }
    EXPECT_NE(std::find(fields.begin(), fields.end(), field), fields.end())
        << entry.path().filename() << " expects " << field << ": " << r.body;
    EXPECT_EQ(body.value("/details/kind"_json_pointer, ""), kind) << r.body;
    EXPECT_EQ(body.value("/details/group"_json_pointer, ""), "sluice.dev") << r.body;
    ++checked;
  }
  EXPECT_GE(checked, 60);
}

TEST_F(ApiServerTest, UnknownFieldsStrictRejectsWarnPrunesAndDefaultsApply) {
  StartServer();
  InstallCrd("rolloutpools.yaml");
  json pool = RolloutPool("strict");
  pool["spec"]["bogus"] = 1;

  http::Response r = Post(std::string(kRolloutPools) + "?fieldValidation=Strict", pool);
  ExpectStatus(r, 400, "BadRequest");
  EXPECT_NE(Body(r).value("message", "").find("strict decoding error"), std::string::npos)
      << r.body;
  EXPECT_NE(Body(r).value("message", "").find("unknown field \"spec.bogus\""), std::string::npos)
      << r.body;
  EXPECT_EQ(Get(std::string(kRolloutPools) + "/strict").status, 404);

  // The default (Warn): created, the field pruned, a Warning header (RFC 7234 quoted-string, as
  // kube writes it with Go's strconv.Quote) saying so.
  r = Post(kRolloutPools, pool);
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(r.Header("Warning"), "299 - \"unknown field \\\"spec.bogus\\\"\"");
  json created = Body(r);
  EXPECT_FALSE(created.contains("/spec/bogus"_json_pointer)) << r.body;
  // Schema defaults are filled in.
  EXPECT_EQ(created.value("/spec/replicas"_json_pointer, -1), 1);
  EXPECT_EQ(created.value("/spec/engine/type"_json_pointer, ""), "builtin");
  EXPECT_EQ(created.value("/spec/engine/tensorParallelSize"_json_pointer, -1), 1);
  EXPECT_EQ(created.value("/spec/engine/maxBatchTokens"_json_pointer, -1), 8192);
  const json stored = Body(Get(std::string(kRolloutPools) + "/strict"));
  EXPECT_FALSE(stored.contains("/spec/bogus"_json_pointer));
  EXPECT_EQ(stored.value("/spec/engine/type"_json_pointer, ""), "builtin");

  // Ignore: pruned silently.
  json quiet = pool;
  quiet["metadata"]["name"] = "ignored";
  r = Post(std::string(kRolloutPools) + "?fieldValidation=Ignore", quiet);
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(r.Header("Warning"), "");
  ExpectStatus(Post(std::string(kRolloutPools) + "?fieldValidation=Loud", quiet), 400,
               "BadRequest");
}

// ---- 9. Namespaces ---------------------------------------------------------------------------

TEST_F(ApiServerTest, NamespaceLifecycle) {
  StartServer();
  const http::Response missing = Post("/api/v1/namespaces/nowhere/configmaps", ConfigMap("lost"));
  ExpectStatus(missing, 404, "NotFound");
  EXPECT_NE(Body(missing).value("message", "").find("namespaces \"nowhere\" not found"),
            std::string::npos)
      << missing.body;

  // The namespaces a cluster cannot do without may not be deleted (kube: NamespaceLifecycle).
  for (const char* immortal : {"default", "kube-system", "kube-public"}) {
    const http::Response r = Delete(std::string("/api/v1/namespaces/") + immortal);
    ExpectStatus(r, 403, "Forbidden");
    EXPECT_EQ(Body(r).value("message", ""),
              std::string("namespaces \"") + immortal +
                  "\" is forbidden: this namespace may not be deleted");
  }
  EXPECT_FALSE(
      Body(Get("/api/v1/namespaces/default")).contains("/metadata/deletionTimestamp"_json_pointer));

  const http::Response ns =
      Post("/api/v1/namespaces",
           {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "doomed"}}}});
  ASSERT_EQ(ns.status, 201) << ns.body;
  EXPECT_EQ(Body(ns).value("/status/phase"_json_pointer, ""), "Active");
  const std::string contents = "/api/v1/namespaces/doomed/configmaps";
  MustCreate(contents, ConfigMap("plain"));
  json held = ConfigMap("held");
  held["metadata"]["finalizers"] = {"test.sluice.dev/hold"};
  MustCreate(contents, held);

  http::Response r = Delete("/api/v1/namespaces/doomed");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Body(r).value("/status/phase"_json_pointer, ""), "Terminating");

  // The namespace empties; the held object keeps it Terminating, and nothing new gets in.
  EXPECT_TRUE(Eventually([&] { return Get(contents + "/plain").status == 404; }));
  ASSERT_TRUE(Eventually([&] {
    return Body(Get(contents + "/held")).contains("/metadata/deletionTimestamp"_json_pointer);
  }));
  r = Get("/api/v1/namespaces/doomed");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Body(r).value("/status/phase"_json_pointer, ""), "Terminating");
  r = Post(contents, ConfigMap("late"));
  ExpectStatus(r, 403, "Forbidden");
  EXPECT_NE(Body(r).value("message", "").find("because it is being terminated"), std::string::npos)
      << r.body;

  // Once the last object goes, so does the namespace.
  ASSERT_EQ(Patch(contents + "/held", {{"metadata", {{"finalizers", nullptr}}}}).status, 200);
  EXPECT_TRUE(Eventually([&] { return Get("/api/v1/namespaces/doomed").status == 404; }))
      << Get("/api/v1/namespaces/doomed").body;
  EXPECT_EQ(Get(contents + "/held").status, 404);
}

// ---- 10. CRD deletion ------------------------------------------------------------------------

TEST_F(ApiServerTest, DeletingACrdRemovesItsResourcesAndItsDiscovery) {
  StartServer();
  InstallCrd("rolloutpools.yaml");
  MustCreate(kRolloutPools, RolloutPool("a"));
  MustCreate("/apis/sluice.dev/v1alpha1/namespaces/kube-system/rolloutpools", RolloutPool("b"));
  ASSERT_EQ(Get("/apis/sluice.dev/v1alpha1").status, 200);

  const http::Response r =
      Delete("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/rolloutpools.sluice.dev");
  ASSERT_EQ(r.status, 200) << r.body;

  ExpectStatus(Get(std::string(kRolloutPools) + "/a"), 404, "NotFound");
  ExpectStatus(Get("/apis/sluice.dev/v1alpha1/rolloutpools"), 404, "NotFound");
  EXPECT_EQ(Get("/apis/sluice.dev/v1alpha1").status, 404);
  EXPECT_EQ(Get("/apis/sluice.dev").status, 404);
  const json groups = Body(Get("/apis"));
  for (const json& g : groups.value("groups", json::array())) {
    EXPECT_NE(g.value("name", ""), "sluice.dev") << groups;
  }
  EXPECT_EQ(
      Get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/rolloutpools.sluice.dev").status,
      404);

  // The objects are gone from storage, not just hidden: a reinstalled CRD serves none.
  Result<ListResult> stored =
      server_->storage().List("sluice.dev/rolloutpools", std::nullopt, 0, "");
  ASSERT_TRUE(stored.ok());
  EXPECT_TRUE(stored->items.empty());
  InstallCrd("rolloutpools.yaml");
  const json list = Body(Get("/apis/sluice.dev/v1alpha1/rolloutpools"));
  EXPECT_EQ(list.value("kind", ""), "RolloutPoolList");
  EXPECT_TRUE(list.value("items", json::array({1})).empty()) << list;
}

// ---- 11. pods/log and binding ----------------------------------------------------------------

TEST_F(ApiServerTest, PodLogsComeFromTheBoundNodesKubelet) {
  FakeKubelet kubelet;
  StartServer();
  ASSERT_EQ(Post("/api/v1/nodes",
                 {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", "node-1"}}}})
                .status,
            201);
  http::Response r =
      Patch("/api/v1/nodes/node-1/status",
            {{"status",
              {{"addresses", {{{"type", "InternalIP"}, {"address", "127.0.0.1"}}}},
               {"daemonEndpoints", {{"kubeletEndpoint", {{"Port", kubelet.port()}}}}}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  MustCreate("/api/v1/namespaces/default/pods",
             {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "web"}}},
              {"spec", {{"containers", {{{"name", "app"}, {"image", "app:1"}}}}}}});
  const std::string pod = "/api/v1/namespaces/default/pods/web";

  // Unscheduled: no node to ask.
  ExpectStatus(Get(pod + "/log"), 400, "BadRequest");

  const json binding = {{"apiVersion", "v1"},
                        {"kind", "Binding"},
                        {"metadata", {{"name", "web"}}},
                        {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", "node-1"}}}};
  r = Post(pod + "/binding", binding);
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(Body(r).value("status", ""), "Success");
  EXPECT_EQ(Body(Get(pod)).value("/spec/nodeName"_json_pointer, ""), "node-1");
  ExpectStatus(Post(pod + "/binding", binding), 409, "Conflict");

  r = Get(pod + "/log");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, "default/web/app:\none\ntwo\nthree\n");
  r = Get(pod + "/log?container=app&tailLines=1");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, "default/web/app:\nthree\n");
  ExpectStatus(Get(pod + "/log?container=sidecar"), 400, "BadRequest");

  // follow=true streams what the kubelet sends as it comes.
  std::string followed;
  http::Request request;
  request.path = pod + "/log?follow=true";
  Result<http::Response> head =
      client_->Stream(std::move(request), nullptr, [&](std::string_view data) {
        followed.append(data);
        return true;
      });
  ASSERT_TRUE(head.ok()) << head.status().message();
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(followed, "tick 1\ntick 2\ntick 3\n");

  const std::vector<httplib::Params> seen = kubelet.params();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_FALSE(seen[0].count("tailLines"));
  ASSERT_TRUE(seen[1].count("tailLines"));
  EXPECT_EQ(seen[1].find("tailLines")->second, "1");
  ASSERT_TRUE(seen[2].count("follow"));
  EXPECT_EQ(seen[2].find("follow")->second, "true");
}

// ---- 12. Errors and Table output -------------------------------------------------------------

TEST_F(ApiServerTest, ErrorsComeBackAsStatusObjects) {
  StartServer();
  ExpectStatus(Get("/api/v1/namespaces/default/widgets"), 404, "NotFound");
  ExpectStatus(Get("/apis/nothing.example.com/v1/things"), 404, "NotFound");
  ExpectStatus(Get(std::string(kConfigMaps) + "/absent"), 404, "NotFound");
  EXPECT_EQ(Body(Get(std::string(kConfigMaps) + "/absent")).value("message", ""),
            "configmaps \"absent\" not found");
  ExpectStatus(Get(std::string(kConfigMaps) + "?labelSelector=a%20in%20%28"), 400, "BadRequest");
  ExpectStatus(Get(std::string(kConfigMaps) + "?fieldSelector=spec.bogus%3Dx"), 400, "BadRequest");
  ExpectStatus(Post(kConfigMaps, ConfigMap("Not_A_Name")), 422, "Invalid");
  MustCreate(kConfigMaps, ConfigMap("twice"));
  ExpectStatus(Post(kConfigMaps, ConfigMap("twice")), 409, "AlreadyExists");
  ExpectStatus(Send("POST", kConfigMaps, "{not json", kJson), 400, "BadRequest");

  // Without the token: 401, and nothing is served.
  std::unique_ptr<http::Client> anonymous = NewClient(false);
  ASSERT_NE(anonymous, nullptr);
  Result<http::Response> denied = anonymous->Get("/api/v1/namespaces");
  ASSERT_TRUE(denied.ok()) << denied.status().message();
  EXPECT_EQ(denied->status, 401);
  EXPECT_EQ(denied->body.find("kube-system"), std::string::npos);
}

TEST_F(ApiServerTest, ClientsOverTheRateLimitGet429WithRetryAfter) {
  ApiServerOptions options = Options();
  options.rate_limit_qps = 0.2;  // One request per 5 s once the burst is spent.
  options.rate_limit_burst = 2;
  StartServer(options);
  EXPECT_EQ(Get("/api/v1/namespaces").status, 200);
  EXPECT_EQ(Get("/api/v1/namespaces").status, 200);
  const http::Response r = Get("/api/v1/namespaces");
  ExpectStatus(r, 429, "TooManyRequests");
  const std::string retry_after = r.Header("Retry-After");
  ASSERT_FALSE(retry_after.empty());
  EXPECT_GE(std::stoi(retry_after), 1);
  EXPECT_LE(std::stoi(retry_after), 5);
}

TEST_F(ApiServerTest, TableOutputUsesTheCrdsPrinterColumns) {
  StartServer();
  InstallCrd("rolloutpools.yaml");
  json pool = RolloutPool("tabled");
  pool["spec"]["replicas"] = 4;
  MustCreate(kRolloutPools, pool);

  const httplib::Headers table = {
      {"Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"}};
  http::Response r = Get(kRolloutPools, table);
  ASSERT_EQ(r.status, 200) << r.body;
  json body = Body(r);
  EXPECT_EQ(body.value("kind", ""), "Table");
  EXPECT_EQ(body.value("apiVersion", ""), "meta.k8s.io/v1");
  std::vector<std::string> columns;
  for (const json& c : body.value("columnDefinitions", json::array())) {
    columns.push_back(c.value("name", ""));
  }
  EXPECT_EQ(columns, (std::vector<std::string>{"Name", "Desired", "Ready", "Up-to-date", "Policies",
                                               "Tokens/s", "Age"}));
  EXPECT_EQ(body.value("/columnDefinitions/5/priority"_json_pointer, 0), 1);
  ASSERT_EQ(body.value("rows", json::array()).size(), 1u) << r.body;
  const json& cells = body["rows"][0]["cells"];
  ASSERT_GE(cells.size(), 2u);
  EXPECT_EQ(cells[0], "tabled");
  EXPECT_EQ(cells[1], 4);
  EXPECT_EQ(body.value("/rows/0/object/kind"_json_pointer, ""), "PartialObjectMetadata");
  EXPECT_EQ(body.value("/rows/0/object/metadata/name"_json_pointer, ""), "tabled");

  // kubectl get -w: watch events carry one-row Tables.
  const WatchResult w = [&] {
    http::Request request;
    request.path = std::string(kRolloutPools) + "?watch=1&timeoutSeconds=1";
    request.headers = table;
    std::string text;
    Result<http::Response> head =
        client_->Stream(std::move(request), nullptr, [&](std::string_view data) {
          text.append(data);
          return text.find('\n') == std::string::npos;
        });
    WatchResult out;
    out.status = head.ok() ? head->status : 0;
    out.events.push_back(json::parse(text.substr(0, text.find('\n')), nullptr, false));
    return out;
  }();
  ASSERT_EQ(w.status, 200);
  EXPECT_EQ(w.events[0].value("type", ""), "ADDED");
  EXPECT_EQ(w.events[0].value("/object/kind"_json_pointer, ""), "Table");
  EXPECT_EQ(w.events[0].value("/object/rows/0/cells/0"_json_pointer, ""), "tabled");

  // A single object as a Table too.
  r = Get(std::string(kRolloutPools) + "/tabled", table);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Body(r).value("kind", ""), "Table");
  EXPECT_EQ(Body(r).value("rows", json::array()).size(), 1u);
}

}  // namespace
}  // namespace sluice::apiserver
