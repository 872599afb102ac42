// WeightUpdater over real HTTP: a "trainer" (WeightStore + WeightRoutes on an in-process server)
// publishes versions; updaters fetch them full, then as deltas, through a relay replica and,
// once the relay is gone, from the trainer again.
#include "workers/rollout/weight_updater.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/http/server.h"
#include "common/logging/logger.h"
#include "common/metrics/registry.h"
#include "common/tls/certificates.h"
#include "tests/unit/workers/weights/weight_fixtures.h"
#include "workers/weights/final_weights.h"

namespace sluice::rollout {
namespace weight_updater_test {

constexpr char kToken[] = "updater-test-token";

class RecordingSink final : public WeightSink {
 public:
  Status ApplyWeights(const std::string& policy, const weights::WeightSnapshot& s) override {
    std::lock_guard<std::mutex> lock(mu);
    applied.emplace_back(policy, s.version(), s.digest());
    return Status::Ok();
  }
  std::mutex mu;
  std::vector<std::tuple<std::string, int64_t, std::string>> applied;
};

// A server with bearer auth on a free loopback port (HTTPS with `tls`).
std::unique_ptr<http::Server> StartServer(metrics::Registry* registry, const log::Logger& logger,
                                          std::optional<http::ServerTlsOptions> tls = {}) {
  http::ServerOptions so;
  so.tls = std::move(tls);
  so.name = "weights";
  so.address = "127.0.0.1";
  so.auth = http::TokenSource::FromValue(kToken);
  so.access_log = false;
  so.shutdown_grace = std::chrono::milliseconds(500);
  return std::make_unique<http::Server>(so, registry, logger);
}

class WeightUpdaterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sluice-updater-XXXXXX";
    dir_ = mkdtemp(tmpl);
    trainer_ = StartServer(&trainer_registry_, logger_);
    routes_ = std::make_unique<weights::WeightRoutes>(store_, &trainer_registry_);
    routes_->Register(*trainer_);
    ASSERT_TRUE(trainer_->Start().ok());
    model_ = weights::fixtures::RandomModel(7);
  }
  void TearDown() override {
    trainer_->Shutdown();
    std::filesystem::remove_all(dir_);
  }

  // Publishes the next version (1% of the elements changed), with a delta from the previous one
  // unless encode_delta is false, and returns its announcement (delta_base as the trainer sets
  // it: the version the kept delta starts from, or -1).
  dataflow::AnnouncedVersion PublishNext(bool encode_delta = true) {
    ++version_;
    if (version_ > 1) weights::fixtures::Perturb(model_, 0.01, rng_);
    EXPECT_TRUE(store_.Publish(model_.Views(), version_, encode_delta).ok());
    dataflow::AnnouncedVersion a;
    a.policy = "actor";
    a.number = version_;
    a.url = trainer_->BaseUrl() + "/v1/weights/" + std::to_string(version_);
    a.digest = store_.Digest(version_).value();
    for (const weights::VersionInfo& v : store_.Versions()) {
      if (v.version == version_ && v.delta_from) a.delta_base = *v.delta_from;
    }
    return a;
  }

  WeightUpdaterOptions Options(const std::string& name) {
    WeightUpdaterOptions o;
    o.token = http::TokenSource::FromValue(kToken);
    o.staging_dir = dir_ + "/" + name;
    o.keep_versions = 2;
    return o;
  }

  std::string dir_;
  log::Logger logger_{"test"};
  metrics::Registry trainer_registry_;
  weights::WeightStore store_{4};
  std::unique_ptr<http::Server> trainer_;
  std::unique_ptr<weights::WeightRoutes> routes_;
  weights::fixtures::Model model_;
  std::mt19937_64 rng_{3};
  int64_t version_ = 0;
};

TEST_F(WeightUpdaterTest, FullFirstThenDeltasVerifiedAndLoaded) {
  RecordingSink sink;
  metrics::Registry registry;
  WeightUpdater updater({"actor"}, 0, Options("a"), &sink, &registry);
  const dataflow::AnnouncedVersion v1 = PublishNext();
  Result<std::optional<UpdateReport>> r1 = updater.Update(v1);
  ASSERT_TRUE(r1.ok()) << r1.status().ToString();
  ASSERT_TRUE(r1->has_value());
  EXPECT_EQ((*r1)->stats.mode, "full");
  EXPECT_EQ((*r1)->source, "trainer");
  EXPECT_EQ((*r1)->from, 0);
  EXPECT_EQ((*r1)->to, 1);

  const dataflow::AnnouncedVersion v2 = PublishNext();
  Result<std::optional<UpdateReport>> r2 = updater.Update(v2);
  ASSERT_TRUE(r2.ok()) << r2.status().ToString();
  ASSERT_TRUE(r2->has_value());
  EXPECT_EQ((*r2)->stats.mode, "delta");
  EXPECT_LT((*r2)->stats.bytes_transferred, (*r1)->stats.bytes_transferred / 4);

  ASSERT_EQ(sink.applied.size(), 2u);
  EXPECT_EQ(std::get<1>(sink.applied[0]), 1);
  EXPECT_EQ(std::get<2>(sink.applied[0]), v1.digest);
  EXPECT_EQ(std::get<1>(sink.applied[1]), 2);
  EXPECT_EQ(std::get<2>(sink.applied[1]), v2.digest);
  EXPECT_EQ(updater.Versions().at("actor"), 2);

  // Not newer, or not hosted: nothing to do.
  Result<std::optional<UpdateReport>> again = updater.Update(v2);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->has_value());
  dataflow::AnnouncedVersion other = v2;
  other.policy = "critic";
  ASSERT_TRUE(updater.Update(other).ok());
  EXPECT_EQ(sink.applied.size(), 2u);
}

TEST_F(WeightUpdaterTest, AWrongDigestLoadsNothing) {
  RecordingSink sink;
  WeightUpdater updater({"actor"}, 0, Options("a"), &sink, nullptr);
  dataflow::AnnouncedVersion v1 = PublishNext();
  v1.digest = "sha256:" + std::string(64, '0');
  Result<std::optional<UpdateReport>> r = updater.Update(v1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption) << r.status().ToString();
  EXPECT_TRUE(sink.applied.empty());
  EXPECT_EQ(updater.Versions().at("actor"), 0);

  dataflow::AnnouncedVersion bad_url = PublishNext();
  bad_url.url = "http://127.0.0.1:1/elsewhere";
  Result<std::optional<UpdateReport>> r2 = updater.Update(bad_url);
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.status().field(), "versions[actor].url");
}

// Relays are reached at their pod IP and verified under the pool's role name
// (relay_server_name): a peer trusting the CA fetches through the relay; one expecting another
// name refuses it and goes to the trainer, saying why.
TEST_F(WeightUpdaterTest, ARelayOverTlsIsVerifiedUnderThePoolsName) {
  const Clock::WallTime now = SystemClock::Instance().WallNow();
  Result<tls::CertifiedKey> ca =
      tls::NewCertificateAuthority({"sluice-ca.rl", now, std::chrono::hours(24)});
  ASSERT_TRUE(ca.ok()) << ca.status().ToString();
  const std::string role = "gen.rl.rollout.sluice.internal";
  Result<tls::CertifiedKey> serving =
      tls::IssueServingCertificate(*ca, {role, now, std::chrono::hours(24)}, {role});
  ASSERT_TRUE(serving.ok()) << serving.status().ToString();
  std::ofstream(dir_ + "/tls.crt") << serving->cert_pem;
  std::ofstream(dir_ + "/tls.key") << serving->key_pem;

  RecordingSink relay_sink;
  WeightUpdater relay({"actor"}, 0, Options("relay"), &relay_sink, nullptr);
  metrics::Registry relay_registry;
  std::unique_ptr<http::Server> relay_server = StartServer(
      &relay_registry, logger_, http::ServerTlsOptions{dir_ + "/tls.crt", dir_ + "/tls.key", ""});
  relay.RegisterRoutes(*relay_server);
  ASSERT_TRUE(relay_server->Start().ok());
  ASSERT_EQ(relay_server->BaseUrl().rfind("https://127.0.0.1:", 0), 0u);
  const dataflow::AnnouncedVersion v1 = PublishNext();
  ASSERT_TRUE(relay.Update(v1).ok());

  auto peer_options = [&](const std::string& name, const std::string& server_name) {
    WeightUpdaterOptions o = Options(name);
    o.tls.ca_pem = ca->cert_pem;
    o.relay_server_name = server_name;
    return o;
  };
  RecordingSink sink;
  WeightUpdater peer({"actor"}, 0, peer_options("peer", role), &sink, nullptr);
  peer.SetRelay(relay_server->BaseUrl());
  Result<std::optional<UpdateReport>> r = peer.Update(v1);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ((*r)->source, "relay") << (*r)->relay_error;

  RecordingSink other_sink;
  WeightUpdater other({"actor"}, 0, peer_options("other", "other.rl.rollout.sluice.internal"),
                      &other_sink, nullptr);
  other.SetRelay(relay_server->BaseUrl());
  Result<std::optional<UpdateReport>> o = other.Update(v1);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  ASSERT_TRUE(o->has_value());
  EXPECT_EQ((*o)->source, "trainer");
  EXPECT_FALSE((*o)->relay_error.empty());
  relay_server->Shutdown();
}

TEST_F(WeightUpdaterTest, PeersFetchThroughTheRelayAndFallBackToTheTrainer) {
  // Replica 0 of the region fetches from the trainer and serves its peers.
  RecordingSink relay_sink;
  WeightUpdater relay({"actor"}, 0, Options("relay"), &relay_sink, nullptr);
  metrics::Registry relay_registry;
  std::unique_ptr<http::Server> relay_server = StartServer(&relay_registry, logger_);
  relay.RegisterRoutes(*relay_server);
  ASSERT_TRUE(relay_server->Start().ok());
  ASSERT_TRUE(relay.Update(PublishNext()).ok());
  const dataflow::AnnouncedVersion v2 = PublishNext();
  ASSERT_TRUE(relay.Update(v2).ok());

  RecordingSink peer_sink;
  metrics::Registry peer_registry;
  WeightUpdater peer({"actor"}, 0, Options("peer"), &peer_sink, &peer_registry);
  peer.SetRelay(relay_server->BaseUrl());
  Result<std::optional<UpdateReport>> r = peer.Update(v2);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ((*r)->source, "relay");
  EXPECT_EQ((*r)->stats.mode, "full");
  EXPECT_EQ(std::get<2>(peer_sink.applied.at(0)), v2.digest);

  // The relay goes away: the next version comes from the trainer, as a delta from version 2.
  relay_server->Shutdown();
  const dataflow::AnnouncedVersion v3 = PublishNext();
  Result<std::optional<UpdateReport>> r3 = peer.Update(v3);
  ASSERT_TRUE(r3.ok()) << r3.status().ToString();
  ASSERT_TRUE(r3->has_value());
  EXPECT_EQ((*r3)->source, "trainer");
  EXPECT_EQ((*r3)->stats.mode, "delta");
  EXPECT_FALSE((*r3)->relay_error.empty());
  EXPECT_EQ(peer.Versions().at("actor"), 3);
  EXPECT_EQ(std::get<2>(peer_sink.applied.at(1)), v3.digest);
}

// Runs `update` on a thread and advances `clock` by `step` each time the updater sleeps (waits for
// its relay), calling `on_sleep` first; returns the update's result and the time advanced.
template <typename OnSleep>
std::pair<Result<std::optional<UpdateReport>>, Clock::Duration> UpdateAdvancing(
    WeightUpdater& updater, const dataflow::AnnouncedVersion& version, FakeClock& clock,
    Clock::Duration step, OnSleep on_sleep) {
  std::atomic<bool> done{false};
  Result<std::optional<UpdateReport>> result = Status::Unavailable("not run");
  std::thread worker([&] {
    result = updater.Update(version);
    done = true;
  });
  Clock::Duration advanced{0};
  const auto real_limit = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!done && std::chrono::steady_clock::now() < real_limit) {
    if (clock.PendingSleepers() == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    on_sleep();
    clock.Advance(step);
    advanced += step;
  }
  worker.join();
  return {std::move(result), advanced};
}

// Every replica of a region sees an announcement at about the same time: a peer whose relay does
// not hold the version yet waits for it instead of fetching across regions from the trainer, and
// passes the relay over only when it still lacks the version after relay_wait (of its clock).
TEST_F(WeightUpdaterTest, APeerWaitsForItsRelayToGetANewVersion) {
  RecordingSink relay_sink;
  WeightUpdater relay({"actor"}, 0, Options("relay"), &relay_sink, nullptr);
  std::unique_ptr<http::Server> relay_server = StartServer(nullptr, logger_);
  relay.RegisterRoutes(*relay_server);
  ASSERT_TRUE(relay_server->Start().ok());
  const dataflow::AnnouncedVersion v1 = PublishNext();
  ASSERT_TRUE(relay.Update(v1).ok());

  FakeClock clock;
  RecordingSink peer_sink;
  WeightUpdaterOptions options = Options("peer");
  options.relay_wait = std::chrono::seconds(10);
  options.clock = &clock;
  WeightUpdater peer({"actor"}, 0, options, &peer_sink, nullptr);
  peer.SetRelay(relay_server->BaseUrl());
  ASSERT_TRUE(peer.Update(v1).ok());

  // The relay gets version 2 after the peer has asked for it twice.
  const dataflow::AnnouncedVersion v2 = PublishNext();
  int sleeps = 0;
  auto [r, waited] = UpdateAdvancing(peer, v2, clock, std::chrono::milliseconds(100), [&] {
    if (++sleeps == 2) {
      EXPECT_TRUE(relay.Update(v2).ok());
    }
  });
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ((*r)->source, "relay");
  EXPECT_EQ((*r)->relay_error, "");
  EXPECT_EQ(sleeps, 2);
  EXPECT_EQ(waited, std::chrono::milliseconds(200));
  EXPECT_EQ(peer.Versions().at("actor"), 2);

  // A version the relay never gets: the peer asks it again (50 ms doubling to 500 ms) until
  // relay_wait has passed, then the trainer serves it.
  const dataflow::AnnouncedVersion v3 = PublishNext();
  sleeps = 0;
  auto [r3, waited3] =
      UpdateAdvancing(peer, v3, clock, std::chrono::milliseconds(500), [&] { ++sleeps; });
  ASSERT_TRUE(r3.ok()) << r3.status().ToString();
  ASSERT_TRUE(r3->has_value());
  EXPECT_EQ((*r3)->source, "trainer");
  EXPECT_NE((*r3)->relay_error.find("NotFound"), std::string::npos) << (*r3)->relay_error;
  EXPECT_GT(waited3, std::chrono::seconds(9));
  EXPECT_LE(waited3, std::chrono::seconds(10));
  EXPECT_EQ(sleeps, 20);  // 50, 100, 200, 400, then 500 ms up to the 10 s.
  EXPECT_EQ(peer.Versions().at("actor"), 3);
  relay_server->Shutdown();
}

TEST_F(WeightUpdaterTest, FullImagesComeInChunksOfThePolicysSize) {
  RecordingSink sink;
  WeightUpdaterOptions o = Options("a");
  o.chunk_bytes["actor"] = 4096;  // spec.weightSync.chunkSizeMiB, scaled down.
  WeightUpdater updater({"actor"}, 0, o, &sink, nullptr);
  const dataflow::AnnouncedVersion v1 = PublishNext();
  Result<std::optional<UpdateReport>> r1 = updater.Update(v1);
  ASSERT_TRUE(r1.ok()) << r1.status().ToString();
  ASSERT_TRUE(r1->has_value());
  EXPECT_EQ((*r1)->stats.mode, "full");
  const uint64_t size = store_.Full(1)->size_bytes();
  ASSERT_GT(size, 2u * 4096);
  EXPECT_EQ((*r1)->stats.attempts, static_cast<int>((size + 4095) / 4096));
  EXPECT_EQ((*r1)->stats.bytes_transferred, size);
  EXPECT_EQ(std::get<2>(sink.applied.at(0)), v1.digest);

  // A delta is one request.
  Result<std::optional<UpdateReport>> r2 = updater.Update(PublishNext());
  ASSERT_TRUE(r2.ok()) << r2.status().ToString();
  EXPECT_EQ((*r2)->stats.mode, "delta");
  EXPECT_EQ((*r2)->stats.attempts, 1);
}

TEST_F(WeightUpdaterTest, TheRelayKeepsADeltaOnlyWhereTheTrainerDid) {
  RecordingSink relay_sink;
  WeightUpdater relay({"actor"}, 0, Options("relay"), &relay_sink, nullptr);
  std::unique_ptr<http::Server> relay_server = StartServer(nullptr, logger_);
  relay.RegisterRoutes(*relay_server);
  ASSERT_TRUE(relay_server->Start().ok());
  RecordingSink peer_sink;
  WeightUpdater peer({"actor"}, 0, Options("peer"), &peer_sink, nullptr);
  peer.SetRelay(relay_server->BaseUrl());
  auto both = [&](const dataflow::AnnouncedVersion& v) -> std::string {
    Result<std::optional<UpdateReport>> r = relay.Update(v);
    EXPECT_TRUE(r.ok() && r->has_value()) << r.status().ToString();
    Result<std::optional<UpdateReport>> p = peer.Update(v);
    EXPECT_TRUE(p.ok() && p->has_value()) << p.status().ToString();
    if (!p.ok() || !p->has_value()) return "";
    EXPECT_EQ((*p)->source, "relay");
    return (*p)->stats.mode;
  };
  EXPECT_EQ(both(PublishNext()), "full");  // Nothing held yet.
  const dataflow::AnnouncedVersion v2 = PublishNext();
  EXPECT_EQ(v2.delta_base, 1);
  EXPECT_EQ(both(v2), "delta");
  // A version the trainer published without a delta (mode full, or a fullSyncEveryVersions
  // version): the relay has none either, so the peer downloads the full image.
  const dataflow::AnnouncedVersion v3 = PublishNext(/*encode_delta=*/false);
  EXPECT_EQ(v3.delta_base, -1);
  EXPECT_EQ(both(v3), "full");
  EXPECT_EQ(both(PublishNext()), "delta");
  EXPECT_EQ(peer.Versions().at("actor"), 4);
  relay_server->Shutdown();
}

// The trainer's run is over and its pods are gone: a replica created now (no relay, no trainer)
// loads the final version from the copy its dataflow keeps (workers/weights/final_weights.h),
// and, without that copy, says why it cannot.
TEST_F(WeightUpdaterTest, WithTheTrainerGoneTheDataflowsFinalWeightsAreTheSource) {
  const dataflow::AnnouncedVersion v1 = PublishNext();
  const dataflow::AnnouncedVersion v2 = PublishNext();
  std::unique_ptr<http::Server> dataflow_server = StartServer(nullptr, logger_);
  weights::FinalWeights final_weights(
      dir_ + "/final", {"actor"},
      [&](const std::string&) -> Result<std::optional<weights::FinalWeights::Announced>> {
        return std::optional(weights::FinalWeights::Announced{v2.number, v2.digest});
      });
  final_weights.Register(*dataflow_server);
  ASSERT_TRUE(dataflow_server->Start().ok());
  trainer_->Shutdown();

  RecordingSink sink;
  WeightUpdaterOptions o = Options("joiner");
  o.dataflow_url = dataflow_server->BaseUrl();
  WeightUpdater joiner({"actor"}, 0, o, &sink, nullptr);
  Result<std::optional<UpdateReport>> missing = joiner.Update(v2);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("the dataflow's final weights"), std::string::npos)
      << missing.status().ToString();

  ASSERT_TRUE(
      final_weights.Put("actor", v2.number, v2.digest, std::string(store_.Full(v2.number)->image()))
          .ok());
  Result<std::optional<UpdateReport>> loaded = joiner.Update(v2);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_TRUE(loaded->has_value());
  EXPECT_EQ((*loaded)->source, "dataflow");
  EXPECT_EQ((*loaded)->stats.mode, "full");
  EXPECT_EQ(joiner.Versions().at("actor"), v2.number);
  ASSERT_EQ(sink.applied.size(), 1u);
  EXPECT_EQ(std::get<2>(sink.applied[0]), v2.digest);

  // Without the dataflow's URL the trainer's error stands.
  WeightUpdater lone({"actor"}, 0, Options("lone"), &sink, nullptr);
  Result<std::optional<UpdateReport>> refused = lone.Update(v1);
  EXPECT_FALSE(refused.ok());
  dataflow_server->Shutdown();
}

}  // namespace weight_updater_test
}  // namespace sluice::rollout
