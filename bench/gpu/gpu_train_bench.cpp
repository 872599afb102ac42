// Training throughput of a GRPO step on a GPU for Qwen3-0.6B and Qwen3-1.7B shapes with random
// weights: tokens/s and model FLOPs utilisation (MFU).
//
// The step is the trainer's math, called directly: a no-grad recompute of the proximal
// log-probs (DecoderModel::Forward + chunked TokenLogProbs), the same forward with autograd, the
// PPO-clip policy loss (trainer/torch/policy_loss.h, token-mean), the backward and an AdamW update.
// PolicyTrainer itself still refuses a CUDA model (issue 25), so this measures what it will run.
// Batch: 8 sequences of 512 tokens (4,096 tokens), one micro-batch; one warm-up step, then the
// median of the timed steps, with the device synchronised around each.
//
// Two parameter precisions: float32 (matmuls in true float32: libtorch leaves TF32 off) and
// bfloat16 parameters with AdamW state in bfloat16 (no float32 master copy: that is issue 25's
// remaining trainer work). Log-probs and the loss are float32 in both.
//
// MFU: model FLOPs per step over time, against the H200's dense bf16 peak (989 TFLOP/s) and
// against a bf16 8192^3 matmul measured in the same run. Model FLOPs = 3 passes (forward +
// 2x backward) x (2 x matmul parameters per token + causal attention 2 x q_width x seq x layers)
// per token, plus the no-grad recompute's forward (1 pass); the recompute is real work the step
// does, so it counts.
//
// Flags: --cpu-dry-run (a tiny Qwen3-shaped model on the CPU, short sequences), --steps K.
// Prints "no CUDA device" and exits 0 when none is visible and --cpu-dry-run is not given.
#include <torch/cuda.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "bench/gpu/device_timing.h"
#include "bench/gpu/gpu_bench_flags.h"
#include "bench/gpu/qwen3_shapes.h"
#include "workers/model/nn/decoder_model.h"
#include "workers/trainer/torch/policy_loss.h"

namespace sluice::bench {
namespace {

constexpr double kPeakBf16Flops = 989e12;  // H200 dense bf16.

// FLOP/s of a bf16 n^3 matmul (median of 10 after 3 warm-ups).
double MatmulFlops(const torch::Device& device, int64_t n) {
  auto opts = torch::TensorOptions().dtype(torch::kBFloat16).device(device);
  torch::Tensor a = torch::randn({n, n}, opts);
  torch::Tensor b = torch::randn({n, n}, opts);
  const double secs = MedianSeconds(device, 3, 10, [&] { (void)torch::mm(a, b); });
  return 2.0 * static_cast<double>(n) * n * n / secs;
}

struct Batch {
  torch::Tensor tokens, cu_seqlens, targets, mask, seq_index, advantages;
  int64_t sequences = 0;
  int64_t seq_len = 0;
};

Batch MakeBatch(int64_t sequences, int64_t seq_len, int64_t vocab, const torch::Device& device) {
  torch::manual_seed(3);
  const int64_t n = sequences * seq_len;
  Batch b;
  b.sequences = sequences;
  b.seq_len = seq_len;
  b.tokens = torch::randint(vocab, {n}, torch::kInt64);
  b.cu_seqlens = torch::arange(0, n + 1, seq_len, torch::kInt64);
  // Next-token targets; the last token of each sequence has none and is masked out.
  torch::Tensor targets = torch::roll(b.tokens, -1);
  torch::Tensor mask = torch::ones({n}, torch::kFloat32);
  for (int64_t s = 0; s < sequences; ++s) {
    targets[(s + 1) * seq_len - 1] = 0;
    mask[(s + 1) * seq_len - 1] = 0;
  }
  b.targets = targets.to(device);
  b.mask = mask.to(device);
  b.seq_index = torch::arange(sequences, torch::kInt64).repeat_interleave(seq_len).to(device);
  // GRPO advantages: one per sequence, zero mean within the batch.
  torch::Tensor adv = torch::randn({sequences});
  adv = (adv - adv.mean()) / (adv.std() + 1e-6);
  b.advantages = adv.repeat_interleave(seq_len).to(device);
  b.tokens = b.tokens.to(device);
  return b;
}

double Step(const model::DecoderModel& m, torch::optim::Optimizer& optimizer, const Batch& b,
            int64_t chunk) {
  torch::Tensor old_logp;
  {
    torch::NoGradGuard no_grad;
    torch::Tensor hidden = m.Forward(b.tokens, b.cu_seqlens).value();
    old_logp = m.TokenLogProbs(hidden, b.targets, chunk).value().log_probs;
  }
  torch::Tensor hidden = m.Forward(b.tokens, b.cu_seqlens).value();
  model::TokenLogProbsResult r = m.TokenLogProbs(hidden, b.targets, chunk).value();
  trainer::PolicyLossInputs in;
  in.logp = r.log_probs;
  in.old_logp = old_logp;
  in.advantages = b.advantages;
  in.mask = b.mask;
  in.seq_index = b.seq_index;
  in.num_sequences = b.sequences;
  trainer::LossNormaliser norm;
  norm.tokens = static_cast<double>(b.sequences * (b.seq_len - 1));
  Result<trainer::PolicyLossResult> loss = trainer::PolicyLoss(in, {}, norm);
  if (!loss.ok()) {
    std::fprintf(stderr, "PolicyLoss: %s\n", loss.status().ToString().c_str());
    std::exit(1);
  }
  optimizer.zero_grad();
  loss->loss.backward();
  optimizer.step();
  return loss->loss.item<double>();
}

int Main(int argc, char** argv) {
  GpuBenchFlags flags;
  if (std::optional<int> exit = ParseGpuBenchFlags(argc, argv, "sluice_bench_gpu_train", 3, flags))
    return *exit;
  const bool dry_run = flags.dry_run;
  const int steps = flags.steps;
  const torch::Device device = flags.device;
  const std::vector<NamedShape> shapes = dry_run ? DryRunShapes() : GpuShapes();
  const int64_t sequences = dry_run ? 2 : 8;
  const int64_t seq_len = dry_run ? 64 : 512;
  const int64_t chunk = 1024;  // Log-prob rows per [chunk, vocab] float32 block.

  const double mm = MatmulFlops(device, dry_run ? 512 : 8192);
  std::printf("bf16 matmul baseline: %.1f TFLOP/s (nominal dense peak %.0f)\n", mm / 1e12,
              kPeakBf16Flops / 1e12);
  std::printf("%-22s %-9s %8s %10s %9s %12s %10s\n", "shape", "params", "step s", "tokens/s",
              "TFLOP/s", "MFU (peak)", "% of mm");
  for (const NamedShape& shape : shapes) {
    const model::ModelConfig& c = shape.config;
    const double tokens = static_cast<double>(sequences * seq_len);
    const double per_token_fwd = 2.0 * static_cast<double>(MatmulParameters(c)) +
                                 2.0 * static_cast<double>(c.num_attention_heads * c.head_dim) *
                                     seq_len * static_cast<double>(c.num_hidden_layers);
    const double step_flops = (3.0 + 1.0) * per_token_fwd * tokens;
    for (torch::Dtype dtype : {torch::kFloat32, torch::kBFloat16}) {
      Result<model::DecoderModel> made =
          model::DecoderModel::CreateRandom(c, 1, {.dtype = dtype, .device = device});
      if (!made.ok()) {
        std::fprintf(stderr, "%s: %s\n", shape.name.c_str(), made.status().ToString().c_str());
        return 1;
      }
      model::DecoderModel m = std::move(made).value();
      m.SetRequiresGrad(true);
      torch::optim::AdamW optimizer(m.Parameters(), torch::optim::AdamWOptions(1e-6));
      const Batch b = MakeBatch(sequences, seq_len, c.vocab_size, device);
      (void)Step(m, optimizer, b, chunk);  // Warm-up: allocator, AdamW state.
      const double secs =
          MedianSeconds(device, 0, steps, [&] { (void)Step(m, optimizer, b, chunk); });
      const double flops = step_flops / secs;
      std::printf("%-22s %-9s %8.3f %10.0f %9.1f %11.1f%% %9.1f%%\n", shape.name.c_str(),
                  dtype == torch::kFloat32 ? "float32" : "bf16", secs, tokens / secs, flops / 1e12,
                  100.0 * flops / kPeakBf16Flops, 100.0 * flops / mm);
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace
}  // namespace sluice::bench

int main(int argc, char** argv) { return sluice::bench::Main(argc, argv); }
