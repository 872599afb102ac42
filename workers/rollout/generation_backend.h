// GenerationBackend: what a workflow needs from an inference engine: sample completions of a
// prompt (token ids) for one policy, with per-token log-probs and the weight version of every
// token. Two implementations: EngineBackend (backend/engine_backend.h, the built-in
// engine) and OpenAiBackend (external/openai_backend.h, a vLLM or SGLang sidecar).
//
// Workflows are written against this interface only, so they are torch-free and unit-tested
// with a scripted backend.
//
// Thread safety: Generate may be called from many threads at once (one per running episode);
// the backend batches their requests. Ownership: the caller owns requests and results.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/process/cancellation.h"
#include "common/status.h"
#include "workers/rollout/engine/sampling_params.h"

namespace sluice::rollout {

struct GenerateRequest {
  std::string policy;               // A policy the backend hosts.
  std::vector<int32_t> prompt;      // Token ids, already rendered with the policy's chat template.
  engine::SamplingParams sampling;  // sampling.n completions share the prompt.
};

// One finished completion. tokens, logprobs and versions are parallel.
struct Completion {
  std::vector<int32_t> tokens;    // Generated ids, the stop token included when one ended it.
  std::vector<float> logprobs;    // Natural-log probability of each token under its weights.
  std::vector<int64_t> versions;  // Weight version that produced each token.
  std::string text;               // Decoded output, cut before a matched stop string.
  std::string finish_reason;      // "stop", "length" or "abort".
  double seconds = 0;             // Wall time from submission to the last token.
};

class GenerationBackend {
 public:
  virtual ~GenerationBackend() = default;
  // Blocks until all sampling.n completions are finished; returns them in sample order.
  // Cancelling `cancel` aborts the request (the completions then end with "abort" or the call
  // returns Cancelled). Errors: InvalidArgument for an unknown policy or a bad request,
  // Unavailable when the engine cannot serve.
  virtual Result<std::vector<Completion>> Generate(const GenerateRequest& request,
                                                   const CancellationToken& cancel) = 0;
};

}  // namespace sluice::rollout
