// HTTP-level tests of the local API server's writes (api_server.h): optimistic concurrency
// (409 on a stale resourceVersion), the status and scale subresources, and strategic merge patch.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/http/client.h"
#include "tests/unit/localcluster/apiserver/api_server_test_support.h"

namespace sluice::apiserver {
namespace {

using api_server_testing::ApiServerTest;
using api_server_testing::Body;
using api_server_testing::ConfigMap;
using api_server_testing::ExpectStatus;
using api_server_testing::kConfigMaps;
using api_server_testing::kRolloutPools;
using api_server_testing::kStrategicPatch;
using api_server_testing::RolloutPool;
using nlohmann::json;

// ---- Optimistic concurrency -------------------------------------------------------------

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

// ---- Status subresource -------------------------------------------------------------------

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

// ---- Scale subresource --------------------------------------------------------------------

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

// ---- Strategic merge patch ----------------------------------------------------------------

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

}  // namespace
}  // namespace sluice::apiserver
