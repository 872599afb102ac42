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
// Thread safety: pure functions; a BatchFrameWriter is used by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "workers/dataflow/client/sample.h"

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
  // multi-policy episodes), or `policy` and `reward` for a single-policy episode. Samples'
  // `tool_calls` travel in a trailing field written only when some sample has a count.
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

// A Batch's fields with its samples referenced, not owned: what a holder of the samples (the
// dataflow core's buffered groups) passes to EncodeBatchView or BatchFrameWriter to write a batch
// frame without first copying every sample (tens of MB for a large batch) into a Batch.
struct BatchView {
  std::string_view batch_id;
  std::string_view policy;
  int64_t policy_version = 0;
  std::vector<const Sample*> samples;     // Non-null; see BatchFrameWriter for how long.
  std::vector<uint32_t> group_index;      // Per sample, as Batch::group_index.
  std::vector<uint8_t> replayed;          // Per sample, as Batch::replayed.
  const nlohmann::json* stats = nullptr;  // Null: an empty object.
};

// A view of all of `batch`; it refers to `batch`, which must outlive it and stay unchanged.
BatchView ViewOfBatch(const Batch& batch);

// Encodes as one frame, appended to *out.
Status EncodeTrajectoryGroup(const TrajectoryGroup& group, std::string* out);
// Decodes one frame holding a TrajectoryGroup; `body` must be exactly that frame.
Result<TrajectoryGroup> DecodeTrajectoryGroup(std::string_view body);

// Encodes as one frame: tokens, masks, log-probs and versions packed without padding, with
// offsets (num_samples + 1 entries, in tokens).
Status EncodeBatch(const Batch& batch, std::string* out);
// The same bytes as EncodeBatch of a Batch holding copies of the viewed samples, written with
// BatchFrameWriter into an exactly reserved *out.
Status EncodeBatchView(const BatchView& batch, std::string* out);

// Writes a batch frame piece by piece, so a large batch (35 MB for 256 groups of 8 x 1,000
// tokens) can be sent while it is being encoded, through a small reused buffer, instead of being
// materialized whole first. Create() encodes everything except the four packed per-token arrays
// and computes the exact frame size (a Content-Length); Next() then copies the packed arrays
// straight from the samples and checksums as it goes. The bytes are exactly EncodeBatchView's.
//
// The viewed samples' tokens, loss masks, log-probs and versions are read until done(): they
// must stay alive and unchanged until then. `owner`, when given, is held until then (or until
// the writer is destroyed): e.g. a reference that keeps those samples alive. Everything else in
// the view is copied by Create. Thread safety: one thread at a time.
class BatchFrameWriter {
 public:
  // InvalidArgument when group_index/replayed are not per sample, TooLarge over 2^32 - 1 tokens or
  // over the frame's payload limit (wire::kMaxFramePayloadBytes).
  static Result<BatchFrameWriter> Create(const BatchView& batch,
                                         std::shared_ptr<const void> owner = nullptr);

  uint64_t size() const { return size_; }        // Bytes of the whole frame.
  uint64_t written() const { return written_; }  // Bytes Next has produced so far.
  bool done() const { return written_ == size_; }

  // Appends the next min(max_bytes, size() - written()) bytes of the frame to *out.
  void Next(size_t max_bytes, std::string* out);

 private:
  // A run of frame bytes: `length` bytes at `data`, or, when data is null, at `offset` in
  // owned_ (the writer may move, owned_'s buffer with it).
  struct Piece {
    const char* data = nullptr;
    size_t offset = 0;
    size_t length = 0;
  };

  BatchFrameWriter() = default;
  const char* PieceData(const Piece& p) const {
    return p.data != nullptr ? p.data : owned_.data() + p.offset;
  }

  std::shared_ptr<const void> owner_;
  std::string owned_;  // Header, fields and counts, per-sample values and strings.
  std::vector<Piece> pieces_;
  uint64_t size_ = 0;
  uint64_t written_ = 0;
  size_t piece_ = 0;         // Next piece to copy from,
  size_t piece_offset_ = 0;  // and how far into it.
  uint32_t crc_ = 0;         // Of the bytes written so far (header and payload).
  char trailer_[4] = {};     // The masked CRC, once the payload is written.
};

Result<Batch> DecodeBatch(std::string_view body);

}  // namespace sluice::dataflow
