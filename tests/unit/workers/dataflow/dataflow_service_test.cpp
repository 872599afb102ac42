// DataflowService over real HTTP: an in-process server on a free port, the real client, a real
// write-ahead log in a temporary directory, and a FakeClock for lease deadlines and ack timeouts.
#include "workers/dataflow/dataflow_service.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/http/client.h"
#include "common/http/json_body.h"
#include "common/http/server.h"
#include "common/logging/logger.h"
#include "common/metrics/exposition.h"
#include "common/metrics/registry.h"
#include "tests/support/test_client.h"
#include "tests/unit/common/example_queries.h"
#include "tests/unit/common/scraped_metric.h"
#include "tests/unit/workers/dataflow/dataflow_service_test_support.h"
#include "tests/unit/workers/dataflow/sample_fixtures.h"
#include "workers/dataflow/client/dataflow_client.h"
#include "workers/dataflow/client/dataset.h"
#include "workers/dataflow/client/trajectory_codec.h"

namespace sluice::dataflow {
namespace dataflow_service_test {

using fixtures::Duo;
using fixtures::MakeDataset;
using fixtures::Single;

using nlohmann::json;
using service_test_support::BaseConfig;
using service_test_support::DataflowServiceTest;
using service_test_support::GroupFor;
using service_test_support::kMaxBody;
using service_test_support::kToken;
using std::chrono::seconds;

TEST_F(DataflowServiceTest, ReadyAfterRecoveryAndLeaseReplyShape) {
  StartService();
  EXPECT_EQ(Must(client_->Get("/readyz")).status, 200);
  json reply = Lease("w1", 2);
  ASSERT_EQ(reply["tasks"].size(), 2U);
  const json& t = reply["tasks"][0];
  EXPECT_EQ(t["task_id"], "task-1");
  EXPECT_EQ(t["lease_id"], "lease-1");
  EXPECT_EQ(t["attempt"], 1);
  EXPECT_EQ(t["samples"], 4);
  EXPECT_EQ(t["sampling"]["temperature"], 1.0);
  EXPECT_EQ(t["workflow"]["type"], "single-turn");
  EXPECT_FALSE(t["prompt"].get<std::string>().empty());
  EXPECT_TRUE(t["deadline_unix_ms"].is_number_integer());
  EXPECT_EQ(reply["lease_seconds"], 60);
  EXPECT_FALSE(reply["backpressure"].get<bool>());
  // Renew and release.
  EXPECT_EQ(PostJson("/v1/leases/lease-1/renew", json::object()).status, 200);
  EXPECT_EQ(PostJson("/v1/leases/lease-2/release", {{"error", "drain"}}).status, 200);
  EXPECT_EQ(PostJson("/v1/leases/lease-2/renew", json::object()).status, 404);
  EXPECT_EQ(PostJson("/v1/leases/nope/release", json::object()).status, 404);
  EXPECT_EQ(Status()["leases_in_flight"], 1);
}

TEST_F(DataflowServiceTest, LeaseExpiryReissuesWork) {
  DataflowConfig c = BaseConfig();
  c.lease_duration = seconds(10);
  c.capacity_groups = 1;  // One task at a time, so the second worker waits for the first.
  StartService(c);
  json first = LeaseOne("w1");
  EXPECT_EQ(Lease("w2", 1)["tasks"].size(), 0U);
  clock_.Advance(seconds(11));
  json again = LeaseOne("w2");
  EXPECT_EQ(again["task_id"], first["task_id"]);
  EXPECT_EQ(again["attempt"], 2);
  EXPECT_NE(again["lease_id"], first["lease_id"]);
  const int renew =
      PostJson("/v1/leases/" + first["lease_id"].get<std::string>() + "/renew", json::object())
          .status;
  EXPECT_TRUE(renew == 404 || renew == 410) << renew;
  json s = Status();
  EXPECT_EQ(s["leases"]["expired"], 1);
  EXPECT_NE(Metrics().find("sluice_dataflow_lease_expiries_total 1"), std::string::npos);
}

TEST_F(DataflowServiceTest, DuplicateAndLateSubmits) {
  DataflowConfig c = BaseConfig();
  c.lease_duration = seconds(10);
  StartService(c);
  json t1 = LeaseOne("w1");
  clock_.Advance(seconds(11));
  json t2 = LeaseOne("w2");  // The expired task, re-issued.
  ASSERT_EQ(t2["task_id"], t1["task_id"]);
  // The late submit of the first attempt wins; everything after it is a duplicate.
  json late = SubmitOk(GroupFor(t1));
  EXPECT_TRUE(late["accepted"].get<bool>());
  EXPECT_TRUE(late["late"].get<bool>());
  EXPECT_FALSE(late["duplicate"].get<bool>());
  EXPECT_EQ(late["groups_kept"], 1);
  json dup = SubmitOk(GroupFor(t2));
  EXPECT_TRUE(dup["duplicate"].get<bool>());
  EXPECT_FALSE(dup["accepted"].get<bool>());
  EXPECT_TRUE(SubmitOk(GroupFor(t1))["duplicate"].get<bool>());
  json s = Status();
  EXPECT_EQ(s["submits"]["accepted"], 1);
  EXPECT_EQ(s["submits"]["late"], 1);
  EXPECT_EQ(s["submits"]["duplicates"], 2);
  EXPECT_EQ(s["policies"]["actor"]["buffered_groups"], 1);
  // The second worker's lease was cancelled by the winning submit.
  EXPECT_EQ(
      PostJson("/v1/leases/" + t2["lease_id"].get<std::string>() + "/renew", json::object()).status,
      404);
  const std::string m = Metrics();
  EXPECT_NE(m.find("sluice_dataflow_submits_total{result=\"duplicate\"} 2"), std::string::npos);
  EXPECT_NE(m.find("sluice_dataflow_submits_total{result=\"late\"} 1"), std::string::npos);
}

TEST_F(DataflowServiceTest, BatchNotAckedIsServedAgain) {
  DataflowConfig c = BaseConfig();
  c.groups_per_batch = 1;
  c.ack_timeout = seconds(5);
  StartService(c);
  SubmitOk(GroupFor(LeaseOne()));
  http::Response first = GetBatch("actor");
  ASSERT_EQ(first.status, 200);
  EXPECT_EQ(first.Header("Content-Length"), std::to_string(first.body.size()));
  Batch b = std::move(DecodeBatch(first.body)).value();
  EXPECT_EQ(b.batch_id, "batch-1");
  EXPECT_EQ(b.samples.size(), 4U);
  EXPECT_EQ(GetBatch("actor").status, 204);
  clock_.Advance(seconds(6));
  http::Response second = GetBatch("actor");
  ASSERT_EQ(second.status, 200);
  Batch again = std::move(DecodeBatch(second.body)).value();
  EXPECT_EQ(again.batch_id, b.batch_id);
  EXPECT_EQ(again.samples.size(), b.samples.size());
  // The same bytes, but for the serve count in the stats.
  EXPECT_EQ(again.stats["serves"], 2);
  again.stats["serves"] = 1;
  std::string reencoded;
  ASSERT_TRUE(EncodeBatch(again, &reencoded).ok());
  EXPECT_TRUE(reencoded == first.body);
  EXPECT_EQ(Ack(b.batch_id), 200);
  EXPECT_EQ(Ack(b.batch_id), 200);  // Acking twice is fine.
  clock_.Advance(seconds(6));
  EXPECT_EQ(GetBatch("actor").status, 204);
  EXPECT_EQ(Ack("batch-99"), 404);
  EXPECT_EQ(GetBatch("nobody").status, 404);
  json s = Status();
  EXPECT_EQ(s["policies"]["actor"]["reserved_batches"], 1);
  EXPECT_EQ(s["policies"]["actor"]["acked_batches"], 1);
}

// A batch is encoded while it is sent; a Range request still gets the right bytes.
TEST_F(DataflowServiceTest, RangeOfABatchIsThoseBytesOfTheFrame) {
  DataflowConfig c = BaseConfig();
  c.groups_per_batch = 1;
  c.ack_timeout = seconds(5);
  StartService(c);
  SubmitOk(GroupFor(LeaseOne()));
  http::Request ranged;
  ranged.path = "/v1/batches/actor";
  ranged.headers.emplace("Range", "bytes=30-129");
  http::Response part = Must(client_->Send(ranged));
  ASSERT_EQ(part.status, 206) << part.body;
  clock_.Advance(seconds(6));
  http::Response whole = GetBatch("actor");  // The same batch, served again.
  ASSERT_EQ(whole.status, 200);
  ASSERT_GT(whole.body.size(), 130U);
  EXPECT_TRUE(part.body == whole.body.substr(30, 100));
}

// spec.batch.perPolicy: a request for 0 groups gets the policy's own batch size.
TEST_F(DataflowServiceTest, PerPolicyBatchSizeAppliesToDefaultRequests) {
  DataflowConfig c = BaseConfig();
  c.groups_per_batch = 2;
  groups_per_batch_by_policy_ = {{"actor", 1}};
  StartService(c);
  SubmitOk(GroupFor(LeaseOne()));
  Batch b = TakeBatchOk("actor");  // One group is enough for actor's batch size of 1.
  EXPECT_EQ(b.samples.size(), 4U);
}

TEST_F(DataflowServiceTest, BatchLongPollReturnsWhenDataArrives) {
  DataflowConfig c = BaseConfig();
  c.groups_per_batch = 1;
  StartService(c);
  json task = LeaseOne();
  const auto began = std::chrono::steady_clock::now();
  http::Response polled;
  std::thread poller([&] { polled = GetBatch("actor", 1, 5); });
  WaitForRequestInFlight();
  SubmitOk(GroupFor(task));
  poller.join();
  EXPECT_EQ(polled.status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - began, seconds(4));
  // An empty poll waits its time, then answers 204; the wait is counted for the trainer.
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(GetBatch("actor", 1, 0.3).status, 204);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(250));
  // At least the empty poll's 0.3 s (the first poll waited only until the data came).
  EXPECT_GE(Status()["trainer_wait"]["actor"]["seconds_total"].get<double>(), 0.25);
  EXPECT_NE(Metrics().find("sluice_dataflow_trainer_wait_seconds_total{policy=\"actor\"}"),
            std::string::npos);
}

TEST_F(DataflowServiceTest, MultiPolicySplittingAndMasks) {
  DataflowConfig c = BaseConfig();
  c.policies = {"solver", "verifier"};
  c.groups_per_batch = 1;
  StartService(c);
  json task = LeaseOne();
  SubmitOk(GroupFor(task, {Duo(1, 0), Duo(0, 1), Duo(1, 1), Duo(0, 0)}));
  Batch solver = TakeBatchOk("solver");
  Batch verifier = TakeBatchOk("verifier");
  ASSERT_EQ(solver.samples.size(), 4U);
  ASSERT_EQ(verifier.samples.size(), 4U);
  const std::vector<double> solver_rewards = {1, 0, 1, 0};
  const std::vector<double> verifier_rewards = {0, 1, 1, 0};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(solver.samples[i].policy, "solver");
    EXPECT_EQ(solver.samples[i].loss_mask, (std::vector<uint8_t>{0, 1, 1, 0}));
    EXPECT_EQ(verifier.samples[i].policy, "verifier");
    EXPECT_EQ(verifier.samples[i].loss_mask, (std::vector<uint8_t>{0, 0, 0, 1}));
    EXPECT_EQ(solver.samples[i].reward, solver_rewards[i]);
    EXPECT_EQ(verifier.samples[i].reward, verifier_rewards[i]);
  }
  EXPECT_EQ(solver.policy, "solver");
  EXPECT_EQ(verifier.policy, "verifier");
  EXPECT_NE(solver.batch_id, verifier.batch_id);
}

TEST_F(DataflowServiceTest, BackpressureStopsLeasesUntilAcked) {
  DataflowConfig c = BaseConfig();
  c.capacity_groups = 2;
  c.groups_per_batch = 2;
  StartService(c);
  json reply = Lease("w1", 5);
  ASSERT_EQ(reply["tasks"].size(), 2U);
  EXPECT_TRUE(reply["backpressure"].get<bool>());
  EXPECT_EQ(Lease("w2", 5)["tasks"].size(), 0U);
  EXPECT_NE(Metrics().find("sluice_dataflow_backpressure 1"), std::string::npos);
  SubmitOk(GroupFor(reply["tasks"][0]));
  SubmitOk(GroupFor(reply["tasks"][1]));
  EXPECT_EQ(Lease("w2", 5)["tasks"].size(), 0U);  // Buffered groups count.
  Batch b = TakeBatchOk("actor");
  EXPECT_EQ(Lease("w2", 5)["tasks"].size(), 0U);  // Unacknowledged ones too.
  // A long poll is released by the ack.
  auto other = MakeClient(kToken);
  json polled;
  const auto began = std::chrono::steady_clock::now();
  std::thread poller([&] { polled = Lease("w3", 1, 5, other.get()); });
  WaitForRequestInFlight();
  EXPECT_EQ(Ack(b.batch_id), 200);
  poller.join();
  EXPECT_EQ(polled["tasks"].size(), 1U) << polled.dump();
  EXPECT_LT(std::chrono::steady_clock::now() - began, seconds(4));
}

// Idle rollout replicas' lease long polls cannot take every worker thread: past
// max_waiting_leases a lease is answered 429 with Retry-After at once, and the trainer's batch
// request is served beside the waiting polls.
TEST_F(DataflowServiceTest, WaitingLeasesLeaveThreadsForTheTrainer) {
  DataflowConfig c = BaseConfig();
  c.capacity_groups = 2;
  c.groups_per_batch = 2;
  worker_threads_ = 3;
  max_waiting_leases_ = 2;
  StartService(c);
  json reply = Lease("w1", 2);
  ASSERT_EQ(reply["tasks"].size(), 2U);  // Backpressure from here: leases find no work.
  std::vector<std::unique_ptr<http::Client>> clients;
  std::vector<json> polled(2);
  std::vector<std::thread> pollers;
  // Every client before any poller: a poller reading clients[i] while push_back reallocates the
  // vector is a data race (ThreadSanitizer reported it).
  for (int i = 0; i < 2; ++i) clients.push_back(MakeClient(kToken));
  for (int i = 0; i < 2; ++i) {
    pollers.emplace_back(
        [&, i] { polled[i] = Lease("idle" + std::to_string(i), 1, 5, clients[i].get()); });
  }
  const auto deadline = std::chrono::steady_clock::now() + seconds(3);
  while (service_->waiting_leases() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(service_->waiting_leases(), 2u);
  // A third idle replica is told to come back instead of taking the last thread.
  const auto asked = std::chrono::steady_clock::now();
  http::Response refused = Must(client_->Post(
      "/v1/leases",
      json{{"worker_id", "idle2"}, {"pool", "pool"}, {"region", "eu"}, {"capacity", 1}, {"wait", 5}}
          .dump(),
      "application/json"));
  EXPECT_EQ(refused.status, 429) << refused.body;
  EXPECT_EQ(refused.Header("Retry-After"), "1");
  EXPECT_NE(refused.body.find("2 lease requests are already waiting for work"), std::string::npos)
      << refused.body;
  EXPECT_LT(std::chrono::steady_clock::now() - asked, seconds(1));
  // The trainer's side still gets through: submits, then the batch, at once.
  SubmitOk(GroupFor(reply["tasks"][0]));
  SubmitOk(GroupFor(reply["tasks"][1]));
  const auto batch_asked = std::chrono::steady_clock::now();
  Batch b = TakeBatchOk("actor");
  EXPECT_LT(std::chrono::steady_clock::now() - batch_asked, seconds(1));
  EXPECT_EQ(Ack(b.batch_id), 200);  // Frees capacity: the waiting polls get their tasks.
  for (std::thread& t : pollers) t.join();
  EXPECT_EQ(polled[0]["tasks"].size() + polled[1]["tasks"].size(), 2U)
      << polled[0].dump() << polled[1].dump();
  EXPECT_NE(Metrics().find("sluice_dataflow_lease_waits_refused_total 1"), std::string::npos);
  // The slots were given back: a poll may wait again.
  EXPECT_EQ(Lease("w4", 1, 0.2)["tasks"].size(), 0U);
}

TEST_F(DataflowServiceTest, MalformedAndOversizedRequestsAreRejectedWithoutEffect) {
  StartService();
  json task = LeaseOne();
  const json before = CoreStatus();
  const std::string good = GroupFor(task);

  std::string corrupt = good;
  corrupt[corrupt.size() / 2] ^= 0x10;
  http::Response r = Submit(corrupt);
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_FALSE(json::parse(r.body)["error"]["field"].get<std::string>().empty()) << r.body;
  EXPECT_EQ(Submit(good.substr(0, good.size() - 3)).status, 400);
  EXPECT_EQ(Submit(good + "x").status, 400);
  EXPECT_EQ(Submit("").status, 400);
  EXPECT_EQ(Submit(std::string(kMaxBody + 10, 'x')).status, 413);
  // A well-formed group for a task that does not exist.
  json unknown = task;
  unknown["task_id"] = "task-999";
  EXPECT_EQ(Submit(GroupFor(unknown)).status, 404);
  // A never-issued attempt.
  json future = task;
  future["attempt"] = 7;
  EXPECT_EQ(Submit(GroupFor(future)).status / 100, 4);

  // Malformed JSON elsewhere names the field.
  http::Response bad = PostJson("/v1/leases", {{"worker_id", 3}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(json::parse(bad.body)["error"]["field"], "worker_id");
  bad = PostJson("/v1/leases", {{"worker_id", "w"}, {"capacity", "many"}});
  EXPECT_EQ(json::parse(bad.body)["error"]["field"], "capacity");
  EXPECT_EQ(Must(client_->Post("/v1/leases", "{not json", "application/json")).status, 400);
  bad = PostJson("/v1/policies/actor/versions", {{"url", "x"}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(json::parse(bad.body)["error"]["field"], "number");
  EXPECT_EQ(GetBatch("actor", -1).status, 400);
  EXPECT_EQ(Must(client_->Get("/v1/batches/actor?wait=soon")).status, 400);

  EXPECT_EQ(CoreStatus(), before);
  json ok = SubmitOk(good);
  EXPECT_TRUE(ok["accepted"].get<bool>());
  EXPECT_EQ(Status()["policies"]["actor"]["buffered_groups"], 1);
  EXPECT_NE(Metrics().find("sluice_dataflow_submits_total{result=\"rejected\"} 6"),
            std::string::npos)
      << Metrics();
}

TEST_F(DataflowServiceTest, WrongTokenIsUnauthorized) {
  StartService();
  auto wrong = MakeClient("not-the-token");
  EXPECT_EQ(Must(wrong->Get("/v1/status")).status, 401);
  EXPECT_EQ(Must(wrong->Post("/v1/leases", R"({"worker_id":"w"})", "application/json")).status,
            401);
  EXPECT_EQ(Must(wrong->Post("/v1/trajectories", "x", "application/octet-stream")).status, 401);
  EXPECT_EQ(Must(wrong->Get("/healthz")).status, 200);
  EXPECT_EQ(Status()["leases_in_flight"], 0);
}

TEST_F(DataflowServiceTest, VersionsAreAnnouncedInLeaseRepliesAndListed) {
  StartService();
  // GET /v1/versions (what a joining rollout replica loads first) lists announced policies only.
  DataflowClient dataflow(std::shared_ptr<http::Client>(MakeClient(kToken)));
  Result<std::vector<AnnouncedVersion>> listed = dataflow.AnnouncedVersions(CancellationToken());
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_TRUE(listed->empty());
  http::Response r = PostJson("/v1/policies/actor/versions",
                              {{"number", 1}, {"url", "s3://w/1"}, {"digest", "d1"}});
  EXPECT_EQ(r.status, 200) << r.body;
  listed = dataflow.AnnouncedVersions(CancellationToken());
  ASSERT_TRUE(listed.ok() && listed->size() == 1U) << listed.status().ToString();
  EXPECT_EQ((*listed)[0].policy, "actor");
  EXPECT_EQ((*listed)[0].number, 1);
  EXPECT_EQ((*listed)[0].url, "s3://w/1");
  EXPECT_EQ((*listed)[0].digest, "d1");
  EXPECT_EQ(Status()["leases_in_flight"], 0);  // Asking leased nothing.
  EXPECT_EQ(PostJson("/v1/policies/actor/versions", {{"number", 1}, {"url", "s3://other"}}).status,
            409);
  EXPECT_EQ(PostJson("/v1/policies/critic/versions", {{"number", 1}}).status, 404);
  json req = {{"worker_id", "w"}, {"capacity", 1}, {"hosted_policies", {{"actor", 0}}}};
  json reply = json::parse(PostJson("/v1/leases", req).body);
  ASSERT_EQ(reply["versions"].size(), 1U) << reply.dump();
  EXPECT_EQ(reply["versions"][0]["policy"], "actor");
  EXPECT_EQ(reply["versions"][0]["number"], 1);
  EXPECT_EQ(reply["versions"][0]["url"], "s3://w/1");
  EXPECT_EQ(Status()["policies"]["actor"]["version"], 1);
}

// The gauges RolloutPool autoscaling reads (docs/operator.md, "Autoscaling signals"), and every
// sluice_dataflow_* name the example manifests' queries use is in the live registry (the source
// scan of tests/unit/operator/autoscale/example_queries_test.cpp checks all names).
TEST_F(DataflowServiceTest, ExportsTheAutoscalingSignalsTheExamplesUse) {
  StartService();  // Capacity 8 binds admission (the staleness budget is 5 x 2 groups).
  json reply = Lease("w1", 3);
  ASSERT_EQ(reply["tasks"].size(), 3U);
  SubmitOk(GroupFor(reply["tasks"][0]));  // Generated at version 0.
  EXPECT_EQ(PostJson("/v1/policies/actor/versions",
                     {{"number", 2}, {"url", "s3://w/2"}, {"digest", "d2"}})
                .status,
            200);
  // The gauges read a status cached for a moment: wait for one taken after the writes.
  WaitForScrape([&] {
    return test_support::Scraped(*registry_, "sluice_dataflow_rollout_demand", {}) == 7.0 &&
           test_support::Scraped(*registry_, "sluice_dataflow_policy_lag", {"actor"}) == 2.0;
  });
  // 2 leases + room (8 - 1 buffered - 2 leased).
  EXPECT_EQ(test_support::Scraped(*registry_, "sluice_dataflow_rollout_demand", {}), 7.0);
  EXPECT_EQ(test_support::Scraped(*registry_, "sluice_dataflow_policy_lag", {"actor"}), 2.0);
  EXPECT_EQ(test_support::Scraped(*registry_, "sluice_dataflow_trainer_wait_fraction", {"actor"}),
            0.0);

  std::map<std::string, std::string> registered;
  for (const metrics::FamilySnapshot& f : registry_->Collect()) registered[f.name] = "registry";
  const test_support::ExampleQuerySet examples = test_support::ExampleQueries();
  EXPECT_TRUE(examples.errors.empty()) << testing::PrintToString(examples.errors);
  int checked = 0;
  for (const test_support::ExampleQuery& q : examples.queries) {
    for (const std::string& name : test_support::MetricNamesInQuery(q.query)) {
      if (name.rfind("sluice_dataflow_", 0) != 0) continue;
      ++checked;
      EXPECT_TRUE(test_support::IsExportedName(name, registered))
          << q.file << " " << q.field << ": " << name << " is not registered by the dataflow";
    }
  }
  EXPECT_GE(checked, 3) << "the examples scale on the dataflow's rollout demand";
}

// The end of the data: once the dataset is exhausted and what is left cannot fill a batch, GET
// /v1/batches answers 410 DataflowDrained (also to a request already waiting), the client says
// IsDrained, and the status and metrics report it.
TEST_F(DataflowServiceTest, DrainedPolicyIsAnsweredGone) {
  dataset_ = MakeDataset(3);
  StartService();  // One epoch, batches of 2 groups.
  json tasks = Lease("w1", 5)["tasks"];
  ASSERT_EQ(tasks.size(), 3U);
  EXPECT_EQ(Lease("w2", 1)["tasks"].size(), 0U);  // Every prompt is handed out.
  SubmitOk(GroupFor(tasks[0]));
  SubmitOk(GroupFor(tasks[1]));
  EXPECT_FALSE(Status()["exhausted"].get<bool>());  // A task is still leased.
  SubmitOk(GroupFor(tasks[2]));
  Batch b = TakeBatchOk("actor");
  json s = Status();
  EXPECT_TRUE(s["exhausted"].get<bool>());
  EXPECT_FALSE(s["policies"]["actor"]["drained"].get<bool>());  // Its batch may be served again.
  EXPECT_EQ(GetBatch("actor").status, 204);

  // A request waiting for a batch is answered as soon as the ack drains the policy.
  http::Response polled;
  const auto began = std::chrono::steady_clock::now();
  std::thread poller([&] { polled = GetBatch("actor", 0, 5); });
  WaitForRequestInFlight();
  EXPECT_EQ(Ack(b.batch_id), 200);
  poller.join();
  EXPECT_LT(std::chrono::steady_clock::now() - began, seconds(4));
  ASSERT_EQ(polled.status, 410) << polled.body;
  const std::string message =
      "the dataset is exhausted (epoch 1 of 1) and the 1 buffered group of policy actor cannot "
      "fill a batch of 2";
  const json error = json::parse(polled.body)["error"];
  EXPECT_EQ(error["reason"], "DataflowDrained");
  EXPECT_EQ(error["message"], message);
  s = Status();
  EXPECT_TRUE(s["policies"]["actor"]["drained"].get<bool>());
  EXPECT_EQ(s["policies"]["actor"]["usable_groups"], 1);
  EXPECT_EQ(s["policies"]["actor"]["batch_groups"], 2);
  EXPECT_EQ(s["policies"]["actor"]["drain_reason"],
            "the 1 buffered group of policy actor cannot fill a batch of 2");

  // The trainer's client recognises it, with the dataflow's sentence as the message.
  DataflowClient dataflow{std::shared_ptr<http::Client>(MakeClient(kToken))};
  Result<std::optional<std::string>> frame =
      dataflow.TakeBatchFrame("actor", 0, seconds(0), CancellationToken());
  ASSERT_FALSE(frame.ok());
  EXPECT_TRUE(IsDrained(frame.status())) << frame.status().ToString();
  EXPECT_EQ(frame.status().message(), message);

  // Drained is per batch size: a batch of one group can still be served, then none.
  Batch last = TakeBatchOk("actor", 1);
  EXPECT_EQ(Ack(last.batch_id), 200);
  http::Response gone = GetBatch("actor", 1);
  EXPECT_EQ(gone.status, 410);
  EXPECT_EQ(json::parse(gone.body)["error"]["message"],
            "the dataset is exhausted (epoch 1 of 1) and the 0 buffered groups of policy actor "
            "cannot fill a batch of 1");
  // The gauges read a status cached for a moment: wait for one taken after the writes.
  WaitForScrape([&] {
    const std::string m = Metrics();
    return m.find("sluice_dataflow_exhausted 1") != std::string::npos &&
           m.find("sluice_dataflow_drained{policy=\"actor\"} 1") != std::string::npos &&
           m.find("outcome=\"drained\"} 3") != std::string::npos;
  });
  const std::string m = Metrics();
  EXPECT_NE(m.find("sluice_dataflow_exhausted 1"), std::string::npos) << m;
  EXPECT_NE(m.find("sluice_dataflow_drained{policy=\"actor\"} 1"), std::string::npos);
  EXPECT_NE(m.find("outcome=\"drained\"} 3"), std::string::npos);
}

// Until the dataset is exhausted nothing is drained, however empty the buffer.
TEST_F(DataflowServiceTest, NotDrainedWhilePromptsRemain) {
  StartService();
  EXPECT_EQ(GetBatch("actor").status, 204);
  json s = Status();
  EXPECT_FALSE(s["exhausted"].get<bool>());
  EXPECT_FALSE(s["policies"]["actor"]["drained"].get<bool>());
  EXPECT_EQ(s["policies"]["actor"]["drain_reason"], "");
}

// "evaluate" on an announcement queues one eval round at that version.
TEST_F(DataflowServiceTest, AnnounceWithEvaluateQueuesAnEvalRound) {
  dataset_ = MakeDataset(50, 0.2);  // 10 eval rows.
  DataflowConfig c = BaseConfig();
  c.eval.every_versions = 10;
  StartService(c);
  EXPECT_EQ(Status()["pending_eval_tasks"], 0);
  http::Response r =
      PostJson("/v1/policies/actor/versions", {{"number", 1}, {"url", "u1"}, {"evaluate", true}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["version"]["evaluate"], true);
  json s = Status();
  EXPECT_EQ(s["pending_eval_tasks"], 10);
  EXPECT_EQ(s["eval"]["rounds_in_progress"], 1);
  // Not a boolean: 400 naming the field, nothing announced.
  for (const json& bad : {json("yes"), json(1), json::array()}) {
    http::Response rejected =
        PostJson("/v1/policies/actor/versions", {{"number", 2}, {"evaluate", bad}});
    EXPECT_EQ(rejected.status, 400) << rejected.body;
    EXPECT_EQ(json::parse(rejected.body)["error"]["field"], "evaluate") << rejected.body;
  }
  EXPECT_EQ(Status()["policies"]["actor"]["version"], 1);
  // Without the flag (or with it false) a version that is no multiple queues nothing.
  EXPECT_EQ(PostJson("/v1/policies/actor/versions", {{"number", 2}}).status, 200);
  EXPECT_EQ(PostJson("/v1/policies/actor/versions", {{"number", 3}, {"evaluate", false}}).status,
            200);
  EXPECT_EQ(Status()["pending_eval_tasks"], 10);

  // The client sends the flag.
  DataflowClient dataflow{std::shared_ptr<http::Client>(MakeClient(kToken))};
  VersionAnnouncement v4;
  v4.number = 4;
  v4.url = "u4";
  v4.evaluate = true;
  ASSERT_TRUE(dataflow.Announce("actor", v4).ok());
  s = Status();
  EXPECT_EQ(s["policies"]["actor"]["version"], 4);
  EXPECT_EQ(s["pending_eval_tasks"], 20);
  EXPECT_EQ(s["eval"]["rounds_in_progress"], 2);
  ASSERT_TRUE(dataflow.Announce("actor", v4).ok());  // Idempotent: no second round.
  VersionAnnouncement v5;
  v5.number = 5;
  ASSERT_TRUE(dataflow.Announce("actor", v5).ok());
  EXPECT_EQ(Status()["pending_eval_tasks"], 20);
}

// The client puts "evaluate" in the announcement only when it is set.
TEST(DataflowClientTest, AnnounceSendsEvaluateOnlyWhenSet) {
  log::Logger logger{"capture"};
  http::ServerOptions so;
  so.name = "capture";
  so.access_log = false;
  http::Server server(so, nullptr, logger);
  std::mutex mu;
  std::vector<json> bodies;
  server.Post(R"(/v1/policies/([^/]+)/versions)",
              [&](const httplib::Request& req, httplib::Response& res) {
                std::lock_guard<std::mutex> lock(mu);
                bodies.push_back(json::parse(req.body));
                http::ReplyJson(res, json::object());
              });
  ASSERT_TRUE(server.Start().ok());
  DataflowClient dataflow{
      std::shared_ptr<http::Client>(::sluice::test_support::TestClient(server.BaseUrl()))};
  VersionAnnouncement v;
  v.number = 1;
  ASSERT_TRUE(dataflow.Announce("actor", v).ok());
  v.number = 2;
  v.evaluate = true;
  ASSERT_TRUE(dataflow.Announce("actor", v).ok());
  server.Shutdown();
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(bodies.size(), 2U);
  EXPECT_FALSE(bodies[0].contains("evaluate")) << bodies[0].dump();
  EXPECT_EQ(bodies[1]["evaluate"], true) << bodies[1].dump();
}

class DataflowServiceRestartTest : public DataflowServiceTest,
                                   public ::testing::WithParamInterface<bool> {};

TEST_P(DataflowServiceRestartTest, RestartRecoversBuffersLeasesAndAcks) {
  const bool snapshot_on_stop = GetParam();
  DataflowConfig c = BaseConfig();
  c.groups_per_batch = 1;
  c.ack_timeout = seconds(5);
  StartService(c, snapshot_on_stop);
  json tasks = Lease("w1", 4)["tasks"];
  ASSERT_EQ(tasks.size(), 4U);
  for (int i = 0; i < 3; ++i) SubmitOk(GroupFor(tasks[i]));
  Batch acked = TakeBatchOk("actor");
  ASSERT_EQ(Ack(acked.batch_id), 200);
  Batch unacked = TakeBatchOk("actor");
  ASSERT_EQ(PostJson("/v1/policies/actor/versions", {{"number", 1}, {"url", "u"}}).status, 200);
  const json before = CoreStatus();

  StopService();
  StartService(c, snapshot_on_stop);
  EXPECT_EQ(CoreStatus(), before);
  const json s = Status();
  EXPECT_EQ(s["recovery"]["snapshot_lsn"].get<uint64_t>() > 0, snapshot_on_stop) << s.dump();
  EXPECT_EQ(s["policies"]["actor"]["buffered_groups"], 1);
  EXPECT_EQ(s["policies"]["actor"]["unacked_batches"], 1);
  EXPECT_EQ(s["leases_in_flight"], 1);
  // The held lease still works; its submit is accepted once.
  EXPECT_EQ(
      PostJson("/v1/leases/" + tasks[3]["lease_id"].get<std::string>() + "/renew", json::object())
          .status,
      200);
  EXPECT_TRUE(SubmitOk(GroupFor(tasks[3]))["accepted"].get<bool>());
  EXPECT_TRUE(SubmitOk(GroupFor(tasks[0]))["duplicate"].get<bool>());
  // The unacknowledged batch comes back after its timeout; the acknowledged one never does.
  clock_.Advance(seconds(6));
  Batch again = TakeBatchOk("actor");
  EXPECT_EQ(again.batch_id, unacked.batch_id);
  EXPECT_EQ(Ack(again.batch_id), 200);
  std::set<std::string> served_tasks;
  for (int i = 0; i < 2; ++i) {
    Batch b = TakeBatchOk("actor");
    EXPECT_NE(b.batch_id, acked.batch_id);
    ASSERT_FALSE(b.samples.empty());
    served_tasks.insert(b.samples[0].task_id);
    EXPECT_EQ(Ack(b.batch_id), 200);
  }
  EXPECT_EQ(GetBatch("actor").status, 204);
  EXPECT_EQ(served_tasks.count(acked.samples[0].task_id), 0U);
  EXPECT_EQ(served_tasks.count(unacked.samples[0].task_id), 0U);
  EXPECT_EQ(served_tasks.size(), 2U);
}

// The evaluate flag survives a restart (from the log, or from the final snapshot): re-announcing
// the same version with it is still the idempotent no-op, without it a conflict.
TEST_P(DataflowServiceRestartTest, RestartKeepsTheEvaluateFlag) {
  const bool snapshot_on_stop = GetParam();
  dataset_ = MakeDataset(50, 0.2);  // 10 eval rows.
  DataflowConfig c = BaseConfig();
  c.eval.every_versions = 10;
  StartService(c, snapshot_on_stop);
  const json announce = {{"number", 1}, {"url", "u1"}, {"evaluate", true}};
  ASSERT_EQ(PostJson("/v1/policies/actor/versions", announce).status, 200);
  const json before = CoreStatus();
  EXPECT_EQ(before["pending_eval_tasks"], 10);

  StopService();
  StartService(c, snapshot_on_stop);
  EXPECT_EQ(CoreStatus(), before);
  EXPECT_EQ(Status()["recovery"]["snapshot_lsn"].get<uint64_t>() > 0, snapshot_on_stop);
  EXPECT_EQ(PostJson("/v1/policies/actor/versions", announce).status, 200);
  EXPECT_EQ(PostJson("/v1/policies/actor/versions", {{"number", 1}, {"url", "u1"}}).status, 409);
  EXPECT_EQ(CoreStatus(), before);
}

INSTANTIATE_TEST_SUITE_P(SnapshotOnStop, DataflowServiceRestartTest, ::testing::Bool());

}  // namespace dataflow_service_test
}  // namespace sluice::dataflow
