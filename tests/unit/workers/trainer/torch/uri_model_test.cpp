// A Policy whose model is spec.model.source.uri, as both workers start it: resolved to its cache
// entry (ResolveModelSource), downloaded (FetchModelSource) from a local HTTP server serving
// directories the project's exporter wrote (DecoderModel::SaveHf: one file, and shards with an
// index), then loaded exactly as the path source of the same directory; a second start makes no
// request; a missing weights file is an error naming the URL and the field.
#include <gtest/gtest.h>
#include <httplib.h>
#include <stdlib.h>
#include <torch/torch.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "workers/model/nn/decoder_model.h"
#include "workers/model/policy_model.h"

namespace sluice::trainer {
namespace uri_model_test {

namespace fs = std::filesystem;
using model::DecoderModel;
using model::FetchModelSource;
using model::ModelSource;
using model::ResolveModelSource;
using model::ResolveTextSettings;
using model::TextSettings;

constexpr const char* kModel = "builtin:tiny?layers=1&d=32&heads=2&ff=64&max_pos=128&seed=5";

class UriModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sluice-uri-model-XXXXXX";
    root_ = mkdtemp(tmpl);
    served_ = root_ / "served";
    cache_ = (root_ / "cache").string();
    Result<DecoderModel> m = DecoderModel::FromBuiltin(kModel);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    // A tokenizer file to carry along (its content does not matter here).
    std::ofstream(root_ / "tokenizer.json") << R"({"model": {"type": "BPE"}})";
    DecoderModel::SaveHfOptions one;
    one.extra_files = {(root_ / "tokenizer.json").string()};
    ASSERT_TRUE(m->SaveHf((served_ / "one").string(), one).ok());
    DecoderModel::SaveHfOptions sharded;
    sharded.max_shard_bytes = 4096;
    ASSERT_TRUE(m->SaveHf((served_ / "sharded").string(), sharded).ok());

    server_.set_pre_routing_handler([this](const httplib::Request&, httplib::Response&) {
      ++requests_;
      return httplib::Server::HandlerResponse::Unhandled;
    });
    server_.set_mount_point("/hf", served_.string());
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() is a no-op until the accept loop runs; wait for it so teardown cannot hang.
    while (!server_.is_running()) std::this_thread::yield();
  }
  void TearDown() override {
    server_.stop();
    if (thread_.joinable()) thread_.join();
    fs::remove_all(root_);
  }

  std::string Url(const std::string& name) const {
    return "http://127.0.0.1:" + std::to_string(port_) + "/hf/" + name;
  }

  // What a worker does with the Policy's source before it loads the model.
  Result<ModelSource> Start(const std::string& uri, api::PolicySpecTokenizer tokenizer = {}) {
    api::PolicySpecModelSource src;
    src.uri = uri;
    SLUICE_ASSIGN_OR_RETURN(ModelSource source, ResolveModelSource("actor", src, cache_));
    SLUICE_ASSIGN_OR_RETURN(TextSettings text, ResolveTextSettings(source, tokenizer));
    SLUICE_ASSIGN_OR_RETURN(last_, FetchModelSource(source, text.tokenizer_file));
    return source;
  }

  fs::path root_;
  fs::path served_;
  std::string cache_;
  model::ModelDownload last_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<int> requests_{0};
};

void ExpectSameModel(const DecoderModel& a, const DecoderModel& b) {
  EXPECT_EQ(a.config(), b.config());
  auto pa = a.NamedParameters();
  auto pb = b.NamedParameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_EQ(pa[i].first, pb[i].first);
    EXPECT_TRUE(torch::equal(pa[i].second, pb[i].second)) << pa[i].first;
  }
}

TEST_F(UriModelTest, LoadsExactlyAsThePathSourceOfTheSameDirectory) {
  size_t shards = 0;
  for (const auto& e : fs::directory_iterator(served_ / "sharded")) {
    shards += e.path().extension() == ".safetensors" ? 1 : 0;
  }
  ASSERT_GE(shards, 2u);  // The sharded layout really has several files.
  for (const char* name : {"one", "sharded"}) {
    Result<ModelSource> source = Start(Url(name));
    ASSERT_TRUE(source.ok()) << name << ": " << source.status().ToString();
    EXPECT_FALSE(last_.reused);
    EXPECT_EQ(source->directory.rfind(cache_ + "/", 0), 0u) << source->directory;
    Result<DecoderModel> from_uri = DecoderModel::LoadHf(source->directory);
    ASSERT_TRUE(from_uri.ok()) << name << ": " << from_uri.status().ToString();

    api::PolicySpecModelSource path;
    path.path = (served_ / name).string();
    Result<ModelSource> local = ResolveModelSource("actor", path);
    ASSERT_TRUE(local.ok());
    Result<DecoderModel> from_path = DecoderModel::LoadHf(local->directory);
    ASSERT_TRUE(from_path.ok()) << from_path.status().ToString();
    ExpectSameModel(*from_uri, *from_path);
  }
  // The tokenizer came along where the text settings look for it.
  EXPECT_TRUE(fs::exists(model::ModelCacheDir(cache_, Url("one")) + "/tokenizer.json"));
}

TEST_F(UriModelTest, ASecondStartReusesTheCacheWithoutRequests) {
  ASSERT_TRUE(Start(Url("sharded")).ok());
  const int after_first = requests_.load();
  EXPECT_GT(after_first, 0);
  Result<ModelSource> again = Start(Url("sharded") + "/");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(last_.reused);
  EXPECT_EQ(requests_.load(), after_first);
  EXPECT_TRUE(DecoderModel::LoadHf(again->directory).ok());
}

TEST_F(UriModelTest, TheTokenizerPathIsFetchedToo) {
  fs::create_directories(served_ / "one" / "tok");
  fs::copy_file(served_ / "one" / "tokenizer.json", served_ / "one" / "tok" / "tokenizer.json");
  api::PolicySpecTokenizer tokenizer;
  tokenizer.path = "tok/tokenizer.json";
  Result<ModelSource> source = Start(Url("one"), tokenizer);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  EXPECT_TRUE(fs::exists(source->directory + "/tok/tokenizer.json"));
}

TEST_F(UriModelTest, AMissingWeightsFileIsAnErrorNamingTheUrlAndTheField) {
  fs::remove(served_ / "one" / "model.safetensors");
  Result<ModelSource> source = Start(Url("one"));
  ASSERT_FALSE(source.ok());
  EXPECT_EQ(source.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(source.status().field(), "spec.model.source.uri");
  EXPECT_NE(source.status().message().find(Url("one") + "/model.safetensors"), std::string::npos)
      << source.status().ToString();
  EXPECT_FALSE(fs::exists(model::ModelCacheDir(cache_, Url("one"))));
}

}  // namespace uri_model_test
}  // namespace sluice::trainer
