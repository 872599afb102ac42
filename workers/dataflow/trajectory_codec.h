// The dataflow's two bulk messages in the Sluice wire format (docs/wire-format.md): a finished
// group of trajectories, submitted by a rollout worker (`POST /v1/trajectories`), and a training
// batch, served to a trainer (`GET /v1/batches/{policy}`). docs/dataflow.md lists every field in
// order; this header is the C++ side.
//
// Both are one frame each. Payload fields have no tags: they follow in the documented order.
// Decoding checks every count and length against the bytes present and against the limits
// below before allocating, and checks that per-token arrays are parallel (ValidateSample), so a
// hostile or damaged body is an InvalidArgument/Corruption naming the field, never a crash.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "workers/dataflow/algorithms/sample.h"

namespace sluice::dataflow {

// Frame types (the wire format's `type` field) of the dataflow protocol.
inline constexpr uint16_t kTrajectoryGroupFrame = 0x0101;
inline constexpr uint16_t kBatchFrame = 0x0102;

// Decoding limits.
inline constexpr uint64_t kMaxSamplesPerGroup = 4096;
inline constexpr uint64_t kMaxSamplesPerBatch = 1u << 20;
inline constexpr uint64_t kMaxTokensPerSample = 1u << 22;
inline constexpr uint64_t kMaxPoliciesPerSample = 64;

// One finished task: a prompt rolled out groupSize times (or an eval task's k samples).
struct TrajectoryGroup {
  std::string task_id;    // The task the lease handed out.
  uint32_t attempt = 0;   // The task's attempt number, from the lease.
  std::string lease_id;   // The lease the worker held.
  std::string worker_id;  // Who ran it.
  std::string prompt_id;  // The dataset row.
  bool eval = false;      // An evaluation task (scored, never trained on).
  // Before splitting: per sample, `policies` and `policy_rewards` (and `token_owner` for
  // multi-policy episodes), or `policy` and `reward` for a single-policy episode.
  std::vector<Sample> samples;
};

// A training batch for one policy: samples after splitting, grouped (group_index), with their
// group statistics and loss weights stamped.
struct Batch {
  std::string batch_id;  // Acknowledge with POST /v1/batches/{batch_id}/ack.
  std::string policy;
  int64_t policy_version = 0;  // The policy's newest announced version when served.
  std::vector<Sample> samples;
  std::vector<uint32_t> group_index;  // Per sample: its group's index within this batch.
  std::vector<uint8_t> replayed;      // Per sample: 1 when served again from replay memory.
  nlohmann::json stats = nlohmann::json::object();  // Buffer statistics at serve time.
};

// Encodes as one frame, appended to *out.
Status EncodeTrajectoryGroup(const TrajectoryGroup& group, std::string* out);
// Decodes one frame holding a TrajectoryGroup; `body` must be exactly that frame.
Result<TrajectoryGroup> DecodeTrajectoryGroup(std::string_view body);

// Encodes as one frame: tokens, masks, log-probs and versions packed without padding, with
// offsets (num_samples + 1 entries, in tokens).
Status EncodeBatch(const Batch& batch, std::string* out);
Result<Batch> DecodeBatch(std::string_view body);

}  // namespace sluice::dataflow
