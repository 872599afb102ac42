// WeightUpdater: keeps a rollout worker's hosted policies at the versions their trainers announce.
//
// Update(version) brings one policy to an announced version when it is newer than the one loaded:
//  - Source: the region's relay first (another replica's /v1/relay/<policy>/v1/weights/...,
//    SetRelay), so a version crosses a region boundary once. A relay that does not hold the
//    version yet (404: every replica sees an announcement at about the same time, the relay
//    included) is asked again, 50 ms doubling to 500 ms, for up to relay_wait, while it fetches
//    it; a relay that fails otherwise (gone, refusing, a bad image) or still lacks the version
//    after relay_wait is passed over for the trainer's URL from the announcement. No relay when
//    this replica is the relay itself. When the trainer fails too (its run is over and its pods
//    are gone), the dataflow's copy of the policy's final weights (dataflow_url +
//    /v1/final/<policy>, workers/weights/final_weights.h) is the last source.
//  - Mode: a delta chain from the held version when the server offers one (weight_fetcher.h
//    FetchUpdate, which falls back to the full image on 409), the full image otherwise. A full
//    image is downloaded to staging_dir and resumed there after a broken transfer, in Range
//    requests of at most the policy's chunk_bytes (spec.weightSync.chunkSizeMiB). Every result is
//    checked against its digest.
//  - Load: the verified snapshot goes to the WeightSink (the engine swaps it in between two steps),
//    then into this worker's own WeightStore, which it serves to peers (RegisterRoutes). That
//    store keeps a delta into the version only when the trainer published one (the announcement's
//    delta_base >= 0), so spec.weightSync.mode full and fullSyncEveryVersions reach peers through a
//    relay unchanged: what the trainer sends full, the relay sends full.
//
// Metrics (sluice_rollout_weight_*): fetches by policy, mode and source, bytes, seconds, errors,
// and the loaded version.
//
// Thread safety: every method may be called from any thread; updates of one policy are
// serialized, updates of different policies run in parallel.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/http/bearer_token.h"
#include "common/http/client.h"
#include "common/http/hosts_file.h"
#include "common/http/server.h"
#include "common/metrics/registry.h"
#include "common/status.h"
#include "workers/dataflow/client/dataflow_client.h"
#include "workers/weights/weight_fetcher.h"
#include "workers/weights/weight_routes.h"
#include "workers/weights/weight_store.h"

namespace sluice::rollout {

// Where fetched weights go: the engine (or an external engine's volume).
class WeightSink {
 public:
  virtual ~WeightSink() = default;
  // Loads `snapshot` (its version is snapshot.version()) as the weights of `policy`. The
  // snapshot is borrowed for the call.
  virtual Status ApplyWeights(const std::string& policy,
                              const weights::WeightSnapshot& snapshot) = 0;
};

struct WeightUpdaterOptions {
  std::shared_ptr<http::TokenSource> token;  // Sent to the trainer and to relays.
  http::ClientTlsOptions tls;                // Verifies the trainer and relays at https:// URLs.
  // The name a relay's certificate holds (the pool's role name: relays are reached at their pod
  // IP, which no certificate made before the pod can name); empty: the relay URL's host.
  std::string relay_server_name;
  std::shared_ptr<http::HostsFileResolver> resolver;  // For service and pod names; may be null.
  std::string staging_dir;   // Full downloads land here (created when missing).
  size_t keep_versions = 2;  // Versions held per policy for peers (>= 1).
  std::chrono::milliseconds read_timeout{120000};
  // Per hosted policy: the most bytes one request of a full-image download asks for
  // (weights::FetchOptions::chunk_bytes, from spec.weightSync.chunkSizeMiB). A policy not listed
  // here, or 0, fetches each image in one request.
  std::map<std::string, uint64_t> chunk_bytes;
  // How long to wait for the relay to get a version it does not hold yet, before fetching it
  // from the trainer (across regions, when the trainer is in another one).
  std::chrono::milliseconds relay_wait{10000};
  // The dataflow's base URL, for the final weights it keeps once a trainer has finished; empty:
  // not asked.
  std::string dataflow_url;
  // The relay wait's and the reports' time; borrowed, must outlive the updater. Null: the system
  // clock.
  Clock* clock = nullptr;
};

struct UpdateReport {
  std::string policy;
  int64_t from = 0;
  int64_t to = 0;
  std::string source;  // "relay", "trainer" or "dataflow".
  weights::FetchStats stats;
  double seconds = 0;       // Fetch and load.
  std::string relay_error;  // Why the relay was not used, when it failed.
};

class WeightUpdater {
 public:
  // `policies` are the hosted policies, each starting at version `initial_version` (the Policy's
  // initial weights). `sink` and `registry` (may be null) must outlive the updater.
  WeightUpdater(const std::vector<std::string>& policies, int64_t initial_version,
                WeightUpdaterOptions options, WeightSink* sink, metrics::Registry* registry);
  ~WeightUpdater();

  // The relay's base URL ("https://host:port"); empty: fetch from the trainer only.
  void SetRelay(std::string base_url);
  std::string relay() const;

  // Brings the announced policy to `version.number` (see above); nullopt when it is not newer
  // than the loaded version or the policy is not hosted. Errors: the last source's error (the
  // loaded version is then unchanged).
  Result<std::optional<UpdateReport>> Update(const dataflow::AnnouncedVersion& version);

  // The version each hosted policy serves now.
  std::map<std::string, int64_t> Versions() const;

  // GET /v1/relay/<policy>/v1/weights/... for every hosted policy (weight_routes.h).
  void RegisterRoutes(http::Server& server);

 private:
  struct PolicyState;
  // `relay`: the URL is a relay's, verified under relay_server_name.
  Result<std::unique_ptr<http::Client>> ClientFor(const std::string& base_url, bool relay) const;
  Result<weights::FetchedWeights> Fetch(PolicyState& state, const std::string& base_url, bool relay,
                                        int64_t version, const std::string& digest);

  const WeightUpdaterOptions options_;
  Clock& clock_;
  WeightSink* sink_;
  mutable std::mutex mu_;  // Guards relay_ and the versions.
  std::string relay_;
  std::map<std::string, std::unique_ptr<PolicyState>> policies_;
  metrics::CounterFamily* fetches_ = nullptr;
  metrics::CounterFamily* bytes_ = nullptr;
  metrics::CounterFamily* seconds_ = nullptr;
  metrics::CounterFamily* errors_ = nullptr;
  metrics::GaugeFamily* version_ = nullptr;
};

}  // namespace sluice::rollout
