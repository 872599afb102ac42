#include "workers/trainer/torch/policy_loss.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace sluice::trainer {
namespace {

// M2PO's caps on the ratio bounds: eps_low <= 0.95 and eps_high <= 20 in the reference, i.e.
// ratios in [1 - 0.95, 1 + 20] (written as literals so the no-clip bounds are exactly 0.05 and 21).
constexpr double kM2poRatioFloor = 0.05;
constexpr double kM2poRatioCeiling = 21.0;

bool Finite(double x) { return std::isfinite(x); }

// A [T] floating tensor, or InvalidArgument naming `field`.
Status CheckTokens(const torch::Tensor& t, int64_t tokens, const char* field) {
  if (!t.defined()) return Status::InvalidArgument("is required", field);
  if (t.dim() != 1 || t.size(0) != tokens) {
    return Status::InvalidArgument("must be [" + std::to_string(tokens) + "], got " +
                                       std::to_string(t.dim()) + " dims of " +
                                       (t.dim() > 0 ? std::to_string(t.size(0)) : "1"),
                                   field);
  }
  if (!t.is_floating_point()) return Status::InvalidArgument("must be floating point", field);
  return Status::Ok();
}

// d = (logp - ref) on masked tokens, 0 elsewhere (so garbage at padding cannot reach the loss).
torch::Tensor KlEstimate(const torch::Tensor& d, KlEstimator est) {
  switch (est) {
    case KlEstimator::kK1:
      return d;
    case KlEstimator::kK2:
      return 0.5 * d * d;
    case KlEstimator::kK3:
      // exp(ref - logp) - (ref - logp) - 1: non-negative, unbiased for KL(pi || ref).
      return torch::exp(-d) + d - 1.0;
  }
  return d;
}

// Per-sequence sums of `x` [T] into [B].
torch::Tensor SequenceSums(const torch::Tensor& x, const torch::Tensor& seq_index, int64_t b) {
  return torch::zeros({b}, x.options()).index_add_(0, seq_index, x);
}

}  // namespace

Result<PolicyLossType> ParsePolicyLossType(std::string_view name) {
  for (PolicyLossType t : {PolicyLossType::kPpoClip, PolicyLossType::kGspo, PolicyLossType::kSft}) {
    if (name == PolicyLossTypeName(t)) return t;
  }
  return Status::InvalidArgument(
      "unknown policy loss \"" + std::string(name) + "\" (ppo-clip, gspo, sft)", "loss.type");
}

Result<KlEstimator> ParseKlEstimator(std::string_view name) {
  for (KlEstimator e : {KlEstimator::kK1, KlEstimator::kK2, KlEstimator::kK3}) {
    if (name == KlEstimatorName(e)) return e;
  }
  return Status::InvalidArgument("unknown KL estimator \"" + std::string(name) + "\" (k1, k2, k3)",
                                 "loss.kl_estimator");
}

Result<LossAggregation> ParseLossAggregation(std::string_view name) {
  for (LossAggregation a : {LossAggregation::kTokenMean, LossAggregation::kSeqMeanTokenSum,
                            LossAggregation::kSeqMeanTokenMean}) {
    if (name == LossAggregationName(a)) return a;
  }
  return Status::InvalidArgument("unknown aggregation \"" + std::string(name) +
                                     "\" (token-mean, seq-mean-token-sum, seq-mean-token-mean)",
                                 "loss.aggregation");
}

std::string_view PolicyLossTypeName(PolicyLossType type) {
  switch (type) {
    case PolicyLossType::kPpoClip:
      return "ppo-clip";
    case PolicyLossType::kGspo:
      return "gspo";
    case PolicyLossType::kSft:
      return "sft";
  }
  return "?";
}

std::string_view KlEstimatorName(KlEstimator estimator) {
  switch (estimator) {
    case KlEstimator::kK1:
      return "k1";
    case KlEstimator::kK2:
      return "k2";
    case KlEstimator::kK3:
      return "k3";
  }
  return "?";
}

std::string_view LossAggregationName(LossAggregation aggregation) {
  switch (aggregation) {
    case LossAggregation::kTokenMean:
      return "token-mean";
    case LossAggregation::kSeqMeanTokenSum:
      return "seq-mean-token-sum";
    case LossAggregation::kSeqMeanTokenMean:
      return "seq-mean-token-mean";
  }
  return "?";
}

Status Validate(const PolicyLossOptions& o) {
  if (!(o.clip_low > 0 && o.clip_low <= 1)) {
    return Status::InvalidArgument("must be in (0, 1]", "loss.clip_low");
  }
  if (!(o.clip_high >= 1) || !Finite(o.clip_high)) {
    return Status::InvalidArgument("must be finite and >= 1", "loss.clip_high");
  }
  if (!(o.dual_clip == 0 || (o.dual_clip > 1 && Finite(o.dual_clip)))) {
    return Status::InvalidArgument("must be 0 (off) or > 1", "loss.dual_clip");
  }
  if (!(o.m2po_threshold >= 0) || !Finite(o.m2po_threshold)) {
    return Status::InvalidArgument("must be finite and >= 0", "loss.m2po_threshold");
  }
  if (o.m2po_threshold > 0 && o.type != PolicyLossType::kPpoClip) {
    return Status::InvalidArgument("M2PO works on token ratios: only with ppo-clip",
                                   "loss.m2po_threshold");
  }
  if (!(o.kl_coef >= 0) || !Finite(o.kl_coef)) {
    return Status::InvalidArgument("must be finite and >= 0", "loss.kl_coef");
  }
  if (!(o.kl_clamp > 0)) return Status::InvalidArgument("must be > 0", "loss.kl_clamp");
  if (!Finite(o.entropy_coef))
    return Status::InvalidArgument("must be finite", "loss.entropy_coef");
  if (!(o.tis_cap >= 0) || !Finite(o.tis_cap)) {
    return Status::InvalidArgument("must be finite and >= 0", "loss.tis_cap");
  }
  return Status::Ok();
}

void PolicyLossStats::Merge(const PolicyLossStats& o) {
  ratio_max =
      tokens > 0 ? (o.tokens > 0 ? std::max(ratio_max, o.ratio_max) : ratio_max) : o.ratio_max;
  tokens += o.tokens;
  clipped_tokens += o.clipped_tokens;
  dual_clipped_tokens += o.dual_clipped_tokens;
  approx_kl_sum += o.approx_kl_sum;
  ratio_sum += o.ratio_sum;
  entropy_sum += o.entropy_sum;
  kl_sum += o.kl_sum;
  tis_weight_sum += o.tis_weight_sum;
  m2po_micro_batches += o.m2po_micro_batches;
  m2po_ratio_low_sum += o.m2po_ratio_low_sum;
  m2po_ratio_high_sum += o.m2po_ratio_high_sum;
  m2po_m2_sum += o.m2po_m2_sum;
  m2po_violating_tokens += o.m2po_violating_tokens;
}

M2poClipRange M2poRange(std::span<const double> violating_m2, double threshold) {
  M2poClipRange r;
  if (violating_m2.empty()) return r;
  std::vector<double> m2(violating_m2.begin(), violating_m2.end());
  double total = 0.0;
  for (double x : m2) total += x;
  r.mean_m2 = total / static_cast<double>(m2.size());
  if (r.mean_m2 <= threshold) return r;
  std::sort(m2.begin(), m2.end(), [](double a, double b) { return a > b; });
  // Drop the largest values one by one until the mean of the rest is under the budget; the
  // smallest dropped-to index is the cut-off. If even the smallest value alone exceeds the
  // budget, the reference cuts at the last element.
  const size_t n = m2.size();
  size_t k = n - 1;
  double rest = total;
  for (size_t i = 0; i < n; ++i) {
    if (rest / static_cast<double>(n - i) < threshold) {
      k = i;
      break;
    }
    rest -= m2[i];
  }
  const double tau = std::sqrt(m2[k]);
  r.ratio_low = std::max(std::exp(-tau), kM2poRatioFloor);
  r.ratio_high = std::min(std::exp(tau), kM2poRatioCeiling);
  r.clipping = true;
  return r;
}

Result<PolicyLossResult> PolicyLoss(const PolicyLossInputs& in, const PolicyLossOptions& options,
                                    const LossNormaliser& normaliser) {
  SLUICE_RETURN_IF_ERROR(Validate(options));
  if (!in.logp.defined() || in.logp.dim() != 1) {
    return Status::InvalidArgument("must be a [T] tensor", "logp");
  }
  const int64_t n = in.logp.size(0);
  SLUICE_RETURN_IF_ERROR(CheckTokens(in.logp, n, "logp"));
  SLUICE_RETURN_IF_ERROR(CheckTokens(in.mask, n, "mask"));
  const bool sft = options.type == PolicyLossType::kSft;
  if (!sft) {
    SLUICE_RETURN_IF_ERROR(CheckTokens(in.old_logp, n, "old_logp"));
    SLUICE_RETURN_IF_ERROR(CheckTokens(in.advantages, n, "advantages"));
  }
  const bool tis = !sft && options.tis_cap > 0;
  if (tis) SLUICE_RETURN_IF_ERROR(CheckTokens(in.behaviour_logp, n, "behaviour_logp"));
  if (options.kl_coef > 0) SLUICE_RETURN_IF_ERROR(CheckTokens(in.ref_logp, n, "ref_logp"));
  if (options.entropy_coef != 0 || in.entropy.defined()) {
    SLUICE_RETURN_IF_ERROR(CheckTokens(in.entropy, n, "entropy"));
  }
  const bool gspo = options.type == PolicyLossType::kGspo;
  const bool per_sequence = gspo || options.aggregation == LossAggregation::kSeqMeanTokenMean;
  if (options.aggregation == LossAggregation::kTokenMean) {
    if (!(normaliser.tokens > 0)) {
      return Status::InvalidArgument("token-mean needs the global masked-token count (> 0)",
                                     "normaliser.tokens");
    }
  } else if (!(normaliser.sequences > 0)) {
    return Status::InvalidArgument("seq-mean aggregation needs the global sequence count (> 0)",
                                   "normaliser.sequences");
  }
  if (per_sequence) {
    if (in.num_sequences < 1) return Status::InvalidArgument("must be >= 1", "num_sequences");
    if (!in.seq_index.defined() || in.seq_index.dim() != 1 || in.seq_index.size(0) != n ||
        in.seq_index.scalar_type() != torch::kInt64) {
      return Status::InvalidArgument("must be an int64 [" + std::to_string(n) + "]", "seq_index");
    }
    if (options.aggregation == LossAggregation::kSeqMeanTokenMean) {
      const torch::Tensor& st = normaliser.sequence_tokens;
      if (!st.defined() || st.dim() != 1 || st.size(0) != in.num_sequences) {
        return Status::InvalidArgument(
            "seq-mean-token-mean needs [" + std::to_string(in.num_sequences) + "] token counts",
            "normaliser.sequence_tokens");
      }
    }
  }

  try {
    const auto dtype = in.logp.scalar_type();
    const torch::Tensor logp = in.logp;
    const torch::Tensor mask = in.mask.to(dtype);
    if (per_sequence && n > 0) {
      // One read of both extremes instead of two syncs.
      const torch::Tensor range =
          torch::stack({in.seq_index.min(), in.seq_index.max()}).to(torch::kCPU);
      if (range[0].item<int64_t>() < 0 || range[1].item<int64_t>() >= in.num_sequences) {
        return Status::InvalidArgument(
            "values must be in [0, " + std::to_string(in.num_sequences) + ")", "seq_index");
      }
    }

    PolicyLossStats stats;
    // The stats' masked sums, each a 0-dim tensor, read back to the host in one copy at the end.
    std::vector<torch::Tensor> sums;
    const torch::Tensor zero = torch::zeros({}, mask.options());
    auto masked_sum = [&](const torch::Tensor& x) { return (x.detach() * mask).sum(); };

    torch::Tensor per_token;  // l_t before masking and normalisation.
    torch::Tensor ratio, clipped, dual_clipped, tis_w, old_logp;
    double m2po_low = 0, m2po_high = 0;
    M2poClipRange m2po;
    torch::Tensor m2_violating;
    if (sft) {
      per_token = -logp;
    } else {
      // Only logp (and entropy) may carry a gradient: the others are data.
      old_logp = in.old_logp.to(dtype).detach();
      torch::Tensor adv = in.advantages.to(dtype).detach();
      if (gspo) {
        const int64_t b = in.num_sequences;
        const torch::Tensor counts = SequenceSums(mask, in.seq_index, b).clamp_min(1.0);
        const torch::Tensor seq_log_ratio =
            SequenceSums((logp.detach() - old_logp) * mask, in.seq_index, b) / counts;
        const torch::Tensor seq_ratio = torch::exp(seq_log_ratio);
        ratio = seq_ratio.index_select(0, in.seq_index) * torch::exp(logp - logp.detach());
        adv = (SequenceSums(adv * mask, in.seq_index, b) / counts).index_select(0, in.seq_index);
      } else {
        // Masked-out tokens get ratio 1, so padding garbage cannot overflow into the loss.
        ratio = torch::exp((logp - old_logp) * mask);
      }
      double lo = options.clip_low;
      double hi = options.clip_high;
      if (options.m2po_threshold > 0) {
        const torch::Tensor r = ratio.detach();
        const torch::Tensor violating =
            (mask > 0) & (((adv > 0) & (r > 1)) | ((adv < 0) & (r < 1)));
        const torch::Tensor delta = old_logp - logp.detach();
        m2_violating = (delta * delta).masked_select(violating).to(torch::kCPU, torch::kDouble);
        m2_violating = m2_violating.contiguous();
        m2po = M2poRange(std::span<const double>(m2_violating.data_ptr<double>(),
                                                 static_cast<size_t>(m2_violating.numel())),
                         options.m2po_threshold);
        lo = m2po.ratio_low;
        hi = m2po.ratio_high;
        m2po_low = lo;
        m2po_high = hi;
      }
      const torch::Tensor pg_unclipped = -adv * ratio;
      const torch::Tensor pg_clipped = -adv * ratio.clamp(lo, hi);
      clipped = (pg_clipped > pg_unclipped).detach();
      // where() rather than max(): a tie sends the whole gradient through the unclipped branch
      // instead of splitting it.
      torch::Tensor pg = torch::where(clipped, pg_clipped, pg_unclipped);
      if (options.dual_clip > 0) {
        const torch::Tensor cap = options.dual_clip * adv.abs();
        dual_clipped = (cap < pg).detach();
        pg = torch::where(dual_clipped, cap, pg);
      }
      if (tis) {
        tis_w = torch::exp((old_logp - in.behaviour_logp.to(dtype).detach()) * mask)
                    .clamp_max(options.tis_cap);
        pg = pg * tis_w;
      }
      per_token = pg;
    }
    torch::Tensor kl;
    if (options.kl_coef > 0) {
      kl = KlEstimate((logp - in.ref_logp.to(dtype).detach()) * mask, options.kl_estimator)
               .clamp(-options.kl_clamp, options.kl_clamp);
      per_token = per_token + options.kl_coef * kl;
    }
    if (options.entropy_coef != 0) {
      per_token = per_token - options.entropy_coef * in.entropy.to(dtype);
    }

    // Masked-out tokens contribute exactly 0 even when their inputs are garbage (an -inf logp
    // at padding would otherwise make 0 * inf = NaN).
    per_token = torch::where(mask > 0, per_token, torch::zeros_like(per_token));
    torch::Tensor weights;  // Per-token factor of the aggregation, [T].
    switch (options.aggregation) {
      case LossAggregation::kTokenMean:
        weights = mask / normaliser.tokens;
        break;
      case LossAggregation::kSeqMeanTokenSum:
        weights = mask / normaliser.sequences;
        break;
      case LossAggregation::kSeqMeanTokenMean: {
        // clamp_min keeps a zero count (only allowed for fully unmasked sequences) from making
        // 0 / 0 = NaN on their masked-out tokens.
        const torch::Tensor n_b = normaliser.sequence_tokens.to(mask.device(), dtype)
                                      .clamp_min(1.0)
                                      .index_select(0, in.seq_index);
        weights = mask / (n_b * normaliser.sequences);
        break;
      }
    }
    PolicyLossResult result;
    result.loss = (per_token * weights).sum();

    // Stats: one tensor of sums, copied to the host once.
    sums.push_back(mask.sum());
    if (!sft) {
      const torch::Tensor r = ratio.detach();
      sums.push_back(masked_sum(clipped.to(dtype)));
      sums.push_back(dual_clipped.defined() ? masked_sum(dual_clipped.to(dtype)) : zero);
      sums.push_back(masked_sum(old_logp - logp));
      sums.push_back(masked_sum(r));
      // Masked-out tokens count as 0, below any real ratio (ratios are positive).
      sums.push_back(n > 0 ? (r * mask).max() : zero);
      sums.push_back(tis ? masked_sum(tis_w) : zero);
    }
    sums.push_back(in.entropy.defined() ? masked_sum(in.entropy.to(dtype)) : zero);
    sums.push_back(kl.defined() ? masked_sum(kl) : zero);
    const torch::Tensor host = torch::stack(sums).to(torch::kCPU, torch::kDouble).contiguous();
    const double* h = host.data_ptr<double>();
    size_t i = 0;
    stats.tokens = h[i++];
    if (!sft) {
      stats.clipped_tokens = h[i++];
      stats.dual_clipped_tokens = h[i++];
      stats.approx_kl_sum = h[i++];
      stats.ratio_sum = h[i++];
      stats.ratio_max = h[i++];
      stats.tis_weight_sum = h[i++];
    }
    stats.entropy_sum = h[i++];
    stats.kl_sum = h[i++];
    if (options.m2po_threshold > 0) {
      stats.m2po_micro_batches = 1;
      stats.m2po_ratio_low_sum = m2po_low;
      stats.m2po_ratio_high_sum = m2po_high;
      stats.m2po_m2_sum = m2po.mean_m2 * static_cast<double>(m2_violating.numel());
      stats.m2po_violating_tokens = static_cast<double>(m2_violating.numel());
    }
    result.stats = stats;
    return result;
  } catch (const c10::Error& e) {
    return Status::Internal(std::string("policy loss: ") + e.what_without_backtrace());
  }
}

Result<ValueLossResult> ValueLoss(const torch::Tensor& values, const torch::Tensor& old_values,
                                  const torch::Tensor& returns, const torch::Tensor& mask,
                                  double value_clip, double normaliser) {
  if (!values.defined() || values.dim() != 1) {
    return Status::InvalidArgument("must be a [T] tensor", "values");
  }
  const int64_t n = values.size(0);
  SLUICE_RETURN_IF_ERROR(CheckTokens(values, n, "values"));
  SLUICE_RETURN_IF_ERROR(CheckTokens(returns, n, "returns"));
  SLUICE_RETURN_IF_ERROR(CheckTokens(mask, n, "mask"));
  if (value_clip > 0) SLUICE_RETURN_IF_ERROR(CheckTokens(old_values, n, "old_values"));
  if (!(value_clip >= 0) || !Finite(value_clip)) {
    return Status::InvalidArgument("must be finite and >= 0", "value_clip");
  }
  if (!(normaliser > 0)) return Status::InvalidArgument("must be > 0", "normaliser");
  try {
    const auto dtype = values.scalar_type();
    const torch::Tensor m = mask.to(dtype);
    const torch::Tensor ret = returns.to(dtype).detach();
    const torch::Tensor err = (values - ret).pow(2);
    torch::Tensor per_token = err;
    torch::Tensor clipped = torch::zeros_like(m);
    if (value_clip > 0) {
      const torch::Tensor old = old_values.to(dtype).detach();
      const torch::Tensor v_clipped =
          torch::maximum(torch::minimum(values, old + value_clip), old - value_clip);
      const torch::Tensor err_clipped = (v_clipped - ret).pow(2);
      const torch::Tensor use_clipped = (err_clipped > err).detach();
      per_token = torch::where(use_clipped, err_clipped, err);
      clipped = use_clipped.to(dtype);
    }
    ValueLossResult result;
    result.loss = 0.5 * (per_token * m).sum() / normaliser;
    const torch::Tensor host =
        torch::stack({m.sum(), (clipped * m).sum(), (err.detach() * m).sum()})
            .to(torch::kCPU, torch::kDouble)
            .contiguous();
    const double* h = host.data_ptr<double>();
    result.stats = {h[0], h[1], h[2]};
    return result;
  } catch (const c10::Error& e) {
    return Status::Internal(std::string("value loss: ") + e.what_without_backtrace());
  }
}

}  // namespace sluice::trainer
