#include "workers/dataflow/algorithms/filters.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

namespace sluice::dataflow {
namespace {

// A sample with `generated` loss-masked tokens after a 2-token prompt.
Sample Make(double reward, int generated = 4, std::string finish = "stop") {
  Sample s;
  s.prompt_id = "p";
  s.policy = "x";
  s.reward = reward;
  s.finish_reason = std::move(finish);
  s.loss_mask = {0, 0};
  s.loss_mask.resize(2 + static_cast<size_t>(generated), 1);
  return s;
}

std::vector<Sample> Group(const std::vector<double>& rewards) {
  std::vector<Sample> g;
  for (double r : rewards) g.push_back(Make(r));
  return g;
}

TEST(DataflowFiltersTest, DynamicSampling) {
  struct Case {
    double tolerance;
    std::vector<double> rewards;
    bool keep;
  };
  const Case cases[] = {
      {0.0, {1, 1, 1, 1}, false},  // All equal: zero advantage.
      {0.0, {0, 0}, false},       {0.0, {1, 0, 1}, true},
      {0.0, {7}, false},          // Singleton: trivially all equal.
      {0.1, {0.5, 0.55}, false},  // 0.55 − 0.5 = 0.05 <= 0.1.
      {0.1, {0.5, 0.7}, true},    // 0.2 > 0.1.
  };
  for (const Case& c : cases) {
    DynamicSamplingFilter f({c.tolerance});
    std::vector<Sample> g = Group(c.rewards);
    FilterOutcome o = f.Apply(g);
    EXPECT_EQ(o.keep, c.keep);
    EXPECT_EQ(o.reason.empty(), c.keep);
    EXPECT_EQ(g.size(), c.rewards.size());  // Never removes single samples.
  }
}

TEST(DataflowFiltersTest, LengthFilter) {
  struct Case {
    int64_t min_tokens;
    int64_t max_tokens;
    FilterScope scope;
    std::vector<int> lengths;
    bool keep;
    size_t dropped;
    std::vector<int> kept_lengths;
  };
  const Case cases[] = {
      {3, 8, FilterScope::kSample, {2, 5, 9}, true, 2, {5}},  // 2 < 3, 9 > 8.
      {3, 8, FilterScope::kGroup, {2, 5, 9}, false, 0, {2, 5, 9}},
      {0, 0, FilterScope::kSample, {0, 100000}, true, 0, {0, 100000}},  // No limits.
      {0, 8, FilterScope::kSample, {8, 9}, true, 1, {8}},               // Bounds inclusive.
      {3, 0, FilterScope::kSample, {1, 2}, false, 0, {1, 2}},           // All out: group gone.
  };
  for (const Case& c : cases) {
    LengthFilter f({c.min_tokens, c.max_tokens, c.scope});
    std::vector<Sample> g;
    for (int n : c.lengths) g.push_back(Make(n, n));
    FilterOutcome o = f.Apply(g);
    EXPECT_EQ(o.keep, c.keep);
    EXPECT_EQ(o.samples_dropped, c.dropped);
    std::vector<int> lengths;
    for (const Sample& s : g) lengths.push_back(static_cast<int>(s.GeneratedTokens()));
    EXPECT_EQ(lengths, c.kept_lengths);
  }
}

TEST(DataflowFiltersTest, TruncationFilter) {
  std::vector<Sample> g = {Make(1, 4, "stop"), Make(0, 4, "length"), Make(1, 4, "stop")};
  std::vector<Sample> copy = g;
  FilterOutcome sample_scope = TruncationFilter({FilterScope::kSample}).Apply(g);
  EXPECT_TRUE(sample_scope.keep);
  EXPECT_EQ(sample_scope.samples_dropped, 1U);
  EXPECT_EQ(g.size(), 2U);
  FilterOutcome group_scope = TruncationFilter({FilterScope::kGroup}).Apply(copy);
  EXPECT_FALSE(group_scope.keep);
  EXPECT_EQ(copy.size(), 3U);
}

TEST(DataflowFilterChainTest, AppliesInOrderAndCounts) {
  auto chain = FilterChain::FromJson(nlohmann::json::parse(R"([
      {"type": "length", "options": {"maxTokens": 8}},
      {"type": "greso", "options": {"minSubmitEasy": 0.05}},
      {"type": "dynamic-sampling"}])"));
  ASSERT_TRUE(chain.ok()) << chain.status().ToString();
  ASSERT_EQ(chain->size(), 2U);  // greso is a curator, not a group filter.
  EXPECT_EQ(chain->counters()[0].type, "length");
  EXPECT_EQ(chain->counters()[1].type, "dynamic-sampling");

  // Group 1: one sample too long (9 > 8) removed, the rest {1, 0} vary: kept with 2.
  std::vector<Sample> g1 = {Make(1, 4), Make(1, 9), Make(0, 4)};
  auto o1 = chain->Apply(g1);
  ASSERT_TRUE(o1.ok());
  EXPECT_TRUE(o1->keep);
  EXPECT_EQ(o1->samples_dropped, 1U);
  EXPECT_EQ(g1.size(), 2U);
  // Group 2: the long sample was the only 0; left {1, 1}: dynamic sampling drops the group.
  std::vector<Sample> g2 = {Make(1, 4), Make(0, 9), Make(1, 4)};
  auto o2 = chain->Apply(g2);
  ASSERT_TRUE(o2.ok());
  EXPECT_FALSE(o2->keep);
  EXPECT_NE(o2->reason.find("dynamic-sampling: all 2 rewards equal"), std::string::npos)
      << o2->reason;
  // Group 3: untouched.
  std::vector<Sample> g3 = {Make(1), Make(0)};
  auto o3 = chain->Apply(g3);
  ASSERT_TRUE(o3.ok());
  EXPECT_TRUE(o3->keep);
  EXPECT_TRUE(o3->reason.empty());

  // length: 2 samples removed (one per group 1, 2), no group; dynamic-sampling: group 2 (2 left).
  EXPECT_EQ(chain->counters()[0].groups_dropped, 0);
  EXPECT_EQ(chain->counters()[0].samples_dropped, 2);
  EXPECT_EQ(chain->counters()[1].groups_dropped, 1);
  EXPECT_EQ(chain->counters()[1].samples_dropped, 2);
}

// greso and filter-solved are prompt curators: a Dataflow lists them among its filters, and the
// chain skips them.
TEST(DataflowFilterChainTest, SkipsCuratorEntries) {
  for (const char* type : {"greso", "filter-solved"}) {
    SCOPED_TRACE(type);
    EXPECT_EQ(MakeGroupFilter(type, nlohmann::json::object()).status().code(),
              StatusCode::kNotFound);
  }
  const std::vector<FilterSpec> specs = {
      FilterSpec{"filter-solved", nlohmann::json{{"threshold", 0.9}}},
      FilterSpec{"truncated", nlohmann::json{{"scope", "group"}}}};
  auto chain = FilterChain::Create(specs);
  ASSERT_TRUE(chain.ok()) << chain.status().ToString();
  ASSERT_EQ(chain->size(), 1U);
  EXPECT_EQ(chain->counters()[0].type, "truncated");
}

TEST(DataflowFilterChainTest, EmptyGroupAndNanRewards) {
  FilterChain chain;
  std::vector<Sample> empty;
  auto o = chain.Apply(empty);
  ASSERT_TRUE(o.ok());
  EXPECT_FALSE(o->keep);
  EXPECT_EQ(chain.empty_groups(), 1);

  auto ds = FilterChain::Create({{"dynamic-sampling", {}}});
  ASSERT_TRUE(ds.ok());
  std::vector<Sample> nan_group = {Make(1), Make(std::numeric_limits<double>::quiet_NaN())};
  auto bad = ds->Apply(nan_group);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ds->counters()[0].groups_dropped, 0);
  EXPECT_EQ(nan_group.size(), 2U);
}

TEST(DataflowFilterChainTest, RejectsBadConfigNamingTheField) {
  struct Case {
    const char* json;
    const char* field;
  };
  const Case cases[] = {
      {R"([{"type": "dedupe"}])", "filters[0].type"},
      {R"([{"type": "length"}, {"type": "lenght"}])", "filters[1].type"},
      {R"([{"type": "length", "options": {"maxTokens": -1}}])", "filters[0].options.maxTokens"},
      {R"([{"type": "length", "options": {"maxTokens": "8"}}])", "filters[0].options.maxTokens"},
      {R"([{"type": "length", "options": {"maxTokens": 8.5}}])", "filters[0].options.maxTokens"},
      {R"([{"type": "length", "options": {"minTokens": 9, "maxTokens": 8}}])",
       "filters[0].options.maxTokens"},
      {R"([{"type": "length", "options": {"maxToken": 8}}])", "filters[0].options.maxToken"},
      {R"([{"type": "length", "options": {"scope": "batch"}}])", "filters[0].options.scope"},
      {R"([{"type": "dynamic-sampling", "options": {"tolerance": -0.1}}])",
       "filters[0].options.tolerance"},
      {R"([{"type": "truncated", "options": 3}])", "filters[0].options"},
      {R"([{"options": {}}])", "filters[0].type"},
      {R"([{"type": "length", "extra": 1}])", "filters[0].extra"},
      {R"({"type": "length"})", "filters"},
  };
  for (const Case& c : cases) {
    auto chain = FilterChain::FromJson(nlohmann::json::parse(c.json));
    ASSERT_FALSE(chain.ok()) << c.json;
    EXPECT_EQ(chain.status().code(), StatusCode::kInvalidArgument) << c.json;
    EXPECT_EQ(chain.status().field(), c.field) << c.json;
  }
}

}  // namespace
}  // namespace sluice::dataflow
