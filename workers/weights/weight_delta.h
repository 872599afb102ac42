// Weight deltas: the parameters that changed between two published versions, so a rollout worker
// one or a few versions behind downloads a few percent of the model instead of all of it.
//
// A delta is a sequence of wire frames (common/wire/frame.h, docs/wire-format.md):
//   1. one kWeightDeltaBeginFrame: from/to versions and digests, and `to`'s safetensors header
//      verbatim (its metadata carries the version, so the header changes every version);
//   2. zero or more kWeightDeltaChunkFrame, each holding up to max_chunk_elements changed
//      elements of one tensor: the element indices gap-encoded as LEB128 varints (the first
//      absolute, then the difference to the previous one, always >= 1) and the new element bytes;
//   3. one kWeightDeltaEndFrame: the chunk count and the changed/total element counts, so a
//      truncated delta is told apart from a complete one.
// A chain (several versions behind) is the deltas of consecutive versions back to back.
//
// Elements are compared bitwise at the dtype's size (2 bytes for bf16/f16, 4 for f32...): a NaN
// whose payload changed, or -0.0 replacing 0.0, is a change. Entries overwrite elements, so
// applying a delta to a base that already holds the target changes nothing (idempotent).
// Deltas only describe value changes: a tensor added, removed, or with a new dtype or shape makes
// EncodeDelta fail, and the receiver downloads the full image instead.
//
// The input of ApplyDelta is untrusted: every count, index and length is checked against the
// layout and the bytes present, and the result must match the digest the delta names, so a
// damaged or hostile delta is an error (Corruption naming the field), never a crash.
//
// Thread safety: free functions on immutable inputs; thread-safe. Sizes in bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "workers/weights/weight_snapshot.h"

namespace sluice::weights {

inline constexpr uint16_t kWeightDeltaBeginFrame = 0x0301;
inline constexpr uint16_t kWeightDeltaChunkFrame = 0x0302;
inline constexpr uint16_t kWeightDeltaEndFrame = 0x0303;

struct DeltaStats {
  uint64_t changed_elements = 0;
  uint64_t total_elements = 0;
  uint64_t bytes = 0;  // Encoded size of the delta.

  // changed / total, in [0, 1]; 0 for a model without elements.
  double density() const {
    return total_elements == 0 ? 0.0 : static_cast<double>(changed_elements) / total_elements;
  }
};

struct DeltaEncodeOptions {
  // Stop with TooLarge once the delta would exceed this many bytes (0: no limit). The store sets
  // it to the full image's size: a delta bigger than the full download is never worth keeping.
  uint64_t max_bytes = 0;
  // Changed elements per chunk frame. Bounds a frame to about max_chunk_elements * 18 bytes
  // (a 10-byte varint and an 8-byte element), well under the reader's payload limit.
  uint64_t max_chunk_elements = uint64_t{1} << 20;
};

// The delta turning `from` into `to`; *stats (when given) receives its figures. Errors:
// InvalidArgument naming the tensor when the two differ in tensor names, dtypes or shapes (or
// `to` is not newer than `from`); TooLarge when over options.max_bytes.
Result<std::string> EncodeDelta(const WeightSnapshot& from, const WeightSnapshot& to,
                                DeltaStats* stats = nullptr,
                                const DeltaEncodeOptions& options = {});

// Applies a chain of one or more deltas to `base` (not modified) and returns the newest version
// of the chain, verified against the digest its last delta names. `base` must be the first
// delta's `from` (same version and digest) or already its `to` (a repeated application). An
// empty chain returns `base`. Errors: InvalidArgument when the chain does not start at `base`;
// Corruption naming the field ("delta[1].chunk[3].indices", "digest", ...) for damaged bytes;
// the wire frame errors (frame.h) with the delta's position as context.
Result<WeightSnapshot> ApplyDelta(const WeightSnapshot& base, std::string_view chain);

}  // namespace sluice::weights
