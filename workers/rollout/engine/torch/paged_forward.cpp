#include "workers/rollout/engine/torch/paged_forward.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#if SLUICE_ENGINE_CUDA_KERNELS
#include "workers/rollout/engine/torch/cuda/cuda_decode_kernels.h"
#endif

namespace sluice::engine {
namespace {

// Whether this step runs the CUDA kernels' path (cuda_decode_kernels.h): a model on a GPU and an
// engine built with the kernels.
bool UseKernels(const torch::Device& device) {
#if SLUICE_ENGINE_CUDA_KERNELS
  return device.is_cuda();
#else
  (void)device;
  return false;
#endif
}

torch::Tensor LongTensor(const std::vector<int64_t>& v, torch::Device device) {
  return torch::from_blob(const_cast<int64_t*>(v.data()), {static_cast<int64_t>(v.size())},
                          torch::TensorOptions().dtype(torch::kInt64))
      .to(device, /*non_blocking=*/false, /*copy=*/true);
}

// Decode chunks batched into groups whose padded [batch x context] stays under a budget.
struct DecodeGroup {
  std::vector<size_t> chunks;  // Indices into the chunk list, context ascending.
  int64_t max_context = 0;
};

// Per-step index tensors shared by every layer.
struct PackedStep {
  torch::Tensor tokens, positions, slots;    // [T]
  std::vector<int64_t> offsets;              // Chunk c's rows are [offsets[c], offsets[c + 1]).
  std::vector<size_t> prefill;               // Chunks attended one by one.
  std::vector<torch::Tensor> prefill_slots;  // Slots of [0, start + n) per prefill chunk.
  struct Batch {
    torch::Tensor rows;   // [B] rows of the packed batch.
    torch::Tensor slots;  // [B * S] cache slots (padding: slot 0, masked).
    torch::Tensor mask;   // [B, 1, 1, S] true where a position is past the context.
    int64_t batch = 0, context = 0;
  };
  std::vector<Batch> decode;
  torch::Tensor logit_rows;  // Rows whose hidden state feeds the logits.
  // The kernels' path instead of `decode`: every decode chunk's row [D] (int64), its block table
  // [D, max blocks] and context length [D] (int32), read by the paged attention kernel in place.
  torch::Tensor kernel_rows, block_tables, context_lens;
};

// The kernels' decode inputs for the decode chunks `decode` (see PackedStep).
void PlanKernelDecode(std::span<const ForwardChunk> chunks, const std::vector<size_t>& decode,
                      int64_t block_size, torch::Device device, PackedStep& plan) {
  if (decode.empty()) return;
  const auto d = static_cast<int64_t>(decode.size());
  int64_t max_blocks = 1;
  for (size_t c : decode) {
    max_blocks = std::max(max_blocks, (chunks[c].start + 1 + block_size - 1) / block_size);
  }
  std::vector<int64_t> rows;
  std::vector<int32_t> tables(static_cast<size_t>(d * max_blocks), 0);
  std::vector<int32_t> lens;
  for (int64_t i = 0; i < d; ++i) {
    const ForwardChunk& ch = chunks[decode[static_cast<size_t>(i)]];
    rows.push_back(plan.offsets[decode[static_cast<size_t>(i)]]);
    lens.push_back(static_cast<int32_t>(ch.start + 1));
    const int64_t used = (ch.start + 1 + block_size - 1) / block_size;
    std::copy_n(ch.block_table.begin(), used, tables.begin() + i * max_blocks);
  }
  const auto int32 = torch::TensorOptions().dtype(torch::kInt32);
  plan.kernel_rows = LongTensor(rows, device);
  plan.block_tables = torch::from_blob(tables.data(), {d, max_blocks}, int32)
                          .to(device, /*non_blocking=*/false, /*copy=*/true);
  plan.context_lens =
      torch::from_blob(lens.data(), {d}, int32).to(device, /*non_blocking=*/false, /*copy=*/true);
}

Result<PackedStep> Plan(const model::ModelConfig& config, const PagedKvCache& cache,
                        std::span<const ForwardChunk> chunks, const ForwardOptions& options,
                        torch::Device device) {
  PackedStep plan;
  std::vector<int64_t> tokens, positions, slots, logit_rows;
  plan.offsets.push_back(0);
  const int64_t bs = cache.block_size();
  std::vector<size_t> decode;
  for (size_t c = 0; c < chunks.size(); ++c) {
    const ForwardChunk& ch = chunks[c];
    const auto n = static_cast<int64_t>(ch.tokens.size());
    if (n == 0) return Status::InvalidArgument("chunk " + std::to_string(c) + " has no tokens");
    const int64_t end = ch.start + n;
    if (ch.start < 0 || static_cast<int64_t>(ch.block_table.size()) * bs < end) {
      return Status::InvalidArgument("chunk " + std::to_string(c) + ": block table of " +
                                     std::to_string(ch.block_table.size()) +
                                     " blocks does not cover position " + std::to_string(end - 1));
    }
    for (int32_t b : ch.block_table) {
      if (b < 0 || b >= cache.num_blocks()) {
        return Status::InvalidArgument("chunk " + std::to_string(c) + ": block id " +
                                       std::to_string(b) + " outside the cache");
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      const int32_t t = ch.tokens[static_cast<size_t>(i)];
      if (t < 0 || t >= config.vocab_size) {
        return Status::InvalidArgument("token id " + std::to_string(t) + " outside [0, " +
                                       std::to_string(config.vocab_size) + ")");
      }
      tokens.push_back(t);
      positions.push_back(ch.start + i);
    }
    std::vector<int64_t> s = SlotsFor(ch.block_table, bs, ch.start, end);
    slots.insert(slots.end(), s.begin(), s.end());
    plan.offsets.push_back(plan.offsets.back() + n);
    if (ch.needs_logits) logit_rows.push_back(plan.offsets.back() - 1);
    if (n == 1) {
      decode.push_back(c);
    } else {
      plan.prefill.push_back(c);
      plan.prefill_slots.push_back(LongTensor(SlotsFor(ch.block_table, bs, 0, end), device));
    }
  }
  plan.tokens = LongTensor(tokens, device);
  plan.positions = LongTensor(positions, device);
  plan.slots = LongTensor(slots, device);
  plan.logit_rows = LongTensor(logit_rows, device);

  if (UseKernels(device)) {
    PlanKernelDecode(chunks, decode, bs, device, plan);
    return plan;
  }
  // Decode batches: ascending context, cut where the padded size would pass the budget.
  std::sort(decode.begin(), decode.end(),
            [&](size_t a, size_t b) { return chunks[a].start < chunks[b].start; });
  size_t i = 0;
  while (i < decode.size()) {
    size_t j = i;
    int64_t context = 0;
    while (j < decode.size()) {
      const int64_t c = chunks[decode[j]].start + 1;
      if (j > i && (static_cast<int64_t>(j - i + 1)) * c > options.decode_slots_per_batch) break;
      context = c;
      ++j;
    }
    PackedStep::Batch batch;
    batch.batch = static_cast<int64_t>(j - i);
    batch.context = context;
    std::vector<int64_t> rows, bslots;
    std::vector<uint8_t> mask;
    rows.reserve(j - i);
    bslots.reserve(static_cast<size_t>(batch.batch * context));
    mask.reserve(static_cast<size_t>(batch.batch * context));
    for (size_t k = i; k < j; ++k) {
      const ForwardChunk& ch = chunks[decode[k]];
      rows.push_back(plan.offsets[decode[k]]);
      const int64_t len = ch.start + 1;
      std::vector<int64_t> s = SlotsFor(ch.block_table, bs, 0, len);
      bslots.insert(bslots.end(), s.begin(), s.end());
      bslots.insert(bslots.end(), static_cast<size_t>(context - len), 0);
      mask.insert(mask.end(), static_cast<size_t>(len), 0);
      mask.insert(mask.end(), static_cast<size_t>(context - len), 1);
    }
    batch.rows = LongTensor(rows, device);
    batch.slots = LongTensor(bslots, device);
    batch.mask = torch::from_blob(mask.data(), {batch.batch, 1, 1, context},
                                  torch::TensorOptions().dtype(torch::kUInt8))
                     .to(device, torch::kBool, /*non_blocking=*/false, /*copy=*/true);
    plan.decode.push_back(std::move(batch));
    i = j;
  }
  return plan;
}

// Attention of a decode batch: q [B, H, hd] against cached k/v [B, S, KVH, hd].
torch::Tensor DecodeAttention(const model::ModelConfig& config, const torch::Tensor& q,
                              const torch::Tensor& k, const torch::Tensor& v,
                              const torch::Tensor& mask) {
  const int64_t b = q.size(0);
  const int64_t kvh = config.num_key_value_heads;
  const int64_t group = config.num_attention_heads / kvh;
  const int64_t hd = config.head_dim;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  torch::Tensor qg = q.view({b, kvh, group, hd});
  torch::Tensor kt = k.permute({0, 2, 3, 1});                                // [B, KVH, hd, S]
  torch::Tensor scores = torch::matmul(qg, kt).to(torch::kFloat32) * scale;  // [B, KVH, G, S]
  scores = scores.masked_fill(mask, -std::numeric_limits<float>::infinity());
  torch::Tensor probs = torch::softmax(scores, -1).to(q.scalar_type());
  torch::Tensor out = torch::matmul(probs, v.permute({0, 2, 1, 3}));  // [B, KVH, G, hd]
  return out.reshape({b, config.num_attention_heads * hd});
}

#if SLUICE_ENGINE_CUDA_KERNELS
// The layers through the CUDA kernels: norms (fused with the residual adds), rotary, the cache
// write and decode attention are kernels; projections, the MLP and prefill attention stay
// libtorch ops. The same math as the loop in PagedForward, step for step.
torch::Tensor KernelForward(const model::DecoderModel& model, PagedKvCache& cache,
                            const PackedStep& plan) {
  const model::ModelConfig& config = model.config();
  const model::DecoderWeights& w = model.weights();
  const double eps = config.rms_norm_eps;
  const int64_t t = plan.tokens.size(0);
  const int64_t hd = config.head_dim;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  torch::Tensor x = model.Embed(plan.tokens).contiguous();  // The residual stream.
  torch::Tensor normed = cuda_decode::RmsNorm(x, w.layers[0].input_layernorm, eps);
  for (int64_t l = 0; l < config.num_hidden_layers; ++l) {
    const model::DecoderLayerWeights& lw = w.layers[static_cast<size_t>(l)];
    torch::Tensor q =
        torch::linear(normed, lw.q_proj, lw.q_bias).view({t, config.num_attention_heads, hd});
    torch::Tensor k =
        torch::linear(normed, lw.k_proj, lw.k_bias).view({t, config.num_key_value_heads, hd});
    torch::Tensor v =
        torch::linear(normed, lw.v_proj, lw.v_bias).view({t, config.num_key_value_heads, hd});
    if (config.qk_norm) {
      q = cuda_decode::RmsNorm(q, lw.q_norm, eps);
      k = cuda_decode::RmsNorm(k, lw.k_norm, eps);
    }
    cuda_decode::RotaryInPlace(q, plan.positions, model.inv_freq(), model.rope_attention_scale());
    cuda_decode::RotaryInPlace(k, plan.positions, model.inv_freq(), model.rope_attention_scale());
    cuda_decode::WriteKv(k, v, plan.slots, cache.keys(l), cache.values(l));
    torch::Tensor attn = torch::empty({t, config.q_width()}, x.options());
    if (plan.kernel_rows.defined()) {
      attn.index_copy_(0, plan.kernel_rows,
                       cuda_decode::PagedAttention(q.index_select(0, plan.kernel_rows),
                                                   cache.keys(l), cache.values(l),
                                                   plan.block_tables, plan.context_lens, scale));
    }
    for (size_t p = 0; p < plan.prefill.size(); ++p) {
      const size_t c = plan.prefill[p];
      const int64_t s = plan.offsets[c];
      const int64_t e = plan.offsets[c + 1];
      auto [pk, pv] = cache.Gather(l, plan.prefill_slots[p]);
      attn.slice(0, s, e).copy_(model.CausalAttention(q.slice(0, s, e), pk, pv));
    }
    torch::Tensor mlp_in =
        cuda_decode::AddRmsNorm(x, model.ProjectOutput(l, attn), lw.post_attention_layernorm, eps);
    torch::Tensor mlp_out = model.Mlp(l, mlp_in);
    if (l + 1 < config.num_hidden_layers) {
      normed = cuda_decode::AddRmsNorm(x, mlp_out,
                                       w.layers[static_cast<size_t>(l + 1)].input_layernorm, eps);
    } else {
      x.add_(mlp_out);
    }
  }
  torch::Tensor last = x.index_select(0, plan.logit_rows);
  return model.Logits(model.RmsNorm(last, w.norm));
}
#endif

}  // namespace

Result<torch::Tensor> PagedForward(const model::DecoderModel& model, PagedKvCache& cache,
                                   std::span<const ForwardChunk> chunks,
                                   const ForwardOptions& options) {
  const model::ModelConfig& config = model.config();
  const torch::Device device = model.device();
  SLUICE_ASSIGN_OR_RETURN(PackedStep plan, Plan(config, cache, chunks, options, device));
  if (plan.offsets.back() == 0) {
    return torch::zeros({0, config.vocab_size},
                        torch::TensorOptions().dtype(torch::kFloat32).device(device));
  }
  try {
    torch::NoGradGuard no_grad;
#if SLUICE_ENGINE_CUDA_KERNELS
    if (UseKernels(device)) return KernelForward(model, cache, plan);
#endif
    const model::DecoderWeights& w = model.weights();
    const int64_t kvh = config.num_key_value_heads;
    const int64_t hd = config.head_dim;
    torch::Tensor x = model.Embed(plan.tokens);
    for (int64_t l = 0; l < config.num_hidden_layers; ++l) {
      const model::DecoderLayerWeights& lw = w.layers[static_cast<size_t>(l)];
      model::DecoderModel::Qkv qkv =
          model.ProjectQkv(l, model.RmsNorm(x, lw.input_layernorm), plan.positions);
      cache.Write(l, plan.slots, qkv.k, qkv.v);
      torch::Tensor attn = torch::empty({x.size(0), config.q_width()}, x.options());
      for (const PackedStep::Batch& batch : plan.decode) {
        auto [k, v] = cache.Gather(l, batch.slots);
        torch::Tensor q = qkv.q.index_select(0, batch.rows);
        attn.index_copy_(
            0, batch.rows,
            DecodeAttention(config, q, k.view({batch.batch, batch.context, kvh, hd}),
                            v.view({batch.batch, batch.context, kvh, hd}), batch.mask));
      }
      for (size_t p = 0; p < plan.prefill.size(); ++p) {
        const size_t c = plan.prefill[p];
        const int64_t s = plan.offsets[c];
        const int64_t e = plan.offsets[c + 1];
        auto [k, v] = cache.Gather(l, plan.prefill_slots[p]);
        attn.slice(0, s, e).copy_(model.CausalAttention(qkv.q.slice(0, s, e), k, v));
      }
      x = x + model.ProjectOutput(l, attn);
      x = x + model.Mlp(l, model.RmsNorm(x, lw.post_attention_layernorm));
    }
    torch::Tensor last = x.index_select(0, plan.logit_rows);
    return model.Logits(model.RmsNorm(last, w.norm));
  } catch (const std::exception& e) {
    return Status::Internal(std::string("paged forward: ") + e.what());
  }
}

}  // namespace sluice::engine
