// Decode throughput of the built-in engine on a GPU (workers/rollout/engine/torch/engine.h):
// generated tokens per second at batch 1, 64 and 256 for Qwen3-0.6B and Qwen3-1.7B shapes with
// random bf16 weights, against the HBM roofline.
//
// Per shape and batch B: B requests with 128-token prompts decode greedily with ignore_eos. The
// prefill steps run untimed; then K decode steps (each emits one token per request) are timed
// with the device synchronised at both ends, so the figure is the engine's whole step: the
// forward, the logits' trip to the host and the host-side sampling.
//
// Roofline: a decode step must read every weight once (lm_head included) and each request's KV
// cache so far, so it cannot beat bytes_per_step / bandwidth. The bandwidth is a 2 GiB
// device-to-device copy measured in the same run (bytes read + written), also shown against the
// H200's nominal 4.8 TB/s. "% roofline" is measured tokens/s over B * bandwidth / bytes_per_step.
//
// Below each row, the parts of a step timed alone: the forward (PagedForward), the logits' copy to
// the host and the host-side sampling.
//
// Flags: --cpu-dry-run (a tiny Qwen3-shaped model on the CPU, batches 1 and 4, few steps: proves
// this code where no GPU is), --steps K (timed decode steps, default 32).
// Prints "no CUDA device" and exits 0 when none is visible and --cpu-dry-run is not given.
#include <torch/cuda.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/gpu/device_timing.h"
#include "bench/gpu/gpu_bench_flags.h"
#include "bench/gpu/qwen3_shapes.h"
#include "workers/rollout/engine/torch/engine.h"
#include "workers/rollout/engine/torch/paged_forward.h"
#include "workers/rollout/engine/torch/paged_kv_cache.h"
#include "workers/rollout/engine/torch/sampler.h"

namespace sluice::bench {
namespace {

using engine::Engine;
using engine::EngineOptions;
using engine::SampleUpdate;
using engine::SamplingParams;

constexpr double kNominalHbmBytesPerSecond = 4.8e12;  // H200, HBM3e.
constexpr int64_t kPromptTokens = 128;

// Device-to-device copy bandwidth, bytes read + written per second (median of 10).
double CopyBandwidth(const torch::Device& device, int64_t bytes) {
  torch::Tensor src =
      torch::empty({bytes}, torch::TensorOptions().dtype(torch::kUInt8).device(device));
  torch::Tensor dst = torch::empty_like(src);
  src.fill_(1);
  return 2.0 * static_cast<double>(bytes) / MedianSeconds(device, 3, 10, [&] { dst.copy_(src); });
}

int64_t WeightBytes(const model::DecoderModel& m) {
  int64_t bytes = 0;
  for (const torch::Tensor& t : m.Parameters()) bytes += t.numel() * t.element_size();
  return bytes;
}

struct DecodeFigures {
  double tokens_per_second = 0;
  double step_ms = 0;
  double mean_context = 0;
};

DecodeFigures RunBatch(const std::shared_ptr<model::DecoderModel>& model, int batch, int steps) {
  EngineOptions options;
  options.block_size = 16;
  options.kv_cache_tokens = static_cast<int64_t>(batch) * (kPromptTokens + steps + 32);
  options.max_running = batch;
  options.max_tokens_per_step = 8192;
  Engine engine(options);
  if (Status st = engine.AddPolicy("actor", model, 1, nullptr); !st.ok()) {
    std::fprintf(stderr, "AddPolicy: %s\n", st.ToString().c_str());
    std::exit(1);
  }
  std::map<std::string, int64_t> emitted;
  torch::manual_seed(7);
  for (int i = 0; i < batch; ++i) {
    torch::Tensor t = torch::randint(1000, {kPromptTokens}, torch::kInt64);
    std::vector<int32_t> prompt(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + kPromptTokens);
    SamplingParams p;
    p.temperature = 0;
    p.ignore_eos = true;
    p.max_new_tokens = steps + 8;  // Still decoding through every timed step.
    const std::string id = "r" + std::to_string(i);
    emitted[id] = 0;
    Status st = engine.Submit({id, "actor", prompt, p}, [&emitted](const SampleUpdate& u) {
      emitted[u.request_id] += static_cast<int64_t>(u.tokens.size());
    });
    if (!st.ok()) {
      std::fprintf(stderr, "Submit: %s\n", st.ToString().c_str());
      std::exit(1);
    }
  }
  auto all_started = [&emitted] {
    for (const auto& [id, n] : emitted) {
      if (n == 0) return false;
    }
    return true;
  };
  // Prefill (and the first token of every request), untimed; two more steps warm the decode path.
  for (int i = 0; i < 1000 && !all_started(); ++i) (void)engine.Step();
  for (int i = 0; i < 2; ++i) (void)engine.Step();
  int64_t before = 0;
  for (const auto& [id, n] : emitted) before += n;
  const torch::Device device = model->device();
  Sync(device);
  const auto t0 = BenchClock::now();
  for (int i = 0; i < steps; ++i) {
    Result<bool> r = engine.Step();
    if (!r.ok()) {
      std::fprintf(stderr, "Step: %s\n", r.status().ToString().c_str());
      std::exit(1);
    }
  }
  Sync(device);
  const double secs = Seconds(t0);
  int64_t after = 0;
  for (const auto& [id, n] : emitted) after += n;
  DecodeFigures f;
  f.tokens_per_second = static_cast<double>(after - before) / secs;
  f.step_ms = 1e3 * secs / steps;
  f.mean_context = static_cast<double>(kPromptTokens) + 3.0 + steps / 2.0;
  if (after - before != static_cast<int64_t>(batch) * steps) {
    std::printf("  (note: %lld tokens in %d steps at batch %d)\n",
                static_cast<long long>(after - before), steps, batch);
  }
  return f;
}

// Where a decode step's time goes, each part alone (median of 10 after 2 warm-ups, synchronised):
// PagedForward over B one-token decode chunks at the bench's mean context (an empty cache: the
// arithmetic does not depend on the values), the logits' copy to the host (what sampling on the
// host would pay first; SampleTokens samples GPU logits on the GPU), and SampleTokens (greedy).
struct Breakdown {
  double forward_ms = 0, copy_ms = 0, sample_ms = 0;
};

template <typename Fn>
double MedianMs(const torch::Device& device, Fn&& fn) {
  return 1e3 * MedianSeconds(device, 2, 10, fn);
}

Breakdown MeasureBreakdown(const model::DecoderModel& model, int batch, int64_t context) {
  const int64_t block = 16;
  const int64_t per_seq = (context + block - 1) / block;
  Result<engine::PagedKvCache> cache = engine::PagedKvCache::Create(
      model.config(), batch * per_seq, block, model.dtype(), model.device());
  if (!cache.ok()) {
    std::fprintf(stderr, "cache: %s\n", cache.status().ToString().c_str());
    std::exit(1);
  }
  std::vector<std::vector<int32_t>> tables(static_cast<size_t>(batch));
  const std::vector<int32_t> token = {1};
  std::vector<engine::ForwardChunk> chunks;
  for (int b = 0; b < batch; ++b) {
    for (int64_t k = 0; k < per_seq; ++k)
      tables[b].push_back(static_cast<int32_t>(b * per_seq + k));
  }
  for (int b = 0; b < batch; ++b) chunks.push_back({token, context - 1, tables[b], true});
  const torch::Device device = model.device();
  torch::Tensor logits;
  Breakdown out;
  out.forward_ms =
      MedianMs(device, [&] { logits = engine::PagedForward(model, *cache, chunks).value(); });
  out.copy_ms = MedianMs(device, [&] { (void)logits.to(torch::kCPU); });
  std::vector<engine::SamplingRow> rows(static_cast<size_t>(batch));
  for (auto& r : rows) r.temperature = 0;
  out.sample_ms = MedianMs(device, [&] { (void)engine::SampleTokens(logits, rows); });
  return out;
}

int Main(int argc, char** argv) {
  GpuBenchFlags flags;
  if (std::optional<int> exit =
          ParseGpuBenchFlags(argc, argv, "sluice_bench_gpu_decode", 32, flags))
    return *exit;
  const bool dry_run = flags.dry_run;
  int steps = flags.steps;
  const torch::Device device = flags.device;
  const std::vector<NamedShape> shapes = dry_run ? DryRunShapes() : GpuShapes();
  const std::vector<int> batches = dry_run ? std::vector<int>{1, 4} : std::vector<int>{1, 64, 256};
  if (dry_run) steps = std::min(steps, 4);

  const double bandwidth =
      CopyBandwidth(device, dry_run ? (int64_t{64} << 20) : (int64_t{2} << 30));
  std::printf("device-to-device copy: %.0f GB/s (read + write; nominal HBM %.0f GB/s)\n",
              bandwidth / 1e9, kNominalHbmBytesPerSecond / 1e9);
  std::printf("%-22s %6s %10s %9s %9s %12s %11s %10s\n", "shape (bf16)", "batch", "tokens/s",
              "step ms", "MB/step", "roofline t/s", "% roofline", "% nominal");
  for (const NamedShape& shape : shapes) {
    const auto t0 = BenchClock::now();
    Result<model::DecoderModel> m = model::DecoderModel::CreateRandom(
        shape.config, 1, {.dtype = torch::kBFloat16, .device = device});
    if (!m.ok()) {
      std::fprintf(stderr, "%s: %s\n", shape.name.c_str(), m.status().ToString().c_str());
      return 1;
    }
    auto model = std::make_shared<model::DecoderModel>(std::move(m).value());
    int64_t params = 0;
    for (const torch::Tensor& t : model->Parameters()) params += t.numel();
    std::printf("%s: %.1f M parameters, %.2f GB of bf16 weights (built in %.1f s)\n",
                shape.name.c_str(), static_cast<double>(params) / 1e6,
                static_cast<double>(WeightBytes(*model)) / 1e9, Seconds(t0));
    const model::ModelConfig& c = model->config();
    const double kv_bytes_per_token =
        2.0 * static_cast<double>(c.num_hidden_layers * c.num_key_value_heads * c.head_dim) * 2.0;
    for (int batch : batches) {
      const DecodeFigures f = RunBatch(model, batch, steps);
      const double bytes =
          static_cast<double>(WeightBytes(*model)) + batch * f.mean_context * kv_bytes_per_token;
      const double roofline = batch * bandwidth / bytes;
      const double nominal = batch * kNominalHbmBytesPerSecond / bytes;
      std::printf("%-22s %6d %10.0f %9.2f %9.1f %12.0f %10.1f%% %9.1f%%\n", shape.name.c_str(),
                  batch, f.tokens_per_second, f.step_ms, bytes / 1e6, roofline,
                  100.0 * f.tokens_per_second / roofline, 100.0 * f.tokens_per_second / nominal);
      const Breakdown parts = MeasureBreakdown(*model, batch, static_cast<int64_t>(f.mean_context));
      std::printf(
          "%-22s %6s   forward %.2f ms, sampling %.2f ms (a copy of the logits to the host "
          "would take %.2f ms)\n",
          "", "", parts.forward_ms, parts.sample_ms, parts.copy_ms);
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace
}  // namespace sluice::bench

int main(int argc, char** argv) { return sluice::bench::Main(argc, argv); }
