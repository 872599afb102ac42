// DataflowClient: the trainer's side of the dataflow API (docs/dataflow.md, "HTTP API"): take a
// batch, acknowledge it, announce a new weight version. Rollout workers' lease calls will join it.
//
// Every call goes through an http::Client (retries on connection failures and 5xx where safe,
// bearer token, hosts-file resolution), so a dataflow restart is ridden out transparently.
//
// Thread safety: all methods may be called from several threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/http/client.h"
#include "common/process/cancellation.h"
#include "common/status.h"
#include "workers/dataflow/trajectory_codec.h"

namespace sluice::dataflow {

struct VersionAnnouncement {
  int64_t number = 0;       // >= 1.
  std::string url;          // Where the full weights of this version are served.
  std::string digest;       // "sha256:<hex>" of that image.
  int64_t delta_base = -1;  // The version a delta is offered from; -1: full only.
};

class DataflowClient {
 public:
  // `client` is shared with the caller (its base URL is the dataflow's).
  explicit DataflowClient(std::shared_ptr<http::Client> client) : client_(std::move(client)) {}

  // GET /v1/batches/{policy}?groups=N&wait=S: a batch, or nullopt when none became available
  // within `wait` (204). Errors: NotFound for an unknown policy, Corruption for an undecodable
  // frame, Unavailable when the dataflow cannot be reached.
  Result<std::optional<Batch>> TakeBatch(const std::string& policy, int64_t groups,
                                         std::chrono::seconds wait,
                                         const CancellationToken& cancel);
  // The same, returning the undecoded frame (to forward it to other ranks) with its id.
  Result<std::optional<std::string>> TakeBatchFrame(const std::string& policy, int64_t groups,
                                                    std::chrono::seconds wait,
                                                    const CancellationToken& cancel);
  // POST /v1/batches/{id}/ack.
  Status Ack(const std::string& batch_id);
  // POST /v1/policies/{policy}/versions. A version that is not newer than the dataflow's (409,
  // e.g. re-announced after a restart) is OK.
  Status Announce(const std::string& policy, const VersionAnnouncement& version);

 private:
  std::shared_ptr<http::Client> client_;
};

}  // namespace sluice::dataflow
