// The actor's per-micro-batch losses in libtorch: PPO-clip (with clip-higher, dual clip and the
// M2PO second-moment trust region), GSPO (sequence-level ratio), SFT, the KL penalty against a
// frozen reference, the entropy bonus and truncated importance sampling against the behaviour
// policy; plus the critic's clipped value loss.
//
// Inputs are the flat packed tokens of one micro-batch: every per-token tensor is [T] (float32 or
// float64; they are computed in logp's dtype). Log-probs are natural-log probabilities of the
// sampled token. mask is 1 for tokens in the loss, 0 otherwise; seq_index [T] (int64) gives the
// sequence 0..B-1 of each token (within this micro-batch).
//
// Per masked token t (sequence b = seq_index[t]), with A_t the advantage:
//   ppo_clip: rho_t = exp(logp_t - old_t)
//   gspo:     s_b = exp(mean_{u in b, masked}(logp_u - old_u)); rho_t = sg[s_b] * exp(logp_t -
//             sg[logp_t]) (value s_b, d rho_t / d logp_t = s_b: GSPO-token's straight-through
//             form), and A_t is replaced by the mean advantage of b's masked tokens. A sequence's
//             masked tokens must all be in the micro-batch (the ratio is a sequence quantity).
//   pg_t = max(-A_t * rho_t, -A_t * clip(rho_t, lo, hi)), [lo, hi] = [clip_low, clip_high]
//          (or M2PO's bounds); "clipped" counts tokens where the second branch is strictly larger.
//   dual clip (c > 1): pg_t = min(pg_t, c * |A_t|). Applied to every token as the reference does;
//          for A_t >= 0 pg_t <= 0 <= c|A_t|, so it only ever bites when A_t < 0 (and rho_t > c),
//          exactly the dual-clip paper's rule.
//   TIS (cap > 0): pg_t *= w_t, w_t = sg[min(exp(old_t - behaviour_t), cap)].
//   sft:      pg_t = -logp_t (old/behaviour/advantages unused).
//   l_t = pg_t + kl_coef * clamp(KL_t, -kl_clamp, kl_clamp) - entropy_coef * H_t
//   with KL_t from logp and ref (d = logp_t - ref_t): k1 = d, k2 = d^2 / 2, k3 = exp(-d) + d - 1.
//
// M2PO (m2po_threshold > 0, ppo_clip only) replaces [clip_low, clip_high] per micro-batch:
//   V = masked tokens with (A > 0 and rho > 1) or (A < 0 and rho < 1); m2_t = (old_t - logp_t)^2
//   if V is empty or mean_V(m2) <= threshold: bounds [1 - 0.95, 1 + 20] = [0.05, 21] (no clip)
//   else sort m2 over V descending (m_0 >= m_1 >= ...), k = the smallest index with
//        mean(m_k, m_k+1, ...) < threshold (n - 1 if none), tau = sqrt(m_k),
//        bounds [max(e^-tau, 0.05), min(e^tau, 21)] (the reference's caps eps_low <= 0.95,
//        eps_high <= 20).
//
// Aggregation, for gradient accumulation over micro-batches and data-parallel ranks: the caller
// passes GLOBAL normalisers (over all micro-batches of the optimizer step on all ranks), so that
// summing the micro-batch losses gives the whole batch's loss:
//   token-mean:          loss = sum_t mask_t l_t / N_tokens
//   seq-mean-token-sum:  loss = sum_t mask_t l_t / N_seqs
//   seq-mean-token-mean: loss = sum_t mask_t l_t / (n_b(t) * N_seqs), n_b = sequence b's masked
//                        token count (global: all its tokens, wherever they are).
//
// Thread safety: pure functions of their inputs.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <span>
#include <string_view>

#include "common/status.h"

namespace sluice::trainer {

enum class PolicyLossType { kPpoClip, kGspo, kSft };
enum class KlEstimator { kK1, kK2, kK3 };
enum class LossAggregation { kTokenMean, kSeqMeanTokenSum, kSeqMeanTokenMean };

// "ppo-clip", "gspo", "sft" / "k1", "k2", "k3" / "token-mean", "seq-mean-token-sum",
// "seq-mean-token-mean"; InvalidArgument otherwise.
Result<PolicyLossType> ParsePolicyLossType(std::string_view name);
Result<KlEstimator> ParseKlEstimator(std::string_view name);
Result<LossAggregation> ParseLossAggregation(std::string_view name);
std::string_view PolicyLossTypeName(PolicyLossType type);
std::string_view KlEstimatorName(KlEstimator estimator);
std::string_view LossAggregationName(LossAggregation aggregation);

struct PolicyLossOptions {
  PolicyLossType type = PolicyLossType::kPpoClip;
  double clip_low = 0.8;        // Ratio lower bound, in (0, 1].
  double clip_high = 1.2;       // Ratio upper bound, >= 1 (e.g. 1.28 for DAPO's clip-higher).
  double dual_clip = 0.0;       // c > 1, or 0 for off.
  double m2po_threshold = 0.0;  // > 0 turns M2PO on (ppo_clip only); recipes 0.01 / 0.004.
  double kl_coef = 0.0;         // >= 0; > 0 needs ref_logp.
  KlEstimator kl_estimator = KlEstimator::kK3;
  double kl_clamp = 10.0;     // > 0: the per-token KL estimate is clamped to [-kl_clamp, kl_clamp].
  double entropy_coef = 0.0;  // Finite; != 0 needs entropy.
  double tis_cap = 0.0;       // > 0 turns TIS on (needs behaviour_logp); 0 is off.
  LossAggregation aggregation = LossAggregation::kTokenMean;
};

// InvalidArgument naming the field ("loss.clip_low") of the first bad setting.
Status Validate(const PolicyLossOptions& options);

struct PolicyLossInputs {
  torch::Tensor logp;            // [T] current policy; carries the gradient.
  torch::Tensor old_logp;        // [T] proximal policy (pre-update recompute or behaviour).
  torch::Tensor behaviour_logp;  // [T] rollout policy; needed only for TIS.
  torch::Tensor advantages;      // [T]
  torch::Tensor mask;            // [T] 0/1.
  torch::Tensor seq_index;       // [T] int64 in [0, num_sequences).
  int64_t num_sequences = 0;     // B.
  torch::Tensor ref_logp;        // [T] frozen reference; needed only when kl_coef > 0.
  torch::Tensor entropy;         // [T] policy entropy (may carry a gradient); optional.
};

// The global normalisers of the aggregation (see the header comment).
struct LossNormaliser {
  double tokens = 0.0;     // token-mean: masked tokens of the whole step, > 0.
  double sequences = 0.0;  // seq-mean-*: sequences of the whole step, > 0.
  // seq-mean-token-mean: [B] masked-token count of each of this micro-batch's sequences (global
  // over the whole step, in case a sequence is split). Tokens of a sequence with count 0 must be
  // unmasked.
  torch::Tensor sequence_tokens;
};

// Detached statistics of one micro-batch, as sums over its masked tokens so micro-batches and
// ranks aggregate by Merge (or an all-reduce of the fields; ratio_max takes the max).
struct PolicyLossStats {
  double tokens = 0.0;               // Masked tokens.
  double clipped_tokens = 0.0;       // pg taken from the clipped branch.
  double dual_clipped_tokens = 0.0;  // pg capped by the dual clip.
  double approx_kl_sum = 0.0;        // sum (old_logp - logp).
  double ratio_sum = 0.0;            // sum rho (GSPO: the sequence ratio on each token).
  double ratio_max = 0.0;            // max rho; 0 without masked tokens.
  double entropy_sum = 0.0;          // sum H; 0 without entropy.
  double kl_sum = 0.0;               // sum of the clamped KL estimate; 0 without kl_coef.
  double tis_weight_sum = 0.0;       // sum w; 0 without TIS.
  double m2po_micro_batches = 0.0;   // Micro-batches that ran the M2PO search.
  double m2po_ratio_low_sum = 0.0;   // sum over them of the ratio bounds used.
  double m2po_ratio_high_sum = 0.0;
  double m2po_m2_sum = 0.0;            // sum m2 over trust-violating tokens.
  double m2po_violating_tokens = 0.0;  // Their count.

  void Merge(const PolicyLossStats& other);
  double ClipFraction() const { return Ratio(clipped_tokens, tokens); }
  double DualClipFraction() const { return Ratio(dual_clipped_tokens, tokens); }
  double ApproxKl() const { return Ratio(approx_kl_sum, tokens); }
  double RatioMean() const { return Ratio(ratio_sum, tokens); }
  double EntropyMean() const { return Ratio(entropy_sum, tokens); }
  double KlMean() const { return Ratio(kl_sum, tokens); }
  double TisWeightMean() const { return Ratio(tis_weight_sum, tokens); }
  double M2poRatioLowMean() const { return Ratio(m2po_ratio_low_sum, m2po_micro_batches); }
  double M2poRatioHighMean() const { return Ratio(m2po_ratio_high_sum, m2po_micro_batches); }
  // Token-weighted over micro-batches (the reference logs each micro-batch's own mean).
  double M2poMeanM2() const { return Ratio(m2po_m2_sum, m2po_violating_tokens); }

 private:
  static double Ratio(double a, double b) { return b > 0 ? a / b : 0.0; }
};

struct PolicyLossResult {
  torch::Tensor loss;  // Scalar in logp's dtype, differentiable w.r.t. logp (and entropy).
  PolicyLossStats stats;
};

// InvalidArgument naming the input for a missing or misshapen tensor, a seq_index out of range,
// or a missing normaliser; Internal for a libtorch error.
Result<PolicyLossResult> PolicyLoss(const PolicyLossInputs& inputs,
                                    const PolicyLossOptions& options,
                                    const LossNormaliser& normaliser);

// The M2PO search alone, on the m2 values of the trust-violating tokens (any order).
struct M2poClipRange {
  double ratio_low = 0.05;   // Lower ratio bound, in [0.05, 1].
  double ratio_high = 21.0;  // Upper ratio bound, in [1, 21].
  double mean_m2 = 0.0;      // Mean of the given m2 (0 when none).
  bool clipping = false;     // False: the budget holds and the bounds are the caps.
};
M2poClipRange M2poRange(std::span<const double> violating_m2, double threshold);

// The critic's PPO value loss over masked tokens, values / old_values / returns / mask [T]:
//   l_t = 0.5 * max((v_t - R_t)^2, (clip(v_t, old_t - c, old_t + c) - R_t)^2)   (c = value_clip)
//   l_t = 0.5 * (v_t - R_t)^2                                                    (c = 0: off)
//   loss = sum_t mask_t l_t / normaliser   (normaliser: global masked tokens, > 0)
struct ValueLossStats {
  double tokens = 0.0;             // Masked tokens.
  double clipped_tokens = 0.0;     // Loss taken from the clipped branch (strictly larger).
  double squared_error_sum = 0.0;  // sum (v - R)^2.

  void Merge(const ValueLossStats& other) {
    tokens += other.tokens;
    clipped_tokens += other.clipped_tokens;
    squared_error_sum += other.squared_error_sum;
  }
};
struct ValueLossResult {
  torch::Tensor loss;  // Scalar, differentiable w.r.t. values.
  ValueLossStats stats;
};
Result<ValueLossResult> ValueLoss(const torch::Tensor& values, const torch::Tensor& old_values,
                                  const torch::Tensor& returns, const torch::Tensor& mask,
                                  double value_clip, double normaliser);

}  // namespace sluice::trainer
