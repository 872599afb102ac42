// Weight fetching: how a rollout worker gets a published version from trainer rank 0
// (weight_routes.h), verified against its digest.
//
// FetchFull downloads the full safetensors image to a file. Bytes go to "<dest>.partial" as they
// arrive; a transfer that breaks off (or a partial file left by an earlier process) is resumed
// with `Range: bytes=<partial length>-`, so a large model is never downloaded twice. At the end
// the whole file's SHA-256 must equal the server's X-Sluice-Weights-Digest: on a mismatch the
// partial file is deleted (its bytes cannot be trusted, including those from earlier attempts)
// and Corruption is returned; otherwise it is fsynced and renamed onto `dest` atomically.
//
// FetchUpdate brings a held snapshot to a newer version: it asks for the delta chain from the held
// version, applies it (weight_delta.h verifies the result's digest) and falls back to the full
// image, in memory, when the server answers 409.
//
// Ownership: the client is borrowed for the call. Thread safety: the functions are thread-safe;
// two concurrent FetchFull calls must not share a `dest`. Sizes are in bytes.
#pragma once

#include <cstdint>
#include <string>

#include "common/http/client.h"
#include "common/status.h"
#include "workers/weights/weight_snapshot.h"

namespace sluice::weights {

struct FetchOptions {
  // Requests made for one download, counting resumptions after a broken transfer; each resumes
  // where the previous one stopped. (The client also retries a request that got no response.)
  int max_attempts = 4;
};

// What a fetch did, for metrics and logs.
struct FetchStats {
  std::string mode;  // "full" or "delta".
  int64_t version = 0;
  std::string digest;              // Digest of the weights obtained.
  uint64_t bytes_transferred = 0;  // Body bytes received over the network in this call.
  int attempts = 0;                // Requests made for the bytes (resumptions included).
};

// Downloads version `version` to `dest` (see above). Errors: the server's (NotFound for a version
// it does not hold, Unauthenticated, ...); Corruption (field "digest") when the bytes do not match
// the digest; Unavailable/DeadlineExceeded when every attempt broke off; Internal for file errors.
Result<FetchStats> FetchFull(http::Client& client, int64_t version, const std::string& dest,
                             const FetchOptions& options = {});

struct FetchedWeights {
  WeightSnapshot snapshot;
  FetchStats stats;
};

// `version` of the weights, starting from `held` (not modified): the delta chain when the server
// offers one, else (409) the full image. When held.version() == version, returns `held` without a
// request. Errors: as FetchFull; Corruption when the delta or image does not verify.
Result<FetchedWeights> FetchUpdate(http::Client& client, const WeightSnapshot& held,
                                   int64_t version, const FetchOptions& options = {});

}  // namespace sluice::weights
