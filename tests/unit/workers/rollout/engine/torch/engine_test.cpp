// The engine end to end on CPU: continuous batching gives each request the tokens it would get
// alone; log-probs equal the training forward's with prefix sharing and pre-emption; seeds
// reproduce; stop strings and ids cut; aborts; weight swaps tag versions; several policies.
#include "workers/rollout/engine/torch/engine.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "workers/model/char_tokenizer.h"
#include "workers/rollout/engine/kv_cache_budget.h"
#include "workers/rollout/engine/torch/paged_kv_cache.h"

namespace sluice::engine {
namespace {

using model::DecoderModel;

std::shared_ptr<DecoderModel> Model(uint64_t seed, const std::string& family = "llama") {
  Result<DecoderModel> m = DecoderModel::FromBuiltin(
      "builtin:tiny?layers=2&d=64&heads=4&kv_heads=2&ff=96&family=" + family);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  torch::NoGradGuard no_grad;
  torch::manual_seed(seed);
  for (auto& [name, t] : m->NamedParameters()) {
    const bool norm = name.find("norm") != std::string::npos;
    t.copy_(norm ? 1.0 + 0.1 * torch::randn_like(t) : 0.25 * torch::randn_like(t));
  }
  return std::make_shared<DecoderModel>(std::move(m).value());
}

// Greedy generation the slow way: the full training forward over the whole sequence per token.
std::vector<int32_t> NaiveGreedy(const DecoderModel& model, std::vector<int32_t> prompt, int n) {
  std::vector<int32_t> out;
  std::vector<int64_t> seq(prompt.begin(), prompt.end());
  for (int i = 0; i < n; ++i) {
    const auto len = static_cast<int64_t>(seq.size());
    torch::Tensor hidden =
        model.Forward(torch::tensor(seq), torch::tensor({int64_t{0}, len})).value();
    const auto next =
        static_cast<int32_t>(model.Logits(hidden[len - 1].unsqueeze(0)).argmax(1).item<int64_t>());
    out.push_back(next);
    seq.push_back(next);
  }
  return out;
}

// Log-probs of `output` after `prompt` under the training forward.
std::vector<float> TrainingLogProbs(const DecoderModel& model, const std::vector<int32_t>& prompt,
                                    const std::vector<int32_t>& output) {
  std::vector<int64_t> seq(prompt.begin(), prompt.end());
  seq.insert(seq.end(), output.begin(), output.end());
  const auto len = static_cast<int64_t>(seq.size());
  torch::Tensor hidden =
      model.Forward(torch::tensor(seq), torch::tensor({int64_t{0}, len})).value();
  std::vector<int64_t> targets(seq.begin() + 1, seq.end());
  targets.push_back(0);
  torch::Tensor lp = model.TokenLogProbs(hidden, torch::tensor(targets), 0).value().log_probs;
  std::vector<float> out;
  for (size_t i = 0; i < output.size(); ++i) {
    out.push_back(lp[static_cast<int64_t>(prompt.size() + i) - 1].item<float>());
  }
  return out;
}

struct Collected {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
  std::vector<int64_t> versions;
  std::string reason;
  std::string text;
  int updates = 0;
};

// Collects updates per "request/sample"; the engine calls back on the stepping thread.
struct Collector {
  std::map<std::string, Collected> got;
  UpdateCallback Callback() {
    return [this](const SampleUpdate& u) {
      Collected& c = got[u.request_id + "/" + std::to_string(u.sample)];
      EXPECT_TRUE(c.reason.empty()) << "update after finish for " << u.request_id;
      c.tokens.insert(c.tokens.end(), u.tokens.begin(), u.tokens.end());
      c.logprobs.insert(c.logprobs.end(), u.logprobs.begin(), u.logprobs.end());
      c.versions.insert(c.versions.end(), u.versions.begin(), u.versions.end());
      ++c.updates;
      if (u.finished) {
        c.reason = u.finish_reason;
        c.text = u.text;
      }
    };
  }
};

std::vector<int32_t> Prompt(int64_t len, uint64_t seed) {
  torch::manual_seed(seed);
  torch::Tensor t = torch::randint(250, {len}, torch::kInt64);
  return std::vector<int32_t>(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + len);
}

void RunToCompletion(Engine& engine, int max_steps = 5000) {
  for (int i = 0; i < max_steps && engine.HasWork(); ++i) {
    Result<bool> r = engine.Step();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  ASSERT_FALSE(engine.HasWork()) << "did not finish in " << max_steps << " steps";
}

SamplingParams Greedy(int max_new) {
  SamplingParams p;
  p.temperature = 0;
  p.max_new_tokens = max_new;
  p.ignore_eos = true;
  return p;
}

TEST(EngineTest, ContinuousBatchingGivesEachRequestItsSingleRequestGreedyOutput) {
  std::shared_ptr<DecoderModel> model = Model(1);
  EngineOptions options;
  options.block_size = 4;
  options.max_tokens_per_step = 48;  // Forces chunked prefill and mixing.
  Engine engine(options);
  ASSERT_TRUE(engine.AddPolicy("actor", model, 1, nullptr).ok());
  Collector c;
  std::vector<std::pair<std::vector<int32_t>, int>> cases;
  for (int i = 0; i < 10; ++i)
    cases.emplace_back(Prompt(3 + 9 * i % 70, 100 + i), 4 + (i * 7) % 19);
  for (size_t i = 0; i < cases.size(); ++i) {
    GenerationRequest r{"r" + std::to_string(i), "actor", cases[i].first, Greedy(cases[i].second)};
    ASSERT_TRUE(engine.Submit(std::move(r), c.Callback()).ok());
    if (i % 3 == 2) {
      ASSERT_TRUE(engine.Step().ok());  // Requests join a running batch.
    }
  }
  RunToCompletion(engine);
  for (size_t i = 0; i < cases.size(); ++i) {
    const Collected& got = c.got["r" + std::to_string(i) + "/0"];
    EXPECT_EQ(got.reason, "length");
    EXPECT_EQ(got.tokens, NaiveGreedy(*model, cases[i].first, cases[i].second)) << i;
    EXPECT_EQ(got.versions, std::vector<int64_t>(got.tokens.size(), 1));
  }
}

TEST(EngineTest, LogProbsEqualTheTrainingForwardWithSharingAndPreemption) {
  std::shared_ptr<DecoderModel> model = Model(2, "qwen3");
  EngineOptions options;
  options.block_size = 4;
  options.kv_cache_tokens = 160;  // Far less than the load needs at once: pre-emption.
  options.max_tokens_per_step = 64;
  Engine engine(options);
  ASSERT_TRUE(engine.AddPolicy("actor", model, 7, nullptr).ok());
  Collector c;
  const std::vector<int32_t> shared_prompt = Prompt(21, 5);
  for (int i = 0; i < 6; ++i) {
    SamplingParams p;
    p.n = 4;
    p.max_new_tokens = 24;
    p.seed = 1000 + i;
    p.ignore_eos = true;
    // Two requests share their prompt (the prefix cache); the others differ.
    GenerationRequest r{"g" + std::to_string(i), "actor",
                        i < 2 ? shared_prompt : Prompt(9 + i, 50 + i), p};
    ASSERT_TRUE(engine.Submit(std::move(r), c.Callback()).ok());
  }
  RunToCompletion(engine);
  std::vector<PolicyStats> stats = engine.Stats();
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_GT(stats[0].preemptions, 0);
  double max_diff = 0;
  for (int i = 0; i < 6; ++i) {
    const std::vector<int32_t> prompt = i < 2 ? shared_prompt : Prompt(9 + i, 50 + i);
    for (int s = 0; s < 4; ++s) {
      const Collected& got = c.got["g" + std::to_string(i) + "/" + std::to_string(s)];
      ASSERT_EQ(got.tokens.size(), 24u) << i << "/" << s;
      std::vector<float> want = TrainingLogProbs(*model, prompt, got.tokens);
      for (size_t k = 0; k < want.size(); ++k) {
        max_diff = std::max(max_diff, static_cast<double>(std::abs(want[k] - got.logprobs[k])));
      }
      EXPECT_EQ(got.versions, std::vector<int64_t>(24, 7));
    }
    // Samples of a group differ (own seeds) though they share the prefill.
    EXPECT_NE(c.got["g" + std::to_string(i) + "/0"].tokens,
              c.got["g" + std::to_string(i) + "/1"].tokens);
  }
  EXPECT_LT(max_diff, 1e-4);
}

TEST(EngineTest, Bfloat16ModelsGenerateWithCloseLogProbs) {
  std::shared_ptr<DecoderModel> f32 = Model(14, "qwen3");
  Result<DecoderModel> bf16 =
      DecoderModel::FromBuiltin("builtin:tiny?layers=2&d=64&heads=4&kv_heads=2&ff=96&family=qwen3",
                                {.dtype = torch::kBFloat16});
  ASSERT_TRUE(bf16.ok());
  {
    torch::NoGradGuard no_grad;
    auto src = f32->NamedParameters();
    auto dst = bf16->NamedParameters();
    for (size_t i = 0; i < src.size(); ++i) dst[i].second.copy_(src[i].second);
  }
  auto model = std::make_shared<DecoderModel>(std::move(bf16).value());
  EngineOptions options;
  options.block_size = 4;
  Engine engine(options);
  ASSERT_TRUE(engine.AddPolicy("actor", model, 1, nullptr).ok());
  Collector c;
  SamplingParams p;
  p.n = 2;
  p.seed = 9;
  p.max_new_tokens = 12;
  p.ignore_eos = true;
  const std::vector<int32_t> prompt = Prompt(13, 6);
  ASSERT_TRUE(engine.Submit({"b", "actor", prompt, p}, c.Callback()).ok());
  RunToCompletion(engine);
  // bf16 keeps 8 bits of mantissa and the two paths round in different places (batched decode
  // attention against per-sequence attention), so the log-probs agree to bf16 rounding of logits
  // of magnitude ~10, not to float32's 1e-4.
  double sum = 0;
  double max = 0;
  int n = 0;
  for (int s = 0; s < 2; ++s) {
    const Collected& got = c.got["b/" + std::to_string(s)];
    ASSERT_EQ(got.tokens.size(), 12u);
    std::vector<float> want = TrainingLogProbs(*model, prompt, got.tokens);
    for (size_t k = 0; k < want.size(); ++k) {
      const double d = std::abs(static_cast<double>(got.logprobs[k]) - want[k]);
      sum += d;
      max = std::max(max, d);
      ++n;
    }
  }
  EXPECT_LT(sum / n, 0.05);
  EXPECT_LT(max, 0.3);
}

TEST(EngineTest, PrefixCacheReusesAFinishedRequestsPrompt) {
  std::shared_ptr<DecoderModel> model = Model(3);
  EngineOptions options;
  options.block_size = 4;
  Engine engine(options);
  ASSERT_TRUE(engine.AddPolicy("actor", model, 1, nullptr).ok());
  Collector c;
  const std::vector<int32_t> prompt = Prompt(30, 9);
  ASSERT_TRUE(engine.Submit({"a", "actor", prompt, Greedy(5)}, c.Callback()).ok());
  RunToCompletion(engine);
  const int64_t before = engine.Stats()[0].prefix_cache_hit_tokens;
  ASSERT_TRUE(engine.Submit({"b", "actor", prompt, Greedy(5)}, c.Callback()).ok());
  RunToCompletion(engine);
  EXPECT_GE(engine.Stats()[0].prefix_cache_hit_tokens - before, 28);
  EXPECT_EQ(c.got["a/0"].tokens, c.got["b/0"].tokens);
}

TEST(EngineTest, SeedsReproduceWhateverRunsAlongside) {
  std::shared_ptr<DecoderModel> model = Model(4);
  auto run = [&](bool crowd, uint64_t seed) {
    Engine engine(EngineOptions{});
    EXPECT_TRUE(engine.AddPolicy("actor", model, 1, nullptr).ok());
    Collector c;
    SamplingParams p;
    p.seed = seed;
    p.max_new_tokens = 20;
    p.top_p = 0.9;
    p.ignore_eos = true;
    if (crowd) {
      for (int i = 0; i < 5; ++i) {
        SamplingParams q = p;
        q.seed.reset();
        EXPECT_TRUE(
            engine.Submit({"x" + std::to_string(i), "actor", Prompt(7 + i, i), q}, c.Callback())
                .ok());
      }
    }
    EXPECT_TRUE(engine.Submit({"me", "actor", Prompt(12, 77), p}, c.Callback()).ok());
    RunToCompletion(engine);
    return c.got["me/0"].tokens;
  };
  const std::vector<int32_t> alone = run(false, 123);
  EXPECT_EQ(alone.size(), 20u);
  EXPECT_EQ(run(true, 123), alone);
  EXPECT_NE(run(false, 124), alone);
}

TEST(EngineTest, StopStringsAndStopIdsEndTheSample) {
  std::shared_ptr<DecoderModel> model = Model(5);
  auto tokenizer = std::make_shared<model::CharTokenizer>();
  const std::vector<int32_t> prompt = tokenizer->Encode("Hello, engine");
  const std::vector<int32_t> greedy = NaiveGreedy(*model, prompt, 12);
  const std::string greedy_text = tokenizer->Decode(greedy);
  ASSERT_EQ(greedy_text.size(), 12u) << "byte tokens expected";
  Engine engine(EngineOptions{});
  ASSERT_TRUE(engine.AddPolicy("actor", model, 1, tokenizer).ok());
  Collector c;
  SamplingParams p = Greedy(12);
  p.stop = {greedy_text.substr(5, 2), "never-matches"};  // Completed by the 7th token.
  ASSERT_TRUE(engine.Submit({"s", "actor", prompt, p}, c.Callback()).ok());
  SamplingParams q = Greedy(12);
  q.stop_token_ids = {greedy[3]};
  ASSERT_TRUE(engine.Submit({"t", "actor", prompt, q}, c.Callback()).ok());
  RunToCompletion(engine);
  const Collected& s = c.got["s/0"];
  EXPECT_EQ(s.reason, "stop");
  const size_t first = greedy_text.find(greedy_text.substr(5, 2));
  EXPECT_EQ(s.tokens, std::vector<int32_t>(
                          greedy.begin(), greedy.begin() + static_cast<std::ptrdiff_t>(first + 2)));
  EXPECT_EQ(s.text, greedy_text.substr(0, first));
  const Collected& t = c.got["t/0"];
  EXPECT_EQ(t.reason, "stop");
  const size_t stop_at =
      static_cast<size_t>(std::find(greedy.begin(), greedy.end(), greedy[3]) - greedy.begin());
  EXPECT_EQ(t.tokens.size(), stop_at + 1);
  EXPECT_EQ(t.tokens.back(), greedy[3]);
}

TEST(EngineTest, AbortFinishesEverySampleOfTheRequest) {
  std::shared_ptr<DecoderModel> model = Model(6);
  Engine engine(EngineOptions{});
  ASSERT_TRUE(engine.AddPolicy("actor", model, 1, nullptr).ok());
  Collector c;
  SamplingParams p = Greedy(200);
  p.n = 3;
  ASSERT_TRUE(engine.Submit({"long", "actor", Prompt(10, 1), p}, c.Callback()).ok());
  ASSERT_TRUE(engine.Submit({"short", "actor", Prompt(10, 2), Greedy(3)}, c.Callback()).ok());
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(engine.Step().ok());
  ASSERT_TRUE(engine.Abort("long").ok());
  EXPECT_EQ(engine.Abort("nope").code(), StatusCode::kNotFound);
  RunToCompletion(engine);
  for (int s = 0; s < 3; ++s) {
    const Collected& got = c.got["long/" + std::to_string(s)];
    EXPECT_EQ(got.reason, "abort");
    EXPECT_GE(got.tokens.size(), 3u);
    EXPECT_LT(got.tokens.size(), 200u);
  }
  EXPECT_EQ(c.got["short/0"].reason, "length");
  EXPECT_EQ(engine.Stats()[0].running, 0);
  EXPECT_EQ(engine.Stats()[0].kv_usage, 0.0);
}

TEST(EngineTest, WeightSwapTagsTokensWithTheVersionThatProducedThem) {
  std::shared_ptr<DecoderModel> model = Model(7);
  std::shared_ptr<DecoderModel> next = Model(8);
  Engine engine(EngineOptions{});
  ASSERT_TRUE(engine.AddPolicy("actor", model, 1, nullptr).ok());
  Collector c;
  SamplingParams keep = Greedy(30);
  SamplingParams drop = Greedy(30);
  drop.on_weight_swap = SamplingParams::OnWeightSwap::kAbort;
  const std::vector<int32_t> prompt = Prompt(15, 3);
  ASSERT_TRUE(engine.Submit({"keep", "actor", prompt, keep}, c.Callback()).ok());
  ASSERT_TRUE(engine.Submit({"drop", "actor", prompt, drop}, c.Callback()).ok());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(engine.Step().ok());
  EXPECT_EQ(engine.SwapWeights("actor", {{"model.norm.weight", torch::ones({3})}}, 2).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(engine.SwapWeights("actor", {{"no.such", torch::ones({3})}}, 2).code(),
            StatusCode::kInvalidArgument);
  std::vector<std::pair<std::string, torch::Tensor>> weights;
  for (auto& [name, t] : next->NamedParameters()) weights.emplace_back(name, t.clone());
  ASSERT_TRUE(engine.SwapWeights("actor", weights, 2).ok());
  // A request submitted after the swap runs entirely on version 2.
  ASSERT_TRUE(engine.Submit({"after", "actor", prompt, Greedy(10)}, c.Callback()).ok());
  RunToCompletion(engine);
  const Collected& k = c.got["keep/0"];
  ASSERT_EQ(k.tokens.size(), 30u);
  const auto old_tokens = static_cast<size_t>(std::count(k.versions.begin(), k.versions.end(), 1));
  EXPECT_GT(old_tokens, 0u);
  EXPECT_LT(old_tokens, 30u);
  for (size_t i = 0; i < k.versions.size(); ++i) EXPECT_EQ(k.versions[i], i < old_tokens ? 1 : 2);
  EXPECT_EQ(std::vector<int32_t>(k.tokens.begin(),
                                 k.tokens.begin() + static_cast<std::ptrdiff_t>(old_tokens)),
            std::vector<int32_t>(NaiveGreedy(*Model(7), prompt, static_cast<int>(old_tokens))));
  const Collected& d = c.got["drop/0"];
  EXPECT_EQ(d.reason, "weight_swap");
  EXPECT_EQ(d.versions, std::vector<int64_t>(d.tokens.size(), 1));
  const Collected& a = c.got["after/0"];
  EXPECT_EQ(a.versions, std::vector<int64_t>(10, 2));
  EXPECT_EQ(a.tokens, NaiveGreedy(*next, prompt, 10));  // No stale prefix-cache KV reused.
  EXPECT_EQ(engine.Stats()[0].version, 2);
}

TEST(EngineTest, PoliciesKeepTheirOwnModels) {
  std::shared_ptr<DecoderModel> a = Model(9);
  std::shared_ptr<DecoderModel> b = Model(10, "qwen3");
  Engine engine(EngineOptions{});
  ASSERT_TRUE(engine.AddPolicy("actor", a, 1, nullptr).ok());
  ASSERT_TRUE(engine.AddPolicy("critic", b, 4, nullptr).ok());
  EXPECT_EQ(engine.AddPolicy("actor", b, 1, nullptr).code(), StatusCode::kAlreadyExists);
  Collector c;
  const std::vector<int32_t> prompt = Prompt(11, 4);
  ASSERT_TRUE(engine.Submit({"1", "actor", prompt, Greedy(8)}, c.Callback()).ok());
  ASSERT_TRUE(engine.Submit({"2", "critic", prompt, Greedy(8)}, c.Callback()).ok());
  RunToCompletion(engine);
  EXPECT_EQ(c.got["1/0"].tokens, NaiveGreedy(*a, prompt, 8));
  EXPECT_EQ(c.got["2/0"].tokens, NaiveGreedy(*b, prompt, 8));
  EXPECT_EQ(c.got["2/0"].versions, std::vector<int64_t>(8, 4));
}

TEST(EngineTest, SubmitRejectsBadRequestsNamingTheField) {
  Engine engine([] {
    EngineOptions o;
    o.kv_cache_tokens = 64;
    return o;
  }());
  ASSERT_TRUE(engine.AddPolicy("actor", Model(11), 1, nullptr).ok());
  auto field = [&](GenerationRequest r) {
    Status s = engine.Submit(std::move(r), nullptr);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    return s.field();
  };
  EXPECT_EQ(field({"x", "nobody", {1, 2}, {}}), "policy");
  EXPECT_EQ(field({"x", "actor", {}, {}}), "prompt");
  EXPECT_EQ(field({"x", "actor", {1, 5000}, {}}), "prompt");
  EXPECT_EQ(field({"x", "actor", std::vector<int32_t>(64, 1), {}}), "prompt");
  EXPECT_EQ(field({"", "actor", {1}, {}}), "id");
  SamplingParams bad;
  bad.top_p = 1.5;
  EXPECT_FALSE(engine.Submit({"x", "actor", {1}, bad}, nullptr).ok());
  ASSERT_TRUE(engine.Submit({"x", "actor", {1}, Greedy(2)}, nullptr).ok());
  EXPECT_EQ(field({"x", "actor", {1}, {}}), "id");  // In flight.
}

TEST(EngineTest, KvCacheSizedFromAMemoryFraction) {
  EngineOptions o;
  o.kv_cache_memory_fraction = 0.001;
  Engine engine(o);
  std::shared_ptr<DecoderModel> model = Model(13);
  ASSERT_TRUE(engine.AddPolicy("actor", model, 1, nullptr).ok());
  const int64_t per_block =
      PagedKvCache::BytesPerBlock(model->config(), o.block_size, model->dtype());
  EXPECT_GT(engine.Stats()[0].kv_blocks, 0);
  EXPECT_LE(engine.Stats()[0].kv_blocks * per_block, AvailableHostMemoryBytes() / 500);
  o.kv_cache_memory_fraction = 2;
  Engine bad(o);
  EXPECT_EQ(bad.AddPolicy("actor", model, 1, nullptr).field(), "kv_cache_memory_fraction");
}

TEST(EngineTest, RunLoopServesRequestsFromOtherThreads) {
  Engine engine(EngineOptions{});
  ASSERT_TRUE(engine.AddPolicy("actor", Model(12), 1, nullptr).ok());
  CancellationSource stop;
  std::thread loop([&] { engine.Run(stop.Token()); });
  std::mutex mu;
  std::condition_variable cv;
  int finished = 0;
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(engine
                    .Submit({"r" + std::to_string(i), "actor", Prompt(5, i), Greedy(6)},
                            [&](const SampleUpdate& u) {
                              if (!u.finished) return;
                              std::lock_guard<std::mutex> lock(mu);
                              ++finished;
                              cv.notify_all();
                            })
                    .ok());
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return finished == 4; }));
  }
  stop.Cancel();
  loop.join();
}

}  // namespace
}  // namespace sluice::engine
