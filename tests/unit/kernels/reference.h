// CPU references for the CUDA kernels, written for obviousness rather than speed: double
// precision wherever the kernel's contract does not fix a rounding, and the contract's own
// rounding (RoundTo) wherever it does. Inputs are float values already representable in the
// storage type, so the kernels and the references read identical numbers.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "tests/unit/kernels/kernel_test_util.h"
#include "workers/kernels/dtype.h"
#include "workers/kernels/philox.h"

namespace sluice::kernels::testing {

// PagedAttention, exact softmax in double. Layouts as in paged_attention.h.
inline std::vector<float> ReferencePagedAttention(
    const std::vector<float>& q, const std::vector<float>& k_cache,
    const std::vector<float>& v_cache, const std::vector<int32_t>& block_tables,
    const std::vector<int32_t>& context_lens, int batch, int num_heads, int num_kv_heads,
    int head_dim, int block_size, int max_blocks_per_seq, float scale) {
  std::vector<float> out(static_cast<size_t>(batch) * num_heads * head_dim, 0.0f);
  const int group = num_heads / num_kv_heads;
  for (int b = 0; b < batch; ++b) {
    const int context = context_lens[b];
    for (int h = 0; h < num_heads; ++h) {
      const int kv = h / group;
      const float* qh = &q[(static_cast<size_t>(b) * num_heads + h) * head_dim];
      std::vector<double> scores(context);
      std::vector<size_t> rows(context);
      for (int t = 0; t < context; ++t) {
        const int64_t block =
            block_tables[static_cast<size_t>(b) * max_blocks_per_seq + t / block_size];
        rows[t] = ((static_cast<size_t>(block) * block_size + t % block_size) * num_kv_heads + kv) *
                  head_dim;
        double dot = 0;
        for (int d = 0; d < head_dim; ++d) dot += double(qh[d]) * k_cache[rows[t] + d];
        scores[t] = dot * scale;
      }
      if (context == 0) continue;
      const double max_score = *std::max_element(scores.begin(), scores.end());
      double sum = 0;
      for (double& s : scores) sum += (s = std::exp(s - max_score));
      for (int d = 0; d < head_dim; ++d) {
        double acc = 0;
        for (int t = 0; t < context; ++t) acc += scores[t] * v_cache[rows[t] + d];
        out[(static_cast<size_t>(b) * num_heads + h) * head_dim + d] =
            static_cast<float>(acc / sum);
      }
    }
  }
  return out;
}

// RmsNorm with Hugging Face's rounding (rms_norm.h). When `residual` is non-null it is updated
// in place, exactly as the kernel must: a float32 add rounded to the storage type.
inline std::vector<float> ReferenceRmsNorm(DType dtype, const std::vector<float>& x,
                                           std::vector<float>* residual,
                                           const std::vector<float>& weight, int num_tokens,
                                           int hidden, float eps) {
  std::vector<float> out(x.size());
  for (int t = 0; t < num_tokens; ++t) {
    const size_t row = static_cast<size_t>(t) * hidden;
    std::vector<float> in(x.begin() + row, x.begin() + row + hidden);
    if (residual != nullptr) {
      for (int i = 0; i < hidden; ++i) {
        float& r = (*residual)[row + i];
        r = RoundTo(dtype, r + in[i]);  // float + float: the kernel's float32 add.
        in[i] = r;
      }
    }
    double sum_squares = 0;
    for (float v : in) sum_squares += double(v) * v;
    const double inv_rms = 1.0 / std::sqrt(sum_squares / hidden + eps);
    for (int i = 0; i < hidden; ++i) {
      const float normed = RoundTo(dtype, static_cast<float>(in[i] * inv_rms));
      out[row + i] = RoundTo(dtype, static_cast<float>(double(normed) * weight[i]));
    }
  }
  return out;
}

// ApplyRotary in place on x (rotary.h); the angle is the contract's float32 product.
inline void ReferenceRotary(DType dtype, std::vector<float>& x,
                            const std::vector<int64_t>& positions,
                            const std::vector<float>& inv_freq, int num_tokens, int num_heads,
                            int head_dim, int64_t token_stride, float attention_scale) {
  const int half = head_dim / 2;
  for (int t = 0; t < num_tokens; ++t) {
    for (int h = 0; h < num_heads; ++h) {
      float* xh = &x[static_cast<size_t>(t) * token_stride + static_cast<size_t>(h) * head_dim];
      for (int i = 0; i < half; ++i) {
        const float angle = static_cast<float>(positions[t]) * inv_freq[i];
        const double c = std::cos(double(angle)) * attention_scale;
        const double s = std::sin(double(angle)) * attention_scale;
        const double x1 = xh[i], x2 = xh[i + half];
        xh[i] = RoundTo(dtype, static_cast<float>(x1 * c - x2 * s));
        xh[i + half] = RoundTo(dtype, static_cast<float>(x2 * c + x1 * s));
      }
    }
  }
}

struct ReferenceDraw {
  int token = -1;
  double logprob = 0;
  // The kept tokens in sampling order and their renormalised probabilities (greedy: the token
  // alone, with probability 1).
  std::vector<int> kept;
  std::vector<double> kept_probs;
  double u = 0;
  // How close the draw was to changing: the smallest distance, in probability, between u and a
  // cumulative boundary of the kept set, or between top_p and a cumulative boundary of the top-k
  // set. The kernel computes in float32, so a mismatch is only excusable when this is tiny.
  double margin = std::numeric_limits<double>::infinity();
};

// Sample() for one row (sampling.h), in double.
inline ReferenceDraw ReferenceSample(const float* logits, int vocab, float temperature, int top_k,
                                     float top_p, uint64_t seed, uint64_t offset) {
  std::vector<int> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return logits[a] > logits[b]; });  // Ties: lower id.
  const double max_logit = logits[order[0]];
  ReferenceDraw draw;
  if (!(temperature > 0.0f)) {
    double sum = 0;
    for (int i = 0; i < vocab; ++i) sum += std::exp(double(logits[i]) - max_logit);
    draw.token = order[0];
    draw.logprob = -std::log(sum);
    draw.kept = {order[0]};
    draw.kept_probs = {1.0};
    return draw;
  }
  const int k = top_k > 0 && top_k < vocab ? top_k : vocab;
  std::vector<double> w(k);
  double top_k_mass = 0;
  for (int j = 0; j < k; ++j) {
    top_k_mass += (w[j] = std::exp((double(logits[order[j]]) - max_logit) / temperature));
  }
  int kept = k;
  if (top_p < 1.0f) {
    double cum = 0;
    for (int j = 0; j < k; ++j) {
      cum += w[j];
      draw.margin = std::min(draw.margin, std::abs(cum / top_k_mass - top_p));
      if (cum >= double(top_p) * top_k_mass) {
        kept = j + 1;
        break;
      }
    }
  }
  double kept_mass = 0;
  for (int j = 0; j < kept; ++j) kept_mass += w[j];
  draw.u = PhiloxUniform(seed, offset);
  double cum = 0;
  int position = -1;
  for (int j = 0; j < kept; ++j) {
    draw.kept.push_back(order[j]);
    draw.kept_probs.push_back(w[j] / kept_mass);
    cum += w[j];
    draw.margin = std::min(draw.margin, std::abs(cum / kept_mass - draw.u));
    if (position < 0 && w[j] > 0 && cum > draw.u * kept_mass) position = j;
  }
  if (position < 0) position = kept - 1;
  draw.token = order[position];
  draw.logprob = (double(logits[draw.token]) - max_logit) / temperature - std::log(kept_mass);
  return draw;
}

}  // namespace sluice::kernels::testing
