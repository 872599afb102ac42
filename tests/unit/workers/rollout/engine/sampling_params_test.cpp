#include "workers/rollout/engine/sampling_params.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace sluice::engine {
namespace {

using nlohmann::json;

Status ParseError(const json& j) {
  Result<SamplingParams> r = SamplingParamsFromJson(j);
  EXPECT_FALSE(r.ok()) << j.dump();
  return r.status();
}

TEST(SamplingParamsTest, DefaultsAreValid) { EXPECT_TRUE(Validate(SamplingParams{}).ok()); }

TEST(SamplingParamsTest, ValidateNamesTheField) {
  SamplingParams p;
  p.top_p = 1.5;
  Status s = Validate(p);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.ToString(), "InvalidArgument: sampling.top_p: must be in (0, 1], got 1.5");

  struct Case {
    void (*mutate)(SamplingParams&);
    std::string field;
  };
  const Case cases[] = {
      {[](SamplingParams& q) { q.temperature = -0.1; }, "sampling.temperature"},
      {[](SamplingParams& q) { q.temperature = std::numeric_limits<double>::infinity(); },
       "sampling.temperature"},
      {[](SamplingParams& q) { q.top_p = 0; }, "sampling.top_p"},
      {[](SamplingParams& q) { q.top_p = std::numeric_limits<double>::quiet_NaN(); },
       "sampling.top_p"},
      {[](SamplingParams& q) { q.top_k = -1; }, "sampling.top_k"},
      {[](SamplingParams& q) { q.max_new_tokens = 0; }, "sampling.max_new_tokens"},
      {[](SamplingParams& q) { q.n = 0; }, "sampling.n"},
      {[](SamplingParams& q) {
         q.stop_token_ids = {2, -5};
       },
       "sampling.stop_token_ids[1]"},
      {[](SamplingParams& q) {
         q.stop = {"x", ""};
       },
       "sampling.stop[1]"},
  };
  for (const Case& c : cases) {
    SamplingParams q;
    c.mutate(q);
    Status st = Validate(q);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << c.field;
    EXPECT_EQ(st.field(), c.field);
  }
  SamplingParams greedy;
  greedy.temperature = 0;
  EXPECT_TRUE(Validate(greedy).ok());
}

TEST(SamplingParamsTest, ParsesEveryKey) {
  Result<SamplingParams> r = SamplingParamsFromJson(json::parse(R"({
    "temperature": 0.7, "top_p": 0.9, "top_k": 40, "seed": 18446744073709551615,
    "max_new_tokens": 64, "n": 8, "stop_token_ids": [2, 32000], "stop": ["\n\n", "END"],
    "ignore_eos": true, "on_weight_swap": "abort"})"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_DOUBLE_EQ(r->temperature, 0.7);
  EXPECT_DOUBLE_EQ(r->top_p, 0.9);
  EXPECT_EQ(r->top_k, 40);
  EXPECT_EQ(r->seed, 18446744073709551615ULL);
  EXPECT_EQ(r->max_new_tokens, 64);
  EXPECT_EQ(r->n, 8);
  EXPECT_EQ(r->stop_token_ids, (std::vector<int32_t>{2, 32000}));
  EXPECT_EQ(r->stop, (std::vector<std::string>{"\n\n", "END"}));
  EXPECT_TRUE(r->ignore_eos);
  EXPECT_EQ(r->on_weight_swap, SamplingParams::OnWeightSwap::kAbort);
}

TEST(SamplingParamsTest, AcceptsOpenAiSpellings) {
  Result<SamplingParams> r = SamplingParamsFromJson(
      json{{"max_tokens", 12}, {"stop", "###"}, {"top_k", -1}, {"seed", nullptr}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->max_new_tokens, 12);
  EXPECT_EQ(r->stop, std::vector<std::string>{"###"});
  EXPECT_EQ(r->top_k, 0);
  EXPECT_FALSE(r->seed.has_value());
  EXPECT_TRUE(SamplingParamsFromJson(json::object()).ok());
  SamplingParams greedy;
  greedy.temperature = 0;
  EXPECT_EQ(*SamplingParamsFromJson(json{{"temperature", 0}}), greedy);
}

TEST(SamplingParamsTest, RejectsBadJsonNamingTheKey) {
  EXPECT_EQ(ParseError(json{{"temprature", 1.0}}).field(), "sampling.temprature");
  EXPECT_EQ(ParseError(json{{"temprature", nullptr}}).field(), "sampling.temprature");
  EXPECT_EQ(ParseError(json{{"temperature", "hot"}}).field(), "sampling.temperature");
  EXPECT_EQ(ParseError(json{{"top_k", 1.5}}).field(), "sampling.top_k");
  EXPECT_EQ(ParseError(json{{"n", 4294967296LL}}).field(), "sampling.n");
  EXPECT_EQ(ParseError(json{{"seed", -3}}).field(), "sampling.seed");
  EXPECT_EQ(ParseError(json{{"max_tokens", 0}}).field(), "sampling.max_new_tokens");
  EXPECT_EQ(ParseError(json{{"max_tokens", 4}, {"max_new_tokens", 4}}).field(),
            "sampling.max_tokens");
  EXPECT_EQ(ParseError(json{{"stop_token_ids", {1, "x"}}}).field(), "sampling.stop_token_ids[1]");
  EXPECT_EQ(ParseError(json{{"stop_token_ids", 3}}).field(), "sampling.stop_token_ids");
  EXPECT_EQ(ParseError(json{{"stop", {"a", 3}}}).field(), "sampling.stop[1]");
  EXPECT_EQ(ParseError(json{{"stop", 3}}).field(), "sampling.stop");
  EXPECT_EQ(ParseError(json{{"ignore_eos", 1}}).field(), "sampling.ignore_eos");
  EXPECT_EQ(ParseError(json{{"on_weight_swap", "pause"}}).field(), "sampling.on_weight_swap");
  EXPECT_EQ(ParseError(json{{"top_p", 2}}).ToString(),
            "InvalidArgument: sampling.top_p: must be in (0, 1], got 2");
  EXPECT_EQ(ParseError(json::array()).field(), "sampling");
}

TEST(SamplingParamsTest, JsonRoundTrips) {
  SamplingParams p;
  p.temperature = 0.25;
  p.top_p = 0.5;
  p.top_k = 3;
  p.seed = 99;
  p.max_new_tokens = 1000;
  p.n = 16;
  p.stop_token_ids = {1, 2};
  p.stop = {"</answer>"};
  p.ignore_eos = true;
  p.on_weight_swap = SamplingParams::OnWeightSwap::kAbort;
  Result<SamplingParams> back = SamplingParamsFromJson(SamplingParamsToJson(p));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, p);
  EXPECT_FALSE(SamplingParamsToJson(SamplingParams{}).contains("seed"));
  EXPECT_EQ(*SamplingParamsFromJson(SamplingParamsToJson(SamplingParams{})), SamplingParams{});
}

}  // namespace
}  // namespace sluice::engine
