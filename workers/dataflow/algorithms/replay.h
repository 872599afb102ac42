// Replay: a bounded memory of recently consumed (trained-on) groups and the selectors that pick
// replayRatio of each batch from it.
//
// Knobs: replayRatio (CRD `spec.buffer.replayRatio`, in [0, 0.95]); under CRD
// `spec.buffer.replay`: replaySelector (`selector`) latest | prioritized (default latest),
// replayCapacity (`capacity`, groups, default 1024), replayAlpha (`alpha`, default 0.6),
// replayEpsilon (`epsilon`, default 1e-6).
//
//   replay groups in a batch of B groups = floor(B × replayRatio); fresh = B − replay.
//   latest:      the most recently consumed groups, newest first.
//   prioritized: draws without replacement; each draw picks entry i with probability
//                (priority_i + epsilon)^alpha / Σ_j (priority_j + epsilon)^alpha over the
//                entries not yet drawn. alpha = 0 is uniform. A group's priority is the mean
//                |advantage| of its samples (GroupPriority).
// Every selection increments the entry's reuse count. When full, adding evicts the oldest
// entry. Replayed groups are not checked for staleness (as in the reference).
//
// Ownership: the memory holds group ids and metadata only; the groups themselves stay with the
// caller. Thread safety: not synchronized.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <nlohmann/json.hpp>
#include <random>
#include <span>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "workers/dataflow/client/sample.h"

namespace sluice::dataflow {

enum class ReplaySelector { kLatest, kPrioritized };
Result<ReplaySelector> ParseReplaySelector(std::string_view name);  // "latest" | "prioritized".

struct ReplayOptions {
  double replay_ratio = 0.0;  // replayRatio, in [0, 0.95].
  ReplaySelector selector = ReplaySelector::kLatest;
  size_t capacity = 1024;  // replayCapacity, groups; >= 1.
  double alpha = 0.6;      // replayAlpha, >= 0.
  double epsilon = 1e-6;   // replayEpsilon, > 0 keeps zero-priority groups drawable.
};
Status ValidateReplayOptions(const ReplayOptions& options);

struct ReplayEntry {
  uint64_t group_id = 0;
  double priority = 0.0;    // >= 0.
  int64_t reuse_count = 0;  // Times selected for replay.
};

// Mean |advantage| over the samples; a sample without an advantage contributes
// |reward − group_mean| if it has a group mean, else 0. 0 for an empty group.
double GroupPriority(std::span<const Sample> group);

// Index i with prefix(i) <= unit_random × Σ weights < prefix(i + 1), where prefix(i) is the sum
// of weights[0..i). Weights must be >= 0 with a positive sum; unit_random in [0, 1). Zero-weight
// entries are never returned.
size_t PickProportional(std::span<const double> weights, double unit_random);

// A uniform double in [0, 1) from the 53 high bits of one draw (portable across libraries).
double UnitRandom(std::mt19937_64& rng);

class ReplayMemory {
 public:
  static Result<ReplayMemory> Create(const ReplayOptions& options);

  // Records a consumed group (priority must be finite and >= 0, else clamped to 0).
  void Add(uint64_t group_id, double priority);
  // Forgets the entry of `group_id` (a group whose training was taken back: the trainer
  // restarted from a checkpoint before it). Returns whether there was one.
  bool Remove(uint64_t group_id);
  // floor(batch_groups × replayRatio), at most size().
  size_t ReplayCount(size_t batch_groups) const;
  // Selects up to `count` distinct entries and increments their reuse counts. Returns group
  // ids in selection order. `rng` is only drawn from by the prioritized selector.
  std::vector<uint64_t> Select(size_t count, std::mt19937_64& rng);

  size_t size() const { return entries_.size(); }
  // Oldest first.
  const std::deque<ReplayEntry>& entries() const { return entries_; }

  nlohmann::json Serialize() const;
  // Replaces the entries; InvalidArgument (unchanged) when malformed. Keeps the newest
  // `capacity` when the state holds more.
  Status Deserialize(const nlohmann::json& state);

 private:
  explicit ReplayMemory(const ReplayOptions& options) : options_(options) {}

  ReplayOptions options_;
  std::deque<ReplayEntry> entries_;  // Oldest at front.
};

}  // namespace sluice::dataflow
