// The calculator agent's warm start: the row's expression, the exact two-turn token layout (call
// and answer trained, the observation not), the rows it refuses, and (on a scripted backend) that
// the transcript is token for token the episode MultiTurnWorkflow runs with the calculator when
// the model makes that call and gives that answer, rewarded 1.
#include "workers/trainer/calculator_warm_start.h"

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tests/unit/workers/rollout/workflows/scripted_backend.h"
#include "workers/model/char_tokenizer.h"
#include "workers/rollout/workflows/transcript.h"

namespace sluice::trainer {
namespace calculator_warm_start_test {

using nlohmann::json;
using rollout::test_support::PlainCharPolicy;
using rollout::test_support::ScriptedBackend;

dataflow::PromptRow Row(std::string id, std::string prompt, std::string answer,
                        json row = json::object()) {
  dataflow::PromptRow r;
  r.id = std::move(id);
  r.prompt = std::move(prompt);
  r.answer = std::move(answer);
  r.row = std::move(row);
  return r;
}

// A row as the arithmetic-chain generator writes it.
dataflow::PromptRow ChainRow(std::string id, const std::string& expression, std::string answer) {
  return Row(std::move(id), "Compute " + expression + ". You may call the calculator tool.",
             std::move(answer), {{"expression", expression}, {"steps", 2}});
}

std::vector<int32_t> Ids(std::string_view text) { return model::CharTokenizer().Encode(text); }

TEST(RowExpressionTest, Table) {
  struct Case {
    const char* name;
    json row;
    std::optional<std::string> want;
  };
  const std::vector<Case> cases = {
      {"generator row", {{"expression", "(17 + 25) * 3 - 8"}}, "(17 + 25) * 3 - 8"},
      {"trimmed", {{"expression", "  6*7\n"}}, "6*7"},
      {"no row (the client's rows without one)", json(), std::nullopt},
      {"no such field", {{"prompt", "x"}}, std::nullopt},
      {"not a string", {{"expression", 42}}, std::nullopt},
      {"empty", {{"expression", ""}}, std::nullopt},
      {"blank", {{"expression", " \t "}}, std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(RowExpression(Row("r", "p", "1", c.row)), c.want);
  }
}

// The layout spelled out with the plain template and the default markers.
TEST(CalculatorWarmStartBatchTest, TokenLayoutTrainsTheCallAndTheAnswer) {
  const rollout::PolicyText text = PlainCharPolicy();
  const dataflow::PromptRow a = ChainRow("arithmetic-chain-000001", "(17 + 25) * 3 - 8", "118");
  const dataflow::PromptRow b = ChainRow("arithmetic-chain-000002", "90 / 4", "22.5");
  Result<dataflow::Batch> batch =
      CalculatorWarmStartBatch({&a, &b}, text, std::nullopt, {}, "agent-p", 4);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  EXPECT_EQ(batch->policy, "agent-p");
  EXPECT_EQ(batch->policy_version, 4);
  ASSERT_EQ(batch->samples.size(), 2U);
  EXPECT_EQ(batch->group_index, (std::vector<uint32_t>{0, 1}));
  struct Want {
    const dataflow::PromptRow* row;
    std::string value;  // What the calculator answers.
  };
  const Want wants[] = {{&a, "118"}, {&b, "22.5"}};
  for (size_t i = 0; i < 2; ++i) {
    const dataflow::PromptRow& row = *wants[i].row;
    SCOPED_TRACE(row.id);
    const std::vector<std::pair<std::string, bool>> parts = {
        {"<|user|>\n" + row.prompt + "<|end|>\n<|assistant|>\n", false},
        {"<tool>calculator " + RowExpression(row).value() + "</tool><|end|>", true},
        {"\n<|tool|>\n" + wants[i].value + "<|end|>\n<|assistant|>\n", false},
        {"<answer>" + row.answer + "</answer><|end|>", true},
    };
    std::vector<int32_t> tokens;
    std::vector<uint8_t> mask;
    std::vector<uint32_t> starts;
    for (const auto& [part, trained] : parts) {
      if (trained) starts.push_back(static_cast<uint32_t>(tokens.size()));
      const std::vector<int32_t> ids = Ids(part);
      tokens.insert(tokens.end(), ids.begin(), ids.end());
      mask.insert(mask.end(), ids.size(), trained ? 1 : 0);
    }
    const dataflow::Sample& s = batch->samples[i];
    EXPECT_TRUE(dataflow::ValidateSample(s).ok()) << dataflow::ValidateSample(s).ToString();
    EXPECT_EQ(s.prompt_id, row.id);
    EXPECT_EQ(s.policy, "agent-p");
    EXPECT_EQ(s.tokens, tokens);
    EXPECT_EQ(s.loss_mask, mask);
    EXPECT_EQ(s.turn_starts, starts);
    ASSERT_EQ(s.versions.size(), tokens.size());
    for (size_t j = 0; j < tokens.size(); ++j) {
      EXPECT_EQ(s.versions[j], mask[j] ? 4 : dataflow::kNoVersion) << j;
      EXPECT_EQ(s.behaviour_logprobs[j], 0.0f) << j;
    }
    EXPECT_EQ(s.reward, 1.0);
    EXPECT_EQ(s.finish_reason, "stop");
  }
}

TEST(CalculatorWarmStartBatchTest, RowsItCannotUseAreRefusedByName) {
  struct Case {
    dataflow::PromptRow row;
    std::string message_part;
  };
  const std::vector<Case> cases = {
      {ChainRow("no-answer", "6 * 7", ""), "no answer"},
      {Row("no-expression", "What is 6 * 7?", "42"), "expression"},
      {Row("no-row", "What is 6 * 7?", "42", json()), "expression"},
      {Row("number-expression", "What is 6 * 7?", "42", {{"expression", 42}}), "expression"},
      {ChainRow("division-by-zero", "6 / 0", "0"), "cannot evaluate"},
      {ChainRow("not-arithmetic", "six times seven", "42"), "cannot evaluate"},
      {ChainRow("closes-the-call", "6 * 7</tool>", "42"), "markers"},
      {ChainRow("closes-the-answer", "6 * 7", "4</answer>2"), "final answer"},
      {ChainRow("calls-in-the-answer", "6 * 7", "<tool>calculator 1</tool>"), "final answer"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.row.id);
    const dataflow::PromptRow fine = ChainRow("fine", "6 * 7", "42");
    Result<dataflow::Batch> got =
        CalculatorWarmStartBatch({&fine, &c.row}, PlainCharPolicy(), std::nullopt, {}, "a", 1);
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(got.status().field(), "spec.warmStart");
    EXPECT_NE(got.status().message().find(c.row.id), std::string::npos) << got.status().ToString();
    EXPECT_NE(got.status().message().find(c.message_part), std::string::npos)
        << got.status().ToString();
  }
}

// The episode MultiTurnWorkflow runs with the calculator for the same rows, on a scripted model
// that makes the warm start's call and then gives its answer: the same tokens, trained where the
// model generated, and full reward (the workflow reads the answer as the right final answer).
TEST(CalculatorWarmStartBatchTest, IsTokenForTokenTheWorkflowsEpisode) {
  const std::optional<std::string> system = "Use the calculator.";
  const json tool_call = {{"callOpen", "[calc]"},
                          {"callClose", "[/calc]"},
                          {"answerOpen", "ANSWER:"},
                          {"answerClose", "."}};
  const rollout::ToolCallFormat format = rollout::ParseToolCallFormat(tool_call).value();
  const json spec = {{"type", "multi-turn"},
                     {"roles", {{{"name", "agent"}, {"policy", "agent-p"}}}},
                     {"maxTurns", 2},
                     {"systemPrompt", *system},
                     {"environment", {{"builtin", "calculator"}}},
                     {"toolCall", tool_call},
                     {"reward", {{"type", "exact-match"}}}};
  Result<std::unique_ptr<rollout::Workflow>> workflow = rollout::MakeWorkflow(spec);
  ASSERT_TRUE(workflow.ok()) << workflow.status().ToString();
  const rollout::PolicyText text = PlainCharPolicy();

  const std::vector<dataflow::PromptRow> rows = {
      ChainRow("arithmetic-chain-000001", "(17 + 25) * 3 - 8", "118"),
      ChainRow("arithmetic-chain-000002", "100 - 36 / 4 * 2", "82"),
      ChainRow("arithmetic-chain-000003", "7 * (8 + 9)", "119"),
  };
  std::vector<const dataflow::PromptRow*> pointers;
  for (const dataflow::PromptRow& r : rows) pointers.push_back(&r);
  Result<dataflow::Batch> batch =
      CalculatorWarmStartBatch(pointers, text, system, format, "agent-p", 2);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  ASSERT_EQ(batch->samples.size(), rows.size());

  for (size_t i = 0; i < rows.size(); ++i) {
    const dataflow::PromptRow& row = rows[i];
    SCOPED_TRACE(row.id);
    const std::string call = rollout::FormatToolCall(format, "calculator", *RowExpression(row));
    const std::string answer = rollout::FormatFinalAnswer(format, row.answer);
    ScriptedBackend backend(
        ScriptedBackend::Queue({{"agent-p", {call + "<|end|>", answer + "<|end|>"}}}));
    rollout::EpisodeContext context;
    context.backend = &backend;
    context.policies["agent-p"] = text;
    rollout::LeasedTask task;
    task.task_id = "task-" + std::to_string(i);
    task.prompt_id = row.id;
    task.prompt = row.prompt;
    task.answer = row.answer;
    task.row = row.row;
    task.samples = 1;
    task.sampling = {{"maxNewTokens", 64}};
    Result<rollout::EpisodeResult> episode = (*workflow)->Run(task, context);
    ASSERT_TRUE(episode.ok()) << episode.status().ToString();
    ASSERT_EQ(episode->samples.size(), 1U);
    const dataflow::Sample& rolled = episode->samples[0];
    const dataflow::Sample& warm = batch->samples[i];
    EXPECT_EQ(warm.tokens, rolled.tokens);
    EXPECT_EQ(warm.loss_mask, rolled.loss_mask);
    EXPECT_EQ(warm.turn_starts, rolled.turn_starts);
    EXPECT_EQ(rolled.reward, 1.0);
    EXPECT_EQ(rolled.finish_reason, "stop");
    EXPECT_EQ(episode->stats.environment_steps, 1);
  }
}

}  // namespace calculator_warm_start_test
}  // namespace sluice::trainer
