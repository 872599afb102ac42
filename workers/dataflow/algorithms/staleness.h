// Staleness: decide at serve time whether a buffered sample is too old to train on, and in what
// order a policy's buffer serves its groups.
//
// Knobs (CRD `spec.buffer`): maxStaleness (versions, default 4), staleAction (drop |
// down-weight, default drop), order (fifo | edf, default edf), capacity (the CRD counts
// trajectories; EvictForCapacity takes a limit in groups), downWeightDecay (for down-weight;
// default 0.5).
//
//   age   = currentVersion(policy) − MinVersion()        (0 when the sample has no versions)
//   stale = age > maxStaleness
//   drop:        a stale sample is dropped; its GeneratedTokens() are reported for metrics.
//   down-weight: a stale sample is kept with loss weight downWeightDecay^(age − maxStaleness),
//                in (0, 1]; a fresh one has weight 1.
//
// Ordering: fifo serves by arrival. edf (earliest deadline first) serves the group whose
// deadline = GroupMinVersion + maxStaleness is smallest, i.e. the one that will go stale first;
// a group without versions (kNoVersion) has deadline −∞ and is served first. Ties (and all of
// fifo) break by arrival sequence, then by position in the buffer, so a group ingested earlier
// goes first.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "workers/dataflow/client/sample.h"

namespace sluice::dataflow {

enum class StaleAction { kDrop, kDownWeight };
enum class QueueOrder { kFifo, kEdf };

Result<StaleAction> ParseStaleAction(std::string_view name);  // "drop" | "down-weight".
Result<QueueOrder> ParseQueueOrder(std::string_view name);    // "fifo" | "edf".

struct StalenessOptions {
  int64_t max_staleness = 4;  // maxStaleness, versions; in [0, 100000].
  StaleAction stale_action = StaleAction::kDrop;
  QueueOrder order = QueueOrder::kEdf;
  double down_weight_decay = 0.5;  // downWeightDecay; in (0, 1].
};
Status ValidateStalenessOptions(const StalenessOptions& options);

struct StalenessVerdict {
  bool keep = true;
  bool stale = false;
  int64_t age = 0;             // Versions; 0 when the sample has none.
  double weight = 1.0;         // Loss weight if kept.
  int64_t dropped_tokens = 0;  // GeneratedTokens() of a dropped sample, else 0.
};

// The verdict for one sample when its policy is at `current_version`.
StalenessVerdict JudgeStaleness(const Sample& sample, int64_t current_version,
                                const StalenessOptions& options);

// One buffered group as ordering sees it.
struct QueuedGroup {
  uint64_t arrival = 0;              // Monotonic ingest sequence number.
  int64_t min_version = kNoVersion;  // GroupMinVersion of its samples.
  int64_t generated_tokens = 0;      // GroupGeneratedTokens, for stale-drop metrics.
};

// Indices of `buffer` in serving order (see the header comment).
std::vector<size_t> ServingOrder(std::span<const QueuedGroup> buffer, QueueOrder order,
                                 int64_t max_staleness);

struct PickResult {
  std::vector<size_t> picked;  // Indices to serve, in serving order; at most n.
  std::vector<size_t> stale;   // Indices met on the way that are stale and must be dropped.
  int64_t stale_tokens = 0;    // Σ generated_tokens of `stale`.
};

// Walks `buffer` in serving order, dropping stale groups (stale_action drop) and picking fresh
// ones until `n` are picked; with down-weight, stale groups are picked (their samples get a
// weight from JudgeStaleness). Groups after the n-th pick are not examined, so under fifo a
// stale group behind fresh ones waits for its turn, while under edf stale groups surface first.
// When fewer than n fresh groups exist, `picked` holds them all; the caller decides whether to
// wait. A group is stale when current_version − min_version > maxStaleness (never when
// min_version is kNoVersion).
PickResult PickGroups(std::span<const QueuedGroup> buffer, size_t n, int64_t current_version,
                      const StalenessOptions& options);

// Indices to evict so that at most `capacity` groups remain: the first (size − capacity) in
// serving order (CRD: "on overflow the first in serving order is evicted").
std::vector<size_t> EvictForCapacity(std::span<const QueuedGroup> buffer, size_t capacity,
                                     QueueOrder order, int64_t max_staleness);

// The policy lag of a buffer (sluice_dataflow_policy_lag): how many versions the oldest buffered
// data is behind `current_version`, i.e. the largest current_version − min_version over the
// groups that have a version, at least 0; 0 for an empty buffer or one without versions. A
// group goes stale once this exceeds maxStaleness.
int64_t BufferLag(std::span<const QueuedGroup> buffer, int64_t current_version);

}  // namespace sluice::dataflow
