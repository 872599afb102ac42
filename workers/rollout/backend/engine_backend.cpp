#include "workers/rollout/backend/engine_backend.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <utility>

namespace sluice::rollout {

EngineBackend::EngineBackend(engine::EngineOptions options)
    : clock_(ClockOrSystem(options.clock)),
      engine_(std::make_unique<engine::Engine>(std::move(options))) {
  thread_ = std::thread([this, token = stop_.Token()] { engine_->Run(token); });
}

EngineBackend::~EngineBackend() {
  stop_.Cancel();
  if (thread_.joinable()) thread_.join();
}

Result<std::vector<Completion>> EngineBackend::Generate(const GenerateRequest& request,
                                                        const CancellationToken& cancel) {
  struct Pending {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<Completion> out;
    int32_t remaining = 0;
  };
  auto pending = std::make_shared<Pending>();
  const int32_t n = std::max<int32_t>(1, request.sampling.n);
  pending->out.resize(static_cast<size_t>(n));
  pending->remaining = n;
  const Clock::MonoTime t0 = clock_.Now();

  engine::GenerationRequest r;
  r.id = "g" + std::to_string(next_id_.fetch_add(1));
  r.policy = request.policy;
  r.prompt = request.prompt;
  r.sampling = request.sampling;
  r.sampling.n = n;
  const std::string id = r.id;
  SLUICE_RETURN_IF_ERROR(
      engine_->Submit(std::move(r), [this, pending, t0](const engine::SampleUpdate& u) {
        std::lock_guard<std::mutex> lock(pending->mu);
        if (u.sample < 0 || static_cast<size_t>(u.sample) >= pending->out.size()) return;
        Completion& c = pending->out[static_cast<size_t>(u.sample)];
        c.tokens.insert(c.tokens.end(), u.tokens.begin(), u.tokens.end());
        c.logprobs.insert(c.logprobs.end(), u.logprobs.begin(), u.logprobs.end());
        c.versions.insert(c.versions.end(), u.versions.begin(), u.versions.end());
        if (u.finished) {
          c.text = u.text;
          c.finish_reason = u.finish_reason == "weight_swap" ? "abort" : u.finish_reason;
          c.seconds = std::chrono::duration<double>(clock_.Now() - t0).count();
          if (--pending->remaining == 0) pending->cv.notify_all();
        }
      }));
  CancellationRegistration on_cancel = cancel.OnCancel([this, id] { (void)engine_->Abort(id); });
  std::unique_lock<std::mutex> lock(pending->mu);
  pending->cv.wait(lock, [&] { return pending->remaining == 0; });
  return std::move(pending->out);
}

Status EngineBackend::ApplyWeights(const std::string& policy,
                                   const weights::WeightSnapshot& snapshot) {
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const weights::TensorSlice& slice : snapshot.tensors()) {
    torch::Dtype dtype;
    switch (slice.dtype) {
      case model::DType::kF32:
        dtype = torch::kFloat32;
        break;
      case model::DType::kF16:
        dtype = torch::kFloat16;
        break;
      case model::DType::kBF16:
        dtype = torch::kBFloat16;
        break;
      case model::DType::kF64:
        dtype = torch::kFloat64;
        break;
      default:
        return Status::InvalidArgument("is not a float tensor", "weights." + slice.name);
    }
    std::span<const std::byte> bytes = snapshot.TensorBytes(slice);
    // from_blob needs a mutable pointer; the data is only read (clone copies it).
    torch::Tensor t = torch::from_blob(const_cast<std::byte*>(bytes.data()), slice.shape,
                                       torch::TensorOptions().dtype(dtype))
                          .to(torch::kFloat32)
                          .clone();
    tensors.emplace_back(slice.name, std::move(t));
  }
  return engine_->SwapWeights(policy, std::move(tensors), snapshot.version());
}

double EngineBackend::KvUsage() const {
  double usage = 0;
  for (const engine::PolicyStats& s : engine_->Stats()) usage = std::max(usage, s.kv_usage);
  return usage;
}

double EngineBackend::TokensPerSecond() const {
  double tps = 0;
  for (const engine::PolicyStats& s : engine_->Stats()) tps += s.tokens_per_second;
  return tps;
}

}  // namespace sluice::rollout
