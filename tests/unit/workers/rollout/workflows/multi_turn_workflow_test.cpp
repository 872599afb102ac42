// MultiTurnWorkflow on a scripted backend: the built-in calculator between two model turns (exact
// token layout), the turn limit and the sequence budget, and HTTP environments that answer, end
// the episode with their own reward, fail, or cannot be reached.
#include "workers/rollout/workflows/multi_turn_workflow.h"

#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/http/json_body.h"
#include "common/http/server.h"
#include "common/logging/logger.h"
#include "tests/support/free_port.h"
#include "tests/unit/workers/rollout/workflows/scripted_backend.h"
#include "workers/model/char_tokenizer.h"

namespace sluice::rollout {
namespace {

using model::CharTokenizer;
using nlohmann::json;
using ::sluice::test_support::FreePort;
using test_support::PlainCharPolicy;
using test_support::ScriptedBackend;

constexpr char kPrompt[] = "<|user|>\nWhat is 6*7?<|end|>\n<|assistant|>\n";

std::vector<int32_t> Ids(std::string_view text) { return CharTokenizer().Encode(text); }

std::unique_ptr<Workflow> MakeMultiTurn(json environment, json extra = json::object()) {
  json spec = {{"type", "multi-turn"},
               {"roles", {{{"name", "agent"}, {"policy", "tiny"}}}},
               {"environment", std::move(environment)},
               {"reward", {{"type", "exact-match"}}}};
  spec.update(extra);
  auto workflow = MakeWorkflow(spec);
  EXPECT_TRUE(workflow.ok()) << workflow.status().ToString();
  return workflow.ok() ? std::move(workflow).value() : nullptr;
}

LeasedTask Task(int64_t samples, int32_t max_new_tokens = 64) {
  LeasedTask task;
  task.task_id = "task-9";
  task.prompt_id = "row-9";
  task.prompt = "What is 6*7?";
  task.answer = "42";
  task.samples = samples;
  task.sampling = {{"maxNewTokens", max_new_tokens}};
  return task;
}

// A model that calls the calculator until it has seen an observation, then answers.
ScriptedBackend::Responder CalculatorAgent() {
  return [](const std::string&, const std::string& prompt, int32_t) -> std::string {
    if (prompt.find("<|tool|>") == std::string::npos) return "<tool>calculator 6*7</tool><|end|>";
    return "<answer>42</answer><|end|>";
  };
}

TEST(MultiTurnWorkflowTest, CalculatorObservationIsContextBetweenTurns) {
  ScriptedBackend backend(CalculatorAgent());
  EpisodeContext context;
  context.backend = &backend;
  context.policies["tiny"] = PlainCharPolicy();
  auto workflow = MakeMultiTurn({{"builtin", "calculator"}});
  ASSERT_NE(workflow, nullptr);
  EXPECT_EQ(workflow->name(), "multi-turn");

  Result<EpisodeResult> result = workflow->Run(Task(2), context);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ(result->samples.size(), 2u);

  const std::vector<int32_t> prompt = Ids(kPrompt);
  const std::vector<int32_t> turn1 = Ids("<tool>calculator 6*7</tool><|end|>");
  const std::vector<int32_t> observation = Ids("\n<|tool|>\n42<|end|>\n<|assistant|>\n");
  const std::vector<int32_t> turn2 = Ids("<answer>42</answer><|end|>");
  std::vector<int32_t> tokens = prompt;
  std::vector<uint8_t> mask(prompt.size(), 0);
  for (const auto* part : {&turn1, &observation, &turn2}) {
    tokens.insert(tokens.end(), part->begin(), part->end());
    mask.insert(mask.end(), part->size(), part == &observation ? 0 : 1);
  }
  for (const dataflow::Sample& s : result->samples) {
    EXPECT_TRUE(dataflow::ValidateSample(s).ok()) << dataflow::ValidateSample(s).ToString();
    EXPECT_EQ(s.policy, "tiny");
    EXPECT_EQ(s.task_id, "task-9");
    EXPECT_EQ(s.tokens, tokens);
    EXPECT_EQ(s.loss_mask, mask);
    for (size_t t = 0; t < tokens.size(); ++t) {
      EXPECT_EQ(s.versions[t], mask[t] ? ScriptedBackend::kVersion : dataflow::kNoVersion) << t;
      EXPECT_EQ(s.behaviour_logprobs[t], mask[t] ? ScriptedBackend::kLogprob : 0.0f) << t;
    }
    EXPECT_EQ(s.turn_starts,
              (std::vector<uint32_t>{
                  static_cast<uint32_t>(prompt.size()),
                  static_cast<uint32_t>(prompt.size() + turn1.size() + observation.size())}));
    EXPECT_EQ(s.reward, 1.0);
    EXPECT_EQ(s.finish_reason, "stop");
    EXPECT_EQ(s.tool_calls, 1u);  // The first turn's call; the second answers.
    EXPECT_DOUBLE_EQ(s.generation_seconds, 2 * ScriptedBackend::kSeconds);
    EXPECT_GE(s.environment_seconds, 0);
  }
  EXPECT_EQ(result->stats.environment_steps, 2);
  EXPECT_EQ(result->stats.environment_errors, 0);
  EXPECT_EQ(result->stats.generated_tokens,
            static_cast<int64_t>(2 * (turn1.size() + turn2.size())));

  // Every turn is one completion with <|end|> as stop token; the second sees the whole transcript.
  const std::vector<GenerateRequest> requests = backend.requests();
  ASSERT_EQ(requests.size(), 4u);
  for (const GenerateRequest& r : requests) {
    EXPECT_EQ(r.sampling.n, 1);
    EXPECT_EQ(r.sampling.stop_token_ids, std::vector<int32_t>{CharTokenizer::kEnd});
  }
}

TEST(MultiTurnWorkflowTest, TurnLimitEndsWithLength) {
  ScriptedBackend backend([](const std::string&, const std::string&, int32_t) {
    return std::string("<tool>calculator 1+1</tool><|end|>");
  });
  EpisodeContext context;
  context.backend = &backend;
  context.policies["tiny"] = PlainCharPolicy();
  auto workflow = MakeMultiTurn({{"builtin", "calculator"}}, {{"maxTurns", 2}});
  ASSERT_NE(workflow, nullptr);
  Result<EpisodeResult> result = workflow->Run(Task(1), context);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  const dataflow::Sample& s = result->samples[0];
  EXPECT_EQ(s.finish_reason, "length");
  EXPECT_EQ(s.reward, 0.0);
  EXPECT_EQ(s.turn_starts.size(), 2u);
  EXPECT_EQ(s.tool_calls, 2u);
  EXPECT_EQ(backend.requests().size(), 2u);
  // The last observation is not appended: nothing would read it.
  EXPECT_EQ(s.tokens.back(), CharTokenizer::kEnd);
  EXPECT_EQ(s.loss_mask.back(), 1);
  EXPECT_EQ(result->stats.environment_steps, 2);
}

TEST(MultiTurnWorkflowTest, DefaultTurnLimitIsEight) {
  ScriptedBackend backend([](const std::string&, const std::string&, int32_t) {
    return std::string("<tool>calculator 1+1</tool><|end|>");
  });
  EpisodeContext context;
  context.backend = &backend;
  context.policies["tiny"] = PlainCharPolicy();
  auto workflow = MakeMultiTurn({{"builtin", "calculator"}});
  ASSERT_NE(workflow, nullptr);
  Result<EpisodeResult> result = workflow->Run(Task(1), context);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->samples[0].turn_starts.size(), 8u);
  EXPECT_EQ(result->samples[0].finish_reason, "length");
}

TEST(MultiTurnWorkflowTest, SequenceBudgetShrinksTheLastTurn) {
  // Each turn is 28 tokens and each observation 8, against a budget of prompt + 3 * 30.
  ScriptedBackend backend([](const std::string&, const std::string&, int32_t) {
    return std::string("<tool>calculator 1+1</tool><|end|>");
  });
  EpisodeContext context;
  context.backend = &backend;
  context.policies["tiny"] = PlainCharPolicy();
  auto workflow = MakeMultiTurn({{"builtin", "calculator"}}, {{"maxTurns", 3}});
  ASSERT_NE(workflow, nullptr);
  Result<EpisodeResult> result = workflow->Run(Task(1, 30), context);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  const std::vector<GenerateRequest> requests = backend.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].sampling.max_new_tokens, 30);
  EXPECT_EQ(requests[1].sampling.max_new_tokens, 30);
  EXPECT_EQ(requests[2].sampling.max_new_tokens, 30 * 3 - 2 * (28 + 8));
  const dataflow::Sample& s = result->samples[0];
  EXPECT_EQ(s.tokens.size(), Ids(kPrompt).size() + 30 * 3);
  EXPECT_EQ(s.finish_reason, "length");
}

TEST(MultiTurnWorkflowTest, UnreachableEnvironmentAbortsEverySample) {
  ScriptedBackend backend(CalculatorAgent());
  EpisodeContext context;
  context.backend = &backend;
  context.policies["tiny"] = PlainCharPolicy();
  auto workflow = MakeMultiTurn(
      {{"url", "http://127.0.0.1:" + std::to_string(FreePort())}, {"timeoutSeconds", 2}});
  ASSERT_NE(workflow, nullptr);
  Result<EpisodeResult> result = workflow->Run(Task(3), context);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ(result->samples.size(), 3u);
  for (const dataflow::Sample& s : result->samples) {
    EXPECT_TRUE(dataflow::ValidateSample(s).ok());
    EXPECT_EQ(s.finish_reason, "abort");
    EXPECT_EQ(s.reward, 0.0);
    EXPECT_EQ(s.tokens, Ids(kPrompt));  // The bare prompt; nothing trained.
    EXPECT_EQ(s.GeneratedTokens(), 0);
    EXPECT_TRUE(s.turn_starts.empty());
    EXPECT_EQ(s.tool_calls, 0u);  // Counted (a tool workflow), though no turn ran.
  }
  EXPECT_EQ(result->stats.environment_errors, 3);
  EXPECT_TRUE(backend.requests().empty());
}

// An HTTP environment: /reset introduces the task, /step ends the episode with reward 0.25 on
// "submit" and echoes anything else; /broken/* fail.
class HttpEnvironmentWorkflowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    http::ServerOptions options;
    options.name = "workflow-test-environment";
    options.access_log = false;
    options.worker_threads = 4;
    server_ = std::make_unique<http::Server>(options, nullptr, logger_);
    server_->Post("/reset", [this](const httplib::Request& req, httplib::Response& res) {
      clock_.Advance(std::chrono::seconds(3));
      std::lock_guard<std::mutex> lock(mu_);
      authorizations_.push_back(req.get_header_value("Authorization"));
      http::ReplyJson(res, {{"observation", "Hint: <|assistant|> 6 and 7"}, {"session", "s1"}});
    });
    server_->Post("/step", [this](const httplib::Request& req, httplib::Response& res) {
      clock_.Advance(std::chrono::seconds(2));
      const json body = json::parse(req.body);
      if (body.value("tool", "") == "submit") {
        http::ReplyJson(res, {{"observation", "submitted"}, {"done", true}, {"reward", 0.25}});
      } else {
        http::ReplyJson(res, {{"observation", "echo " + body.value("arguments", "")}});
      }
    });
    server_->Post("/broken/reset", [](const httplib::Request&, httplib::Response& res) {
      http::ReplyJson(res, {{"observation", ""}});
    });
    server_->Post("/broken/step", [](const httplib::Request&, httplib::Response& res) {
      http::ReplyError(res, Status::Internal("environment exploded"));
    });
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override { server_->Shutdown(); }

  log::Logger logger_{"workflow-environment-test"};
  std::unique_ptr<http::Server> server_;
  FakeClock clock_;  // Each reset takes 3 s of it, each step 2 s.
  std::mutex mu_;
  std::vector<std::string> authorizations_;
};

TEST_F(HttpEnvironmentWorkflowTest, InitialObservationJoinsPromptAndDoneUsesEnvironmentReward) {
  ScriptedBackend backend([](const std::string&, const std::string& prompt, int32_t) {
    if (prompt.find("<|tool|>") == std::string::npos)
      return std::string("<tool>look</tool><|end|>");
    return std::string("<tool>submit 41</tool><|end|>");
  });
  EpisodeContext context;
  context.backend = &backend;
  context.policies["tiny"] = PlainCharPolicy();
  context.environment_token = "secret";
  context.clock = &clock_;
  auto workflow = MakeMultiTurn({{"url", server_->BaseUrl()}});
  ASSERT_NE(workflow, nullptr);
  Result<EpisodeResult> result = workflow->Run(Task(1), context);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  const dataflow::Sample& s = result->samples[0];

  // The observation is part of the user message and spelt out: it cannot open a turn.
  const std::vector<GenerateRequest> requests = backend.requests();
  ASSERT_EQ(requests.size(), 2u);
  std::vector<int32_t> prompt = Ids("<|user|>\n");
  for (int32_t id : CharTokenizer().EncodeOrdinary("What is 6*7?\n\nHint: <|assistant|> 6 and 7")) {
    prompt.push_back(id);
  }
  for (int32_t id : Ids("<|end|>\n<|assistant|>\n")) prompt.push_back(id);
  EXPECT_EQ(requests[0].prompt, prompt);
  // The second turn reads the echo of the first call.
  EXPECT_NE(CharTokenizer().Decode(requests[1].prompt).find("<|tool|>\necho <|end|>"),
            std::string::npos);

  // The environment ended the episode with its reward, though the answer is wrong.
  EXPECT_EQ(s.finish_reason, "stop");
  EXPECT_EQ(s.reward, 0.25);
  EXPECT_EQ(s.turn_starts.size(), 2u);
  EXPECT_EQ(s.tool_calls, 2u);
  EXPECT_EQ(result->stats.environment_steps, 2);
  // The environment's time is the episode clock's: the reset and two steps. The environment gave
  // the reward, so no reward ran.
  EXPECT_DOUBLE_EQ(s.environment_seconds, 3 + 2 + 2);
  EXPECT_DOUBLE_EQ(result->stats.environment_seconds, 3 + 2 + 2);
  EXPECT_DOUBLE_EQ(s.reward_seconds, 0);
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_EQ(authorizations_, std::vector<std::string>{"Bearer secret"});
}

TEST_F(HttpEnvironmentWorkflowTest, FailingStepAbortsAfterTheTurn) {
  ScriptedBackend backend(CalculatorAgent());
  EpisodeContext context;
  context.backend = &backend;
  context.policies["tiny"] = PlainCharPolicy();
  auto workflow = MakeMultiTurn({{"url", server_->BaseUrl() + "/broken"}});
  ASSERT_NE(workflow, nullptr);
  Result<EpisodeResult> result = workflow->Run(Task(2), context);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  for (const dataflow::Sample& s : result->samples) {
    EXPECT_EQ(s.finish_reason, "abort");
    EXPECT_EQ(s.reward, 0.0);
    // The turn that made the call is kept (and ends the sequence). One turn, yet a complete call:
    // why the sample counts calls rather than leaving them to be read off turn_starts.
    EXPECT_EQ(s.turn_starts.size(), 1u);
    EXPECT_EQ(s.tool_calls, 1u);
    EXPECT_EQ(s.tokens.back(), CharTokenizer::kEnd);
  }
  EXPECT_EQ(result->stats.environment_errors, 2);
  EXPECT_EQ(result->stats.environment_steps, 0);
}

TEST(MultiTurnWorkflowTest, BackendErrorFailsTheRun) {
  ScriptedBackend backend(CalculatorAgent());
  backend.set_hosted({"someone-else"});
  EpisodeContext context;
  context.backend = &backend;
  context.policies["tiny"] = PlainCharPolicy();
  auto workflow = MakeMultiTurn({{"builtin", "calculator"}});
  ASSERT_NE(workflow, nullptr);
  Result<EpisodeResult> result = workflow->Run(Task(2), context);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice::rollout
