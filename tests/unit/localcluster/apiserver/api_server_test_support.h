// What the HTTP-level tests of the local API server (api_server_*_test.cpp) share: an ApiServer
// run in-process on a free port (ApiServerTest), talked to with sluice::http::Client sending the
// JSON requests kubectl and client-go send, and the objects and checks the tests build on.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>
#include <stdlib.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/http/bearer_token.h"
#include "common/http/client.h"
#include "common/logging/logger.h"
#include "common/metrics/registry.h"
#include "common/status.h"
#include "common/yaml/yaml_json.h"
#include "localcluster/apiserver/api_server.h"
#include "localcluster/apiserver/memory_storage.h"
#include "localcluster/apiserver/sqlite_storage.h"
#include "localcluster/apiserver/watch_hub.h"
#include "tests/support/read_file.h"
#include "tests/support/wait_until.h"

namespace sluice::apiserver::api_server_testing {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using SteadyClock = std::chrono::steady_clock;

inline constexpr char kToken[] = "api-server-test-token";
inline constexpr char kJson[] = "application/json";
inline constexpr char kMergePatch[] = "application/merge-patch+json";
inline constexpr char kStrategicPatch[] = "application/strategic-merge-patch+json";
inline constexpr char kRolloutPools[] = "/apis/sluice.dev/v1alpha1/namespaces/default/rolloutpools";
inline constexpr char kConfigMaps[] = "/api/v1/namespaces/default/configmaps";

inline std::filesystem::path SourceDir() {
  const char* dir = std::getenv("SLUICE_SOURCE_DIR");
  return dir != nullptr ? std::filesystem::path(dir) : std::filesystem::current_path();
}

inline std::string ReadFile(const std::filesystem::path& path) {
  return test_support::ReadFileOrEmpty(path);
}

// The first document of a YAML file, as JSON.
inline json LoadYaml(const std::filesystem::path& path) {
  Result<std::vector<json>> docs = yaml::ParseDocuments(ReadFile(path));
  if (!docs.ok() || docs->empty()) {
    ADD_FAILURE() << "cannot read " << path << ": " << docs.status().message();
    return json::object();
  }
  return docs->front();
}

// The JSON body of a response (discarded when it is not JSON).
inline json Body(const http::Response& r) { return json::parse(r.body, nullptr, false); }

// body[key] when it is a string, else "" (never throws, so a wrong body fails an expectation).
inline std::string Text(const json& body, const char* key) {
  return body.is_object() && body.contains(key) && body[key].is_string()
             ? body[key].get<std::string>()
             : std::string();
}

// Expects a metav1.Status failure body with `code` and `reason`.
inline void ExpectStatus(const http::Response& r, int code, const std::string& reason) {
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

inline json ConfigMap(const std::string& name, json data = json::object()) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}}},
          {"data", std::move(data)}};
}

inline json RolloutPool(const std::string& name) {
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
    return ::sluice::test_support::WaitUntil(done, timeout, milliseconds(20));
  }

  // Waits until the garbage collector has finished `n` more passes than when called (so with
  // n >= 2 at least one whole pass began after the call): what a test waits for before checking
  // that the collector did not do something. False after 30 s.
  bool WaitForGcPasses(uint64_t n) {
    const uint64_t from = server_->gc_passes();
    return Eventually([&] { return server_->gc_passes() >= from + n; }, seconds(30));
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

}  // namespace sluice::apiserver::api_server_testing
