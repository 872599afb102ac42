// EngineBackend: the built-in engine (engine.h) behind the workflows' GenerationBackend and the
// weight updater's WeightSink. It owns the Engine and the thread that steps it.
//
// Generate submits one engine request (n samples sharing the prompt's prefill) and blocks until
// every sample has finished; cancelling the token aborts the request. ApplyWeights turns a
// fetched snapshot's tensors (any float dtype) into the model's dtype and swaps them in between
// two engine steps; tokens generated afterwards carry the new version.
//
// Thread safety: Generate and ApplyWeights may be called from any thread.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/process/cancellation.h"
#include "workers/rollout/engine/torch/engine.h"
#include "workers/rollout/generation_backend.h"
#include "workers/rollout/weight_updater.h"

namespace sluice::rollout {

class EngineBackend final : public GenerationBackend, public WeightSink {
 public:
  // Starts the stepping thread. Policies are added to engine() before or after.
  explicit EngineBackend(engine::EngineOptions options);
  ~EngineBackend() override;

  engine::Engine& engine() { return *engine_; }

  Result<std::vector<Completion>> Generate(const GenerateRequest& request,
                                           const CancellationToken& cancel) override;
  Status ApplyWeights(const std::string& policy, const weights::WeightSnapshot& snapshot) override;

  // Sum over policies of the engine's figures.
  double KvUsage() const;
  double TokensPerSecond() const;

 private:
  Clock& clock_;  // options.clock, or the system clock.
  std::unique_ptr<engine::Engine> engine_;
  CancellationSource stop_;
  std::thread thread_;
  std::atomic<uint64_t> next_id_{1};
};

}  // namespace sluice::rollout
