// WeightStore: the versions a trainer serves, the last K of them, each with the delta from the
// version published before it when one was encoded and pays.
//
// Publish builds the snapshot (weight_snapshot.h) and, when a previous version is held and the
// caller asks for it (encode_delta), encodes the delta from it (weight_delta.h). A delta is not
// kept when it cannot exist (the tensors, dtypes or shapes changed) or would be larger than the
// full image (a full download is then always cheaper). encode_delta = false publishes the version
// without a delta: nothing is diffed (no CPU spent on it) and every worker not already holding
// that version downloads its full image. That is how Policy spec.weightSync.mode "full" is served,
// and how mode "delta" with fullSyncEveryVersions cuts delta chains (workers/weights/weight_sync.h
// decides per version). PlanDelta answers how a worker holding version `from` best reaches `to`:
// the chain of stored deltas from -> ... -> to, or a full download when `from` is not held (so its
// digest and lineage cannot be vouched for), a link of the chain is missing, or the chain's bytes
// exceed the full image's.
//
// Memory: at most keep_versions full images plus keep_versions deltas, each delta no larger than
// its image, so bytes_held() <= 2 * keep_versions * image size. Publish briefly needs about two
// more images (serialization, and the previous version while encoding). Versions and deltas are
// shared_ptrs: a response streaming an evicted version keeps its bytes alive until it finishes.
//
// Thread safety: every method may be called from any thread. Publish encodes outside the lock, so
// readers are not blocked while a large model is hashed and diffed; concurrent Publish calls are
// serialized among themselves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "workers/model/safetensors.h"
#include "workers/weights/weight_delta.h"
#include "workers/weights/weight_snapshot.h"

namespace sluice::weights {

// What the store holds for one version.
struct StoredVersion {
  std::shared_ptr<const WeightSnapshot> snapshot;
  // The delta from the version published just before (delta_from); null when none is kept.
  std::shared_ptr<const std::string> delta;
  std::optional<int64_t> delta_from;
  DeltaStats delta_stats;  // Meaningful when delta is set.
};

// Summary of one held version (GET /v1/weights).
struct VersionInfo {
  int64_t version = 0;
  std::string digest;
  uint64_t bytes = 0;  // Full image size.
  std::optional<int64_t> delta_from;
  DeltaStats delta_stats;  // Zero when delta_from is empty.
};

// How to bring a worker from one version to another.
struct DeltaPlan {
  int64_t from = 0;
  int64_t to = 0;
  // True: download the full image of `to` (reason says why). False: apply `deltas` in order.
  bool use_full = false;
  std::string reason;
  std::vector<std::shared_ptr<const std::string>> deltas;  // Oldest first.
  uint64_t bytes = 0;                                      // Sum of the deltas' sizes.
  uint64_t full_bytes = 0;                                 // Size of the full image of `to`.
  std::string to_digest;  // Digest of `to`, what applying the chain must produce.
};

class WeightStore {
 public:
  // keep_versions >= 1 (checked).
  explicit WeightStore(size_t keep_versions);

  // Builds and stores version `version` from `tensors` (copied; the views need only live for the
  // call), evicting the oldest versions beyond keep_versions. With encode_delta (the default) the
  // delta from the previously published version is encoded and kept when it pays (see above);
  // without, the version is stored with no delta (delta_from empty), so PlanDelta into it is
  // always a full download. Errors: InvalidArgument when `version` is not greater than every
  // version published before, or from WeightSnapshot::Build.
  Status Publish(std::span<const model::TensorView> tensors, int64_t version,
                 bool encode_delta = true);
  // The same for an already built snapshot.
  Status Publish(WeightSnapshot snapshot, bool encode_delta = true);

  // Null when the version is not held.
  std::shared_ptr<const WeightSnapshot> Full(int64_t version) const;
  // NotFound naming the version when it is not held.
  Result<std::string> Digest(int64_t version) const;
  // Held versions, oldest first.
  std::vector<VersionInfo> Versions() const;
  // The newest held version; nullopt before the first Publish.
  std::optional<int64_t> Latest() const;
  // NotFound when `to` is not held; InvalidArgument when from > to. from == to is an empty
  // chain (nothing to download).
  Result<DeltaPlan> PlanDelta(int64_t from, int64_t to) const;

  size_t keep_versions() const { return keep_; }
  // Bytes of the images and deltas held now.
  uint64_t bytes_held() const;

 private:
  const StoredVersion* FindLocked(int64_t version) const;

  const size_t keep_;
  std::mutex publish_mu_;                // Serializes Publish calls; never held by readers.
  mutable std::mutex mu_;                // Guards versions_.
  std::vector<StoredVersion> versions_;  // Oldest first, strictly increasing versions.
  std::optional<int64_t> last_published_;
};

}  // namespace sluice::weights
