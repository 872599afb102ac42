// Benchmark of the rollout engine on CPU (workers/rollout/engine/torch/engine.h): generated
// tokens per second for a GRPO-like load, the engine against a naive loop in the same run.
//
// Load: P prompts (default 64) x n samples (default 8); prompt lengths uniform in [32, 96];
// max_new_tokens per prompt long-tailed (log-normal, median 48, capped at 256); sampling at
// temperature 1 with ignore_eos, so every sample runs to its length. The engine runs it with
// continuous batching, chunked prefill and group prefix sharing (each prompt prefilled once for
// its n samples). The naive loop is what a first implementation does: one sample at a time, and
// for every token the full forward over prompt + output so far (no KV cache), the same model and
// sampler. The naive loop runs the first prompts until --naive-seconds pass (its rate does not
// depend on how many it runs); the ratio is engine tokens/s over naive tokens/s. A third run,
// the engine without sharing (n separate requests per prompt, prefix cache off), shows what the
// group prefill sharing adds.
//
// Models: the built-in tiny model (2 layers, d 128, char vocabulary) and a small Qwen3-shaped
// one (4 layers, d 256, 8 heads, 2 kv heads, QK norm, vocabulary 8192).
//
// Flags: --prompts P, --samples N, --naive-seconds S, --quick (P 16, shorter naive run),
// --threads T (torch intra-op threads, default: torch's).
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "workers/rollout/engine/torch/engine.h"
#include "workers/rollout/engine/torch/sampler.h"

namespace sluice::engine {
namespace {

using BenchClock = std::chrono::steady_clock;

struct Load {
  std::vector<std::vector<int32_t>> prompts;
  std::vector<int32_t> max_new;
};

Load MakeLoad(int prompts, int64_t vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> len(32, 96);
  std::uniform_int_distribution<int32_t> tok(
      0, static_cast<int32_t>(std::min<int64_t>(vocab, 256)) - 1);
  std::lognormal_distribution<double> out(std::log(48.0), 0.8);
  Load load;
  for (int i = 0; i < prompts; ++i) {
    std::vector<int32_t> p(static_cast<size_t>(len(rng)));
    for (int32_t& t : p) t = tok(rng);
    load.prompts.push_back(std::move(p));
    load.max_new.push_back(static_cast<int32_t>(std::clamp(out(rng), 4.0, 256.0)));
  }
  return load;
}

struct Figures {
  int64_t tokens = 0;
  double seconds = 0;
  double TokensPerSecond() const { return seconds > 0 ? static_cast<double>(tokens) / seconds : 0; }
};

// share: one request with n samples per prompt (one prefill, forked) and the prefix cache;
// otherwise n separate requests per prompt with the prefix cache off (every sample prefills).
Figures RunEngine(const std::shared_ptr<model::DecoderModel>& model, const Load& load, int samples,
                  bool share, PolicyStats* stats_out) {
  EngineOptions options;
  options.block_size = 16;
  options.kv_cache_bytes = int64_t{1} << 30;
  options.max_tokens_per_step = 4096;
  options.max_running = 512;
  options.prefix_cache = share;
  Engine engine(options);
  if (Status st = engine.AddPolicy("actor", model, 1, nullptr); !st.ok()) {
    std::fprintf(stderr, "%s\n", st.ToString().c_str());
    std::exit(1);
  }
  Figures f;
  const auto start = BenchClock::now();
  for (size_t i = 0; i < load.prompts.size(); ++i) {
    for (int copy = 0; copy < (share ? 1 : samples); ++copy) {
      SamplingParams p;
      p.n = share ? samples : 1;
      p.max_new_tokens = load.max_new[i];
      p.ignore_eos = true;
      p.seed = i * 1000 + static_cast<uint64_t>(copy);
      Status st = engine.Submit(
          {"r" + std::to_string(i) + "." + std::to_string(copy), "actor", load.prompts[i], p},
          [&](const SampleUpdate& u) { f.tokens += static_cast<int64_t>(u.tokens.size()); });
      if (!st.ok()) {
        std::fprintf(stderr, "%s\n", st.ToString().c_str());
        std::exit(1);
      }
    }
  }
  while (engine.HasWork()) {
    Result<bool> r = engine.Step();
    if (!r.ok()) {
      std::fprintf(stderr, "%s\n", r.status().ToString().c_str());
      std::exit(1);
    }
  }
  f.seconds = std::chrono::duration<double>(BenchClock::now() - start).count();
  *stats_out = engine.Stats()[0];
  return f;
}

Figures RunNaive(const model::DecoderModel& model, const Load& load, int samples,
                 double budget_seconds) {
  torch::NoGradGuard no_grad;
  Figures f;
  const auto start = BenchClock::now();
  for (size_t i = 0; i < load.prompts.size(); ++i) {
    for (int s = 0; s < samples; ++s) {
      std::vector<int64_t> seq(load.prompts[i].begin(), load.prompts[i].end());
      for (int32_t k = 0; k < load.max_new[i]; ++k) {
        const auto len = static_cast<int64_t>(seq.size());
        torch::Tensor hidden =
            model.Forward(torch::tensor(seq), torch::tensor({int64_t{0}, len})).value();
        torch::Tensor logits = model.Logits(hidden.slice(0, len - 1, len));
        const SamplingRow row{1.0, 0, 1.0, Engine::SampleSeed(i, s), static_cast<uint64_t>(k)};
        seq.push_back(SampleTokens(logits, std::vector<SamplingRow>{row})[0].token);
        ++f.tokens;
      }
      f.seconds = std::chrono::duration<double>(BenchClock::now() - start).count();
      if (f.seconds > budget_seconds) return f;
    }
  }
  return f;
}

void Bench(const char* name, const std::string& uri, int prompts, int samples,
           double naive_seconds) {
  Result<model::DecoderModel> m = model::DecoderModel::FromBuiltin(uri);
  if (!m.ok()) {
    std::fprintf(stderr, "%s\n", m.status().ToString().c_str());
    std::exit(1);
  }
  auto model = std::make_shared<model::DecoderModel>(std::move(m).value());
  const Load load = MakeLoad(prompts, model->config().vocab_size, 7);
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;
  for (size_t i = 0; i < load.prompts.size(); ++i) {
    prompt_tokens += static_cast<int64_t>(load.prompts[i].size());
    output_tokens += int64_t{load.max_new[i]} * samples;
  }
  PolicyStats stats;
  PolicyStats unshared_stats;
  const Figures naive = RunNaive(*model, load, samples, naive_seconds);
  const Figures engine = RunEngine(model, load, samples, /*share=*/true, &stats);
  const Figures unshared = RunEngine(model, load, samples, /*share=*/false, &unshared_stats);
  std::printf("%s (%s)\n", name, uri.c_str());
  std::printf("  load: %d prompts x %d samples, %lld prompt tokens, %lld output tokens\n", prompts,
              samples, static_cast<long long>(prompt_tokens),
              static_cast<long long>(output_tokens));
  std::printf(
      "  engine: %lld tokens in %.2f s = %.0f tokens/s (prefill computed %lld tokens, "
      "%lld pre-emptions)\n",
      static_cast<long long>(engine.tokens), engine.seconds, engine.TokensPerSecond(),
      static_cast<long long>(stats.prefill_tokens), static_cast<long long>(stats.preemptions));
  std::printf(
      "  engine, no sharing (n requests per prompt, no prefix cache): %.0f tokens/s "
      "(prefill computed %lld tokens)\n",
      unshared.TokensPerSecond(), static_cast<long long>(unshared_stats.prefill_tokens));
  std::printf("  naive:  %lld tokens in %.2f s = %.0f tokens/s\n",
              static_cast<long long>(naive.tokens), naive.seconds, naive.TokensPerSecond());
  std::printf(
      "  ratio engine / naive: %.1fx (target >= 10x); engine / engine without sharing: "
      "%.2fx\n",
      naive.TokensPerSecond() > 0 ? engine.TokensPerSecond() / naive.TokensPerSecond() : 0,
      unshared.TokensPerSecond() > 0 ? engine.TokensPerSecond() / unshared.TokensPerSecond() : 0);
}

}  // namespace
}  // namespace sluice::engine

int main(int argc, char** argv) {
  int prompts = 64;
  int samples = 8;
  double naive_seconds = 20;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--prompts") {
      prompts = std::atoi(next());
    } else if (a == "--samples") {
      samples = std::atoi(next());
    } else if (a == "--naive-seconds") {
      naive_seconds = std::atof(next());
    } else if (a == "--threads") {
      torch::set_num_threads(std::atoi(next()));
    } else if (a == "--quick") {
      prompts = 16;
      naive_seconds = 5;
    } else if (a == "--help" || a == "-h") {
      std::printf(
          "usage: sluice_bench_engine [--prompts P] [--samples N] [--naive-seconds S] "
          "[--threads T] [--quick]\n");
      return 0;
    } else {
      std::fprintf(stderr, "unknown flag %s (see --help)\n", a.c_str());
      return 2;
    }
  }
  std::printf("rollout engine, CPU, torch threads %d\n", torch::get_num_threads());
  sluice::engine::Bench("tiny", "builtin:tiny?layers=2&d=128&heads=4&vocab=char", prompts, samples,
                        naive_seconds);
  sluice::engine::Bench(
      "small qwen3-shaped",
      "builtin:tiny?layers=4&d=256&heads=8&kv_heads=2&ff=768&vocab=8192&family=qwen3", prompts,
      samples, naive_seconds);
  return 0;
}
