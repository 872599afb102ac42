// Tests of the eval lines `sluice run` prints after success (eval_summary.h): the earliest and
// latest evaluation per Dataflow of the views seen during the run, as table cases: accuracy, the
// verifier's agreement (solve-and-verify) and the tool-call share (multi-turn).
#include "localcluster/cli/eval_summary.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace sluice::cli {
namespace {

// A view of `dataflow` with its evaluation (version, accuracy); nullopt leaves it out.
DataflowView View(const std::string& dataflow, std::optional<int64_t> version,
                  std::optional<double> accuracy) {
  DataflowView view;
  view.name = dataflow;
  view.workflow = "single-turn";
  view.eval_version = version;
  view.eval_accuracy = accuracy;
  return view;
}

// A solve-and-verify Dataflow's view: the solver's accuracy and the verifier's agreement overall,
// on correct and on wrong answers (nullopt: the round had no such answer).
DataflowView Verified(int64_t version, double accuracy, double agreement,
                      std::optional<double> on_correct, std::optional<double> on_wrong) {
  DataflowView view = View("mas", version, accuracy);
  view.workflow = "solve-and-verify";
  view.eval_policies = {{"verifier", agreement, on_correct, on_wrong}};
  return view;
}

// A multi-turn Dataflow's view with the share of episodes that called a tool.
DataflowView Agent(int64_t version, double accuracy, std::optional<double> share) {
  DataflowView view = View("calc", version, accuracy);
  view.workflow = "multi-turn";
  view.eval_tool_call_share = share;
  return view;
}

TEST(EvalSummaryTest, FormatPercent) {
  struct Case {
    double share;
    std::string want;
  };
  for (const Case& c : std::vector<Case>{{0.125, "12.5"},
                                         {0.41, "41.0"},
                                         {0.333, "33.3"},
                                         {0, "0.0"},
                                         {1, "100.0"},
                                         {0.9999, "100.0"},
                                         {0.1234, "12.3"}}) {
    EXPECT_EQ(FormatPercent(c.share), c.want) << c.share;
  }
}

TEST(EvalSummaryTest, AccuracyLines) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  struct Case {
    std::string name;
    std::vector<DataflowView> views;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"no views", {}, ""},
      {"no evaluation in any view",
       {View("d", std::nullopt, std::nullopt), View("d", std::nullopt, std::nullopt)},
       ""},
      {"a version without an accuracy, or the reverse, does not count",
       {View("d", 10, std::nullopt), View("d", std::nullopt, 0.5)},
       ""},
      {"a non-finite accuracy does not count", {View("d", 10, nan)}, ""},
      {"one evaluation, seen in many views",
       {View("d", std::nullopt, std::nullopt), View("d", 200, 0.41), View("d", 200, 0.41)},
       "eval accuracy: 41.0% at version 200 (no later evaluation)\n"},
      {"before and after",
       {View("d", std::nullopt, std::nullopt), View("d", 0, 0.125), View("d", 0, 0.125),
        View("d", 50, 0.3), View("d", 200, 0.41)},
       "eval accuracy: before 12.5% -> after 41.0% (versions 0 -> 200)\n"},
      {"lowest and highest version, whatever the order they were seen in",
       {View("d", 100, 0.3), View("d", 50, 0.2), View("d", 150, 0.35), View("d", 120, 0.9)},
       "eval accuracy: before 20.0% -> after 35.0% (versions 50 -> 150)\n"},
      {"the first view of the lowest version and the last view of the highest",
       {View("d", 10, 0.1), View("d", 10, 0.15), View("d", 20, 0.2), View("d", 20, 0.25)},
       "eval accuracy: before 10.0% -> after 25.0% (versions 10 -> 20)\n"},
      {"accuracy may fall",
       {View("d", 0, 0.5), View("d", 10, 0.25)},
       "eval accuracy: before 50.0% -> after 25.0% (versions 0 -> 10)\n"},
      {"one Dataflow among several has evaluations: no name",
       {View("a", std::nullopt, std::nullopt), View("b", 0, 0.1), View("b", 10, 0.2)},
       "eval accuracy: before 10.0% -> after 20.0% (versions 0 -> 10)\n"},
      {"several Dataflows: one line each, named, in order of first appearance",
       {View("b", 10, 0.4), View("a", 0, 0.1), View("b", 20, 0.5), View("a", 10, 0.2)},
       "eval accuracy: before 40.0% -> after 50.0% (versions 10 -> 20) [b]\n"
       "eval accuracy: before 10.0% -> after 20.0% (versions 0 -> 10) [a]\n"},
      {"several Dataflows, one with a single evaluation",
       {View("a", 0, 0.1), View("b", 30, 0.6), View("a", 10, 0.2)},
       "eval accuracy: before 10.0% -> after 20.0% (versions 0 -> 10) [a]\n"
       "eval accuracy: 60.0% at version 30 (no later evaluation) [b]\n"},
  };
  for (const Case& c : cases) EXPECT_EQ(EvalSummary(c.views), c.want) << c.name;
}

TEST(EvalSummaryTest, VerifierAgreementAndToolCallLines) {
  struct Case {
    std::string name;
    std::vector<DataflowView> views;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"the verifier's agreement, from the same rounds as the accuracy",
       {Verified(100, 0.2, 0.5, 0.0, 1.0), Verified(200, 0.3, 0.6, 0.4, 0.7),
        Verified(300, 0.4, 0.8, 0.75, 0.85)},
       "eval accuracy: before 20.0% -> after 40.0% (versions 100 -> 300)\n"
       "verifier agreement: before 50.0% -> after 80.0% (on correct answers 0.0% -> 75.0%, on "
       "wrong 100.0% -> 85.0%)\n"},
      {"a split a round lacks is n/a (no correct answer before RL)",
       {Verified(0, 0.0, 0.9, std::nullopt, 0.9), Verified(50, 0.5, 0.7, 0.6, 0.8)},
       "eval accuracy: before 0.0% -> after 50.0% (versions 0 -> 50)\n"
       "verifier agreement: before 90.0% -> after 70.0% (on correct answers n/a -> 60.0%, on "
       "wrong 90.0% -> 80.0%)\n"},
      {"one round",
       {Verified(200, 0.4, 0.8, 0.75, std::nullopt)},
       "eval accuracy: 40.0% at version 200 (no later evaluation)\n"
       "verifier agreement: 80.0% at version 200 (on correct answers 75.0%, on wrong n/a)\n"},
      {"a round without the verifier's figures: the other round's, at its version",
       {View("mas", 0, 0.1), Verified(40, 0.3, 0.6, 0.5, 0.7)},
       "eval accuracy: before 10.0% -> after 30.0% (versions 0 -> 40)\n"
       "verifier agreement: 60.0% at version 40 (on correct answers 50.0%, on wrong 70.0%)\n"},
      {"policies of another workflow are not agreements: not printed",
       {[] {
         DataflowView v = Verified(10, 0.5, 0.25, 0.5, 0.0);
         v.workflow = "some-team-workflow";
         return v;
       }()},
       "eval accuracy: 50.0% at version 10 (no later evaluation)\n"},
      {"the tool-call share",
       {Agent(0, 0.05, 0.1), Agent(100, 0.2, 0.3), Agent(300, 0.35, 0.6)},
       "eval accuracy: before 5.0% -> after 35.0% (versions 0 -> 300)\n"
       "tool calls: before 10.0% -> after 60.0%\n"},
      {"the tool-call share of one round",
       {Agent(300, 0.35, 0.6)},
       "eval accuracy: 35.0% at version 300 (no later evaluation)\n"
       "tool calls: 60.0% at version 300\n"},
      {"the tool-call share only in the earlier round",
       {Agent(0, 0.05, 0.1), Agent(300, 0.35, std::nullopt)},
       "eval accuracy: before 5.0% -> after 35.0% (versions 0 -> 300)\n"
       "tool calls: 10.0% at version 0\n"},
      {"no share in any round: no line",
       {Agent(0, 0.05, std::nullopt), Agent(300, 0.35, std::nullopt)},
       "eval accuracy: before 5.0% -> after 35.0% (versions 0 -> 300)\n"},
      {"several Dataflows: each block named",
       {Verified(0, 0.1, 0.5, 0.0, 1.0), Agent(0, 0.05, 0.1), Verified(10, 0.2, 0.75, 0.5, 1.0),
        Agent(10, 0.15, 0.5)},
       "eval accuracy: before 10.0% -> after 20.0% (versions 0 -> 10) [mas]\n"
       "verifier agreement: before 50.0% -> after 75.0% (on correct answers 0.0% -> 50.0%, on "
       "wrong 100.0% -> 100.0%) [mas]\n"
       "eval accuracy: before 5.0% -> after 15.0% (versions 0 -> 10) [calc]\n"
       "tool calls: before 10.0% -> after 50.0% [calc]\n"},
      {"several verifier entries (not solve-and-verify's shape): each names its Policy",
       {[] {
         DataflowView v = Verified(10, 0.5, 0.25, 0.5, 0.0);
         v.eval_policies.push_back({"judge", 1.0, 1.0, 1.0});
         return v;
       }()},
       "eval accuracy: 50.0% at version 10 (no later evaluation)\n"
       "verifier agreement (verifier): 25.0% at version 10 (on correct answers 50.0%, on wrong "
       "0.0%)\n"
       "verifier agreement (judge): 100.0% at version 10 (on correct answers 100.0%, on wrong "
       "100.0%)\n"},
  };
  for (const Case& c : cases) EXPECT_EQ(EvalSummary(c.views), c.want) << c.name;
}

// Several TrainerJobs on one Dataflow (solve-and-verify's solver and verifier) used to print the
// Dataflow's line once per job; the lines are per Dataflow, so they come once.
TEST(EvalSummaryTest, OneDataflowTrainedByTwoJobsPrintsItsFiguresOnce) {
  const std::vector<DataflowView> views = {Verified(0, 0.1, 0.5, 0.0, 1.0),
                                           Verified(0, 0.1, 0.5, 0.0, 1.0),
                                           Verified(20, 0.3, 0.7, 0.6, 0.8)};
  EXPECT_EQ(EvalSummary(views),
            "eval accuracy: before 10.0% -> after 30.0% (versions 0 -> 20)\n"
            "verifier agreement: before 50.0% -> after 70.0% (on correct answers 0.0% -> 60.0%, "
            "on wrong 100.0% -> 80.0%)\n");
}

TEST(EvalSummaryTest, SpansAndTheGreppablePrefix) {
  const std::vector<EvalSpan> spans =
      EvalSpans({View("t", 30, 0.3), View("t", 0, 0.05), View("u", 5, 0.5), View("t", 60, 0.6)});
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0], (EvalSpan{"t", "single-turn", {0, 0.05}, {60, 0.6}}));
  EXPECT_EQ(spans[1], (EvalSpan{"u", "single-turn", {5, 0.5}, {5, 0.5}}));
  // The figures travel with their round.
  const std::vector<EvalSpan> agent = EvalSpans({Agent(0, 0.1, 0.2), Agent(9, 0.4, 0.7)});
  ASSERT_EQ(agent.size(), 1u);
  EXPECT_EQ(agent[0].first.tool_call_share, 0.2);
  EXPECT_EQ(agent[0].last.tool_call_share, 0.7);
  // Scripts grep this prefix; it starts the line.
  const std::string line = EvalSummary({View("t", 0, 0.125), View("t", 200, 0.41)});
  EXPECT_EQ(line.rfind("eval accuracy: before 12.5% -> after 41.0%", 0), 0u) << line;
}

}  // namespace
}  // namespace sluice::cli
