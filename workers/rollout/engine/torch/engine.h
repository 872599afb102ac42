// The rollout generation engine: continuous batching over a paged KV cache for one or more
// policies (models) in one process.
//
// Each policy has its own model, weight version, KV cache and scheduler. A step of a policy
// schedules a mix of decode tokens and chunked prefill (Scheduler), copies shared blocks that are
// about to be written (copy-on-write), runs PagedForward, samples one token for every sequence
// whose chunk reached its end (SampleTokens), and delivers the tokens to the request's callback.
//
// Requests: a prompt and SamplingParams. With n > 1 the prompt is prefilled once, then the
// sequence forks into n samples that share the prompt's KV blocks (the group of a GRPO step pays
// for one prefill); each sample draws from its own seed (see SampleSeed). Identical prompt
// prefixes across requests reuse full cached blocks (the prefix cache), dropped on a weight swap.
//
// Finish reasons: "stop" (the eos id unless ignore_eos, a stop token id, or a stop string;
// the token that stopped is part of the output tokens, a stop string is cut from `text`),
// "length" (max_new_tokens, or the model's max_position_embeddings), "abort" (Abort()), and
// "weight_swap" (a swap happened while the sample ran with on_weight_swap: abort).
//
// Weight swap: SwapWeights(policy, tensors, version) is applied between two steps; every token
// carries the version of the weights that produced it. A sample that continues across a swap
// (on_weight_swap: continue, a "partial rollout") keeps the KV its earlier tokens computed under
// the old weights; only its later tokens come from the new ones.
//
// Threads: Submit, Abort, SwapWeights and Stats may be called from any thread. Step (or Run,
// which loops Step) runs on one thread; callbacks run on that thread, with no engine lock held,
// so a callback may call Submit or Abort.
#pragma once

#include <torch/torch.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/process/cancellation.h"
#include "common/status.h"
#include "workers/model/nn/decoder_model.h"
#include "workers/model/tokenizer.h"
#include "workers/rollout/engine/sampling_params.h"
#include "workers/rollout/engine/torch/paged_forward.h"

namespace sluice::engine {

struct EngineOptions {
  int32_t block_size = 16;  // Tokens per KV block.
  // KV capacity per policy (KvCacheBlocks): kv_cache_tokens when set, else
  // kv_cache_memory_fraction of the memory available when the policy is added (host memory;
  // the model's device is the CPU with this libtorch), else kv_cache_bytes.
  int64_t kv_cache_tokens = 0;
  double kv_cache_memory_fraction = 0;
  int64_t kv_cache_bytes = int64_t{256} << 20;
  int64_t max_tokens_per_step = 2048;  // Decode + prefill tokens of one step.
  int32_t max_running = 256;           // Sequences decoding at once, per policy.
  bool prefix_cache = true;
  ForwardOptions forward;
  // Times the steps (tokens per second) and, in EngineBackend, the requests. Borrowed, must
  // outlive the engine; null: the system clock.
  Clock* clock = nullptr;
};

struct GenerationRequest {
  std::string id;      // Unique among the requests in flight.
  std::string policy;  // A policy added with AddPolicy.
  std::vector<int32_t> prompt;
  SamplingParams sampling;
};

// An update of one sample: the tokens produced since the last update of that sample.
struct SampleUpdate {
  std::string request_id;
  int32_t sample = 0;  // 0 .. n - 1.
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;    // Natural log, see sampler.h for the distribution.
  std::vector<int64_t> versions;  // Weight version that produced each token.
  bool finished = false;
  std::string finish_reason;  // When finished.
  // When finished and the policy has a tokenizer: the decoded output, cut before a stop string.
  std::string text;
};
using UpdateCallback = std::function<void(const SampleUpdate&)>;

struct PolicyStats {
  std::string policy;
  int64_t version = 0;
  int64_t running = 0;  // Sequences with KV blocks.
  int64_t waiting = 0;  // Queued, or pre-empted and waiting to be recomputed.
  double kv_usage = 0;  // Fraction of KV blocks in use.
  int64_t kv_blocks = 0;
  int64_t generated_tokens = 0;  // Sampled tokens since start.
  int64_t prefill_tokens = 0;    // Prompt tokens computed (recomputation included).
  int64_t preemptions = 0;
  int64_t prefix_cache_hit_tokens = 0;
  int64_t requests_finished = 0;
  double tokens_per_second = 0;  // Sampled tokens per second of step time, smoothed.
};

class Engine {
 public:
  explicit Engine(EngineOptions options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Adds a policy serving `model` (shared with the caller, which must not mutate it while the
  // engine runs except through SwapWeights). `tokenizer` may be null (no stop strings then).
  Status AddPolicy(const std::string& name, std::shared_ptr<model::DecoderModel> model,
                   int64_t version, std::shared_ptr<const model::Tokenizer> tokenizer);

  // Queues a request. InvalidArgument (naming the field) for an unknown policy, a duplicate id,
  // invalid sampling parameters, token ids outside the vocabulary, an empty prompt, or a prompt
  // that could never fit the KV cache or the model's context.
  Status Submit(GenerationRequest request, UpdateCallback callback);
  // Finishes every sample of the request with "abort" at the next step. NotFound when unknown.
  Status Abort(const std::string& request_id);
  // Replaces the policy's weights with `tensors` (HF names -> tensors of the same shapes; a
  // subset is allowed) before the next step and sets its version. InvalidArgument for an unknown
  // name or a shape mismatch (checked here, so nothing is half-applied).
  Status SwapWeights(const std::string& policy,
                     std::vector<std::pair<std::string, torch::Tensor>> tensors, int64_t version);

  std::vector<PolicyStats> Stats() const;
  // Whether any request is queued or running.
  bool HasWork() const;

  // Runs one step of every policy with work. Returns false when there was nothing to do; an
  // error when the model failed (the engine's requests are then finished with "abort").
  Result<bool> Step();
  // Steps until `stop` is cancelled, sleeping while idle.
  void Run(const CancellationToken& stop);

  // The seed sample `index` of a request draws from (request seed, or a random one).
  static uint64_t SampleSeed(uint64_t request_seed, int32_t index);

 private:
  struct Policy;
  struct Request;
  struct Sample;

  void DrainInbox(std::vector<SampleUpdate>& updates);
  Status StepPolicy(Policy& policy, std::vector<SampleUpdate>& updates);
  void FinishSample(Policy& policy, Sample& sample, const std::string& reason,
                    std::vector<SampleUpdate>& updates);
  void Deliver(std::vector<SampleUpdate>& updates);

  const EngineOptions options_;
  Clock& clock_;
  mutable std::mutex mu_;  // Guards the inbox, stats_ and request_ids_.
  std::condition_variable wake_;
  std::deque<std::pair<GenerationRequest, UpdateCallback>> inbox_;
  std::vector<std::string> aborts_;
  struct PendingSwap {
    std::string policy;
    std::vector<std::pair<std::string, torch::Tensor>> tensors;
    int64_t version;
  };
  std::vector<PendingSwap> swaps_;
  std::map<std::string, std::string> request_policy_;  // Requests in flight -> policy.
  std::vector<PolicyStats> stats_;

  // Step-thread state.
  std::vector<std::unique_ptr<Policy>> policies_;
  std::map<std::string, std::unique_ptr<Request>> requests_;
  int64_t next_seq_ = 1;
};

}  // namespace sluice::engine
