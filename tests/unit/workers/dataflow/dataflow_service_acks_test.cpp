// DataflowService's acknowledgement routes over real HTTP, through the real client: held
// acknowledgements (a checkpointing trainer's), their release and take-back, what survives a
// restart from the write-ahead log, and what malformed requests get.
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "common/http/client.h"
#include "common/status.h"
#include "tests/unit/workers/dataflow/dataflow_service_test_support.h"
#include "workers/dataflow/client/dataflow_client.h"

namespace sluice::dataflow {
namespace {

using nlohmann::json;
using service_test_support::DataflowServiceTest;
using service_test_support::GroupFor;
using service_test_support::kToken;

class DataflowAcksTest : public DataflowServiceTest {
 protected:
  // Two groups submitted and taken as one batch; its id.
  std::string TakeOne() {
    for (int i = 0; i < 2; ++i) SubmitOk(GroupFor(LeaseOne()));
    return TakeBatchOk("actor", 2).batch_id;
  }
  DataflowClient Client() {
    return DataflowClient(std::shared_ptr<http::Client>(MakeClient(kToken)));
  }
  json Actor() { return Status()["policies"]["actor"]; }
};

TEST_F(DataflowAcksTest, HeldBatchesAreReleasedOrTakenBackAndSurviveARestart) {
  StartService();
  DataflowClient dataflow = Client();
  const std::string first = TakeOne();
  const std::string second = TakeOne();
  EXPECT_EQ(dataflow.AckHeld(first).value(), 1);
  EXPECT_EQ(dataflow.AckHeld(second).value(), 2);
  EXPECT_EQ(dataflow.AckHeld(second).value(), 2);  // A retry.
  EXPECT_EQ(Actor()["held_batches"], 2);
  EXPECT_EQ(Actor()["acked_batches"], 2);
  EXPECT_EQ(dataflow.ReleaseHeld("actor", 1).value(), 1);

  // The held batch survives a restart from the write-ahead log (no snapshot: records only).
  StopService();
  StartService(service_test_support::BaseConfig(), /*snapshot_on_stop=*/false);
  dataflow = Client();
  EXPECT_EQ(Actor()["held_batches"], 1);
  EXPECT_EQ(Actor()["held_seq"], 2);

  // The trainer restarts from its checkpoint of hold 1: batch 2 comes back at once, same id.
  EXPECT_EQ(dataflow.ResumeHeld("actor", 1).value(), 1);
  EXPECT_EQ(Actor()["acked_batches"], 1);
  EXPECT_EQ(Actor()["unacked_batches"], 1);
  EXPECT_EQ(TakeBatchOk("actor", 2).batch_id, second);
  ASSERT_EQ(Ack(second), 200);  // A final ack (no body field): as before held ones existed.
  EXPECT_EQ(Actor()["held_batches"], 0);
  EXPECT_EQ(Actor()["acked_batches"], 2);
  http::Response r = PostJson("/v1/batches/" + first + "/ack", {{"hold", true}});
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["held"], 0) << "acknowledged for good already";
}

TEST_F(DataflowAcksTest, MalformedRequestsAre4xxNamingTheField) {
  StartService();
  const std::string id = TakeOne();
  auto expect_bad = [&](const std::string& path, const json& body, const std::string& field) {
    http::Response r = PostJson(path, body);
    EXPECT_EQ(r.status, 400) << path << " " << body.dump() << ": " << r.body;
    const json reply = json::parse(r.body, nullptr, false);
    EXPECT_EQ(reply["error"]["field"], field) << r.body;
  };
  expect_bad("/v1/batches/" + id + "/ack", {{"hold", "yes"}}, "hold");
  expect_bad("/v1/batches/" + id + "/ack", {{"hold", true}, {"later", 1}}, "later");
  expect_bad("/v1/policies/actor/held/release", json::object(), "through");
  expect_bad("/v1/policies/actor/held/release", {{"through", -1}}, "through");
  expect_bad("/v1/policies/actor/held/resume", {{"through", "3"}}, "through");
  EXPECT_EQ(Must(client_->Post("/v1/policies/actor/held/resume", "{", "application/json")).status,
            400);
  EXPECT_EQ(PostJson("/v1/policies/critic/held/release", {{"through", 1}}).status, 404);
  EXPECT_EQ(PostJson("/v1/batches/batch-77/ack", {{"hold", true}}).status, 404);
  // Nothing was acknowledged on the way.
  EXPECT_EQ(Actor()["acked_batches"], 0);
  EXPECT_EQ(Actor()["unacked_batches"], 1);
}

// A version number names one weight image: the client reports the dataflow's 409 as an error.
TEST_F(DataflowAcksTest, AnnouncingAnotherImageUnderAnAnnouncedNumberFails) {
  StartService();
  DataflowClient dataflow = Client();
  VersionAnnouncement v;
  v.number = 3;
  v.url = "http://trainer-a:8080/v1/weights/3";
  v.digest = "sha256:aa";
  ASSERT_TRUE(dataflow.Announce("actor", v).ok());
  ASSERT_TRUE(dataflow.Announce("actor", v).ok());  // The same announcement again.
  v.url = "http://trainer-b:8080/v1/weights/3";     // The same image, moved.
  ASSERT_TRUE(dataflow.Announce("actor", v).ok());
  v.digest = "sha256:bb";
  const sluice::Status refused = dataflow.Announce("actor", v);
  EXPECT_EQ(refused.code(), StatusCode::kConflict) << refused.ToString();
  EXPECT_NE(refused.ToString().find("sha256:aa"), std::string::npos) << refused.ToString();
  v.number = 2;
  EXPECT_EQ(dataflow.Announce("actor", v).code(), StatusCode::kConflict);
  Result<std::vector<AnnouncedVersion>> listed = dataflow.AnnouncedVersions(CancellationToken());
  ASSERT_TRUE(listed.ok() && listed->size() == 1U);
  EXPECT_EQ((*listed)[0].url, "http://trainer-b:8080/v1/weights/3");
  EXPECT_EQ((*listed)[0].digest, "sha256:aa");
}

}  // namespace
}  // namespace sluice::dataflow
