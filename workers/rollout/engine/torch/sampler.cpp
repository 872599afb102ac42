#include "workers/rollout/engine/torch/sampler.h"

#include <algorithm>
#include <limits>

#include "common/splitmix64.h"

namespace sluice::engine {

double DrawUniform(uint64_t seed, uint64_t offset) {
  const uint64_t bits = SplitMix64(SplitMix64(seed) ^ (offset * 0xd1342543de82ef95ULL + 1));
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

namespace {

// The kept count of a top-p row: the smallest prefix of the row's sorted probabilities (within
// its top-k set of `keep`) whose mass reaches top_p of the set's; at least one. Top-p applies
// after top-k, as transformers and vLLM do.
int64_t TopPKeep(const torch::Tensor& sorted_logp, int64_t keep, double top_p) {
  const torch::Tensor cum = sorted_logp.slice(0, 0, keep).exp().cumsum(0);
  // Each float32 partial sum is compared with a double threshold.
  const double threshold = top_p * cum[keep - 1].item<double>();
  // The partial sums never decrease, so the leading ones below the threshold are all of them.
  const int64_t below = (cum.to(torch::kFloat64) < threshold).sum().item<int64_t>();
  return std::min(keep, below + 1);
}

// Per row: the inverse temperature (1 for a greedy row: its log-prob is at temperature 1) and
// the uniform draw.
struct RowInputs {
  std::vector<float> inv_temp;
  std::vector<double> u;
};
RowInputs MakeRowInputs(std::span<const SamplingRow> rows) {
  RowInputs in;
  for (const SamplingRow& row : rows) {
    in.inv_temp.push_back(row.temperature > 0 ? static_cast<float>(1.0 / row.temperature) : 1.0f);
    in.u.push_back(DrawUniform(row.seed, row.offset));
  }
  return in;
}

// [m, 1] on `device`, copied from host values.
torch::Tensor ColumnOn(const torch::Device& device, void* data, int64_t m, torch::Dtype dtype) {
  return torch::from_blob(data, {m, 1}, dtype).to(device, /*non_blocking=*/false, /*copy=*/true);
}

// Log-probs [m, vocab] of the distribution each row samples from, on x's device: tempered, the
// tokens top-k / top-p drop masked with -inf, renormalised over the rest.
torch::Tensor SampledLogProbs(const torch::Tensor& x, std::span<const SamplingRow> rows,
                              RowInputs& in) {
  const int64_t m = x.size(0);
  const int64_t vocab = x.size(1);
  torch::Tensor logp =
      torch::log_softmax(x * ColumnOn(x.device(), in.inv_temp.data(), m, torch::kFloat32), 1);
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
    if (top_p) keep = TopPKeep(sorted, keep, row.top_p);
    logp[r].index_fill_(0, order.slice(0, keep), -std::numeric_limits<float>::infinity());
  }
  return filtered ? logp - logp.logsumexp(1, /*keepdim=*/true) : logp;
}

// The host path: the whole [rows, vocab] float32 block on the CPU, draws by a scan of each row.
std::vector<SampledToken> SampleOnHost(const torch::Tensor& logits,
                                       std::span<const SamplingRow> rows) {
  torch::NoGradGuard no_grad;
  const int64_t m = logits.size(0);
  const int64_t vocab = logits.size(1);
  std::vector<SampledToken> out(static_cast<size_t>(m));
  if (m == 0) return out;
  torch::Tensor x = logits.to(torch::kCPU, torch::kFloat32).contiguous();
  RowInputs in = MakeRowInputs(rows);
  const std::vector<double>& u = in.u;
  const torch::Tensor logp = SampledLogProbs(x, rows, in);

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

}  // namespace

std::vector<SampledToken> SampleTokensWithTensorOps(const torch::Tensor& logits,
                                                    std::span<const SamplingRow> rows) {
  torch::NoGradGuard no_grad;
  const int64_t m = logits.size(0);
  const int64_t vocab = logits.size(1);
  std::vector<SampledToken> out(static_cast<size_t>(m));
  if (m == 0) return out;
  const torch::Device device = logits.device();
  const torch::Tensor x = logits.to(torch::kFloat32).contiguous();
  RowInputs in = MakeRowInputs(rows);
  std::vector<uint8_t> greedy;
  for (const SamplingRow& row : rows) greedy.push_back(row.temperature <= 0 ? 1 : 0);
  const torch::Tensor logp = SampledLogProbs(x, rows, in);

  // Inverse CDF in token-id order: the first token whose cumulative mass exceeds u * total.
  const torch::Tensor cdf = logp.exp().cumsum(1);
  const torch::Tensor target = (ColumnOn(device, in.u.data(), m, torch::kFloat64) *
                                cdf.slice(1, vocab - 1, vocab).to(torch::kFloat64))
                                   .to(torch::kFloat32);
  const torch::Tensor drawn =
      torch::searchsorted(cdf, target, /*out_int32=*/false, /*right=*/true).clamp_max(vocab - 1);
  const torch::Tensor tokens =
      torch::where(ColumnOn(device, greedy.data(), m, torch::kUInt8).to(torch::kBool),
                   x.argmax(1, /*keepdim=*/true), drawn);
  const torch::Tensor chosen = logp.gather(1, tokens);
  // Only 2 x m numbers cross to the host.
  const torch::Tensor host_tokens = tokens.squeeze(1).to(torch::kCPU).contiguous();
  const torch::Tensor host_logp = chosen.squeeze(1).to(torch::kCPU).contiguous();
  const int64_t* t = host_tokens.data_ptr<int64_t>();
  const float* lp = host_logp.data_ptr<float>();
  for (int64_t r = 0; r < m; ++r) {
    SampledToken& s = out[static_cast<size_t>(r)];
    s.token = static_cast<int32_t>(t[r]);
    s.logprob = lp[r];
    if (greedy[static_cast<size_t>(r)] || s.logprob != -std::numeric_limits<float>::infinity()) {
      continue;
    }
    // Float rounding at the top end landed on a dropped token: step back to the last kept one,
    // as the host path does (rare, so this row alone comes to the host).
    const torch::Tensor row = logp[r].to(torch::kCPU).contiguous();
    const float* l = row.data_ptr<float>();
    int64_t token = t[r];
    while (token > 0 && l[token] == -std::numeric_limits<float>::infinity()) --token;
    s.token = static_cast<int32_t>(token);
    s.logprob = l[token];
  }
  return out;
}

std::vector<SampledToken> SampleTokens(const torch::Tensor& logits,
                                       std::span<const SamplingRow> rows) {
  return logits.device().is_cpu() ? SampleOnHost(logits, rows)
                                  : SampleTokensWithTensorOps(logits, rows);
}

}  // namespace sluice::engine
