#include "workers/dataflow/algorithms/curators.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

namespace sluice::dataflow {
namespace {

const std::vector<double> kAllRight = {1, 1, 1, 1};  // Zero variance, mean 1: easy.
const std::vector<double> kAllWrong = {0, 0, 0, 0};  // Zero variance, mean 0: hard.
const std::vector<double> kMixed = {1, 0, 1, 0};     // Non-zero variance.

TEST(DataflowCuratorsTest, AcceptAll) {
  AcceptAllCurator c;
  EXPECT_TRUE(c.ShouldLease("p", 0.999).lease);
  EXPECT_TRUE(c.Update("p", kAllRight).ok());
  EXPECT_TRUE(c.ShouldLease("p", 0.0).lease);
  AcceptAllCurator d;
  EXPECT_TRUE(d.Deserialize(c.Serialize()).ok());
  EXPECT_EQ(d.Deserialize(nlohmann::json{{"type", "greso"}}).field(), "state.type");
}

TEST(DataflowFilterSolvedCuratorTest, EwmaAndThreshold) {
  FilterSolvedOptions o;
  o.threshold = 0.7;
  o.decay = 0.5;
  o.prior = 0.0;
  o.min_attempts = 2;
  FilterSolvedCurator c(o);
  struct Step {
    std::vector<double> rewards;
    double ewma;
    bool lease;
  };
  const Step steps[] = {
      {{1, 1}, 0.5, true},            // 0.5·0 + 0.5·1; 1 attempt < minAttempts 2.
      {{1, 0}, 0.5, true},            // 0.5·0.5 + 0.5·0.5; 0.5 < 0.7.
      {{1, 1}, 0.75, false},          // 0.5·0.5 + 0.5·1 >= 0.7: skipped.
      {{0, 0}, 0.375, true},          // 0.5·0.75 + 0.
      {{2, -1, 3, 0}, 0.4375, true},  // success 2/4 (> 0): 0.1875 + 0.25.
  };
  EXPECT_TRUE(c.ShouldLease("p", 0.5).lease);  // Never seen.
  for (const Step& s : steps) {
    ASSERT_TRUE(c.Update("p", s.rewards).ok());
    EXPECT_DOUBLE_EQ(c.Find("p")->ewma, s.ewma);
    CuratorDecision d = c.ShouldLease("p", 0.5);
    EXPECT_EQ(d.lease, s.lease);
    EXPECT_EQ(d.reason.empty(), s.lease);
  }
  EXPECT_EQ(c.Find("p")->attempts, 5);
  EXPECT_EQ(c.Find("q"), nullptr);
}

TEST(DataflowFilterSolvedCuratorTest, WarmupDelaysSkipping) {
  FilterSolvedOptions o;
  o.threshold = 0.4;
  o.decay = 0.5;
  o.min_attempts = 2;
  FilterSolvedCurator c(o);
  ASSERT_TRUE(c.Update("p", std::vector<double>{1.0}).ok());  // ewma 0.5 >= 0.4 but 1 attempt < 2.
  EXPECT_TRUE(c.ShouldLease("p", 0).lease);
  ASSERT_TRUE(c.Update("p", std::vector<double>{1.0}).ok());  // ewma 0.75, 2 attempts.
  EXPECT_FALSE(c.ShouldLease("p", 0).lease);
}

TEST(DataflowFilterSolvedCuratorTest, RoundTripAndBadInput) {
  FilterSolvedCurator c({});
  ASSERT_TRUE(c.Update("a", std::vector<double>{1, 0}).ok());
  ASSERT_TRUE(c.Update("b", std::vector<double>{1, 1}).ok());
  FilterSolvedCurator d({});
  const nlohmann::json state = nlohmann::json::parse(c.Serialize().dump());  // Via text.
  ASSERT_TRUE(d.Deserialize(state).ok());
  EXPECT_EQ(d.Serialize(), c.Serialize());
  EXPECT_DOUBLE_EQ(d.Find("a")->ewma, 0.05);  // 0.9·0 + 0.1·0.5.

  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(c.Update("a", std::vector<double>{nan}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.Update("a", {}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.Find("a")->attempts, 1);  // Unchanged.

  nlohmann::json bad = state;
  bad["prompts"]["a"]["ewma"] = "high";
  EXPECT_EQ(d.Deserialize(bad).field(), "state.prompts.a.ewma");
  EXPECT_EQ(d.Serialize(), c.Serialize());  // Unchanged by the failed load.
}

GresoOptions Defaults() { return GresoOptions{}; }  // p 0.5 / 0.5, floors 0.10 / 0.40.

TEST(DataflowGresoCuratorTest, ProbabilityAfterStreaks) {
  struct Case {
    std::vector<std::vector<double>> outcomes;
    int64_t streak;
    double probability;
  };
  const Case cases[] = {
      {{}, 0, 1.0},                                            // Unseen: always lease.
      {{kMixed}, 0, 1.0},                                      // Varied: streak 0.
      {{kAllRight}, 1, 0.5},                                   // max(0.5^1, 0.10).
      {{kAllRight, kAllRight, kAllRight}, 3, 0.125},           // max(0.5^3, 0.10).
      {{kAllRight, kAllRight, kAllRight, kAllRight}, 4, 0.1},  // 0.5^4 = 0.0625: floor.
      {{kAllWrong}, 1, 0.5},                                   // max(0.5, 0.40).
      {{kAllWrong, kAllWrong}, 2, 0.4},                        // 0.25: hard floor 0.40.
      {{kAllRight, kAllRight, kMixed}, 0, 1.0},                // Reset by variance.
      {{kAllRight, kAllRight, kAllWrong}, 3, 0.4},             // Kind follows the last: hard.
  };
  for (const Case& c : cases) {
    GresoCurator g(Defaults());
    for (const auto& rewards : c.outcomes) ASSERT_TRUE(g.Update("p", rewards).ok());
    EXPECT_EQ(g.Streak("p"), c.streak);
    EXPECT_DOUBLE_EQ(g.LeaseProbability("p"), c.probability);
  }
}

TEST(DataflowGresoCuratorTest, ShouldLeaseComparesTheDraw) {
  GresoCurator g(Defaults());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(g.Update("p", kAllRight).ok());  // p = 0.125.
  EXPECT_TRUE(g.ShouldLease("p", 0.12).lease);
  CuratorDecision skip = g.ShouldLease("p", 0.125);  // u < p fails at equality.
  EXPECT_FALSE(skip.lease);
  EXPECT_DOUBLE_EQ(skip.probability, 0.125);
  EXPECT_NE(skip.reason.find("easy zero-variance streak 3"), std::string::npos) << skip.reason;
  EXPECT_TRUE(g.ShouldLease("other", 0.99).lease);
}

TEST(DataflowGresoCuratorTest, AdaptsTowardTargetRatios) {
  GresoCurator g(Defaults());  // alphaEasy 0.083, alphaHard 0.167, deltaP 0.01, armed at once.
  // Window of 10: 1 easy zero-variance (0.1 >= 0.083: p_easy − 0.01), 1 hard (0.1 < 0.167:
  // p_hard + 0.01), 8 varied.
  ASSERT_TRUE(g.Update("e", kAllRight).ok());
  ASSERT_TRUE(g.Update("h", kAllWrong).ok());
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(g.Update("m" + std::to_string(i), kMixed).ok());
  g.OnVersion(1);
  EXPECT_NEAR(g.p_easy(), 0.49, 1e-12);
  EXPECT_NEAR(g.p_hard(), 0.51, 1e-12);
  g.OnVersion(2);  // Empty window: unchanged.
  EXPECT_NEAR(g.p_easy(), 0.49, 1e-12);
  // Window of 4, all hard zero-variance: easy 0 < 0.083 (+0.01), hard 1 >= 0.167 (−0.01).
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(g.Update("h", kAllWrong).ok());
  g.OnVersion(3);
  EXPECT_NEAR(g.p_easy(), 0.50, 1e-12);
  EXPECT_NEAR(g.p_hard(), 0.50, 1e-12);
  // "h" now has streak 5 with p_hard 0.5: max(0.5^5, 0.40) = 0.40.
  EXPECT_DOUBLE_EQ(g.LeaseProbability("h"), 0.40);
}

TEST(DataflowGresoCuratorTest, ClampsAndWarmup) {
  GresoOptions o;
  o.p_max = 0.5;
  o.warmup_outcomes = 5;
  GresoCurator g(o);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(g.Update("m", kMixed).ok());
  EXPECT_FALSE(g.armed());
  g.OnVersion(1);  // 4 < 5 outcomes: not armed; the window is discarded.
  EXPECT_DOUBLE_EQ(g.p_easy(), 0.5);
  EXPECT_DOUBLE_EQ(g.p_hard(), 0.5);
  ASSERT_TRUE(g.Update("e", kAllRight).ok());  // 5th outcome: armed.
  EXPECT_TRUE(g.armed());
  g.OnVersion(2);  // Window {easy}: easy 1 >= 0.083 → 0.49; hard 0 < 0.167 → 0.51, clamp 0.5.
  EXPECT_NEAR(g.p_easy(), 0.49, 1e-12);
  EXPECT_DOUBLE_EQ(g.p_hard(), 0.5);
}

TEST(DataflowGresoCuratorTest, SerializationRoundTrip) {
  GresoCurator g(Defaults());
  ASSERT_TRUE(g.Update("e", kAllRight).ok());
  ASSERT_TRUE(g.Update("e", kAllRight).ok());
  ASSERT_TRUE(g.Update("h", kAllWrong).ok());
  ASSERT_TRUE(g.Update("m", kMixed).ok());
  g.OnVersion(1);
  ASSERT_TRUE(g.Update("h", kAllWrong).ok());  // A window in progress.

  GresoCurator restored(Defaults());
  ASSERT_TRUE(restored.Deserialize(nlohmann::json::parse(g.Serialize().dump())).ok());
  EXPECT_EQ(restored.Serialize(), g.Serialize());
  EXPECT_EQ(restored.Streak("e"), 2);
  EXPECT_EQ(restored.Streak("h"), 2);
  EXPECT_EQ(restored.Streak("m"), 0);
  EXPECT_DOUBLE_EQ(restored.p_easy(), g.p_easy());
  // Both evolve identically from here.
  g.OnVersion(2);
  restored.OnVersion(2);
  EXPECT_EQ(restored.Serialize(), g.Serialize());

  struct Bad {
    const char* json;
    const char* field;
  };
  const Bad bad[] = {
      {R"({"type": "filter-solved", "prompts": {}})", "state.type"},
      {R"({"type": "greso", "pEasy": 2, "pHard": 0.5})", "state.pEasy"},
      {R"({"type": "greso", "pEasy": 0.5, "pHard": 0.5, "outcomes": -1})", "state.outcomes"},
      {R"({"type": "greso", "pEasy": 0.5, "pHard": 0.5, "outcomes": 3,
           "window": {"outcomes": 1, "easy": 1, "hard": 1}, "prompts": {}})",
       "state.window"},
      {R"({"type": "greso", "pEasy": 0.5, "pHard": 0.5, "outcomes": 3,
           "window": {"outcomes": 1, "easy": 0, "hard": 0}, "prompts": {"p": {"streak": 1}}})",
       "state.prompts.p.easy"},
      {R"([1, 2])", "state"},
  };
  const nlohmann::json before = restored.Serialize();
  for (const Bad& b : bad) {
    Status s = restored.Deserialize(nlohmann::json::parse(b.json));
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << b.json;
    EXPECT_EQ(s.field(), b.field) << b.json;
  }
  EXPECT_EQ(restored.Serialize(), before);
}

TEST(DataflowGresoCuratorTest, RejectsNanRewards) {
  GresoCurator g(Defaults());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(g.Update("p", std::vector<double>{nan, nan}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(g.Streak("p"), 0);
  EXPECT_EQ(g.Serialize()["outcomes"], 0);
}

TEST(DataflowCuratorsTest, MakeCurator) {
  auto greso = MakeCurator("greso", {{"minSubmitEasy", 0.05}, {"minSubmitHard", 0.30}});
  ASSERT_TRUE(greso.ok()) << greso.status().ToString();
  EXPECT_EQ((*greso)->type(), "greso");
  auto* g = dynamic_cast<GresoCurator*>(greso->get());
  ASSERT_NE(g, nullptr);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(g->Update("p", kAllRight).ok());
  EXPECT_DOUBLE_EQ(g->LeaseProbability("p"), 0.05);  // 0.5^5 = 0.03125 < floor 0.05.
  EXPECT_TRUE(MakeCurator("accept-all", nullptr).ok());
  EXPECT_TRUE(MakeCurator("filter-solved", {{"threshold", 0.9}, {"minAttempts", 3}}).ok());

  struct Bad {
    const char* type;
    nlohmann::json options;
    const char* field;
  };
  const Bad bad[] = {
      {"best-of", {}, "type"},
      {"greso", {{"minSubmitEasy", 1.5}}, "minSubmitEasy"},
      {"greso", {{"minSubmitEasy", "low"}}, "minSubmitEasy"},
      {"greso", {{"pMin", 0.6}, {"pMax", 0.4}}, "pMin"},
      {"greso", {{"warmupOutcomes", -1}}, "warmupOutcomes"},
      {"greso", {{"minSubmitEsay", 0.1}}, "minSubmitEsay"},
      {"filter-solved", {{"decay", 1.0}}, "decay"},
      {"filter-solved", {{"minAttempts", 1.5}}, "minAttempts"},
      {"accept-all", {{"threshold", 0.5}}, "threshold"},
  };
  for (const Bad& b : bad) {
    auto c = MakeCurator(b.type, b.options);
    ASSERT_FALSE(c.ok()) << b.field;
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(c.status().field(), b.field);
  }
}

}  // namespace
}  // namespace sluice::dataflow
