// The PromQL queries of the example manifests (examples/, tests/data/manifests/valid/) select
// only metrics some Sluice binary registers, so a RolloutPool copied from an example never
// autoscales on a name no one exports (an empty result counts as 0 and would shrink the pool).
// The exported names are read from the sources (tests/unit/common/example_queries.h), so a
// renamed registration fails here; the dataflow's and the trainer's own tests check the same
// names against their live registries.
#include "tests/unit/common/example_queries.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace sluice::test_support {
namespace {

using Names = std::vector<std::string>;

TEST(ExampleQueriesTest, TokenizerFindsMetricNamesOnly) {
  EXPECT_EQ(MetricNamesInQuery(R"(sum(sluice_dataflow_rollout_demand{namespace="$namespace"}))"),
            Names{"sluice_dataflow_rollout_demand"});
  // Label values, label names, durations and by/on lists are not metric names.
  EXPECT_EQ(MetricNamesInQuery(R"(avg(rate(sluice_a_total{policy="sluice_b", sluice_c="x"}[5m])))"),
            Names{"sluice_a_total"});
  EXPECT_EQ(MetricNamesInQuery("histogram_quantile(0.9, sum by (le, sluice_label) "
                               "(rate(sluice_h_seconds_bucket[1h30m])))"),
            Names{"sluice_h_seconds_bucket"});
  EXPECT_EQ(MetricNamesInQuery("max by (policy) (sluice_x) - on(policy) group_left "
                               "min by (policy) (sluice_y)  # sluice_in_a_comment"),
            (Names{"sluice_x", "sluice_y"}));
  // Each name once; __name__ equality counts, a regular expression does not.
  EXPECT_EQ(
      MetricNamesInQuery(R"(sluice_x + sluice_x + {__name__="sluice_z"} + {__name__=~"sluice_w"})"),
      (Names{"sluice_x", "sluice_z"}));
  EXPECT_EQ(MetricNamesInQuery("sum(up) + process_cpu_seconds_total"), Names{});
}

TEST(ExampleQueriesTest, SourceScanReadsStringLiteralsOutsideComments) {
  const std::string code = R"cpp(
    // registry.AddCounter("sluice_in_a_line_comment_total", ...);
    /* "sluice_in_a_block_comment" */
    auto& c = r.AddCounter("sluice_registered_total", "Help with \"quotes\" and // no comment.");
    const char q = '"';  // A quote in a character literal opens no string.
    const int64_t big = 1'000'000;
    gauge(R"x(raw "sluice_raw")x", "sluice_after_raw");
  )cpp";
  EXPECT_EQ(CppStringLiterals(code),
            (Names{"sluice_registered_total", R"(Help with \"quotes\" and // no comment.)",
                   R"(raw "sluice_raw")", "sluice_after_raw"}));
}

TEST(ExampleQueriesTest, HistogramSeriesCountAsTheirFamily) {
  const std::map<std::string, std::string> registered = {{"sluice_h_seconds", "f.cpp"}};
  EXPECT_TRUE(IsExportedName("sluice_h_seconds", registered));
  EXPECT_TRUE(IsExportedName("sluice_h_seconds_bucket", registered));
  EXPECT_TRUE(IsExportedName("sluice_h_seconds_count", registered));
  EXPECT_FALSE(IsExportedName("sluice_h_seconds_total", registered));
  EXPECT_FALSE(IsExportedName("sluice_h", registered));
}

TEST(ExampleQueriesTest, EveryExampleQueryNamesAnExportedMetric) {
  const ExampleQuerySet set = ExampleQueries();
  EXPECT_TRUE(set.errors.empty()) << testing::PrintToString(set.errors);
  // Two in examples/gpu-cluster-qwen3.yaml, three in the valid RolloutPool manifests: fewer
  // means the query field moved and this test would check nothing.
  ASSERT_GE(set.queries.size(), 5u);

  const std::map<std::string, std::string> registered = RegisteredMetricNames();
  ASSERT_GE(registered.size(), 50u) << "the source scan found too few metric names";
  // Anchors the scan must find, one per exporter the examples use.
  for (const char* name :
       {"sluice_dataflow_rollout_demand", "sluice_trainer_data_wait_seconds_total",
        "sluice_http_requests_total"}) {
    EXPECT_EQ(registered.count(name), 1u) << name;
  }

  for (const ExampleQuery& q : set.queries) {
    const std::string where = q.file + " " + q.object + " " + q.field;
    const std::vector<std::string> names = MetricNamesInQuery(q.query);
    EXPECT_FALSE(names.empty()) << where << ": no sluice_* metric in " << q.query;
    for (const std::string& name : names) {
      EXPECT_TRUE(IsExportedName(name, registered))
          << where << ": " << name << " (in " << q.query
          << ") is registered by no binary; see docs/operator.md, \"Autoscaling signals\"";
    }
  }
}

}  // namespace
}  // namespace sluice::test_support
