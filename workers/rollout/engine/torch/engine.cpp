#include "workers/rollout/engine/torch/engine.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <set>

#include "common/splitmix64.h"
#include "workers/rollout/engine/kv_cache_budget.h"
#include "workers/rollout/engine/scheduler.h"
#include "workers/rollout/engine/stop_strings.h"
#include "workers/rollout/engine/torch/paged_kv_cache.h"
#include "workers/rollout/engine/torch/sampler.h"

namespace sluice::engine {

struct Engine::Request {
  std::string id;
  std::string policy;
  SamplingParams params;
  UpdateCallback callback;
  int64_t prompt_len = 0;
  uint64_t seed = 0;
  int32_t unfinished = 0;
  std::vector<SeqId> seqs;  // Sample i's sequence (created on fork for i > 0).
};

struct Engine::Sample {
  Request* request = nullptr;
  int32_t index = 0;
  SeqId seq = 0;
  uint64_t seed = 0;
  bool fork_pending = false;    // Prefill of an n > 1 request: fork when its logits arrive.
  std::vector<int32_t> tokens;  // Output tokens.
  std::vector<float> logprobs;
  std::vector<int64_t> versions;
  size_t delivered = 0;  // Output tokens already sent to the callback.
  // With stop strings: the output decoded so far, one token at a time (the supported tokenizers
  // decode a sequence to the concatenation of its tokens' bytes), and how much of it was searched.
  std::string text;
  size_t stop_checked = 0;
  bool finished = false;
};

struct Engine::Policy {
  std::string name;
  std::shared_ptr<model::DecoderModel> model;
  std::shared_ptr<const model::Tokenizer> tokenizer;
  int64_t version = 0;
  std::unique_ptr<PagedKvCache> cache;
  std::unique_ptr<Scheduler> scheduler;
  std::map<SeqId, Sample> samples;
  PolicyStats stats;
  int64_t max_total_tokens = 0;  // Prompt + output limit: the context and the cache.
};

uint64_t Engine::SampleSeed(uint64_t request_seed, int32_t index) {
  return SplitMix64(request_seed ^ SplitMix64(static_cast<uint64_t>(index) + 0x5eed));
}

Engine::Engine(EngineOptions options)
    : options_(std::move(options)), clock_(ClockOrSystem(options_.clock)) {}
Engine::~Engine() = default;

Status Engine::AddPolicy(const std::string& name, std::shared_ptr<model::DecoderModel> model,
                         int64_t version, std::shared_ptr<const model::Tokenizer> tokenizer) {
  if (name.empty()) return Status::InvalidArgument("policy name must not be empty", "policy");
  if (model == nullptr) return Status::InvalidArgument("policy " + name + " has no model");
  for (const auto& p : policies_) {
    if (p->name == name) return Status::AlreadyExists("policy " + name + " already added");
  }
  const model::ModelConfig& config = model->config();
  KvCacheBudget budget;
  budget.tokens = options_.kv_cache_tokens;
  budget.memory_fraction = options_.kv_cache_memory_fraction;
  budget.bytes = options_.kv_cache_bytes;
  SLUICE_ASSIGN_OR_RETURN(
      const int64_t blocks,
      KvCacheBlocks(budget, options_.block_size,
                    PagedKvCache::BytesPerBlock(config, options_.block_size, model->dtype()),
                    budget.memory_fraction > 0 ? AvailableHostMemoryBytes() : 0));
  SLUICE_ASSIGN_OR_RETURN(
      PagedKvCache cache,
      PagedKvCache::Create(config, blocks, options_.block_size, model->dtype(), model->device()));
  auto policy = std::make_unique<Policy>();
  policy->name = name;
  policy->model = std::move(model);
  policy->tokenizer = std::move(tokenizer);
  policy->version = version;
  policy->cache = std::make_unique<PagedKvCache>(std::move(cache));
  SchedulerConfig sc;
  sc.num_blocks = static_cast<int32_t>(blocks);
  sc.block_size = options_.block_size;
  sc.max_tokens_per_step = options_.max_tokens_per_step;
  sc.max_running = options_.max_running;
  sc.prefix_cache = options_.prefix_cache;
  SLUICE_ASSIGN_OR_RETURN(Scheduler scheduler, Scheduler::Create(sc));
  policy->scheduler = std::make_unique<Scheduler>(std::move(scheduler));
  policy->max_total_tokens =
      std::min<int64_t>(config.max_position_embeddings, blocks * options_.block_size);
  policy->stats.policy = name;
  policy->stats.version = version;
  policy->stats.kv_blocks = blocks;
  std::lock_guard<std::mutex> lock(mu_);
  stats_.push_back(policy->stats);
  policies_.push_back(std::move(policy));
  return Status::Ok();
}

Status Engine::Submit(GenerationRequest request, UpdateCallback callback) {
  if (request.id.empty()) return Status::InvalidArgument("request id must not be empty", "id");
  SLUICE_RETURN_IF_ERROR(Validate(request.sampling));
  std::lock_guard<std::mutex> lock(mu_);
  const Policy* policy = nullptr;
  for (const auto& p : policies_) {
    if (p->name == request.policy) policy = p.get();
  }
  if (policy == nullptr) {
    return Status::InvalidArgument("unknown policy \"" + request.policy + "\"", "policy");
  }
  if (request_policy_.count(request.id) != 0) {
    return Status::InvalidArgument("request id \"" + request.id + "\" is already in flight", "id");
  }
  if (request.prompt.empty()) return Status::InvalidArgument("the prompt is empty", "prompt");
  const int64_t vocab = policy->model->config().vocab_size;
  for (int32_t t : request.prompt) {
    if (t < 0 || t >= vocab) {
      return Status::InvalidArgument(
          "token id " + std::to_string(t) + " outside [0, " + std::to_string(vocab) + ")",
          "prompt");
    }
  }
  const auto prompt_len = static_cast<int64_t>(request.prompt.size());
  if (prompt_len >= policy->max_total_tokens) {
    return Status::InvalidArgument(
        "the prompt has " + std::to_string(prompt_len) + " tokens; this policy fits at most " +
            std::to_string(policy->max_total_tokens - 1) +
            " (the model's context or the KV cache, whichever is smaller)",
        "prompt");
  }
  request_policy_[request.id] = request.policy;
  inbox_.emplace_back(std::move(request), std::move(callback));
  wake_.notify_all();
  return Status::Ok();
}

Status Engine::Abort(const std::string& request_id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (request_policy_.count(request_id) == 0) {
    return Status::NotFound("no request \"" + request_id + "\" in flight");
  }
  aborts_.push_back(request_id);
  wake_.notify_all();
  return Status::Ok();
}

Status Engine::SwapWeights(const std::string& policy_name,
                           std::vector<std::pair<std::string, torch::Tensor>> tensors,
                           int64_t version) {
  std::lock_guard<std::mutex> lock(mu_);
  const Policy* policy = nullptr;
  for (const auto& p : policies_) {
    if (p->name == policy_name) policy = p.get();
  }
  if (policy == nullptr) {
    return Status::InvalidArgument("unknown policy \"" + policy_name + "\"", "policy");
  }
  std::map<std::string, torch::Tensor> live;
  for (auto& [name, t] : policy->model->NamedParameters()) live.emplace(name, t);
  for (const auto& [name, t] : tensors) {
    auto it = live.find(name);
    if (it == live.end()) {
      return Status::InvalidArgument("policy " + policy_name + " has no parameter " + name, name);
    }
    if (!t.defined() || t.sizes() != it->second.sizes()) {
      return Status::InvalidArgument("parameter " + name + " has the wrong shape", name);
    }
  }
  swaps_.push_back({policy_name, std::move(tensors), version});
  wake_.notify_all();
  return Status::Ok();
}

std::vector<PolicyStats> Engine::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

bool Engine::HasWork() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !request_policy_.empty() || !swaps_.empty();
}

void Engine::DrainInbox(std::vector<SampleUpdate>& updates) {
  std::deque<std::pair<GenerationRequest, UpdateCallback>> inbox;
  std::vector<std::string> aborts;
  std::vector<PendingSwap> swaps;
  {
    std::lock_guard<std::mutex> lock(mu_);
    inbox.swap(inbox_);
    aborts.swap(aborts_);
    swaps.swap(swaps_);
  }
  auto find_policy = [&](const std::string& name) -> Policy* {
    for (auto& p : policies_) {
      if (p->name == name) return p.get();
    }
    return nullptr;
  };
  // Swaps first: a request submitted after a swap runs entirely under the new weights.
  for (PendingSwap& swap : swaps) {
    Policy* policy = find_policy(swap.policy);
    {
      torch::NoGradGuard no_grad;
      std::map<std::string, torch::Tensor> live;
      for (auto& [name, t] : policy->model->NamedParameters()) live.emplace(name, t);
      for (auto& [name, t] : swap.tensors) live.at(name).copy_(t);
    }
    policy->version = swap.version;
    policy->stats.version = swap.version;
    // Cached prefix blocks hold KV of the old weights; new requests must not reuse them.
    policy->scheduler->ClearPrefixCache();
    for (auto& [seq, sample] : policy->samples) {
      if (!sample.finished &&
          sample.request->params.on_weight_swap == SamplingParams::OnWeightSwap::kAbort) {
        FinishSample(*policy, sample, "weight_swap", updates);
      }
    }
  }
  for (auto& [request, callback] : inbox) {
    Policy* policy = find_policy(request.policy);
    auto r = std::make_unique<Request>();
    r->id = request.id;
    r->policy = request.policy;
    r->params = request.sampling;
    r->callback = std::move(callback);
    r->prompt_len = static_cast<int64_t>(request.prompt.size());
    if (request.sampling.seed) {
      r->seed = *request.sampling.seed;
    } else {
      std::random_device rd;
      r->seed = (static_cast<uint64_t>(rd()) << 32) ^ rd();
    }
    r->unfinished = r->params.n;
    r->seqs.assign(static_cast<size_t>(r->params.n), 0);
    const SeqId seq = next_seq_++;
    const int64_t max_total =
        std::min<int64_t>(policy->max_total_tokens, r->prompt_len + r->params.max_new_tokens);
    Status added = policy->scheduler->Add(seq, std::move(request.prompt), max_total);
    if (!added.ok()) {
      // Submit checked what it could; report anything else as a finished, aborted request.
      SampleUpdate u;
      u.request_id = r->id;
      u.finished = true;
      u.finish_reason = "abort";
      u.text = added.message();
      for (int32_t i = 0; i < r->params.n; ++i) {
        u.sample = i;
        updates.push_back(u);
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        request_policy_.erase(r->id);
      }
      // Kept until Deliver, which finds the callback here and then drops the finished request.
      r->unfinished = 0;
      requests_[r->id] = std::move(r);
      continue;
    }
    r->seqs[0] = seq;
    Sample& s = policy->samples[seq];
    s.request = r.get();
    s.index = 0;
    s.seq = seq;
    s.seed = SampleSeed(r->seed, 0);
    s.fork_pending = r->params.n > 1;
    requests_[r->id] = std::move(r);
  }
  for (const std::string& id : aborts) {
    auto it = requests_.find(id);
    if (it == requests_.end()) continue;
    Policy* policy = find_policy(it->second->policy);
    for (SeqId seq : std::vector<SeqId>(it->second->seqs)) {
      auto s = policy->samples.find(seq);
      if (seq != 0 && s != policy->samples.end() && !s->second.finished) {
        FinishSample(*policy, s->second, "abort", updates);
      }
    }
  }
}

void Engine::FinishSample(Policy& policy, Sample& sample, const std::string& reason,
                          std::vector<SampleUpdate>& updates) {
  if (sample.finished) return;
  sample.finished = true;
  Request& r = *sample.request;
  SampleUpdate u;
  u.request_id = r.id;
  u.sample = sample.index;
  u.tokens.assign(sample.tokens.begin() + static_cast<std::ptrdiff_t>(sample.delivered),
                  sample.tokens.end());
  u.logprobs.assign(sample.logprobs.begin() + static_cast<std::ptrdiff_t>(sample.delivered),
                    sample.logprobs.end());
  u.versions.assign(sample.versions.begin() + static_cast<std::ptrdiff_t>(sample.delivered),
                    sample.versions.end());
  sample.delivered = sample.tokens.size();
  u.finished = true;
  u.finish_reason = reason;
  if (policy.tokenizer != nullptr) {
    u.text = policy.tokenizer->Decode(sample.tokens);
    if (!r.params.stop.empty()) {
      if (std::optional<size_t> cut = FindStop(u.text, 0, r.params.stop)) u.text.resize(*cut);
    }
  }
  updates.push_back(std::move(u));
  policy.scheduler->Finish(sample.seq);
  // Siblings not forked yet die with an aborted prefill.
  if (sample.fork_pending) {
    sample.fork_pending = false;
    for (int32_t i = 1; i < r.params.n; ++i) {
      SampleUpdate s;
      s.request_id = r.id;
      s.sample = i;
      s.finished = true;
      s.finish_reason = reason;
      updates.push_back(s);
      --r.unfinished;
    }
  }
  ++policy.stats.requests_finished;
  if (--r.unfinished <= 0) {
    // The Request outlives this call: updates only copy from it. Erase it after delivery.
    std::lock_guard<std::mutex> lock(mu_);
    request_policy_.erase(r.id);
  }
}

Status Engine::StepPolicy(Policy& policy, std::vector<SampleUpdate>& updates) {
  Scheduler& scheduler = *policy.scheduler;
  StepPlan plan = scheduler.Schedule();
  policy.stats.preemptions += static_cast<int64_t>(plan.preempted.size());
  if (plan.chunks.empty()) return Status::Ok();
  policy.cache->CopyBlocks(plan.copies);

  std::vector<ForwardChunk> chunks;
  chunks.reserve(plan.chunks.size());
  std::vector<SeqId> logit_seqs;
  for (const ScheduledChunk& c : plan.chunks) {
    const std::vector<int32_t>& tokens = scheduler.Tokens(c.seq);
    ForwardChunk f;
    f.tokens = std::span<const int32_t>(tokens).subspan(static_cast<size_t>(c.start),
                                                        static_cast<size_t>(c.num_tokens));
    f.start = c.start;
    f.block_table = scheduler.BlockTable(c.seq);
    f.needs_logits = c.needs_logits;
    chunks.push_back(f);
    if (c.needs_logits) logit_seqs.push_back(c.seq);
    // Prefill: prompt tokens, and a pre-empted sequence's recomputed output.
    if (c.num_tokens > 1 || c.start < policy.samples.at(c.seq).request->prompt_len) {
      policy.stats.prefill_tokens += c.num_tokens;
    }
  }
  const Clock::MonoTime begin = clock_.Now();
  SLUICE_ASSIGN_OR_RETURN(torch::Tensor logits,
                          PagedForward(*policy.model, *policy.cache, chunks, options_.forward));
  scheduler.CompleteStep(plan);

  // Forks first: every sample of a group draws its first token from the prompt's logits.
  std::vector<SeqId> rows;
  std::vector<int64_t> logit_index;
  for (size_t i = 0; i < logit_seqs.size(); ++i) {
    Sample& s = policy.samples.at(logit_seqs[i]);
    rows.push_back(s.seq);
    logit_index.push_back(static_cast<int64_t>(i));
    if (!s.fork_pending) continue;
    s.fork_pending = false;
    Request& r = *s.request;
    for (int32_t k = 1; k < r.params.n; ++k) {
      const SeqId child = next_seq_++;
      SLUICE_RETURN_IF_ERROR(scheduler.Fork(s.seq, child));
      Sample& c = policy.samples[child];
      c.request = &r;
      c.index = k;
      c.seq = child;
      c.seed = SampleSeed(r.seed, k);
      r.seqs[static_cast<size_t>(k)] = child;
      rows.push_back(child);
      logit_index.push_back(static_cast<int64_t>(i));
    }
  }
  torch::Tensor row_logits =
      rows.size() == logit_seqs.size()
          ? logits
          : logits.index_select(0, torch::tensor(logit_index, torch::kInt64).to(logits.device()));
  std::vector<SamplingRow> params;
  params.reserve(rows.size());
  for (SeqId seq : rows) {
    const Sample& s = policy.samples.at(seq);
    const SamplingParams& p = s.request->params;
    params.push_back({p.temperature, p.top_k, p.top_p, s.seed, s.tokens.size()});
  }
  std::vector<SampledToken> sampled = SampleTokens(row_logits, params);
  const double seconds = std::chrono::duration<double>(clock_.Now() - begin).count();
  policy.stats.generated_tokens += static_cast<int64_t>(sampled.size());
  if (seconds > 0) {
    const double rate = static_cast<double>(sampled.size()) / seconds;
    policy.stats.tokens_per_second = policy.stats.tokens_per_second == 0
                                         ? rate
                                         : 0.9 * policy.stats.tokens_per_second + 0.1 * rate;
  }

  // End of sequence: the config's eos ids (Llama 3 lists several) and the tokenizer's.
  std::vector<int64_t> eos = policy.model->config().eos_token_ids;
  if (policy.tokenizer != nullptr && policy.tokenizer->eos_id()) {
    eos.push_back(*policy.tokenizer->eos_id());
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    Sample& s = policy.samples.at(rows[i]);
    const SampledToken& t = sampled[i];
    const SamplingParams& p = s.request->params;
    s.tokens.push_back(t.token);
    s.logprobs.push_back(t.logprob);
    s.versions.push_back(policy.version);
    std::string reason;
    const bool stop_id = std::find(p.stop_token_ids.begin(), p.stop_token_ids.end(), t.token) !=
                         p.stop_token_ids.end();
    if (stop_id || (!p.ignore_eos && std::find(eos.begin(), eos.end(), t.token) != eos.end())) {
      reason = "stop";
    } else if (!p.stop.empty() && policy.tokenizer != nullptr) {
      s.text += policy.tokenizer->Decode(std::span<const int32_t>(&t.token, 1));
      if (FindStop(s.text, s.stop_checked, p.stop)) reason = "stop";
      s.stop_checked = s.text.size();
    }
    if (reason.empty() && (static_cast<int64_t>(s.tokens.size()) >= p.max_new_tokens ||
                           s.request->prompt_len + static_cast<int64_t>(s.tokens.size()) >=
                               policy.max_total_tokens)) {
      reason = "length";
    }
    if (!reason.empty()) {
      FinishSample(policy, s, reason, updates);
      continue;
    }
    SLUICE_RETURN_IF_ERROR(scheduler.AppendToken(s.seq, t.token));
    SampleUpdate u;
    u.request_id = s.request->id;
    u.sample = s.index;
    u.tokens.push_back(t.token);
    u.logprobs.push_back(t.logprob);
    u.versions.push_back(policy.version);
    s.delivered = s.tokens.size();
    updates.push_back(std::move(u));
  }
  return Status::Ok();
}

void Engine::Deliver(std::vector<SampleUpdate>& updates) {
  for (const SampleUpdate& u : updates) {
    auto it = requests_.find(u.request_id);
    if (it != requests_.end() && it->second->callback) it->second->callback(u);
  }
  // Drop finished requests and samples now that their last updates went out.
  for (auto it = requests_.begin(); it != requests_.end();) {
    if (it->second->unfinished > 0) {
      ++it;
      continue;
    }
    for (auto& p : policies_) {
      if (p->name != it->second->policy) continue;
      for (SeqId seq : it->second->seqs) p->samples.erase(seq);
    }
    it = requests_.erase(it);
  }
  updates.clear();
}

Result<bool> Engine::Step() {
  std::vector<SampleUpdate> updates;
  DrainInbox(updates);
  bool worked = !updates.empty();
  Status failure = Status::Ok();
  for (auto& policy : policies_) {
    if (policy->scheduler->NumRunning() + policy->scheduler->NumWaiting() > 0) {
      worked = true;
      Status st = StepPolicy(*policy, updates);
      if (!st.ok()) {
        failure = st;
        for (auto& [seq, sample] : policy->samples) FinishSample(*policy, sample, "abort", updates);
      }
    }
    policy->stats.running = static_cast<int64_t>(policy->scheduler->NumRunning());
    policy->stats.waiting = static_cast<int64_t>(policy->scheduler->NumWaiting());
    policy->stats.kv_usage = policy->scheduler->KvUsage();
    policy->stats.prefix_cache_hit_tokens = policy->scheduler->stats().prefix_cached_tokens;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < policies_.size() && i < stats_.size(); ++i) {
      stats_[i] = policies_[i]->stats;
    }
  }
  Deliver(updates);
  if (!failure.ok()) return failure;
  return worked;
}

void Engine::Run(const CancellationToken& stop) {
  CancellationRegistration wake_on_stop = stop.OnCancel([this] {
    std::lock_guard<std::mutex> lock(mu_);
    wake_.notify_all();
  });
  while (!stop.IsCancelled()) {
    Result<bool> worked = Step();
    if (worked.ok() && *worked) continue;
    std::unique_lock<std::mutex> lock(mu_);
    wake_.wait_for(lock, std::chrono::milliseconds(100), [&] {
      return stop.IsCancelled() || !inbox_.empty() || !aborts_.empty() || !swaps_.empty();
    });
  }
}

}  // namespace sluice::engine
