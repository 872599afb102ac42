// FinalWeights: which uploads the dataflow keeps (table), that a kept image survives a restart,
// and the PUT/GET routes over real HTTP.
#include "workers/weights/final_weights.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>

#include "common/file/atomic_file.h"
#include "common/http/client.h"
#include "common/http/server.h"
#include "common/logging/logger.h"
#include "tests/support/test_client.h"
#include "tests/unit/workers/weights/weight_fixtures.h"
#include "workers/dataflow/client/dataflow_client.h"
#include "workers/weights/weight_snapshot.h"

namespace sluice::weights {
namespace final_weights_test {

using Announced = FinalWeights::Announced;

class FinalWeightsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sluice-final-XXXXXX";
    dir_ = std::string(mkdtemp(tmpl)) + "/final-weights";
    model_ = fixtures::RandomModel(11);
    v3_ = WeightSnapshot::Build(model_.Views(), 3).value();
    v4_ = WeightSnapshot::Build(model_.Views(), 4).value();
    announced_ = Announced{3, v3_->digest()};
  }
  void TearDown() override {
    std::filesystem::remove_all(std::filesystem::path(dir_).parent_path());
  }

  std::unique_ptr<FinalWeights> Make() {
    return std::make_unique<FinalWeights>(
        dir_, std::vector<std::string>{"actor", "critic"},
        [this](const std::string& policy) -> Result<std::optional<Announced>> {
          if (recovering_) return Status::Unavailable("the dataflow is recovering");
          if (policy != "actor" || !announced_) return std::optional<Announced>();
          return announced_;
        });
  }
  std::string Image(const std::optional<WeightSnapshot>& s) const {
    return std::string(s->image());
  }

  std::string dir_;
  fixtures::Model model_;
  std::optional<WeightSnapshot> v3_;
  std::optional<WeightSnapshot> v4_;
  std::optional<Announced> announced_;
  bool recovering_ = false;
};

TEST_F(FinalWeightsTest, KeepsOnlyTheNewestAnnouncedVersionWithItsDigest) {
  struct Case {
    std::string name;
    std::string policy;
    int64_t version;
    std::string digest;  // "=" stands for v3's digest.
    std::string image;   // "v3", "v4" or literal bytes.
    bool recovering;
    bool announced;
    StatusCode code;
    std::string field;
  };
  const std::vector<Case> cases = {
      {"unknown policy", "other", 3, "=", "v3", false, true, StatusCode::kNotFound, ""},
      {"no digest", "actor", 3, "", "v3", false, true, StatusCode::kInvalidArgument,
       "X-Sluice-Weights-Digest"},
      {"recovering", "actor", 3, "=", "v3", true, true, StatusCode::kUnavailable, ""},
      {"nothing announced", "critic", 3, "=", "v3", false, true, StatusCode::kConflict, ""},
      {"nothing announced yet", "actor", 3, "=", "v3", false, false, StatusCode::kConflict, ""},
      {"older version", "actor", 2, "=", "v3", false, true, StatusCode::kConflict, ""},
      {"another digest", "actor", 3, "sha256:00", "v3", false, true, StatusCode::kConflict, ""},
      {"image of another version", "actor", 3, "=", "v4", false, true, StatusCode::kInvalidArgument,
       "digest"},
      {"not an image", "actor", 3, "=", "not safetensors", false, true,
       StatusCode::kInvalidArgument, "digest"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    recovering_ = c.recovering;
    announced_ = c.announced ? std::optional(Announced{3, v3_->digest()}) : std::nullopt;
    std::unique_ptr<FinalWeights> final_weights = Make();
    const std::string image = c.image == "v3" ? Image(v3_) : c.image == "v4" ? Image(v4_) : c.image;
    Result<bool> put =
        final_weights->Put(c.policy, c.version, c.digest == "=" ? v3_->digest() : c.digest, image);
    ASSERT_FALSE(put.ok());
    EXPECT_EQ(put.status().code(), c.code) << put.status().ToString();
    EXPECT_EQ(put.status().field(), c.field) << put.status().ToString();
    EXPECT_EQ(final_weights->Held(c.policy), std::nullopt);
    EXPECT_FALSE(std::filesystem::exists(dir_ + "/" + c.policy + ".safetensors"));
  }
}

TEST_F(FinalWeightsTest, AnAcceptedImageIsDurableAndAcceptedOnceAtItsVersion) {
  std::unique_ptr<FinalWeights> final_weights = Make();
  Result<bool> put = final_weights->Put("actor", 3, v3_->digest(), Image(v3_));
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  EXPECT_TRUE(*put);
  EXPECT_EQ(final_weights->Held("actor"), 3);
  Result<bool> again = final_weights->Put("actor", 3, v3_->digest(), Image(v3_));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_FALSE(*again);

  // A restart reads it back; a temporary file of an interrupted write is removed.
  const std::string leftover = dir_ + "/actor.safetensors.tmp-1-0";
  std::ofstream(leftover) << "partial";
  ASSERT_TRUE(file::IsAtomicWriteTemp(std::filesystem::path(leftover).filename().string()));
  std::unique_ptr<FinalWeights> restarted = Make();
  EXPECT_EQ(restarted->Held("actor"), std::nullopt);
  ASSERT_TRUE(restarted->Load().ok());
  EXPECT_EQ(restarted->Held("actor"), 3);
  EXPECT_EQ(restarted->Held("critic"), std::nullopt);
  EXPECT_FALSE(std::filesystem::exists(leftover));

  // The next run of the policy announces version 4: it replaces version 3.
  announced_ = Announced{4, v4_->digest()};
  Result<bool> next = restarted->Put("actor", 4, v4_->digest(), Image(v4_));
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(restarted->Held("actor"), 4);
}

TEST_F(FinalWeightsTest, ADamagedFileIsReportedAndTheOthersStillLoad) {
  std::filesystem::create_directories(dir_);
  ASSERT_TRUE(file::WriteFileAtomic(dir_ + "/actor.safetensors", Image(v3_)).ok());
  ASSERT_TRUE(file::WriteFileAtomic(dir_ + "/critic.safetensors", "garbage").ok());
  std::unique_ptr<FinalWeights> final_weights = Make();
  Status loaded = final_weights->Load();
  EXPECT_FALSE(loaded.ok());
  EXPECT_NE(loaded.message().find("critic.safetensors"), std::string::npos) << loaded.ToString();
  EXPECT_EQ(final_weights->Held("actor"), 3);
  EXPECT_EQ(final_weights->Held("critic"), std::nullopt);
}

TEST_F(FinalWeightsTest, RoutesAcceptTheUploadAndServeTheImage) {
  log::Logger logger("test");
  http::ServerOptions so;
  so.access_log = false;
  so.max_body_bytes = v3_->size_bytes() + 1024;
  so.shutdown_grace = std::chrono::milliseconds(500);
  http::Server server(so, nullptr, logger);
  std::unique_ptr<FinalWeights> final_weights = Make();
  final_weights->Register(server);
  ASSERT_TRUE(server.Start().ok());
  std::unique_ptr<http::Client> client = ::sluice::test_support::TestClient(server.BaseUrl());

  auto put = [&](const std::string& path, const std::string& digest, std::string body) {
    http::Request req;
    req.method = "PUT";
    req.path = path;
    if (!digest.empty()) req.headers.emplace("X-Sluice-Weights-Digest", digest);
    req.body = std::move(body);
    req.content_type = "application/octet-stream";
    return client->Send(std::move(req)).value();
  };
  EXPECT_EQ(client->Get("/v1/final/actor/v1/weights/3").value().status, 404);
  EXPECT_EQ(put("/v1/final/actor/v1/weights/x", v3_->digest(), Image(v3_)).status, 400);
  http::Response conflict = put("/v1/final/actor/v1/weights/2", v3_->digest(), Image(v3_));
  EXPECT_EQ(conflict.status, 409);
  EXPECT_NE(conflict.body.find("not the newest announced version"), std::string::npos)
      << conflict.body;
  EXPECT_EQ(put("/v1/final/actor/v1/weights/3", v3_->digest(), Image(v3_) + std::string(2048, 'x'))
                .status,
            413);

  http::Response created = put("/v1/final/actor/v1/weights/3", v3_->digest(), Image(v3_));
  EXPECT_EQ(created.status, 201) << created.body;
  EXPECT_NE(created.body.find("\"created\":true"), std::string::npos) << created.body;
  EXPECT_EQ(put("/v1/final/actor/v1/weights/3", v3_->digest(), Image(v3_)).status, 200);

  http::Response image = client->Get("/v1/final/actor/v1/weights/3").value();
  EXPECT_EQ(image.status, 200);
  EXPECT_EQ(image.body, Image(v3_));
  EXPECT_EQ(image.Header("X-Sluice-Weights-Digest"), v3_->digest());
  EXPECT_EQ(client->Get("/v1/final/actor/v1/weights/3/delta?from=2").value().status, 409);
  server.Shutdown();
}

TEST_F(FinalWeightsTest, PartsInOrderMakeTheImageAndRetriedPartsAreAnswered) {
  std::unique_ptr<FinalWeights> final_weights = Make();
  const std::string image = Image(v3_);
  const uint64_t size = image.size();
  const uint64_t third = size / 3;
  auto part = [&](uint64_t offset, uint64_t n, std::string digest = "") {
    return final_weights->PutPart("actor", 3, digest.empty() ? v3_->digest() : digest, size, offset,
                                  std::string_view(image).substr(offset, n));
  };

  // The checks of a whole upload, and the part's own.
  EXPECT_EQ(part(0, third, "sha256:other").status().code(), StatusCode::kConflict);
  Result<FinalWeights::PartProgress> past =
      final_weights->PutPart("actor", 3, v3_->digest(), size, size - 1, "xy");
  EXPECT_EQ(past.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(past.status().field(), "offset");
  Result<FinalWeights::PartProgress> no_size =
      final_weights->PutPart("actor", 3, v3_->digest(), 0, 0, "");
  EXPECT_EQ(no_size.status().field(), "X-Sluice-Weights-Size");
  EXPECT_EQ(part(third, third).status().code(), StatusCode::kConflict);  // Nothing under way.

  Result<FinalWeights::PartProgress> first = part(0, third);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->received, third);
  EXPECT_FALSE(first->created.has_value());
  Result<FinalWeights::PartProgress> skipped = part(2 * third, size - 2 * third);
  EXPECT_EQ(skipped.status().code(), StatusCode::kConflict);
  EXPECT_NE(skipped.status().message().find(std::to_string(third) + " bytes received"),
            std::string::npos)
      << skipped.status().ToString();
  ASSERT_TRUE(part(third, third).ok());
  Result<FinalWeights::PartProgress> again = part(third, third);  // A retried part.
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->received, 2 * third);
  EXPECT_EQ(final_weights->Held("actor"), std::nullopt);

  Result<FinalWeights::PartProgress> last = part(2 * third, size - 2 * third);
  ASSERT_TRUE(last.ok()) << last.status().ToString();
  EXPECT_EQ(last->received, size);
  EXPECT_EQ(last->created, true);
  EXPECT_EQ(final_weights->Held("actor"), 3);
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/actor.upload"));
  EXPECT_EQ(part(2 * third, size - 2 * third)->created, false);  // The last part again.
  EXPECT_EQ(part(0, third)->created, false);                     // Held: nothing to send.

  // A restart reads it back.
  std::unique_ptr<FinalWeights> restarted = Make();
  ASSERT_TRUE(restarted->Load().ok());
  EXPECT_EQ(restarted->Held("actor"), 3);
}

TEST_F(FinalWeightsTest, ADamagedPartStoresNothingAndARestartDropsAnUnfinishedUpload) {
  std::unique_ptr<FinalWeights> final_weights = Make();
  std::string image = Image(v3_);
  image[image.size() - 1] ^= 0x5a;  // A tensor byte: the digest no longer matches.
  const uint64_t half = image.size() / 2;
  ASSERT_TRUE(final_weights
                  ->PutPart("actor", 3, v3_->digest(), image.size(), 0,
                            std::string_view(image).substr(0, half))
                  .ok());
  Result<FinalWeights::PartProgress> last = final_weights->PutPart(
      "actor", 3, v3_->digest(), image.size(), half, std::string_view(image).substr(half));
  EXPECT_EQ(last.status().code(), StatusCode::kInvalidArgument) << last.status().ToString();
  EXPECT_EQ(final_weights->Held("actor"), std::nullopt);
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/actor.upload"));

  // An upload a restart cut short is dropped: its sender got no answer and starts over.
  ASSERT_TRUE(final_weights
                  ->PutPart("actor", 3, v3_->digest(), image.size(), 0,
                            std::string_view(image).substr(0, half))
                  .ok());
  ASSERT_TRUE(std::filesystem::exists(dir_ + "/actor.upload"));
  std::unique_ptr<FinalWeights> restarted = Make();
  ASSERT_TRUE(restarted->Load().ok());
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/actor.upload"));
  EXPECT_EQ(restarted
                ->PutPart("actor", 3, v3_->digest(), image.size(), half,
                          std::string_view(image).substr(half))
                .status()
                .code(),
            StatusCode::kConflict);
}

// DataflowClient::PutFinalWeights over HTTP: an image larger than the server's body cap goes in
// parts, halved until they fit.
TEST_F(FinalWeightsTest, TheClientSendsAnImageOverTheBodyCapInParts) {
  std::mt19937_64 rng(5);
  fixtures::Model big;
  big.tensors.push_back(fixtures::RandomTensor("w", model::DType::kF32, {512, 256}, rng));
  const WeightSnapshot v3 = WeightSnapshot::Build(big.Views(), 3).value();
  announced_ = Announced{3, v3.digest()};
  const std::string image(v3.image());
  ASSERT_GT(image.size(), size_t{512} << 10);

  log::Logger logger("test");
  http::ServerOptions so;
  so.access_log = false;
  so.max_body_bytes = size_t{128} << 10;
  so.shutdown_grace = std::chrono::milliseconds(500);
  http::Server server(so, nullptr, logger);
  std::unique_ptr<FinalWeights> final_weights = Make();
  final_weights->Register(server);
  ASSERT_TRUE(server.Start().ok());
  dataflow::DataflowClient client(
      std::shared_ptr<http::Client>(::sluice::test_support::TestClient(server.BaseUrl())));

  Result<bool> stored = client.PutFinalWeights("actor", 3, v3.digest(), image);
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_TRUE(*stored);
  EXPECT_EQ(final_weights->Held("actor"), 3);
  Result<bool> again = client.PutFinalWeights("actor", 3, v3.digest(), image, size_t{100} << 10);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_FALSE(*again);

  // The served image is the one sent.
  std::unique_ptr<http::Client> reader = ::sluice::test_support::TestClient(server.BaseUrl());
  http::Response served = reader->Get("/v1/final/actor/v1/weights/3").value();
  EXPECT_EQ(served.status, 200);
  EXPECT_EQ(served.body, image);
  // A conflict is the dataflow's error, not retried in smaller parts.
  Result<bool> wrong = client.PutFinalWeights("actor", 2, v3.digest(), image);
  EXPECT_EQ(wrong.status().code(), StatusCode::kConflict) << wrong.status().ToString();
  server.Shutdown();
}

}  // namespace final_weights_test
}  // namespace sluice::weights
