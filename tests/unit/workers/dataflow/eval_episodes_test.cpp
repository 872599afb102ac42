// The evaluation figures read off whole episodes (eval_episodes.h): other policies' rewards split
// by the primary policy's correctness, and the tool-call share, as table cases; the episode of a
// sample; the report keys; the snapshot form.
#include "workers/dataflow/algorithms/eval_episodes.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "workers/dataflow/algorithms/eval_metrics.h"

namespace sluice::dataflow {
namespace {

// A solve-and-verify episode: the solver's answer correct or not, the verifier's reward.
EvalEpisode Verified(bool correct, double verifier_reward) {
  return {correct, {{"verifier", verifier_reward}}, std::nullopt};
}

// A multi-turn episode with `calls` complete tool calls.
EvalEpisode Agent(bool correct, uint32_t calls) { return {correct, {}, calls}; }

TEST(DataflowEvalEpisodesTest, FullReward) {
  EXPECT_TRUE(IsFullReward(1.0));
  EXPECT_TRUE(IsFullReward(1.0 - 1e-12));
  EXPECT_TRUE(IsFullReward(2.0));
  EXPECT_FALSE(IsFullReward(0.999));
  EXPECT_FALSE(IsFullReward(0.5));
  EXPECT_FALSE(IsFullReward(-1.0));
}

TEST(DataflowEvalEpisodesTest, OtherPoliciesSplitByCorrectness) {
  struct Case {
    std::string name;
    std::vector<EvalEpisode> episodes;
    std::vector<PolicyEvalFigures> want;
  };
  const std::vector<Case> cases = {
      {"no episodes", {}, {}},
      {"single-policy episodes: no figures", {Agent(true, 1), Agent(false, 0)}, {}},
      {"a verifier that always says no: 0 on correct answers, 1 on wrong ones",
       {Verified(true, 0), Verified(true, 0), Verified(false, 1), Verified(false, 1)},
       {{"verifier", 4, 2, 0.5, 0.0, 1.0}}},
      {"a perfect verifier",
       {Verified(true, 1), Verified(false, 1), Verified(false, 1)},
       {{"verifier", 3, 1, 1.0, 1.0, 1.0}}},
      {"no correct answer: the mean when correct is undefined",
       {Verified(false, 1), Verified(false, 0)},
       {{"verifier", 2, 0, 0.5, std::nullopt, 0.5}}},
      {"only correct answers: the mean when wrong is undefined",
       {Verified(true, 1), Verified(true, 1), Verified(true, 0), Verified(true, 1)},
       {{"verifier", 4, 4, 0.75, 0.75, std::nullopt}}},
      {"episodes without the policy do not count for it",
       {Verified(true, 1), Agent(false, 2), Verified(false, 0)},
       {{"verifier", 2, 1, 0.5, 1.0, 0.0}}},
      {"several other policies: one entry each, sorted by name, each over its own episodes",
       {{true, {{"zeta", 1.0}, {"alpha", 0.25}}, std::nullopt},
        {false, {{"zeta", 0.0}}, std::nullopt},
        {false, {{"alpha", 0.75}}, std::nullopt}},
       {{"alpha", 2, 1, 0.5, 0.25, 0.75}, {"zeta", 2, 1, 0.5, 1.0, 0.0}}},
      {"rewards outside [0, 1] are averaged as they are",
       {{true, {{"critic", -1.0}}, std::nullopt}, {false, {{"critic", 3.0}}, std::nullopt}},
       {{"critic", 2, 1, 1.0, -1.0, 3.0}}},
  };
  for (const Case& c : cases) {
    const EvalEpisodeFigures got = AggregateEvalEpisodes(c.episodes);
    EXPECT_EQ(got.policies, c.want) << c.name;
  }
}

TEST(DataflowEvalEpisodesTest, ToolCallShare) {
  struct Case {
    std::string name;
    std::vector<EvalEpisode> episodes;
    int64_t counted;
    int64_t calling;
    std::optional<double> share;
  };
  const std::vector<Case> cases = {
      {"no episodes", {}, 0, 0, std::nullopt},
      {"no episode carries a count (no tools): no share",
       {Verified(true, 1), Verified(false, 0)},
       0,
       0,
       std::nullopt},
      {"no calls", {Agent(true, 0), Agent(false, 0)}, 2, 0, 0.0},
      {"one call or several count alike",
       {Agent(true, 1), Agent(false, 0), Agent(false, 5), Agent(true, 0)},
       4,
       2,
       0.5},
      {"episodes without a count are left out",
       {Agent(true, 2), Verified(true, 1), Agent(false, 0), Agent(false, 1)},
       3,
       2,
       2.0 / 3.0},
      {"every episode called", {Agent(false, 1)}, 1, 1, 1.0},
  };
  for (const Case& c : cases) {
    const EvalEpisodeFigures got = AggregateEvalEpisodes(c.episodes);
    EXPECT_EQ(got.tool_call_episodes, c.counted) << c.name;
    EXPECT_EQ(got.episodes_calling_tools, c.calling) << c.name;
    EXPECT_EQ(got.tool_call_share, c.share) << c.name;
  }
}

TEST(DataflowEvalEpisodesTest, EpisodeOfASample) {
  Sample duo;
  duo.policies = {"solver", "verifier"};
  duo.policy_rewards = {1.0, 0.0};
  const EvalEpisode e = EvalEpisodeOf(duo, "solver", true);
  EXPECT_TRUE(e.correct);
  EXPECT_EQ(e.others, (std::vector<PolicyReward>{{"verifier", 0.0}}));
  EXPECT_FALSE(e.tool_calls.has_value());

  Sample agent;
  agent.policy = "agent";
  agent.reward = 1.0;
  agent.tool_calls = 3;
  const EvalEpisode a = EvalEpisodeOf(agent, "agent", false);
  EXPECT_FALSE(a.correct);
  EXPECT_TRUE(a.others.empty());
  EXPECT_EQ(a.tool_calls, 3u);
}

TEST(DataflowEvalEpisodesTest, ReportKeysOnlyForFiguresThatExist) {
  nlohmann::json none = nlohmann::json::object();
  AddEvalEpisodeFigures(AggregateEvalEpisodes(std::vector<EvalEpisode>{}), &none);
  EXPECT_EQ(none, nlohmann::json::object());

  nlohmann::json report = nlohmann::json::object();
  AddEvalEpisodeFigures(AggregateEvalEpisodes(std::vector<EvalEpisode>{
                            Verified(false, 1), Verified(false, 0), Agent(true, 1)}),
                        &report);
  ASSERT_EQ(report["policies"].size(), 1u);
  const nlohmann::json& v = report["policies"][0];
  EXPECT_EQ(v["policy"], "verifier");
  EXPECT_EQ(v["episodes"], 2);
  EXPECT_EQ(v["correct_episodes"], 0);
  EXPECT_DOUBLE_EQ(v["mean_reward"].get<double>(), 0.5);
  EXPECT_FALSE(v.contains("mean_reward_when_correct"));  // No correct answer: undefined.
  EXPECT_DOUBLE_EQ(v["mean_reward_when_wrong"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(report["tool_call_share"].get<double>(), 1.0);
  EXPECT_EQ(report["tool_call_episodes"], 1);
  EXPECT_EQ(report["episodes_calling_tools"], 1);
}

TEST(DataflowEvalEpisodesTest, SnapshotFormRoundTrips) {
  const std::vector<EvalEpisode> episodes = {
      Verified(true, 1), Agent(false, 0), Agent(true, 4), {false, {}, std::nullopt}};
  const nlohmann::json j = EvalEpisodesToJson(episodes);
  EXPECT_EQ(EvalEpisodesFromJson(j), episodes);
  EXPECT_EQ(EvalEpisodesFromJson(nlohmann::json::array()), std::vector<EvalEpisode>{});
  EXPECT_THROW(EvalEpisodesFromJson(nlohmann::json::parse(R"([{"others": []}])")),
               nlohmann::json::exception);
  EXPECT_THROW(EvalEpisodesFromJson(nlohmann::json::parse(R"({"correct": true})")),
               nlohmann::json::exception);
}

// AggregateEval carries the figures over every item's episodes, and refuses episodes that are
// not one per completion.
TEST(DataflowEvalEpisodesTest, AggregateEvalCarriesTheFigures) {
  EvalItem a{"d", "a", {1, 0}, {1, 0}, {Verified(true, 1), Verified(false, 0)}};
  EvalItem b{"d", "b", {0}, {0}, {Verified(false, 1)}};
  EvalItem bare{"d", "c", {1}, {1}};  // No episodes (a snapshot from before they were kept).
  Result<EvalReport> r = AggregateEval(std::vector<EvalItem>{a, b, bare}, 1);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->episodes.policies.size(), 1u);
  EXPECT_EQ(r->episodes.policies[0], (PolicyEvalFigures{"verifier", 3, 1, 2.0 / 3.0, 1.0, 0.5}));
  EXPECT_DOUBLE_EQ(r->overall_avg_at_k, 0.5);  // 2 of 4 completions; episodes change nothing.

  EvalItem wrong = a;
  wrong.episodes.pop_back();
  Result<EvalReport> refused = AggregateEval(std::vector<EvalItem>{wrong}, 1);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().field(), "episodes");
}

}  // namespace
}  // namespace sluice::dataflow
