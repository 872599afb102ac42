#include "workers/dataflow/algorithms/eval_metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace sluice::dataflow {
namespace {

TEST(DataflowEvalMetricsTest, PassAtK) {
  struct Case {
    int64_t n, c, k;
    double expected;
  };
  const Case cases[] = {
      {5, 0, 1, 0.0},  // c = 0: never.
      {5, 5, 1, 1.0},  // c = n: always.
      {5, 2, 1, 0.4},  // k = 1 is c / n: 1 − (1 − 1/4)(1 − 1/5) = 1 − 0.6.
      {5, 2, 2, 0.7},  // 1 − C(3,2)/C(5,2) = 1 − 3/10; product (1 − 2/4)(1 − 2/5) = 0.3.
      {5, 2, 5, 1.0},  // k = n with c > 0.
      {4, 0, 4, 0.0},  // k = n, c = 0: C(4,4)/C(4,4) = 1.
      {4, 1, 4, 1.0},  // k > n − c = 3.
      {10, 3, 4, 5.0 / 6.0},  // C(7,4)/C(10,4) = 35/210 = 1/6; (4/8)(5/9)(6/10) = 1/6.
      {1, 1, 1, 1.0},        {1, 0, 1, 0.0},
  };
  for (const Case& c : cases) {
    auto p = PassAtK(c.n, c.c, c.k);
    ASSERT_TRUE(p.ok());
    EXPECT_NEAR(*p, c.expected, 1e-12) << c.n << " " << c.c << " " << c.k;
  }
  // Huge n would overflow binomials; the product stays finite. C(100,100)/C(200,100) ~ 1e-59.
  auto big = PassAtK(200, 100, 100);
  ASSERT_TRUE(big.ok());
  EXPECT_NEAR(*big, 1.0, 1e-12);
  // n = 1000, c = 1, k = 1: 1 − (1 − 1/1000).
  EXPECT_NEAR(PassAtK(1000, 1, 1).value(), 0.001, 1e-15);
}

TEST(DataflowEvalMetricsTest, PassAtKRejectsOutOfRange) {
  struct Case {
    int64_t n, c, k;
    const char* field;
  };
  const Case cases[] = {
      {0, 0, 1, "n"}, {5, -1, 1, "c"}, {5, 6, 1, "c"}, {5, 1, 0, "k"}, {5, 1, 6, "k"},
  };
  for (const Case& c : cases) {
    auto p = PassAtK(c.n, c.c, c.k);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().field(), c.field);
  }
}

TEST(DataflowEvalMetricsTest, AggregatePerDatasetAndOverall) {
  const std::vector<EvalItem> items = {
      {"gsm", "g1", {1, 0}, {}},       // c = 1 of 2; pass@2 = 1 (n − c = 1 < 2).
      {"gsm", "g2", {0, 0}, {}},       // c = 0; pass@2 = 0.
      {"math", "m1", {1, 1}, {1, 0}},  // Flags win over rewards: c = 1; pass@2 = 1.
  };
  auto report = AggregateEval(items, 2);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->datasets.size(), 2U);
  const DatasetEvalMetrics& gsm = report->datasets[0];
  EXPECT_EQ(gsm.dataset, "gsm");
  EXPECT_EQ(gsm.prompts, 2);
  EXPECT_EQ(gsm.completions, 4);
  EXPECT_EQ(gsm.correct, 1);
  EXPECT_DOUBLE_EQ(gsm.avg_at_k, 0.25);     // 1 / 4.
  EXPECT_DOUBLE_EQ(gsm.pass_at_k, 0.5);     // (1 + 0) / 2.
  EXPECT_DOUBLE_EQ(gsm.mean_reward, 0.25);  // 1 / 4.
  const DatasetEvalMetrics& math = report->datasets[1];
  EXPECT_DOUBLE_EQ(math.avg_at_k, 0.5);
  EXPECT_DOUBLE_EQ(math.pass_at_k, 1.0);
  EXPECT_DOUBLE_EQ(math.mean_reward, 1.0);
  EXPECT_DOUBLE_EQ(report->overall_avg_at_k, 0.375);  // (0.25 + 0.5) / 2, unweighted.
  EXPECT_DOUBLE_EQ(report->overall_pass_at_k, 0.75);  // (0.5 + 1) / 2.
  EXPECT_DOUBLE_EQ(report->overall_mean_reward, 0.625);
}

TEST(DataflowEvalMetricsTest, IncompleteItemsCountInAvgOnly) {
  const std::vector<EvalItem> items = {
      {"d", "a", {1, 0, 0}, {}},  // n = 3, c = 1, k = 2: 1 − C(2,2)/C(3,2) = 1 − 1/3.
      {"d", "b", {1}, {}},        // n = 1 < k: avg only.
      {"d", "c", {}, {}},         // Lost entirely.
  };
  auto report = AggregateEval(items, 2);
  ASSERT_TRUE(report.ok());
  const DatasetEvalMetrics& d = report->datasets[0];
  EXPECT_EQ(d.prompts, 3);
  EXPECT_EQ(d.incomplete_prompts, 2);
  EXPECT_DOUBLE_EQ(d.avg_at_k, 0.5);  // 2 correct of 4.
  EXPECT_NEAR(d.pass_at_k, 2.0 / 3.0, 1e-12);
}

TEST(DataflowEvalMetricsTest, AggregateEdgeCases) {
  auto empty = AggregateEval({}, 4);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->datasets.empty());
  EXPECT_EQ(empty->overall_pass_at_k, 0.0);
  EXPECT_EQ(AggregateEval({}, 0).status().field(), "k");
  const std::vector<EvalItem> nan = {{"d", "a", {std::numeric_limits<double>::quiet_NaN()}, {}}};
  EXPECT_EQ(AggregateEval(nan, 1).status().field(), "rewards");
  const std::vector<EvalItem> flags = {{"d", "a", {1, 0}, {1}}};
  EXPECT_EQ(AggregateEval(flags, 1).status().field(), "correct");
}

}  // namespace
}  // namespace sluice::dataflow
