// Weight fetching: how a rollout worker gets a published version from trainer rank 0
// (weight_routes.h), verified against its digest.
//
// FetchFull downloads the full safetensors image to a file. Bytes go to "<dest>.partial" as they
// arrive; a transfer that breaks off (or a partial file left by an earlier process) is resumed
// with `Range: bytes=<partial length>-`, so a large model is never downloaded twice. With
// FetchOptions::chunk_bytes = C > 0 (Policy spec.weightSync.chunkSizeMiB) the image is fetched
// in Range requests of at most C bytes instead, on a grid of multiples of C
// (`bytes=kC-((k+1)C-1)`; the server clamps the last one to the image's end, and a resumption
// asks for the rest of its chunk), so a request that breaks off costs at most one chunk and a
// relay can serve each chunk on its own. Every response (206 with Content-Range "bytes a-b/N")
// must start where the file ends, end where the chunk does and carry the first response's
// digest; a server that ignores Range (200) sends the whole image, which is accepted. At the end
// the whole file's SHA-256 must equal the server's X-Sluice-Weights-Digest: on a mismatch the
// partial file is deleted (its bytes cannot be trusted, including those from earlier attempts)
// and Corruption is returned; otherwise it is fsynced and renamed onto `dest` atomically.
//
// FetchUpdate brings a held snapshot to a newer version: it asks for the delta chain from the held
// version (one request, whatever chunk_bytes says), applies it (weight_delta.h verifies the
// result's digest) and falls back to the full image, in memory, when the server answers 409; that
// download is chunked like FetchFull's.
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
  // Requests made for one range of bytes (the whole image, or one chunk with chunk_bytes),
  // counting resumptions after a broken transfer; each resumes where the previous one stopped.
  // A chunk that arrives whole starts the next chunk's count afresh. (The client also retries a
  // request that got no response.)
  int max_attempts = 4;
  // The most bytes one request of a full-image download asks for (a Range request per chunk);
  // 0: one request for the whole image. Delta chains are always one request.
  uint64_t chunk_bytes = 0;
};

// What a fetch did, for metrics and logs.
struct FetchStats {
  std::string mode;  // "full" or "delta".
  int64_t version = 0;
  std::string digest;              // Digest of the weights obtained.
  uint64_t bytes_transferred = 0;  // Body bytes received over the network in this call.
  int attempts = 0;                // Requests made for the bytes (chunks and resumptions included).
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
