// BufferedGroup: one (prompt, policy) group of samples as the dataflow core holds it between
// ingest and training (in a policy's buffer, in an unacknowledged batch, in replay memory), and
// its lossless encoding for the core's snapshots.
//
// The samples are stored after splitting, filtering and group-statistics stamping. The encoding
// reuses the trajectory wire format (client/trajectory_codec.h) for the samples' tokens, masks,
// log-probs, versions, owners, rewards and timings, and adds what that format does not carry:
// the stamped group_mean / group_std / advantage / loss_weight and the core's bookkeeping
// (group id, arrival sequence). Doubles are kept bit-exact (CBOR binary floats), so a restored
// group trains exactly like the original.
//
// Ownership and thread safety: plain values and pure functions; a BufferedGroup caches
// Queued() (see there), so even its const methods are for one thread at a time.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "workers/dataflow/algorithms/staleness.h"
#include "workers/dataflow/client/sample.h"

namespace sluice::dataflow {

struct BufferedGroup {
  uint64_t group_id = 0;        // Unique per accepted submission (shared by its policies' groups).
  uint64_t arrival = 0;         // Ingest sequence number, unique per BufferedGroup; orders fifo.
  std::string task_id;          // The task that produced it; never empty.
  std::string prompt_id;        // The dataset row.
  std::vector<Sample> samples;  // Non-empty; all of one policy.

  // What staleness ordering needs (GroupMinVersion, GroupGeneratedTokens of the samples).
  // Both are computed on the first call and kept, because a buffered group's versions and loss
  // masks never change (only loss weights do) while serving asks on every take, and rescanning
  // every token of a large buffer then costs milliseconds under the core's lock. So do not
  // change the samples' versions or loss masks after the first call.
  QueuedGroup Queued() const {
    if (!summary_) summary_ = Summary{GroupMinVersion(samples), GroupGeneratedTokens(samples)};
    return {arrival, summary_->min_version, summary_->generated_tokens};
  }

 private:
  struct Summary {
    int64_t min_version = kNoVersion;
    int64_t generated_tokens = 0;
  };
  mutable std::optional<Summary> summary_;
};

// As a JSON object whose "samples" field is a binary trajectory-group frame; meant to be
// serialized with nlohmann::json::to_cbor (binary values do not survive JSON text).
Result<nlohmann::json> EncodeBufferedGroup(const BufferedGroup& group);
// Corruption (naming the field) for anything malformed.
Result<BufferedGroup> DecodeBufferedGroup(const nlohmann::json& encoded);

}  // namespace sluice::dataflow
