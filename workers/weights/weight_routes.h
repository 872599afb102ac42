// WeightRoutes: the HTTP face of a WeightStore, served by trainer rank 0 to rollout workers.
//
//   GET /v1/weights                      JSON {"versions": [{"version", "digest", "bytes",
//                                        "deltaFrom", "deltaBytes", "deltaDensity"}], "latest"}
//   GET /v1/weights/{version}            the safetensors image (application/octet-stream) with
//                                        X-Sluice-Weights-Version, X-Sluice-Weights-Digest,
//                                        ETag: "<digest>", Accept-Ranges: bytes. One Range
//                                        (bytes=a-b, bytes=a-, bytes=-n) gives 206 with
//                                        Content-Range; an unsatisfiable one 416 (Content-Range:
//                                        bytes */size); several ranges 400.
//   GET /v1/weights/{version}/delta?from=v
//                                        200: the chain of deltas from v (weight_delta.h), oldest
//                                        first, with the version and digest headers of {version}
//                                        and X-Sluice-Weights-From. 409 (a Sluice error body plus
//                                        "full": "/v1/weights/{version}") whenever the full image
//                                        is the way to go: v not held, a link missing, or the
//                                        chain larger than the image. One code for all of these
//                                        so a worker needs a single fallback rule.
// 404 for a version not held, 400 for a malformed version or `from`. Bodies are streamed from
// the store's shared bytes, never copied per request.
//
// Metrics (when a registry is given): sluice_weights_served_bytes_total{kind="full"|"delta"},
// sluice_weights_requests_total{kind, outcome="ok"|"partial"|"fallback"|"error"},
// sluice_weights_latest_version, sluice_weights_delta_density (of the latest version; absent
// while it has no delta), sluice_weights_held_bytes.
//
// Ownership: the store and registry must outlive this object, and this object the server it
// registers on (handlers capture it). Thread safety: handlers run concurrently on the server's
// workers; the store serializes itself and metrics are atomic.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/http/server.h"
#include "common/metrics/registry.h"
#include "common/status.h"
#include "workers/weights/weight_store.h"

namespace sluice::weights {

inline constexpr std::string_view kWeightsVersionHeader = "X-Sluice-Weights-Version";
inline constexpr std::string_view kWeightsDigestHeader = "X-Sluice-Weights-Digest";
inline constexpr std::string_view kWeightsFromHeader = "X-Sluice-Weights-From";

// The path of a version's full image, "/v1/weights/<version>".
std::string FullWeightsPath(int64_t version);

// A version number in a path or query: a non-negative decimal without sign or spaces.
// InvalidArgument naming `field` otherwise.
Result<int64_t> ParseVersionNumber(std::string_view text, std::string_view field);

// A byte range [offset, offset + length) of a body of known size.
struct ByteRange {
  uint64_t offset = 0;
  uint64_t length = 0;
};

// Parses a Range header value against a body of `size` bytes: nullopt for an empty value (the
// whole body), the range otherwise. InvalidArgument (field "Range") for a malformed value or
// more than one range; Unprocessable (field "Range"; served as 416) when no byte of it lies in
// the body.
Result<std::optional<ByteRange>> ParseRangeHeader(std::string_view value, uint64_t size);

class WeightRoutes {
 public:
  // `prefix` is put before every route ("" serves /v1/weights...; a rollout relay hosting several
  // policies serves each under "/v1/relay/<policy>"); it must not contain regex characters.
  // With a null registry nothing is counted (a second WeightRoutes on one registry passes null).
  WeightRoutes(WeightStore& store, metrics::Registry* registry, std::string prefix = "");
  ~WeightRoutes();
  WeightRoutes(const WeightRoutes&) = delete;
  WeightRoutes& operator=(const WeightRoutes&) = delete;

  void Register(http::Server& server);

 private:
  void HandleList(const httplib::Request& req, httplib::Response& res);
  void HandleFull(const httplib::Request& req, httplib::Response& res);
  void HandleDelta(const httplib::Request& req, httplib::Response& res);
  void Count(std::string_view kind, std::string_view outcome);
  void Served(std::string_view kind, uint64_t bytes);

  WeightStore& store_;
  const std::string prefix_;
  metrics::Registry* registry_;
  metrics::CounterFamily* served_bytes_ = nullptr;
  metrics::CounterFamily* requests_ = nullptr;
  std::vector<std::pair<metrics::CallbackFamily*, std::vector<std::string>>> callbacks_;
};

}  // namespace sluice::weights
