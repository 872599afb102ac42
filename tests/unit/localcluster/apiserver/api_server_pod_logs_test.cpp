// HTTP-level tests of pods/log and pods/binding in the local API server (api_server.h): logs are
// fetched from the bound node's kubelet, here a stand-in (FakeKubelet) on 127.0.0.1.
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/http/client.h"
#include "common/status.h"
#include "tests/unit/localcluster/apiserver/api_server_test_support.h"

namespace sluice::apiserver {
namespace {

using api_server_testing::ApiServerTest;
using api_server_testing::Body;
using api_server_testing::ExpectStatus;
using nlohmann::json;
using std::chrono::milliseconds;

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

// ---- pods/log and binding ----------------------------------------------------------------

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

}  // namespace
}  // namespace sluice::apiserver
