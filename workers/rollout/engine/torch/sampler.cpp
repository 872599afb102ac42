#include "workers/rollout/engine/torch/sampler.h"

#include <algorithm>
#include <limits>

#include "common/splitmix64.h"

namespace sluice::engine {

double DrawUniform(uint64_t seed, uint64_t offset) {
  const uint64_t bits = SplitMix64(SplitMix64(seed) ^ (offset * 0xd1342543de82ef95ULL + 1));
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

std::vector<SampledToken> SampleTokens(const torch::Tensor& logits,
                                       std::span<const SamplingRow> rows) {
  torch::NoGradGuard no_grad;
  const int64_t m = logits.size(0);
  const int64_t vocab = logits.size(1);
  std::vector<SampledToken> out(static_cast<size_t>(m));
  if (m == 0) return out;
  torch::Tensor x = logits.to(torch::kCPU, torch::kFloat32).contiguous();

  std::vector<float> inv_temp(static_cast<size_t>(m));
  std::vector<double> u(static_cast<size_t>(m));
  for (int64_t r = 0; r < m; ++r) {
    const SamplingRow& row = rows[static_cast<size_t>(r)];
    inv_temp[static_cast<size_t>(r)] =
        row.temperature > 0 ? static_cast<float>(1.0 / row.temperature) : 1.0f;
    u[static_cast<size_t>(r)] = DrawUniform(row.seed, row.offset);
  }
  torch::Tensor scale = torch::from_blob(inv_temp.data(), {m, 1}, torch::kFloat32);
  torch::Tensor logp = torch::log_softmax(x * scale, 1);

  // Top-k / top-p: mask the dropped tokens of each such row, then renormalise.
  bool filtered = false;
  for (int64_t r = 0; r < m; ++r) {
    const SamplingRow& row = rows[static_cast<size_t>(r)];
    if (row.temperature <= 0) continue;
    const bool top_k = row.top_k > 0 && row.top_k < vocab;
    const bool top_p = row.top_p < 1.0;
    if (!top_k && !top_p) continue;
    filtered = true;
    auto [sorted, order] = logp[r].sort(/*stable=*/true, /*dim=*/0, /*descending=*/true);
    int64_t keep = top_k ? row.top_k : vocab;
    if (top_p) {
      // Mass relative to the top-k set (top-p applies after top-k, as transformers and vLLM do).
      torch::Tensor cum = sorted.slice(0, 0, keep).exp().cumsum(0);
      const float* c = cum.data_ptr<float>();
      const double threshold = row.top_p * c[keep - 1];
      int64_t n = 0;
      while (n < keep && c[n] < threshold) ++n;
      keep = std::min(keep, n + 1);
    }
    logp[r].index_fill_(0, order.slice(0, keep), -std::numeric_limits<float>::infinity());
  }
  if (filtered) logp = logp - logp.logsumexp(1, /*keepdim=*/true);

  torch::Tensor cdf = logp.exp().cumsum(1);
  const float* cdf_data = cdf.data_ptr<float>();
  const float* logp_data = logp.data_ptr<float>();
  const float* raw = x.data_ptr<float>();
  for (int64_t r = 0; r < m; ++r) {
    const SamplingRow& row = rows[static_cast<size_t>(r)];
    const float* c = cdf_data + r * vocab;
    SampledToken& s = out[static_cast<size_t>(r)];
    if (row.temperature <= 0) {
      const float* l = raw + r * vocab;
      int64_t best = 0;
      for (int64_t v = 1; v < vocab; ++v) {
        if (l[v] > l[best]) best = v;
      }
      s.token = static_cast<int32_t>(best);
      s.logprob = logp_data[r * vocab + best];  // Temperature 1: scale was 1 for this row.
      continue;
    }
    // First token whose cumulative mass passes u * total (zero-mass tokens never qualify).
    const double target = u[static_cast<size_t>(r)] * c[vocab - 1];
    const float* it = std::upper_bound(c, c + vocab, static_cast<float>(target));
    int64_t token = std::min<int64_t>(it - c, vocab - 1);
    while (token > 0 && logp_data[r * vocab + token] == -std::numeric_limits<float>::infinity()) {
      --token;  // Float rounding at the top end: step back to the last kept token.
    }
    s.token = static_cast<int32_t>(token);
    s.logprob = logp_data[r * vocab + token];
  }
  return out;
}

}  // namespace sluice::engine
