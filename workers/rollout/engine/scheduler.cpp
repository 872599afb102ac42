#include "workers/rollout/engine/scheduler.h"

#include <algorithm>
#include <string>

#include "common/check.h"

namespace sluice::engine {
namespace {

std::string SeqName(SeqId seq) { return "sequence " + std::to_string(seq); }

}  // namespace

Status Validate(const SchedulerConfig& c) {
  auto at_least_one = [](const char* field, int64_t v) {
    if (v >= 1) return Status::Ok();
    return Status::InvalidArgument("must be >= 1, got " + std::to_string(v),
                                   std::string("scheduler.") + field);
  };
  SLUICE_RETURN_IF_ERROR(at_least_one("num_blocks", c.num_blocks));
  SLUICE_RETURN_IF_ERROR(at_least_one("block_size", c.block_size));
  SLUICE_RETURN_IF_ERROR(at_least_one("max_tokens_per_step", c.max_tokens_per_step));
  SLUICE_RETURN_IF_ERROR(at_least_one("max_running", c.max_running));
  return Status::Ok();
}

Result<Scheduler> Scheduler::Create(const SchedulerConfig& config) {
  SLUICE_RETURN_IF_ERROR(Validate(config));
  return Scheduler(config);
}

Scheduler::Scheduler(const SchedulerConfig& config)
    : config_(config), blocks_(config.num_blocks, config.block_size, config.prefix_cache) {}

Status Scheduler::Add(SeqId seq, std::vector<int32_t> tokens, int64_t max_total_tokens) {
  if (seqs_.contains(seq)) return Status::AlreadyExists(SeqName(seq) + " already exists");
  if (tokens.empty()) return Status::InvalidArgument(SeqName(seq) + " has no tokens");
  if (static_cast<int64_t>(tokens.size()) > max_total_tokens) {
    return Status::InvalidArgument(SeqName(seq) + " has " + std::to_string(tokens.size()) +
                                   " tokens, over its max_total_tokens " +
                                   std::to_string(max_total_tokens));
  }
  const int64_t bs = config_.block_size;
  const int64_t blocks_needed = (max_total_tokens + bs - 1) / bs;
  if (blocks_needed > config_.num_blocks) {
    // It could never run alone, so admitting it could stall the engine.
    return Status::InvalidArgument(
        SeqName(seq) + ": max_total_tokens " + std::to_string(max_total_tokens) + " needs " +
        std::to_string(blocks_needed) + " KV blocks of " + std::to_string(bs) +
        " tokens, but the pool has only " + std::to_string(config_.num_blocks) + " (" +
        std::to_string(int64_t{config_.num_blocks} * bs) + " tokens)");
  }
  Sequence s;
  s.tokens = std::move(tokens);
  s.max_total_tokens = max_total_tokens;
  s.arrival = next_arrival_++;
  seqs_.emplace(seq, std::move(s));
  waiting_.push_back(seq);
  return Status::Ok();
}

Status Scheduler::Fork(SeqId parent, SeqId child, std::optional<int32_t> last_token) {
  auto it = seqs_.find(parent);
  if (it == seqs_.end()) return Status::NotFound("parent " + SeqName(parent) + " is unknown");
  if (seqs_.contains(child)) return Status::AlreadyExists(SeqName(child) + " already exists");
  const Sequence& p = it->second;
  if (!p.running) {
    return Status::InvalidArgument("parent " + SeqName(parent) +
                                   " is waiting; only a running sequence can be forked");
  }
  const int64_t pending = static_cast<int64_t>(p.tokens.size()) - p.num_computed;
  if (pending > 1 || (last_token && pending != 1)) {
    return Status::InvalidArgument("parent " + SeqName(parent) + " has " + std::to_string(pending) +
                                   " uncomputed tokens; a fork needs " +
                                   (last_token ? "exactly 1" : "at most 1"));
  }
  Sequence c;
  c.tokens = p.tokens;
  if (last_token) c.tokens.back() = *last_token;
  c.num_computed = p.num_computed;
  c.max_total_tokens = p.max_total_tokens;
  c.arrival = next_arrival_++;
  c.running = true;
  SLUICE_RETURN_IF_ERROR(blocks_.Fork(parent, child));
  seqs_.emplace(child, std::move(c));
  running_.push_back(child);  // Newest arrival: the end keeps running_ ordered.
  return Status::Ok();
}

StepPlan Scheduler::Schedule() {
  StepPlan plan;
  int64_t budget = config_.max_tokens_per_step;
  for (size_t i = 0; i < running_.size() && budget > 0;) {
    const SeqId id = running_[i];
    Sequence& s = Get(id);
    const int64_t total = static_cast<int64_t>(s.tokens.size());
    const int64_t want = std::min(total - s.num_computed, budget);
    if (want <= 0) {  // Waiting for the caller to append or finish.
      ++i;
      continue;
    }
    int64_t n = MaxReservable(id, s.num_computed, want);
    // Only younger sequences (later in running_) are preempted, so chunks already planned this
    // step keep their blocks.
    while (n == 0 && running_.back() != id) {
      Preempt(running_.back(), plan);
      n = MaxReservable(id, s.num_computed, want);
    }
    if (n == 0) {
      Preempt(id, plan);  // It is the newest: nothing after it to schedule.
      break;
    }
    SLUICE_CHECK(blocks_.Reserve(id, s.num_computed, s.num_computed + n, plan.copies).ok());
    plan.chunks.push_back({id, s.num_computed, n, s.num_computed + n == total});
    plan.num_tokens += n;
    budget -= n;
    ++i;
  }
  // After a preemption the pool is under pressure: admitting now would only preempt again.
  if (plan.preempted.empty()) Admit(plan, budget);
  return plan;
}

void Scheduler::Admit(StepPlan& plan, int64_t& budget) {
  while (!waiting_.empty() && budget > 0 &&
         running_.size() < static_cast<size_t>(config_.max_running)) {
    const SeqId id = waiting_.front();
    Sequence& s = Get(id);
    const int64_t total = static_cast<int64_t>(s.tokens.size());
    Result<int64_t> cached = blocks_.AllocatePrefix(id, s.tokens);
    SLUICE_CHECK(cached.ok());  // A waiting sequence has no table.
    // Blocks for the whole prompt, not just the first chunk, so that a long prompt is not
    // admitted only to be preempted halfway through its prefill.
    if (!blocks_.CanReserve(id, *cached, total)) {
      blocks_.Free(id);
      break;  // FIFO: nobody overtakes the front.
    }
    const int64_t n = std::min(total - *cached, budget);
    SLUICE_CHECK(blocks_.Reserve(id, *cached, *cached + n, plan.copies).ok());
    waiting_.pop_front();
    s.num_computed = *cached;
    s.running = true;
    InsertRunning(id);
    stats_.prompt_tokens_admitted += total;
    stats_.prefix_cached_tokens += *cached;
    plan.chunks.push_back({id, *cached, n, *cached + n == total});
    plan.num_tokens += n;
    budget -= n;
  }
}

int64_t Scheduler::MaxReservable(SeqId seq, int64_t start, int64_t want) const {
  if (!blocks_.CanReserve(seq, start, start + 1)) return 0;
  // BlocksNeeded grows with the chunk length: binary search the longest chunk that fits.
  int64_t lo = 1;
  int64_t hi = want;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (blocks_.CanReserve(seq, start, start + mid)) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

void Scheduler::Preempt(SeqId seq, StepPlan& plan) {
  Sequence& s = Get(seq);
  blocks_.Free(seq);
  s.num_computed = 0;
  s.running = false;
  running_.erase(std::ranges::find(running_, seq));
  waiting_.push_front(seq);
  plan.preempted.push_back(seq);
  ++stats_.preemptions;
}

void Scheduler::InsertRunning(SeqId seq) {
  const uint64_t arrival = Get(seq).arrival;
  auto pos =
      std::ranges::upper_bound(running_, arrival, {}, [this](SeqId id) { return Get(id).arrival; });
  running_.insert(pos, seq);
}

Status Scheduler::AppendToken(SeqId seq, int32_t token) {
  return AppendTokens(seq, std::span<const int32_t>(&token, 1));
}

Status Scheduler::AppendTokens(SeqId seq, std::span<const int32_t> tokens) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return Status::NotFound(SeqName(seq) + " is unknown");
  Sequence& s = it->second;
  const int64_t total = static_cast<int64_t>(s.tokens.size() + tokens.size());
  if (total > s.max_total_tokens) {
    return Status::InvalidArgument(SeqName(seq) + ": appending " + std::to_string(tokens.size()) +
                                   " tokens makes " + std::to_string(total) +
                                   ", over its max_total_tokens " +
                                   std::to_string(s.max_total_tokens));
  }
  s.tokens.insert(s.tokens.end(), tokens.begin(), tokens.end());
  return Status::Ok();
}

void Scheduler::CompleteStep(const StepPlan& plan) {
  for (const ScheduledChunk& chunk : plan.chunks) {
    auto it = seqs_.find(chunk.seq);
    if (it == seqs_.end() || !it->second.running) continue;  // Finished since Schedule.
    Sequence& s = it->second;
    SLUICE_CHECK(chunk.start == s.num_computed);
    s.num_computed += chunk.num_tokens;
    SLUICE_CHECK(s.num_computed <= static_cast<int64_t>(s.tokens.size()));
    blocks_.PublishFullBlocks(chunk.seq, s.tokens, s.num_computed);
  }
}

void Scheduler::Finish(SeqId seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return;
  if (it->second.running) {
    running_.erase(std::ranges::find(running_, seq));
  } else {
    waiting_.erase(std::ranges::find(waiting_, seq));
  }
  blocks_.Free(seq);
  seqs_.erase(it);
}

bool Scheduler::IsRunning(SeqId seq) const {
  auto it = seqs_.find(seq);
  return it != seqs_.end() && it->second.running;
}

const std::vector<int32_t>& Scheduler::Tokens(SeqId seq) const { return Get(seq).tokens; }

int64_t Scheduler::NumComputed(SeqId seq) const { return Get(seq).num_computed; }

const std::vector<BlockId>& Scheduler::BlockTable(SeqId seq) const {
  static const std::vector<BlockId> kNone;
  SLUICE_CHECK(seqs_.contains(seq));
  return blocks_.Has(seq) ? blocks_.BlockTable(seq) : kNone;
}

double Scheduler::KvUsage() const {
  return static_cast<double>(blocks_.allocator().NumUsedBlocks()) / config_.num_blocks;
}

Scheduler::Sequence& Scheduler::Get(SeqId seq) {
  auto it = seqs_.find(seq);
  SLUICE_CHECK(it != seqs_.end());
  return it->second;
}

const Scheduler::Sequence& Scheduler::Get(SeqId seq) const {
  auto it = seqs_.find(seq);
  SLUICE_CHECK(it != seqs_.end());
  return it->second;
}

}  // namespace sluice::engine
