// HTTP-level tests of the local API server's error answers and Table output (api_server.h):
// metav1.Status bodies for 404, 400, 401, 409 and 422, 429 with Retry-After past the rate limit,
// 400 for bodies nested too deeply to handle,
// and the CRD's printer columns in `kubectl get`'s Table.
#include <gtest/gtest.h>
#include <httplib.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/http/client.h"
#include "common/json/json_depth.h"
#include "common/status.h"
#include "localcluster/apiserver/api_server.h"
#include "tests/unit/localcluster/apiserver/api_server_test_support.h"

namespace sluice::apiserver {
namespace {

using api_server_testing::ApiServerTest;
using api_server_testing::Body;
using api_server_testing::ConfigMap;
using api_server_testing::ExpectStatus;
using api_server_testing::kConfigMaps;
using api_server_testing::kJson;
using api_server_testing::kMergePatch;
using api_server_testing::kRolloutPools;
using api_server_testing::RolloutPool;
using api_server_testing::WatchResult;
using nlohmann::json;

// ---- Errors and Table output -------------------------------------------------------------

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

// A body nested deeper than kMaxJsonDepth is refused before it is parsed: 1 MB of "[[[[...]]]]"
// in a field that keeps whatever it is given would otherwise be stored, and overflow the stack
// of whichever thread next copied or printed it. Depth kMaxJsonDepth itself is accepted.
TEST_F(ApiServerTest, BodiesNestedTooDeepAre400sAndTheServerStaysUp) {
  StartServer();
  InstallCrd("dataflows.yaml");
  const std::string dataflows = "/apis/sluice.dev/v1alpha1/namespaces/default/dataflows";
  // A Dataflow whose spec.reward.options (x-kubernetes-preserve-unknown-fields) holds `nested`
  // arrays around a 1, as text: the JSON library itself could not build the deep one.
  auto with_options = [](const std::string& name, size_t nested) {
    const std::string head = R"({"apiVersion":"sluice.dev/v1alpha1","kind":"Dataflow",)"
                             R"("metadata":{"name":")" +
                             name +
                             R"("},"spec":{"dataset":{"builtin":{}},)"
                             R"("workflow":{"roles":[{"name":"policy","policy":"tiny"}]},)"
                             R"("reward":{"options":{"deep":)";
    return head + std::string(nested, '[') + "1" + std::string(nested, ']') + "}}}}";
  };
  // The Dataflow's own levels: the object, spec, reward, options.
  constexpr size_t kOwnLevels = 4;
  const http::Response deepest =
      Send("POST", dataflows, with_options("deepest", kMaxJsonDepth - kOwnLevels), kJson);
  EXPECT_EQ(deepest.status, 201) << deepest.body.substr(0, 300);
  EXPECT_EQ(Get(dataflows + "/deepest").status, 200);

  const http::Response one_more =
      Send("POST", dataflows, with_options("one-more", kMaxJsonDepth - kOwnLevels + 1), kJson);
  ExpectStatus(one_more, 400, "BadRequest");
  EXPECT_NE(Body(one_more).value("message", "").find("nests deeper than 1000 levels"),
            std::string::npos)
      << one_more.body;
  const http::Response megabyte = Send("POST", dataflows, with_options("huge", 500000), kJson);
  ExpectStatus(megabyte, 400, "BadRequest");
  // The same through the other paths that read a body: patches and DeleteOptions.
  const std::string deep_patch = R"({"spec":{"reward":{"options":{"deep":)" +
                                 std::string(500000, '[') + "1" + std::string(500000, ']') + "}}}}";
  ExpectStatus(Send("PATCH", dataflows + "/deepest", deep_patch, kMergePatch), 400, "BadRequest");
  // A JSON patch whose text is shallow but whose copy would nest the stored value deeper.
  const http::Response copied = Send(
      "PATCH", dataflows + "/deepest",
      R"([{"op": "copy", "from": "/spec/reward/options/deep", "path": "/spec/reward/options/deep/0/-"}])",
      "application/json-patch+json");
  ExpectStatus(copied, 400, "BadRequest");
  EXPECT_NE(copied.body.find("would nest deeper than 1000 levels"), std::string::npos)
      << copied.body.substr(0, 300);
  ExpectStatus(
      Send("DELETE", dataflows + "/deepest",
           R"({"preconditions":)" + std::string(500000, '[') + std::string(500000, ']') + "}",
           kJson),
      400, "BadRequest");

  // Still serving, and nothing of the refused requests was stored.
  EXPECT_EQ(Get(dataflows + "/deepest").status, 200);
  EXPECT_EQ(Get(dataflows + "/one-more").status, 404);
  EXPECT_EQ(Get(dataflows + "/huge").status, 404);
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
