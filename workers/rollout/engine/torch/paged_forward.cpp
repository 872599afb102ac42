#include "workers/rollout/engine/torch/paged_forward.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

namespace sluice::engine {
namespace {

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
};

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
