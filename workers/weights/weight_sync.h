// How a Policy's spec.weightSync shapes weight publishing and fetching, as pure functions over
// the CRD type, so the trainer (what it publishes) and the rollout workers (how they download)
// read the fields one way.
//
//   mode                   full: the trainer publishes every version without a delta (nothing is
//                          diffed; workers always download full images, and the announcement's
//                          delta_base is -1). delta: each version is published with the delta from
//                          the version before it, kept when it pays (weights/weight_store.h).
//   fullSyncEveryVersions  with delta: every version that is a multiple of N is published without
//                          a delta, so a worker that held an older version downloads the full image
//                          then and numeric drift cannot build up through long delta chains.
//   chunkSizeMiB           the most bytes one Range request of a full-image download asks for
//                          (weights/weight_fetcher.h FetchOptions::chunk_bytes).
//   keepVersions           versions the trainer's WeightStore holds (read where the store is made).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>

#include "api/generated/policy_types.h"

namespace sluice::weights {

// Whether version `version` is published with a delta from the previous version
// (WeightStore::Publish's encode_delta): false for mode full, and for mode delta when
// fullSyncEveryVersions is set and divides `version`; true otherwise. A fullSyncEveryVersions
// below 1 (the CRD's minimum is 1) is treated as unset.
bool EncodeDeltaFor(const api::PolicySpecWeightSync& sync, int64_t version);

// chunkSizeMiB in bytes (chunkSizeMiB * 2^20); 0 (one request for the whole image) when it is not
// positive.
uint64_t TransferChunkBytes(const api::PolicySpecWeightSync& sync);

}  // namespace sluice::weights
