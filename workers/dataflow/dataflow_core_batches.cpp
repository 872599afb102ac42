// DataflowCore's training batches: taking one for a policy (a re-serve of an unacknowledged
// batch past its ack timeout, else fresh groups past the staleness rules and the version barrier,
// plus replayed ones), handing it out as a Batch or as a frame writer for the wire, and the
// acknowledgement that moves its fresh groups into replay memory (dataflow_core.h, "Batches"),
// for good or held until the trainer's checkpoint (dataflow_core_held.cpp).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "workers/dataflow/algorithms/replay.h"
#include "workers/dataflow/algorithms/staleness.h"
#include "workers/dataflow/algorithms/version_barrier.h"
#include "workers/dataflow/client/sample.h"
#include "workers/dataflow/client/trajectory_codec.h"
#include "workers/dataflow/dataflow_core.h"
#include "workers/dataflow/dataflow_core_state.h"
#include "workers/dataflow/wal_records.h"

namespace sluice::dataflow {

using core_internal::Ns;
using nlohmann::json;

Batch DataflowCore::BuildBatch(const OutstandingBatch& b) const {
  Batch batch;
  batch.batch_id = b.id;
  batch.policy = b.policy;
  batch.policy_version = b.version;
  batch.stats = ServedStats(b);
  size_t n = 0;
  for (const BufferedGroup& g : b.groups) n += g.samples.size();
  batch.samples.reserve(n);
  batch.group_index.reserve(n);
  batch.replayed.reserve(n);
  for (size_t g = 0; g < b.groups.size(); ++g) {
    for (const Sample& s : b.groups[g].samples) {
      batch.samples.push_back(s);
      batch.group_index.push_back(static_cast<uint32_t>(g));
      batch.replayed.push_back(b.replayed[g]);
    }
  }
  return batch;
}

json DataflowCore::ServedStats(const OutstandingBatch& b) {
  json stats = b.stats;
  stats["serves"] = b.serves;
  return stats;
}

Result<BatchFrameWriter> DataflowCore::FrameWriterLocked(
    const std::shared_ptr<OutstandingBatch>& b) const {
  // The same view of the samples BuildBatch copies, so the bytes are those of EncodeBatch of it.
  const json stats = ServedStats(*b);
  BatchView view;
  view.batch_id = b->id;
  view.policy = b->policy;
  view.policy_version = b->version;
  view.stats = &stats;
  for (size_t g = 0; g < b->groups.size(); ++g) {
    for (const Sample& s : b->groups[g].samples) {
      view.samples.push_back(&s);
      view.group_index.push_back(static_cast<uint32_t>(g));
      view.replayed.push_back(b->replayed[g]);
    }
  }
  // The writer reads the packed arrays after the lock is released: holding the batch keeps its
  // samples alive, and AckLocked leaves the samples of a held batch untouched.
  return BatchFrameWriter::Create(view, b);
}

Result<DataflowCore::OutstandingBatch*> DataflowCore::TakeBatchLocked(std::string_view policy,
                                                                      int64_t groups,
                                                                      int64_t now_ns) {
  PolicyState* p = FindPolicy(policy);
  if (p == nullptr) return Status::NotFound("no policy " + std::string(policy));

  // An unacknowledged batch whose ack timeout passed is served again, oldest serve first.
  OutstandingBatch* due = nullptr;
  for (auto& [id, b] : outstanding_) {
    if (b->policy != p->name || now_ns - b->served_at_ns < Ns(config_.ack_timeout)) continue;
    if (due == nullptr || b->served_at_ns < due->served_at_ns) due = b.get();
  }
  if (due != nullptr) {
    dirty_ = true;
    due->served_at_ns = now_ns;
    ++due->serves;
    ++p->counters.reserved_batches;
    return due;
  }

  std::map<std::string, int64_t, std::less<>> latest;
  for (const auto& q : policies_) latest[q->name] = q->version.number;
  Result<BarrierDecision> barrier = MayServeNextBatch(p->name, latest, config_.version_barrier);
  if (!barrier.ok()) return barrier.status();
  if (!barrier->may_serve) return nullptr;

  const size_t n = static_cast<size_t>(groups > 0 ? groups : config_.groups_per_batch);
  const size_t replay_n = p->replay.ReplayCount(n);
  const size_t fresh_n = n - replay_n;
  std::vector<QueuedGroup> queued;
  queued.reserve(p->buffer.size());
  for (const BufferedGroup& g : p->buffer) queued.push_back(g.Queued());
  const int64_t version = p->version.number;
  const PickResult pick = PickGroups(queued, fresh_n, version, config_.staleness);

  std::vector<bool> remove(p->buffer.size(), false);
  for (size_t i : pick.stale) {
    remove[i] = true;
    ++p->counters.stale_dropped_groups;
    p->counters.stale_dropped_samples += static_cast<int64_t>(p->buffer[i].samples.size());
    p->counters.stale_dropped_tokens += queued[i].generated_tokens;
    dirty_ = true;
  }
  const bool enough = pick.picked.size() >= fresh_n;
  auto batch = std::make_unique<OutstandingBatch>();
  if (enough) {
    for (size_t i : pick.picked) {
      remove[i] = true;
      BufferedGroup g = std::move(p->buffer[i]);
      // No sample is older than its group's oldest token: only a group that is stale as a
      // whole (kept by down-weighting) can hold stale samples, so only its tokens are rescanned.
      const int64_t oldest = queued[i].min_version;
      if (oldest != kNoVersion && version - oldest > config_.staleness.max_staleness) {
        for (Sample& s : g.samples) {
          const StalenessVerdict v = JudgeStaleness(s, version, config_.staleness);
          if (v.stale && v.keep) {
            s.loss_weight = v.weight;
            ++p->counters.down_weighted_samples;
          }
        }
      }
      batch->groups.push_back(std::move(g));
      batch->replayed.push_back(0);
    }
  }
  if (dirty_ || enough) {
    std::vector<BufferedGroup> kept;
    kept.reserve(p->buffer.size());
    for (size_t i = 0; i < p->buffer.size(); ++i) {
      if (!remove[i]) kept.push_back(std::move(p->buffer[i]));
    }
    p->buffer = std::move(kept);
  }
  if (!enough) return nullptr;

  dirty_ = true;
  batch->fresh_groups = static_cast<int64_t>(batch->groups.size());
  for (uint64_t id : p->replay.Select(replay_n, rng_)) {
    auto it = p->replay_groups.find(id);
    if (it == p->replay_groups.end()) continue;  // Cannot happen: pruned with the memory.
    batch->groups.push_back(it->second);
    batch->replayed.push_back(1);
    ++p->counters.replayed_groups;
  }
  batch->id = "batch-" + std::to_string(++counters_->next_batch);
  batch->policy = p->name;
  batch->version = version;
  batch->served_at_ns = now_ns;
  ++p->counters.served_batches;
  p->counters.served_groups += batch->fresh_groups;
  batch->stats = {
      {"fresh_groups", batch->fresh_groups},
      {"replayed_groups", static_cast<int64_t>(batch->groups.size()) - batch->fresh_groups},
      {"buffered_groups", static_cast<int64_t>(p->buffer.size())},
      {"replay_size", static_cast<int64_t>(p->replay.size())},
      {"accepted_groups", p->counters.accepted_groups},
      {"filtered_groups", p->counters.filtered_groups},
      {"stale_dropped_groups", p->counters.stale_dropped_groups},
      {"stale_dropped_tokens", p->counters.stale_dropped_tokens}};
  OutstandingBatch* taken = batch.get();
  outstanding_.emplace(taken->id, std::move(batch));
  return taken;
}

Result<DataflowCore::OutstandingBatch*> DataflowCore::TakeAndLogLocked(std::string_view policy,
                                                                       int64_t groups) {
  dirty_ = false;
  const int64_t now = NowNs();
  Result<OutstandingBatch*> r = TakeBatchLocked(policy, groups, now);
  if (dirty_) {
    Emit(RecordType::kTakeBatch, {{"now", now}, {"policy", policy}, {"groups", groups}});
    changed_.notify_all();
  }
  return r;
}

Result<std::optional<Batch>> DataflowCore::TakeBatch(std::string_view policy, int64_t groups) {
  std::lock_guard<std::mutex> lock(mu_);
  SLUICE_ASSIGN_OR_RETURN(OutstandingBatch * taken, TakeAndLogLocked(policy, groups));
  if (taken == nullptr) return std::optional<Batch>();
  return std::optional<Batch>(BuildBatch(*taken));
}

Result<std::optional<BatchFrame>> DataflowCore::TakeBatchFrame(std::string_view policy,
                                                               int64_t groups) {
  std::lock_guard<std::mutex> lock(mu_);
  SLUICE_ASSIGN_OR_RETURN(OutstandingBatch * taken, TakeAndLogLocked(policy, groups));
  if (taken == nullptr) return std::optional<BatchFrame>();
  Result<BatchFrameWriter> writer = FrameWriterLocked(outstanding_.at(taken->id));
  if (!writer.ok()) {
    return Status::Internal("encoding " + taken->id + ": " + writer.status().ToString());
  }
  return std::optional<BatchFrame>(BatchFrame{taken->id, std::move(*writer)});
}

void DataflowCore::ConsumeLocked(PolicyState& p, OutstandingBatch& b, bool copy) {
  if (config_.replay.replay_ratio > 0) {
    for (size_t i = 0; i < b.groups.size(); ++i) {
      if (b.replayed[i] != 0) continue;
      BufferedGroup g = copy ? b.groups[i] : std::move(b.groups[i]);
      for (Sample& s : g.samples) s.loss_weight = 1.0;
      p.replay.Add(g.group_id, GroupPriority(g.samples));
      p.replay_groups[g.group_id] = std::move(g);
    }
    std::set<uint64_t> live;
    for (const ReplayEntry& e : p.replay.entries()) live.insert(e.group_id);
    std::erase_if(p.replay_groups, [&](const auto& kv) { return live.count(kv.first) == 0; });
  }
  ++p.counters.acked_batches;
  p.counters.acked_groups += b.fresh_groups;
  p.acked_since_announce = true;
}

Result<int64_t> DataflowCore::AckLocked(std::string_view batch_id, bool hold) {
  auto it = outstanding_.find(std::string(batch_id));
  if (it == outstanding_.end()) {
    for (const auto& p : policies_) {
      for (auto h = p->held.begin(); h != p->held.end(); ++h) {
        if (h->second->id != batch_id) continue;
        if (hold) return h->first;  // A retried AckHeld: the same number.
        dirty_ = true;              // A final ack releases it.
        p->held.erase(h);
        return int64_t{0};
      }
    }
    if (acked_.Contains(batch_id)) return int64_t{0};
    return Status::NotFound("no batch " + std::string(batch_id));
  }
  dirty_ = true;
  std::shared_ptr<OutstandingBatch> b = it->second;
  PolicyState& p = *FindPolicy(b->policy);
  // A held batch keeps its groups (it may be served again); so does one a frame writer may still
  // be reading outside the lock (a slow client, or an ack sent as soon as the X-Sluice-Batch-Id
  // header arrived).
  ConsumeLocked(p, *b, hold || b.use_count() > 2);
  acked_.Insert(b->id);
  outstanding_.erase(it);
  if (!hold) return int64_t{0};
  p.held.emplace(++p.held_seq, std::move(b));
  return p.held_seq;
}

Status DataflowCore::Ack(std::string_view batch_id) {
  std::lock_guard<std::mutex> lock(mu_);
  dirty_ = false;
  const int64_t now = NowNs();
  Result<int64_t> r = AckLocked(batch_id);
  if (dirty_) {
    Emit(RecordType::kAck, {{"now", now}, {"batch", batch_id}});
    changed_.notify_all();
  }
  return r.status();
}

Result<int64_t> DataflowCore::AckHeld(std::string_view batch_id) {
  std::lock_guard<std::mutex> lock(mu_);
  dirty_ = false;
  const int64_t now = NowNs();
  Result<int64_t> r = AckLocked(batch_id, /*hold=*/true);
  if (dirty_) {
    Emit(RecordType::kAck, {{"now", now}, {"batch", batch_id}, {"hold", true}});
    changed_.notify_all();
  }
  return r;
}

}  // namespace sluice::dataflow
