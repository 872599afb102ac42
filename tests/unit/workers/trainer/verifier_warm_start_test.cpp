// The verifier's warm start: wrong answers that are never the right one, a deterministic half-and-
// half split of verdicts, the exact token layout, and (on a scripted backend) that the transcript
// is token for token what SolveAndVerifyWorkflow shows its verifier, with the verdict the
// workflow rewards.
#include "workers/trainer/verifier_warm_start.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "tests/unit/workers/rollout/workflows/scripted_backend.h"
#include "workers/model/char_tokenizer.h"
#include "workers/rollout/workflows/solve_and_verify_workflow.h"
#include "workers/rollout/workflows/transcript.h"

namespace sluice::trainer {
namespace verifier_warm_start_test {

using nlohmann::json;
using rollout::test_support::PlainCharPolicy;
using rollout::test_support::ScriptedBackend;

dataflow::PromptRow Row(std::string id, std::string prompt, std::string answer) {
  dataflow::PromptRow r;
  r.id = std::move(id);
  r.prompt = std::move(prompt);
  r.answer = std::move(answer);
  return r;
}

std::vector<int32_t> Ids(std::string_view text) { return model::CharTokenizer().Encode(text); }

std::optional<int64_t> AsInteger(std::string_view s) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// Same length, exactly one position differs, and it is a digit on both sides.
bool OneDigitChanged(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  int changed = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] == b[i]) continue;
    ++changed;
    if (a[i] < '0' || a[i] > '9' || b[i] < '0' || b[i] > '9') return false;
  }
  return changed == 1;
}

TEST(PerturbAnswerTest, NeverTheAnswerAndAlwaysANearMistake) {
  const std::string int_max = std::to_string(std::numeric_limits<int64_t>::max());
  const std::string int_min = std::to_string(std::numeric_limits<int64_t>::min());
  const std::vector<std::string> answers = {
      "42",  "0",   "7",    "-7",     "007",   "-0",    "100",
      "3.5", "1/2", "0.05", "x = 12", int_max, int_min, "123456789012345678901234567890"};
  for (const std::string& answer : answers) {
    SCOPED_TRACE(answer);
    const std::optional<int64_t> value = AsInteger(answer);
    std::set<std::string> seen;
    for (uint64_t key = 0; key < 256; ++key) {
      const std::optional<std::string> wrong = PerturbAnswer(answer, key * 0x9e3779b97f4a7c15ULL);
      ASSERT_TRUE(wrong.has_value());
      EXPECT_NE(*wrong, answer);
      EXPECT_EQ(PerturbAnswer(answer, key * 0x9e3779b97f4a7c15ULL), wrong);  // Deterministic.
      seen.insert(*wrong);
      const std::optional<int64_t> moved = value ? AsInteger(*wrong) : std::nullopt;
      // Differences of at most 3 (int64 extremes cannot overflow: the move would have).
      const bool near = value && moved && *moved != *value &&
                        (*moved > *value ? *moved - *value : *value - *moved) <= 3;
      EXPECT_TRUE(near || OneDigitChanged(answer, *wrong)) << *wrong;
      if (value && !near && answer.size() > 1 && answer[0] != '-' && answer[0] != '0') {
        EXPECT_NE((*wrong)[0], '0') << *wrong;  // No new leading zero.
      }
    }
    EXPECT_GT(seen.size(), 3U);  // Varied, not one fixed mistake.
  }
  // Integers get both kinds of mistakes: moves (39..45) and changed digits (e.g. 92).
  std::set<std::string> forty_two;
  for (uint64_t key = 0; key < 256; ++key) forty_two.insert(*PerturbAnswer("42", key * 7919));
  EXPECT_TRUE(forty_two.count("39") + forty_two.count("40") + forty_two.count("44") +
                  forty_two.count("45") >
              0U);
  EXPECT_GT(forty_two.size(), 6U);  // More than the six moves.
  // Nothing numeric to get wrong.
  for (const char* answer : {"", "Paris", "yes", "-"}) {
    EXPECT_FALSE(PerturbAnswer(answer, 12345).has_value()) << answer;
  }
}

TEST(PickVerifierCandidateTest, HalfTheRowsShowTheAnswerDeterministicallyPerSeed) {
  const dataflow::PromptRow row = Row("arithmetic-000001", "What is 100 + 23?", "123");
  constexpr size_t kRows = 2000;
  std::vector<std::vector<bool>> verdicts;
  for (const uint64_t seed : {uint64_t{1}, uint64_t{2}, uint64_t{0xfeedULL}}) {
    SCOPED_TRACE(seed);
    std::vector<bool> correct;
    for (size_t index = 0; index < kRows; ++index) {
      Result<VerifierCandidate> c = PickVerifierCandidate(row, index, seed);
      ASSERT_TRUE(c.ok()) << c.status().ToString();
      EXPECT_EQ(c->correct, c->answer == row.answer) << index;
      Result<VerifierCandidate> again = PickVerifierCandidate(row, index, seed);
      ASSERT_TRUE(again.ok());
      EXPECT_EQ(again->answer, c->answer);
      correct.push_back(c->correct);
    }
    const auto yes = std::count(correct.begin(), correct.end(), true);
    EXPECT_GT(yes, static_cast<int64_t>(kRows * 45 / 100));
    EXPECT_LT(yes, static_cast<int64_t>(kRows * 55 / 100));
    verdicts.push_back(std::move(correct));
  }
  EXPECT_NE(verdicts[0], verdicts[1]);  // Another seed, other rows.
  EXPECT_NE(verdicts[0], verdicts[2]);
}

TEST(PickVerifierCandidateTest, RowsItCannotUseAreRefusedByName) {
  struct Case {
    dataflow::PromptRow row;
    std::string message_part;
  };
  const std::vector<Case> cases = {
      {Row("prompts-000003", "Say something.", ""), "no answer"},
      {Row("prompts-000004", "Capital of France?", "Paris"), "without a digit"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.row.id);
    // Refused whatever verdict the row draws.
    for (size_t index = 0; index < 8; ++index) {
      Result<VerifierCandidate> got = PickVerifierCandidate(c.row, index, 3);
      ASSERT_FALSE(got.ok());
      EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
      EXPECT_EQ(got.status().field(), "spec.warmStart");
      EXPECT_NE(got.status().message().find(c.row.id), std::string::npos);
      EXPECT_NE(got.status().message().find(c.message_part), std::string::npos)
          << got.status().ToString();
    }
    const std::vector<dataflow::PromptRow> split = {c.row};
    EXPECT_FALSE(
        VerifierWarmStartBatch(split, {0}, PlainCharPolicy(), std::nullopt, {}, 3, "judge", 1)
            .ok());
  }
  const std::vector<dataflow::PromptRow> split = {Row("r", "What is 1 + 1?", "2")};
  Result<dataflow::Batch> outside =
      VerifierWarmStartBatch(split, {1}, PlainCharPolicy(), std::nullopt, {}, 3, "judge", 1);
  EXPECT_EQ(outside.status().code(), StatusCode::kInvalidArgument);
}

TEST(VerifierTraceTest, ComparesCharacterByCharacter) {
  struct Case {
    const char* candidate;
    const char* reference;
    const char* want;
  };
  const Case cases[] = {
      {"1285", "1284", "11= 22= 88= 54x "},
      {"1284", "1284", "11= 22= 88= 44= "},
      {"12", "123", "11= 22= _3x "},       // Too short: the missing place is wrong.
      {"1234", "12", "11= 22= 3_x 4_x "},  // Too long.
      {"", "7", "_7x "},
      {"", "", ""},
      {"_", "", "__x "},  // A '_' past the reference's end still differs from nothing.
  };
  for (const Case& c : cases) {
    EXPECT_EQ(VerifierTrace(c.candidate, c.reference), c.want) << c.candidate << " " << c.reference;
  }
}

// The layout spelled out with the plain template: only the trace, the verdict and its end are
// trained.
TEST(VerifierWarmStartBatchTest, TokenLayoutTrainsTheTraceAndVerdictOnly) {
  const rollout::PolicyText text = PlainCharPolicy();
  std::vector<dataflow::PromptRow> split;
  for (int i = 0; i < 16; ++i) {
    split.push_back(Row("arithmetic-" + std::to_string(i), "What is " + std::to_string(i) + " * 7?",
                        std::to_string(i * 7)));
  }
  // Every row (so both verdicts occur), shuffled, one twice.
  const std::vector<size_t> picked = {3, 0, 15, 7, 7, 9, 12, 1, 2, 4, 5, 6, 8, 10, 11, 13, 14};
  for (const rollout::ToolCallFormat& format :
       {rollout::ToolCallFormat{}, rollout::ToolCallFormat{"<t>", "</t>", "[[", "]]"}}) {
    SCOPED_TRACE(format.answer_open);
    Result<dataflow::Batch> batch =
        VerifierWarmStartBatch(split, picked, text, std::nullopt, format, 11, "judge", 5);
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    EXPECT_EQ(batch->policy, "judge");
    EXPECT_EQ(batch->policy_version, 5);
    ASSERT_EQ(batch->samples.size(), picked.size());
    std::vector<uint32_t> groups(picked.size());
    for (size_t k = 0; k < groups.size(); ++k) groups[k] = static_cast<uint32_t>(k);
    EXPECT_EQ(batch->group_index, groups);
    bool saw_yes = false;
    bool saw_no = false;
    for (size_t k = 0; k < picked.size(); ++k) {
      const dataflow::PromptRow& row = split[picked[k]];
      SCOPED_TRACE(row.id);
      const VerifierCandidate candidate = PickVerifierCandidate(row, picked[k], 11).value();
      (candidate.correct ? saw_yes : saw_no) = true;
      const std::string verdict = VerifierTrace(candidate.answer, row.answer) + format.answer_open +
                                  (candidate.correct ? "yes" : "no") + format.answer_close +
                                  "<|end|>";
      const std::string context = "<|user|>\n" + row.prompt + "<|end|>\n<|assistant|>\n" +
                                  candidate.answer + "<|end|>\n<|user|>\n" +
                                  std::string(rollout::SolveAndVerifyWorkflow::kVerifyInstruction) +
                                  "<|end|>\n<|assistant|>\n";
      const dataflow::Sample& s = batch->samples[k];
      EXPECT_TRUE(dataflow::ValidateSample(s).ok()) << dataflow::ValidateSample(s).ToString();
      EXPECT_EQ(s.prompt_id, row.id);
      EXPECT_EQ(s.policy, "judge");
      EXPECT_TRUE(s.token_owner.empty());
      std::vector<int32_t> want = Ids(context);
      const size_t trained_from = want.size();
      for (int32_t t : Ids(verdict)) want.push_back(t);
      EXPECT_EQ(s.tokens, want);
      EXPECT_EQ(s.turn_starts, std::vector<uint32_t>{static_cast<uint32_t>(trained_from)});
      ASSERT_EQ(s.loss_mask.size(), want.size());
      for (size_t j = 0; j < want.size(); ++j) {
        const bool trained = j >= trained_from;
        EXPECT_EQ(s.loss_mask[j], trained ? 1 : 0) << j;
        EXPECT_EQ(s.versions[j], trained ? 5 : dataflow::kNoVersion) << j;
        EXPECT_EQ(s.behaviour_logprobs[j], 0.0f) << j;
      }
      EXPECT_EQ(s.reward, 1.0);
      EXPECT_EQ(s.finish_reason, "stop");
    }
    EXPECT_TRUE(saw_yes && saw_no);  // Both verdicts among 16 rows.
  }
}

// What the workflow shows its verifier for the same row and candidate, on a scripted backend
// whose solver writes the candidate and whose verifier writes the warm start's verdict: the same
// tokens, the verifier's turn exactly where the warm start trains, and a verifier reward of 1
// (the workflow agrees the verdict is right).
TEST(VerifierWarmStartBatchTest, IsTokenForTokenWhatTheWorkflowShowsItsVerifier) {
  const std::optional<std::string> system = "Answer with a number.";
  const json tool_call = {{"answerOpen", "<<"}, {"answerClose", ">>"}};
  const rollout::ToolCallFormat format = rollout::ParseToolCallFormat(tool_call).value();
  const json spec = {
      {"type", "solve-and-verify"},
      {"roles",
       {{{"name", "solver"}, {"policy", "solver-p"}}, {{"name", "verifier"}, {"policy", "judge"}}}},
      {"maxTurns", 1},  // No retry after a "no": one solver turn, one verdict.
      {"systemPrompt", *system},
      {"toolCall", tool_call},
      {"reward", {{"type", "exact-match"}}}};
  Result<std::unique_ptr<rollout::Workflow>> workflow = rollout::MakeWorkflow(spec);
  ASSERT_TRUE(workflow.ok()) << workflow.status().ToString();
  const rollout::PolicyText text = PlainCharPolicy();

  std::vector<dataflow::PromptRow> split;
  for (int i = 0; i < 12; ++i) {
    split.push_back(Row("arithmetic-" + std::to_string(i),
                        "What is " + std::to_string(i) + " + " + std::to_string(3 * i) + "?",
                        std::to_string(4 * i)));
  }
  std::vector<size_t> picked(split.size());
  for (size_t i = 0; i < picked.size(); ++i) picked[i] = i;
  Result<dataflow::Batch> batch =
      VerifierWarmStartBatch(split, picked, text, system, format, 29, "judge", 3);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  ASSERT_EQ(batch->samples.size(), split.size());

  for (size_t i = 0; i < split.size(); ++i) {
    SCOPED_TRACE(split[i].id);
    const VerifierCandidate candidate = PickVerifierCandidate(split[i], i, 29).value();
    const std::string verdict =
        VerifierTrace(candidate.answer, split[i].answer) +
        rollout::FormatFinalAnswer(format, candidate.correct ? "yes" : "no");
    ScriptedBackend backend(ScriptedBackend::Queue(
        {{"solver-p", {candidate.answer + "<|end|>"}}, {"judge", {verdict + "<|end|>"}}}));
    rollout::EpisodeContext context;
    context.backend = &backend;
    context.policies["solver-p"] = text;
    context.policies["judge"] = text;
    rollout::LeasedTask task;
    task.task_id = "task-" + std::to_string(i);
    task.prompt_id = split[i].id;
    task.prompt = split[i].prompt;
    task.answer = split[i].answer;
    task.samples = 1;
    task.sampling = {{"maxNewTokens", 64}};
    Result<rollout::EpisodeResult> episode = (*workflow)->Run(task, context);
    ASSERT_TRUE(episode.ok()) << episode.status().ToString();
    ASSERT_EQ(episode->samples.size(), 1U);
    const dataflow::Sample& rolled = episode->samples[0];
    const dataflow::Sample& warm = batch->samples[i];

    EXPECT_EQ(warm.tokens, rolled.tokens);
    // The verifier's prompt at rollout is everything before the verdict the warm start trains.
    const std::vector<rollout::GenerateRequest> requests = backend.requests();
    ASSERT_EQ(requests.size(), 2U);
    ASSERT_EQ(warm.turn_starts.size(), 1U);
    EXPECT_EQ(requests[1].prompt,
              std::vector<int32_t>(warm.tokens.begin(), warm.tokens.begin() + warm.turn_starts[0]));
    // Trained exactly where the verifier generated (owner 1).
    ASSERT_EQ(rolled.token_owner.size(), warm.loss_mask.size());
    for (size_t j = 0; j < warm.loss_mask.size(); ++j) {
      EXPECT_EQ(warm.loss_mask[j], rolled.token_owner[j] == 1 ? 1 : 0) << j;
    }
    // The workflow reads the verdict as meant and rewards it.
    ASSERT_EQ(rolled.policy_rewards.size(), 2U);
    EXPECT_EQ(rolled.policy_rewards[1], 1.0);
    EXPECT_EQ(rolled.policy_rewards[0], candidate.correct ? 1.0 : 0.0);
  }
}

}  // namespace verifier_warm_start_test
}  // namespace sluice::trainer
