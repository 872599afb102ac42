// HttpEnvironment against a real server on 127.0.0.1: a tiny counting environment (/reset starts
// a session, /step echoes the call and ends the episode with reward 1 after 2 steps), plus routes
// that fail, stall, trickle or reply with whatever body a test sets.
#include "workers/rollout/environments/http_environment.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/http/json_body.h"
#include "common/http/server.h"
#include "common/logging/logger.h"
#include "tests/support/free_port.h"

namespace sluice::rollout {
namespace {

using nlohmann::json;
using ::sluice::test_support::FreePort;
using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

constexpr seconds kStall{20};  // How long /slow routes hold a request unless released.

class HttpEnvironmentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    http::ServerOptions options;
    options.name = "test-environment";
    options.access_log = false;
    options.worker_threads = 4;
    server_ = std::make_unique<http::Server>(options, nullptr, logger_);

    server_->Post("/reset", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      authorizations_.push_back(req.get_header_value("Authorization"));
      reset_bodies_.push_back(json::parse(req.body));
      const std::string session = "session-" + std::to_string(++sessions_started_);
      steps_[session] = 0;
      http::ReplyJson(res, {{"observation", "count to 2"}, {"session", session}});
    });
    server_->Post("/step", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      authorizations_.push_back(req.get_header_value("Authorization"));
      const json body = json::parse(req.body);
      step_bodies_.push_back(body);
      auto it = steps_.find(body.value("session", ""));
      if (it == steps_.end()) {
        http::ReplyError(res, Status::NotFound("no session " + body.value("session", "")));
        return;
      }
      const int n = ++it->second;
      json reply = {{"observation", "step " + std::to_string(n) + ": " + body.value("tool", "") +
                                        " " + body.value("arguments", "")}};
      if (n >= 2) {
        reply["done"] = true;
        reply["reward"] = 1;
      }
      http::ReplyJson(res, reply);
    });
    server_->Post("/fail/(reset|step)", [](const httplib::Request&, httplib::Response& res) {
      http::ReplyError(res, Status::Internal("environment exploded"));
    });
    server_->Post("/canned/(reset|step)", [this](const httplib::Request&, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      res.status = 200;
      res.set_content(canned_, "application/json");
    });
    server_->Post("/slow/(reset|step)", [this](const httplib::Request&, httplib::Response& res) {
      release_.Token().WaitFor(kStall);
      http::ReplyJson(res, {{"observation", "late"}});
    });
    // Sends a byte every 200 ms: never silent for a whole second, never finished.
    server_->Post("/trickle/(reset|step)", [this](const httplib::Request&, httplib::Response& res) {
      CancellationToken release = release_.Token();
      res.set_chunked_content_provider("application/json",
                                       [release](size_t offset, httplib::DataSink& sink) {
                                         if (offset >= 100 || release.WaitFor(milliseconds(200))) {
                                           sink.done();
                                           return true;
                                         }
                                         return sink.write(" ", 1);
                                       });
    });
    ASSERT_TRUE(server_->Start().ok());
  }

  void TearDown() override {
    release_.Cancel();
    server_->Shutdown();
  }

  std::unique_ptr<HttpEnvironment> Connect(const std::string& prefix, seconds timeout = seconds(5),
                                           const std::string& token = "") {
    Result<std::unique_ptr<HttpEnvironment>> environment =
        HttpEnvironment::Create(server_->BaseUrl() + prefix, timeout, token);
    EXPECT_TRUE(environment.ok()) << environment.status().ToString();
    return environment.ok() ? std::move(environment).value() : nullptr;
  }

  void SetCanned(std::string body) {
    std::lock_guard<std::mutex> lock(mu_);
    canned_ = std::move(body);
  }
  std::vector<std::string> Authorizations() {
    std::lock_guard<std::mutex> lock(mu_);
    return authorizations_;
  }

  log::Logger logger_{"http-environment-test"};
  std::unique_ptr<http::Server> server_;
  CancellationSource release_;  // Cancelled in TearDown: stalled handlers return.

  std::mutex mu_;
  int sessions_started_ = 0;
  std::map<std::string, int> steps_;
  std::vector<std::string> authorizations_;
  std::vector<json> reset_bodies_;
  std::vector<json> step_bodies_;
  std::string canned_;
};

EnvironmentTask SampleTask() {
  EnvironmentTask task;
  task.task_id = "task-7";
  task.prompt = "Count to two.";
  task.answer = "2";
  task.row = {{"id", 7}, {"level", "easy"}};
  return task;
}

TEST_F(HttpEnvironmentTest, EpisodeOfTwoSteps) {
  std::unique_ptr<HttpEnvironment> environment = Connect("");
  ASSERT_NE(environment, nullptr);
  Result<std::string> observation = environment->Reset(SampleTask(), {});
  ASSERT_TRUE(observation.ok()) << observation.status().ToString();
  EXPECT_EQ(*observation, "count to 2");
  EXPECT_EQ(environment->session(), "session-1");

  Result<StepResult> first = environment->Step({"counter", "one"}, "<tool>counter one</tool>", {});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->observation, "step 1: counter one");
  EXPECT_FALSE(first->done);
  EXPECT_FALSE(first->reward.has_value());

  Result<StepResult> second = environment->Step({"counter", "two"}, "<tool>counter two</tool>", {});
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->observation, "step 2: counter two");
  EXPECT_TRUE(second->done);
  ASSERT_TRUE(second->reward.has_value());
  EXPECT_EQ(*second->reward, 1.0);

  std::lock_guard<std::mutex> lock(mu_);
  ASSERT_EQ(reset_bodies_.size(), 1u);
  EXPECT_EQ(reset_bodies_[0], (json{{"task",
                                     {{"task_id", "task-7"},
                                      {"prompt", "Count to two."},
                                      {"answer", "2"},
                                      {"row", {{"id", 7}, {"level", "easy"}}}}}}));
  ASSERT_EQ(step_bodies_.size(), 2u);
  EXPECT_EQ(step_bodies_[1], (json{{"session", "session-1"},
                                   {"tool", "counter"},
                                   {"arguments", "two"},
                                   {"text", "<tool>counter two</tool>"}}));
}

TEST_F(HttpEnvironmentTest, EachEnvironmentKeepsItsOwnSession) {
  std::unique_ptr<HttpEnvironment> a = Connect("");
  std::unique_ptr<HttpEnvironment> b = Connect("");
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->Reset(SampleTask(), {}).ok());
  ASSERT_TRUE(b->Reset(SampleTask(), {}).ok());
  EXPECT_NE(a->session(), b->session());
  Result<StepResult> a1 = a->Step({"t", "a"}, "", {});
  Result<StepResult> b1 = b->Step({"t", "b"}, "", {});
  Result<StepResult> a2 = a->Step({"t", "a"}, "", {});
  ASSERT_TRUE(a1.ok() && b1.ok() && a2.ok());
  EXPECT_EQ(b1->observation, "step 1: t b");  // b's count is not a's.
  EXPECT_FALSE(b1->done);
  EXPECT_TRUE(a2->done);
}

TEST_F(HttpEnvironmentTest, SendsTheBearerTokenOnEveryCall) {
  std::unique_ptr<HttpEnvironment> environment = Connect("", seconds(5), "s3cret");
  ASSERT_NE(environment, nullptr);
  ASSERT_TRUE(environment->Reset(SampleTask(), {}).ok());
  ASSERT_TRUE(environment->Step({"t", "x"}, "", {}).ok());
  EXPECT_EQ(Authorizations(), (std::vector<std::string>{"Bearer s3cret", "Bearer s3cret"}));
}

TEST_F(HttpEnvironmentTest, NoTokenNoAuthorizationHeader) {
  std::unique_ptr<HttpEnvironment> environment = Connect("");
  ASSERT_NE(environment, nullptr);
  ASSERT_TRUE(environment->Reset(SampleTask(), {}).ok());
  EXPECT_EQ(Authorizations(), (std::vector<std::string>{""}));
}

TEST_F(HttpEnvironmentTest, ServerErrorBecomesItsStatus) {
  std::unique_ptr<HttpEnvironment> environment = Connect("/fail");
  ASSERT_NE(environment, nullptr);
  Result<std::string> reset = environment->Reset(SampleTask(), {});
  ASSERT_FALSE(reset.ok());
  EXPECT_EQ(reset.status().code(), StatusCode::kInternal);
  EXPECT_NE(reset.status().message().find("environment exploded"), std::string::npos)
      << reset.status().ToString();
  Result<StepResult> step = environment->Step({"t", "x"}, "", {});
  ASSERT_FALSE(step.ok());
  EXPECT_EQ(step.status().code(), StatusCode::kInternal);
}

TEST_F(HttpEnvironmentTest, StepWithUnknownSessionIsTheServersNotFound) {
  std::unique_ptr<HttpEnvironment> environment = Connect("");
  ASSERT_NE(environment, nullptr);
  Result<StepResult> step = environment->Step({"t", "x"}, "", {});  // No Reset: session "".
  ASSERT_FALSE(step.ok());
  EXPECT_EQ(step.status().code(), StatusCode::kNotFound) << step.status().ToString();
}

TEST_F(HttpEnvironmentTest, MalformedStepRepliesNameTheField) {
  struct Case {
    std::string body;
    std::string field;
    std::string message_part;
  };
  const Case cases[] = {
      {"not json", "environment reply", "not valid JSON"},
      {"", "environment reply", "empty"},
      {R"(["observation"])", "environment reply", "must be a JSON object, got array"},
      {R"({"observation": 5})", "environment reply.observation", "must be a string, got number"},
      {R"({"reward": 1})", "environment reply.observation", "is required"},
      {R"({"observation": "x", "reward": "1"})", "environment reply.reward", "must be a number"},
      {R"({"observation": "x", "reward": 1e999})", "environment reply", "number overflow"},
      {R"({"observation": "x", "info": )" + std::string(2000, '[') + std::string(2000, ']') + "}",
       "environment reply", "nests deeper than 1000 levels"},
      {R"({"observation": "x", "done": "yes"})", "environment reply.done", "must be a boolean"},
  };
  std::unique_ptr<HttpEnvironment> environment = Connect("/canned");
  ASSERT_NE(environment, nullptr);
  for (const Case& c : cases) {
    SetCanned(c.body);
    Result<StepResult> step = environment->Step({"t", "x"}, "", {});
    ASSERT_FALSE(step.ok()) << c.body;
    EXPECT_EQ(step.status().code(), StatusCode::kInvalidArgument) << c.body;
    EXPECT_EQ(step.status().field(), c.field) << c.body << ": " << step.status().ToString();
    EXPECT_NE(step.status().message().find(c.message_part), std::string::npos)
        << c.body << ": " << step.status().ToString();
  }
}

TEST_F(HttpEnvironmentTest, OptionalStepFieldsMayBeNullOrAbsent) {
  std::unique_ptr<HttpEnvironment> environment = Connect("/canned");
  ASSERT_NE(environment, nullptr);
  SetCanned(R"({"observation": "", "reward": null, "done": null, "info": {"extra": 1}})");
  Result<StepResult> step = environment->Step({"t", "x"}, "", {});
  ASSERT_TRUE(step.ok()) << step.status().ToString();
  EXPECT_EQ(step->observation, "");
  EXPECT_FALSE(step->reward.has_value());
  EXPECT_FALSE(step->done);

  SetCanned(R"({"observation": "scored", "reward": -0.5})");
  step = environment->Step({"t", "x"}, "", {});
  ASSERT_TRUE(step.ok()) << step.status().ToString();
  EXPECT_EQ(step->reward, -0.5);
}

TEST_F(HttpEnvironmentTest, ResetReplyValidation) {
  std::unique_ptr<HttpEnvironment> environment = Connect("/canned");
  ASSERT_NE(environment, nullptr);

  SetCanned(R"({"observation": "hi"})");  // No session: steps send "".
  Result<std::string> reset = environment->Reset(SampleTask(), {});
  ASSERT_TRUE(reset.ok()) << reset.status().ToString();
  EXPECT_EQ(*reset, "hi");
  EXPECT_EQ(environment->session(), "");

  SetCanned(R"({"observation": "hi", "session": 12})");
  reset = environment->Reset(SampleTask(), {});
  ASSERT_FALSE(reset.ok());
  EXPECT_EQ(reset.status().field(), "environment reply.session") << reset.status().ToString();

  SetCanned(R"({"session": "s"})");
  reset = environment->Reset(SampleTask(), {});
  ASSERT_FALSE(reset.ok());
  EXPECT_EQ(reset.status().field(), "environment reply.observation") << reset.status().ToString();
  EXPECT_NE(reset.status().message().find("/reset"), std::string::npos)
      << reset.status().ToString();
}

TEST_F(HttpEnvironmentTest, OversizedReplyIsTooLarge) {
  std::unique_ptr<HttpEnvironment> environment = Connect("/canned");
  ASSERT_NE(environment, nullptr);
  SetCanned(R"({"observation": ")" + std::string(kMaxEnvironmentReplyBytes, 'x') + "\"}");
  Result<StepResult> step = environment->Step({"t", "x"}, "", {});
  ASSERT_FALSE(step.ok());
  EXPECT_EQ(step.status().code(), StatusCode::kTooLarge) << step.status().ToString();
}

TEST_F(HttpEnvironmentTest, SilentServerTimesOut) {
  std::unique_ptr<HttpEnvironment> environment = Connect("/slow", seconds(1));
  ASSERT_NE(environment, nullptr);
  const Clock::time_point start = Clock::now();
  Result<StepResult> step = environment->Step({"t", "x"}, "", {});
  const Clock::duration took = Clock::now() - start;
  ASSERT_FALSE(step.ok());
  EXPECT_EQ(step.status().code(), StatusCode::kDeadlineExceeded) << step.status().ToString();
  EXPECT_GE(took, milliseconds(900));
  EXPECT_LT(took, seconds(5));
}

TEST_F(HttpEnvironmentTest, TricklingReplyTimesOut) {
  std::unique_ptr<HttpEnvironment> environment = Connect("/trickle", seconds(1));
  ASSERT_NE(environment, nullptr);
  const Clock::time_point start = Clock::now();
  Result<std::string> reset = environment->Reset(SampleTask(), {});
  const Clock::duration took = Clock::now() - start;
  ASSERT_FALSE(reset.ok());
  EXPECT_EQ(reset.status().code(), StatusCode::kDeadlineExceeded) << reset.status().ToString();
  EXPECT_LT(took, seconds(5));
}

TEST_F(HttpEnvironmentTest, CancellationStopsAPendingCall) {
  std::unique_ptr<HttpEnvironment> environment = Connect("/slow", seconds(30));
  ASSERT_NE(environment, nullptr);
  CancellationSource cancel;
  std::thread canceller([&cancel] {
    std::this_thread::sleep_for(milliseconds(300));
    cancel.Cancel();
  });
  const Clock::time_point start = Clock::now();
  Result<std::string> reset = environment->Reset(SampleTask(), cancel.Token());
  const Clock::duration took = Clock::now() - start;
  canceller.join();
  ASSERT_FALSE(reset.ok());
  EXPECT_EQ(reset.status().code(), StatusCode::kCancelled) << reset.status().ToString();
  EXPECT_LT(took, seconds(5));  // Not the 30 s timeout, nor the server's 20 s stall.
}

TEST_F(HttpEnvironmentTest, AlreadyCancelledCallsNothing) {
  std::unique_ptr<HttpEnvironment> environment = Connect("");
  ASSERT_NE(environment, nullptr);
  CancellationSource cancel;
  cancel.Cancel();
  Result<std::string> reset = environment->Reset(SampleTask(), cancel.Token());
  ASSERT_FALSE(reset.ok());
  EXPECT_EQ(reset.status().code(), StatusCode::kCancelled);
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_TRUE(reset_bodies_.empty());
}

TEST(HttpEnvironment, UnreachableServerIsUnavailable) {
  Result<std::unique_ptr<HttpEnvironment>> environment =
      HttpEnvironment::Create("http://127.0.0.1:" + std::to_string(FreePort()), seconds(2), "");
  ASSERT_TRUE(environment.ok()) << environment.status().ToString();
  Result<std::string> reset = (*environment)->Reset(SampleTask(), {});
  ASSERT_FALSE(reset.ok());
  EXPECT_EQ(reset.status().code(), StatusCode::kUnavailable) << reset.status().ToString();
}

TEST(HttpEnvironment, BadUrlNamesTheField) {
  Result<std::unique_ptr<HttpEnvironment>> environment =
      HttpEnvironment::Create("ftp://example.com", seconds(2), "");
  ASSERT_FALSE(environment.ok());
  EXPECT_EQ(environment.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(environment.status().field(), "workflow.environment.url");
}

}  // namespace
}  // namespace sluice::rollout
