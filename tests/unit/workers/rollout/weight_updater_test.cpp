// WeightUpdater over real HTTP: a "trainer" (WeightStore + WeightRoutes on an in-process server)
// publishes versions; updaters fetch them full, then as deltas, through a relay replica and,
// once the relay is gone, from the trainer again.
#include "workers/rollout/weight_updater.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/http/server.h"
#include "common/logging/logger.h"
#include "common/metrics/registry.h"
#include "tests/unit/workers/weights/weight_fixtures.h"

namespace sluice::rollout {
namespace {

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

// A server with bearer auth on a free loopback port.
std::unique_ptr<http::Server> StartServer(metrics::Registry* registry, const log::Logger& logger) {
  http::ServerOptions so;
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

  // Publishes the next version (1% of the elements changed) and returns its announcement.
  dataflow::AnnouncedVersion PublishNext() {
    ++version_;
    if (version_ > 1) weights::fixtures::Perturb(model_, 0.01, rng_);
    EXPECT_TRUE(store_.Publish(model_.Views(), version_).ok());
    dataflow::AnnouncedVersion a;
    a.policy = "actor";
    a.number = version_;
    a.url = trainer_->BaseUrl() + "/v1/weights/" + std::to_string(version_);
    a.digest = store_.Digest(version_).value();
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

}  // namespace
}  // namespace sluice::rollout
