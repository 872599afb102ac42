#include "workers/rollout/weight_updater.h"

#include <filesystem>
#include <utility>

#include "common/file/read_file.h"
#include "workers/rollout/lease_planner.h"
#include "workers/weights/final_weights.h"

namespace sluice::rollout {

struct WeightUpdater::PolicyState {
  PolicyState(size_t keep, uint64_t chunk) : chunk_bytes(chunk), store(keep) {}
  std::mutex update_mu;        // One update of this policy at a time.
  int64_t version = 0;         // Guarded by WeightUpdater::mu_.
  const uint64_t chunk_bytes;  // FetchOptions::chunk_bytes for this policy's full images.
  weights::WeightStore store;
  std::unique_ptr<weights::WeightRoutes> routes;
};

WeightUpdater::WeightUpdater(const std::vector<std::string>& policies, int64_t initial_version,
                             WeightUpdaterOptions options, WeightSink* sink,
                             metrics::Registry* registry)
    : options_(std::move(options)), clock_(ClockOrSystem(options_.clock)), sink_(sink) {
  for (const std::string& p : policies) {
    auto chunk = options_.chunk_bytes.find(p);
    auto state =
        std::make_unique<PolicyState>(std::max<size_t>(options_.keep_versions, 1),
                                      chunk == options_.chunk_bytes.end() ? 0 : chunk->second);
    state->version = initial_version;
    policies_.emplace(p, std::move(state));
  }
  if (registry != nullptr) {
    fetches_ = &registry->AddCounter(
        "sluice_rollout_weight_fetches_total",
        "Weight updates by policy, mode (full, delta) and source (relay, trainer).",
        {"policy", "mode", "source"});
    bytes_ =
        &registry->AddCounter("sluice_rollout_weight_fetch_bytes_total",
                              "Weight bytes received, by policy and source.", {"policy", "source"});
    seconds_ =
        &registry->AddCounter("sluice_rollout_weight_fetch_seconds_total",
                              "Seconds spent fetching and loading weights, by policy.", {"policy"});
    errors_ =
        &registry->AddCounter("sluice_rollout_weight_fetch_errors_total",
                              "Failed weight fetches by policy and source.", {"policy", "source"});
    version_ = &registry->AddGauge("sluice_rollout_policy_version",
                                   "Weight version each hosted policy serves.", {"policy"});
    for (const std::string& p : policies) {
      version_->WithLabels({p}).Set(static_cast<double>(initial_version));
    }
  }
}

WeightUpdater::~WeightUpdater() = default;

void WeightUpdater::SetRelay(std::string base_url) {
  std::lock_guard<std::mutex> lock(mu_);
  relay_ = std::move(base_url);
}

std::string WeightUpdater::relay() const {
  std::lock_guard<std::mutex> lock(mu_);
  return relay_;
}

std::map<std::string, int64_t> WeightUpdater::Versions() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, int64_t> out;
  for (const auto& [name, state] : policies_) out[name] = state->version;
  return out;
}

void WeightUpdater::RegisterRoutes(http::Server& server) {
  for (auto& [name, state] : policies_) {
    state->routes =
        std::make_unique<weights::WeightRoutes>(state->store, nullptr, "/v1/relay/" + name);
    state->routes->Register(server);
  }
}

Result<std::unique_ptr<http::Client>> WeightUpdater::ClientFor(const std::string& base_url,
                                                               bool relay) const {
  http::ClientOptions o;
  o.base_url = base_url;
  o.token = options_.token;
  o.tls = options_.tls;
  if (relay && !options_.relay_server_name.empty()) o.tls.server_name = options_.relay_server_name;
  o.resolver = options_.resolver;
  o.read_timeout = options_.read_timeout;
  o.max_attempts = 2;
  return http::Client::Create(std::move(o));
}

Result<weights::FetchedWeights> WeightUpdater::Fetch(PolicyState& state,
                                                     const std::string& base_url, bool relay,
                                                     int64_t version, const std::string& digest) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<http::Client> client, ClientFor(base_url, relay));
  weights::FetchOptions fetch;
  fetch.chunk_bytes = state.chunk_bytes;
  // Delta from the held snapshot when there is one.
  if (std::optional<int64_t> latest = state.store.Latest(); latest.has_value()) {
    if (std::shared_ptr<const weights::WeightSnapshot> held = state.store.Full(*latest)) {
      return weights::FetchUpdate(*client, *held, version, fetch);
    }
  }
  std::error_code ec;
  std::filesystem::create_directories(options_.staging_dir, ec);
  const std::string dest =
      options_.staging_dir + "/v" + std::to_string(version) + "-" +
      std::to_string(std::hash<std::string>{}(base_url + "|" + std::to_string(version)) % 100000) +
      ".safetensors";
  SLUICE_ASSIGN_OR_RETURN(weights::FetchStats stats,
                          weights::FetchFull(*client, version, dest, fetch));
  SLUICE_ASSIGN_OR_RETURN(std::string image, file::ReadWholeFile(dest));
  std::filesystem::remove(dest, ec);
  SLUICE_ASSIGN_OR_RETURN(weights::WeightSnapshot snapshot,
                          weights::WeightSnapshot::Parse(std::move(image), digest));
  if (snapshot.version() != version) {
    return Status::Corruption("the image is version " + std::to_string(snapshot.version()) +
                                  ", not " + std::to_string(version),
                              "metadata.sluice.version");
  }
  weights::FetchedWeights out{std::move(snapshot), std::move(stats)};
  return out;
}

Result<std::optional<UpdateReport>> WeightUpdater::Update(
    const dataflow::AnnouncedVersion& announced) {
  auto it = policies_.find(announced.policy);
  if (it == policies_.end()) return std::optional<UpdateReport>();
  PolicyState& state = *it->second;
  std::lock_guard<std::mutex> update_lock(state.update_mu);
  int64_t from = 0;
  std::string relay;
  {
    std::lock_guard<std::mutex> lock(mu_);
    from = state.version;
    relay = relay_;
  }
  if (announced.number <= from) return std::optional<UpdateReport>();
  SLUICE_ASSIGN_OR_RETURN(WeightUrl trainer,
                          SplitWeightUrl(announced.url, "versions[" + announced.policy + "].url"));
  const Clock::MonoTime t0 = clock_.Now();
  UpdateReport report;
  report.policy = announced.policy;
  report.from = from;
  report.to = announced.number;
  Result<weights::FetchedWeights> fetched = Status::Unavailable("no source tried");
  if (!relay.empty()) {
    const std::string base = relay + "/v1/relay/" + announced.policy;
    fetched = Fetch(state, base, /*relay=*/true, announced.number, announced.digest);
    // Not there yet: the relay learned of the version when this replica did and is fetching it.
    std::chrono::milliseconds poll(50);
    const Clock::MonoTime give_up = clock_.Now() + options_.relay_wait;
    while (!fetched.ok() && fetched.status().code() == StatusCode::kNotFound &&
           clock_.Now() + poll <= give_up) {
      clock_.SleepFor(poll);
      poll = std::min(2 * poll, std::chrono::milliseconds(500));
      fetched = Fetch(state, base, /*relay=*/true, announced.number, announced.digest);
    }
    report.source = "relay";
    if (!fetched.ok()) {
      report.relay_error = fetched.status().ToString();
      if (errors_) errors_->WithLabels({announced.policy, "relay"}).Inc();
    }
  }
  if (relay.empty() || !fetched.ok()) {
    fetched = Fetch(state, trainer.base, /*relay=*/false, announced.number, announced.digest);
    report.source = "trainer";
    if (!fetched.ok()) {
      if (errors_) errors_->WithLabels({announced.policy, "trainer"}).Inc();
      if (options_.dataflow_url.empty()) return fetched.status();
      // The trainer's run may be over and its pods gone: the dataflow keeps the final version.
      const Status trainer_error = fetched.status();
      fetched =
          Fetch(state, options_.dataflow_url + weights::FinalWeights::BasePath(announced.policy),
                /*relay=*/false, announced.number, announced.digest);
      report.source = "dataflow";
      if (!fetched.ok()) {
        if (errors_) errors_->WithLabels({announced.policy, "dataflow"}).Inc();
        return Status(trainer_error.code(),
                      trainer_error.message() +
                          "; the dataflow's final weights: " + fetched.status().ToString());
      }
    }
  }
  if (!announced.digest.empty() && fetched->snapshot.digest() != announced.digest) {
    if (errors_) errors_->WithLabels({announced.policy, report.source}).Inc();
    return Status::Corruption("fetched weights have digest " + fetched->snapshot.digest() +
                                  ", the announcement says " + announced.digest,
                              "digest");
  }
  SLUICE_RETURN_IF_ERROR(sink_->ApplyWeights(announced.policy, fetched->snapshot));
  report.stats = fetched->stats;
  // Keep it for peers; a version that is somehow not newer than what the store holds is skipped.
  // A delta into it is encoded only when the trainer published one (see the header).
  (void)state.store.Publish(std::move(fetched->snapshot),
                            /*encode_delta=*/announced.delta_base >= 0);
  {
    std::lock_guard<std::mutex> lock(mu_);
    state.version = announced.number;
  }
  report.seconds = std::chrono::duration<double>(clock_.Now() - t0).count();
  if (fetches_) {
    fetches_->WithLabels({announced.policy, report.stats.mode, report.source}).Inc();
    bytes_->WithLabels({announced.policy, report.source})
        .Inc(static_cast<double>(report.stats.bytes_transferred));
    seconds_->WithLabels({announced.policy}).Inc(report.seconds);
    version_->WithLabels({announced.policy}).Set(static_cast<double>(announced.number));
  }
  return std::optional<UpdateReport>(std::move(report));
}

}  // namespace sluice::rollout
