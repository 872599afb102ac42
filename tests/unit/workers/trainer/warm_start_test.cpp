#include "workers/trainer/warm_start.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "workers/model/char_tokenizer.h"
#include "workers/model/chat_template.h"
#include "workers/rollout/workflows/transcript.h"

namespace sluice::trainer {
namespace {

rollout::PolicyText CharText() {
  rollout::PolicyText t;
  t.tokenizer = std::make_shared<const model::CharTokenizer>();
  t.chat_template =
      std::make_shared<const model::ChatTemplate>(model::ChatTemplate::ByName("plain").value());
  return t;
}

dataflow::PromptRow Row(std::string id, std::string prompt, std::string answer) {
  dataflow::PromptRow r;
  r.id = std::move(id);
  r.prompt = std::move(prompt);
  r.answer = std::move(answer);
  return r;
}

TEST(WarmStartRowsTest, VisitsEveryRowOncePerEpochInAShuffledOrder) {
  struct Case {
    size_t rows;
    int64_t n;
  };
  for (const Case& c : {Case{10, 3}, Case{10, 10}, Case{7, 4}, Case{5, 12}}) {
    // Steps 0.. cover rows·3 positions: every row exactly 3 times, each epoch a permutation.
    std::vector<size_t> walk;
    for (int64_t step = 0; static_cast<size_t>(step * c.n) < c.rows * 3; ++step) {
      for (size_t i : WarmStartRows(c.rows, c.n, step, 42)) walk.push_back(i);
    }
    walk.resize(c.rows * 3);
    for (size_t e = 0; e < 3; ++e) {
      std::set<size_t> epoch(walk.begin() + e * c.rows, walk.begin() + (e + 1) * c.rows);
      EXPECT_EQ(epoch.size(), c.rows) << "rows " << c.rows << " n " << c.n << " epoch " << e;
      EXPECT_LT(*epoch.rbegin(), c.rows);
    }
  }
  // Deterministic from the seed; another seed gives another order.
  EXPECT_EQ(WarmStartRows(100, 10, 3, 1), WarmStartRows(100, 10, 3, 1));
  EXPECT_NE(WarmStartRows(100, 10, 0, 1), WarmStartRows(100, 10, 0, 2));
  // Shuffled, not 0, 1, 2, ...
  std::vector<size_t> identity(10);
  for (size_t i = 0; i < 10; ++i) identity[i] = i;
  EXPECT_NE(WarmStartRows(10, 10, 0, 7), identity);
  EXPECT_TRUE(WarmStartRows(0, 10, 0, 7).empty());
  EXPECT_TRUE(WarmStartRows(10, 0, 0, 7).empty());
}

TEST(WarmStartBatchTest, RendersThePromptAsTheWorkflowDoesAndTrainsOnTheAnswerOnly) {
  const rollout::PolicyText text = CharText();
  const dataflow::PromptRow a = Row("arithmetic-000001", "What is 2 + 3?", "5");
  const dataflow::PromptRow b = Row("arithmetic-000002", "What is 9 * 9?", "81");
  const std::optional<std::string> system = "Answer briefly.";
  Result<dataflow::Batch> batch = WarmStartBatch({&a, &b}, text, system, "actor", 7);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  EXPECT_EQ(batch->policy, "actor");
  ASSERT_EQ(batch->samples.size(), 2u);
  EXPECT_EQ(batch->group_index, (std::vector<uint32_t>{0, 1}));
  const int32_t end = rollout::EndOfTurnId(text).value();
  for (size_t i = 0; i < 2; ++i) {
    const dataflow::PromptRow& row = i == 0 ? a : b;
    const dataflow::Sample& s = batch->samples[i];
    EXPECT_EQ(s.prompt_id, row.id);
    EXPECT_EQ(s.policy, "actor");
    // Exactly the single-turn workflow's prompt tokens, then the answer, then end of turn.
    std::vector<int32_t> expected =
        rollout::EncodeConversation(text, rollout::PromptMessages(system, row.prompt), true)
            .value();
    const size_t prompt = expected.size();
    for (int32_t t : text.tokenizer->EncodeOrdinary(row.answer)) expected.push_back(t);
    expected.push_back(end);
    EXPECT_EQ(s.tokens, expected);
    ASSERT_EQ(s.loss_mask.size(), s.tokens.size());
    ASSERT_EQ(s.versions.size(), s.tokens.size());
    ASSERT_EQ(s.behaviour_logprobs.size(), s.tokens.size());
    for (size_t j = 0; j < s.tokens.size(); ++j) {
      EXPECT_EQ(s.loss_mask[j], j >= prompt ? 1 : 0) << j;
      EXPECT_EQ(s.versions[j], j >= prompt ? 7 : dataflow::kNoVersion) << j;
    }
    EXPECT_EQ(static_cast<int>(s.tokens.size() - prompt), static_cast<int>(row.answer.size()) + 1);
  }
}

TEST(WarmStartBatchTest, ARowWithoutAnAnswerIsRefusedByName) {
  const dataflow::PromptRow a = Row("prompts-000003", "Say something.", "");
  Result<dataflow::Batch> batch = WarmStartBatch({&a}, CharText(), std::nullopt, "actor", 0);
  ASSERT_FALSE(batch.ok());
  EXPECT_EQ(batch.status().field(), "spec.warmStart");
  EXPECT_NE(batch.status().message().find("prompts-000003"), std::string::npos);
}

}  // namespace
}  // namespace sluice::trainer
