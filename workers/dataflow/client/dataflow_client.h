// DataflowClient: the workers' side of the dataflow API (docs/dataflow.md, "HTTP API"). Trainers
// take a batch, acknowledge it and announce new weight versions (and may read the train split
// for a warm start); rollout workers lease tasks, renew and release leases, and submit finished
// groups.
//
// Every call goes through an http::Client (retries on connection failures and 5xx where safe,
// bearer token, hosts-file resolution), so a dataflow restart is ridden out transparently.
//
// Thread safety: all methods may be called from several threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/http/client.h"
#include "common/process/cancellation.h"
#include "common/status.h"
#include "workers/dataflow/client/dataset.h"
#include "workers/dataflow/client/trajectory_codec.h"

namespace sluice::dataflow {

// What a rollout worker asks POST /v1/leases for.
struct LeaseQuery {
  std::string worker_id;
  std::string pool;
  std::string region;
  std::map<std::string, int64_t> hosted_policies;  // Policy -> loaded version.
  int64_t capacity = 1;                            // Tasks wanted.
  std::chrono::seconds wait{0};                    // Long-poll for this long when none is ready.
};

// A policy version named in a lease reply.
struct AnnouncedVersion {
  std::string policy;
  int64_t number = 0;
  std::string url;
  std::string digest;
  int64_t delta_base = -1;
};

struct LeaseAnswer {
  nlohmann::json tasks = nlohmann::json::array();  // Leased tasks, as the dataflow sent them.
  std::vector<AnnouncedVersion> versions;
  bool backpressure = false;
  int64_t lease_seconds = 0;
};

struct VersionAnnouncement {
  int64_t number = 0;       // >= 1.
  std::string url;          // Where the full weights of this version are served.
  std::string digest;       // "sha256:<hex>" of that image.
  int64_t delta_base = -1;  // The version a delta is offered from; -1: full only.
  // Ask the dataflow for an eval round of this version (when it has evaluation configured),
  // e.g. for the weights a warm start (SFT) produced, before RL moves them. Sent only when set.
  bool evaluate = false;
};

// One page of GET /v1/dataset/train.
struct TrainRowsPage {
  int64_t total = 0;  // Rows in the train split.
  // Train rows offset.., in split order; id, prompt, answer set, and `row` = {"expression": ...}
  // for a row served with an expression (else `row` is left null).
  std::vector<PromptRow> rows;
};

// The error reason of GET /v1/batches' 410 reply when the policy is drained: part of the wire
// contract, set by the dataflow's service and recognised here.
inline constexpr char kDrainedReason[] = "DataflowDrained";

// Whether a TakeBatch / TakeBatchFrame error says the policy is drained (410 DataflowDrained):
// the dataset is exhausted and what is left can never fill a batch, so polling again is useless.
bool IsDrained(const Status& status);

class DataflowClient {
 public:
  // `client` is shared with the caller (its base URL is the dataflow's).
  explicit DataflowClient(std::shared_ptr<http::Client> client) : client_(std::move(client)) {}

  // GET /v1/batches/{policy}?groups=N&wait=S: a batch, or nullopt when none became available
  // within `wait` (204). Errors: NotFound for an unknown policy, Gone (IsDrained) once the
  // dataflow can never serve this policy a batch again (its message says why), Corruption for an
  // undecodable frame, Unavailable when the dataflow cannot be reached.
  Result<std::optional<Batch>> TakeBatch(const std::string& policy, int64_t groups,
                                         std::chrono::seconds wait,
                                         const CancellationToken& cancel);
  // The same, returning the undecoded frame (to forward it to other ranks) with its id.
  Result<std::optional<std::string>> TakeBatchFrame(const std::string& policy, int64_t groups,
                                                    std::chrono::seconds wait,
                                                    const CancellationToken& cancel);
  // POST /v1/batches/{id}/ack.
  Status Ack(const std::string& batch_id);
  // Held acknowledgements (a trainer that checkpoints; dataflow_core.h): POST
  // /v1/batches/{id}/ack {"hold": true} returns the batch's hold number (0: it was already
  // acknowledged for good); .../held/release and .../held/resume {"through"} return how many
  // held batches were released / taken back. Errors: the dataflow's (NotFound for an unknown
  // batch or policy), Unavailable when it cannot be reached, InvalidArgument naming the field for
  // a malformed reply.
  Result<int64_t> AckHeld(const std::string& batch_id);
  Result<int64_t> ReleaseHeld(const std::string& policy, int64_t through);
  Result<int64_t> ResumeHeld(const std::string& policy, int64_t through);
  // POST /v1/policies/{policy}/versions. Conflict (the dataflow's 409 and its message) for a
  // version that is not newer than the dataflow's, unless it is the same announcement again or
  // the same image (digest) at another url: a version number never names two weight images.
  Status Announce(const std::string& policy, const VersionAnnouncement& version);
  // PUT /v1/final/{policy}/v1/weights/{version} with the version's safetensors image and its
  // digest: the dataflow keeps it as the policy's final weights, for rollout replicas created
  // after the trainer is gone (workers/weights/final_weights.h). True when stored now, false when
  // that image was held already. An image over `part_bytes` goes in parts of at most that many
  // bytes (PUT .../parts/<offset>, offset 0 first), and a part the dataflow refuses as too large
  // (its --max-body-bytes is smaller) is sent again in halves, down to 64 KiB. Errors: the
  // dataflow's (Conflict when the version or digest is not the newest announced one),
  // Unavailable when unreachable (a retry starts the upload over).
  Result<bool> PutFinalWeights(const std::string& policy, int64_t version,
                               const std::string& digest, std::string image,
                               size_t part_bytes = size_t{32} << 20);

  // GET /v1/dataset/train?offset=N&limit=M: train rows offset .. offset+limit-1 (fewer at the end
  // of the split, none from an offset at or past it). InvalidArgument for an offset < 0 or a
  // limit outside [1, 10000] (the dataflow's 400, naming the parameter) and, naming the field,
  // for a malformed reply.
  Result<TrainRowsPage> TrainRows(int64_t offset, int64_t limit);
  // The whole train split, in split order, fetched `page` rows at a time (page in [1, 10000]).
  // Conflict when the split's size changes between pages (the dataflow restarted on another
  // dataset).
  Result<std::vector<PromptRow>> AllTrainRows(int64_t page = 1000);

  // POST /v1/leases. InvalidArgument naming the field for a malformed reply.
  Result<LeaseAnswer> Lease(const LeaseQuery& query, const CancellationToken& cancel);
  // GET /v1/versions: the newest announced version of every policy that has announced one (a
  // policy missing from the list still serves its initial weights, version 0). Leases nothing.
  // Unavailable when the dataflow cannot be reached, Cancelled once `cancel` fired,
  // InvalidArgument naming the field for a malformed reply.
  Result<std::vector<AnnouncedVersion>> AnnouncedVersions(const CancellationToken& cancel);
  // POST /v1/leases/{id}/renew: NotFound for an unknown or withdrawn lease, Gone (410) past its
  // deadline.
  Status Renew(const std::string& lease_id);
  // POST /v1/leases/{id}/release; a non-empty error counts a failed attempt.
  Status Release(const std::string& lease_id, const std::string& error);
  // POST /v1/trajectories with one encoded trajectory-group frame; the reply's JSON.
  Result<nlohmann::json> Submit(const TrajectoryGroup& group);

 private:
  std::shared_ptr<http::Client> client_;
};

}  // namespace sluice::dataflow
