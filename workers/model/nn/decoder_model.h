// The decoder-only transformer of the Llama, Qwen2 and Qwen3 families in libtorch, built from a
// ModelConfig: the training forward over packed sequences, chunked per-token log-probs and
// entropy, and the HF-directory weight I/O. The engine reuses the same weights through the
// per-layer building blocks (Embed, ProjectQkv, ProjectOutput, Mlp, ...), doing its own paged
// attention in between.
//
// Math (per layer, pre-norm):
//   h = x + o_proj(Attention(RoPE(QkNorm(q_proj(n1))), RoPE(QkNorm(k_proj(n1))), v_proj(n1)))
//   y = h + down_proj(silu(gate_proj(n2)) * up_proj(n2))
// with n1 = RMSNorm_in(x), n2 = RMSNorm_post(h); then the final RMSNorm and lm_head. RMSNorm
// computes x * rsqrt(mean(x^2) + eps) in float32, casts back to the weights' dtype and multiplies
// by the weight (as transformers does). QkNorm (qwen3 only) is an RMSNorm over each head's
// head_dim channels. RoPE rotates channel i with channel i + head_dim / 2 by
// position * inv_freq[i] (RopeInvFrequencies), cos and sin computed in float32 and scaled by
// RopeAttentionScale. Attention scores are q.k / sqrt(head_dim), softmax in float32; with GQA
// each kv head serves num_attention_heads / num_key_value_heads consecutive query heads.
//
// Packed sequences: Forward takes tokens [T] (int64) and cu_seqlens [B + 1] (cumulative lengths,
// 0 first, T last). Sequence b is tokens[cu_seqlens[b], cu_seqlens[b + 1]); positions restart at 0
// in each sequence and a token attends only to earlier-or-equal tokens of its own sequence (a
// block-diagonal causal mask, realised by attending each sequence separately so no [T, T] mask is
// built; zero-length sequences are allowed).
//
// Weights are plain tensors (no torch::nn::Module): Parameters() lists the trainable ones for an
// optimizer, NamedParameters() maps them to their HF names. With tie_word_embeddings lm_head is
// the very same tensor as embed_tokens and is listed once (as model.embed_tokens.weight).
//
// Thread safety: the const methods may run concurrently (they only read the weights); mutating
// the weights (an optimizer step, LoadWeights) must not overlap them.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "workers/model/model_config.h"

namespace sluice::model {

struct DecoderLayerWeights {
  torch::Tensor input_layernorm;           // [d]
  torch::Tensor q_proj, k_proj, v_proj;    // [q_width, d], [kv_width, d], [kv_width, d]
  torch::Tensor q_bias, k_bias, v_bias;    // Undefined unless config.qkv_bias().
  torch::Tensor o_proj;                    // [d, q_width]
  torch::Tensor o_bias;                    // Undefined unless config.o_bias().
  torch::Tensor q_norm, k_norm;            // [head_dim]; undefined unless config.qk_norm.
  torch::Tensor post_attention_layernorm;  // [d]
  torch::Tensor gate_proj, up_proj;        // [intermediate, d]
  torch::Tensor down_proj;                 // [d, intermediate]
};

struct DecoderWeights {
  torch::Tensor embed_tokens;  // [vocab, d]
  std::vector<DecoderLayerWeights> layers;
  torch::Tensor norm;     // [d]
  torch::Tensor lm_head;  // [vocab, d]; the same tensor as embed_tokens when tied.
};

struct ModelLoadOptions {
  // Float32 or BFloat16 (Float16 also works); weights are converted on load.
  torch::Dtype dtype = torch::kFloat32;
  torch::Device device = torch::kCPU;
};

// Per-token log-probs of the targets and the entropy of the predicted distribution, [T] float32.
struct TokenLogProbsResult {
  torch::Tensor log_probs;
  torch::Tensor entropy;
};

class DecoderModel {
 public:
  // Deterministic random init (InitWeights) for a valid config.
  static Result<DecoderModel> CreateRandom(const ModelConfig& config, uint64_t seed,
                                           const ModelLoadOptions& options = {});
  // `builtin:tiny?...` (ParseBuiltinModel), initialised from its seed.
  static Result<DecoderModel> FromBuiltin(std::string_view uri,
                                          const ModelLoadOptions& options = {});
  // An HF directory: config.json (LoadHfConfig) and model.safetensors or a sharded index
  // (ShardedCheckpoint). Every expected tensor must be present with its exact shape and a float
  // dtype (F32, F16, BF16, F64); a missing, mis-shaped or unexpected tensor is InvalidArgument
  // naming it. Tolerated extras: `*.rotary_emb.inv_freq` buffers of old checkpoints (recomputed
  // from the config), and lm_head.weight of a tied model when it equals embed_tokens exactly.
  static Result<DecoderModel> LoadHf(const std::string& dir, const ModelLoadOptions& options = {});

  // Writes `dir`/config.json (ToHfConfig, torch_dtype set to the weights' dtype) and the weights
  // (HF names, the weights' dtype; lm_head omitted when tied), creating `dir` if needed: one
  // model.safetensors, or with options.max_shard_bytes > 0 and more tensor bytes than that,
  // model-0000i-of-0000N.safetensors shards with model.safetensors.index.json (WriteSharded).
  // Weights of the other layout left by an earlier export are removed. options.extra_files
  // (tokenizer.json, tokenizer_config.json, ...) are copied in, so the directory loads in other
  // tools as it is; a missing one is NotFound and nothing else is written.
  struct SaveHfOptions {
    uint64_t max_shard_bytes = 0;  // Tensor bytes per shard; 0: one file.
    std::vector<std::string> extra_files;
  };
  Status SaveHf(const std::string& dir, const SaveHfOptions& options) const;
  Status SaveHf(const std::string& dir) const { return SaveHf(dir, SaveHfOptions{}); }

  const ModelConfig& config() const { return config_; }
  const DecoderWeights& weights() const { return weights_; }
  torch::Dtype dtype() const { return dtype_; }
  torch::Device device() const { return weights_.embed_tokens.device(); }

  // HF name -> tensor, sorted by name; lm_head.weight absent when tied. The tensors are the
  // model's own (writing into them under torch::NoGradGuard changes the model).
  std::vector<std::pair<std::string, torch::Tensor>> NamedParameters() const;
  std::vector<torch::Tensor> Parameters() const;
  // Sets requires_grad on every parameter.
  void SetRequiresGrad(bool requires_grad);

  // Training forward: final-normed hidden states [T, d] (the lm_head input) for packed tokens.
  // InvalidArgument for a malformed tokens / cu_seqlens pair or a token id outside the vocab.
  Result<torch::Tensor> Forward(const torch::Tensor& tokens, const torch::Tensor& cu_seqlens) const;

  // log p(targets[t] | hidden[t]) and the entropy of that distribution for every row of hidden
  // [T, d], computing the logits `chunk` rows at a time in float32 (chunk <= 0: all rows at once).
  // Differentiable in hidden and lm_head through a custom autograd function that recomputes each
  // chunk's softmax in backward, so neither pass holds more than one chunk of [chunk, vocab]
  // float32 (peak ~3 * chunk * vocab * 4 bytes: logits, log-softmax and probabilities; plus one
  // float32 copy of lm_head when the weights are not float32).
  Result<TokenLogProbsResult> TokenLogProbs(const torch::Tensor& hidden,
                                            const torch::Tensor& targets, int64_t chunk) const;
  // Full logits [T, vocab] in float32 (small inputs, decoding).
  torch::Tensor Logits(const torch::Tensor& hidden) const;

  // Building blocks (shared with the engine). x is [T, d] in the model's dtype.
  torch::Tensor Embed(const torch::Tensor& tokens) const;
  torch::Tensor RmsNorm(const torch::Tensor& x, const torch::Tensor& weight) const;
  // cos and sin [T, head_dim] (float32, scaled by RopeAttentionScale) for int64 positions [T].
  std::pair<torch::Tensor, torch::Tensor> RotaryCosSin(const torch::Tensor& positions) const;
  // Applies rotary to x [T, heads, head_dim] with cos/sin from RotaryCosSin.
  torch::Tensor ApplyRotary(const torch::Tensor& x, const torch::Tensor& cos,
                            const torch::Tensor& sin) const;
  // RoPE's inverse frequencies [head_dim / 2] (float32, on the model's device, rope scaling
  // applied) and attention scale (RopeAttentionScale: YaRN's magnitude factor, else 1), for
  // kernels that rotate in place (workers/kernels/rotary.h).
  const torch::Tensor& inv_freq() const { return inv_freq_; }
  double rope_attention_scale() const { return rope_scale_; }
  // q [T, heads, hd], k and v [T, kv_heads, hd] of layer `layer` for normed input x: projections
  // with biases, per-head QK norm (qwen3), rotary at `positions`.
  struct Qkv {
    torch::Tensor q, k, v;
  };
  Qkv ProjectQkv(int64_t layer, const torch::Tensor& x, const torch::Tensor& positions) const;
  // Causal attention of one sequence: q [L, heads, hd], k/v [S, kv_heads, hd] with the L queries
  // being the last L of the S keys; returns [L, heads * hd].
  torch::Tensor CausalAttention(const torch::Tensor& q, const torch::Tensor& k,
                                const torch::Tensor& v) const;
  // o_proj (+ bias) of the attention output [T, q_width].
  torch::Tensor ProjectOutput(int64_t layer, const torch::Tensor& attn) const;
  torch::Tensor Mlp(int64_t layer, const torch::Tensor& x) const;
  // The attention sub-block of one layer on packed input x [T, d] (already input-normed), without
  // the residual: o_proj(attention). cu_seqlens as in Forward (host or device int64).
  torch::Tensor AttentionBlock(int64_t layer, const torch::Tensor& x,
                               const std::vector<int64_t>& cu_seqlens) const;

  // The init of CreateRandom, documented: a CPU torch generator seeded with `seed` draws, in the
  // order embed_tokens, then per layer q, k, v, o, gate, up, down, then lm_head (when untied),
  // N(0, 0.02^2) float32 values (transformers' initializer_range); biases are zero and every
  // norm weight one. The values are then converted to the requested dtype and device, so a seed
  // gives the same model on every machine and device.
  static DecoderWeights InitWeights(const ModelConfig& config, uint64_t seed,
                                    const ModelLoadOptions& options);

 private:
  DecoderModel(ModelConfig config, DecoderWeights weights, torch::Dtype dtype);

  ModelConfig config_;
  DecoderWeights weights_;
  torch::Dtype dtype_;
  torch::Tensor inv_freq_;  // [head_dim / 2] float32 on the model's device.
  double rope_scale_ = 1.0;
};

}  // namespace sluice::model
