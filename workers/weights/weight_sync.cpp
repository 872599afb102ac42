#include "workers/weights/weight_sync.h"

namespace sluice::weights {

bool EncodeDeltaFor(const api::PolicySpecWeightSync& sync, int64_t version) {
  if (sync.mode != "delta") return false;
  if (sync.full_sync_every_versions.has_value() && *sync.full_sync_every_versions >= 1 &&
      version % *sync.full_sync_every_versions == 0) {
    return false;
  }
  return true;
}

uint64_t TransferChunkBytes(const api::PolicySpecWeightSync& sync) {
  if (sync.chunk_size_mi_b <= 0) return 0;
  return static_cast<uint64_t>(sync.chunk_size_mi_b) << 20;
}

}  // namespace sluice::weights
