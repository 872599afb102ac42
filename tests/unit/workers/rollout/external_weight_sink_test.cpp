// ExternalWeightSink against a stand-in SGLang server (POST /update_weights_from_disk): every
// version is written as a loadable directory on the shared volume before the reload, the server
// is pointed at it, the served version follows, and old versions are pruned.
#include "workers/rollout/external_weight_sink.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/read_file.h"
#include "tests/unit/workers/weights/weight_fixtures.h"

namespace sluice::rollout {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class ExternalWeightSinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sluice-ext-sink-XXXXXX";
    dir_ = mkdtemp(tmpl);
    fs::create_directories(dir_ + "/model");
    std::ofstream(dir_ + "/model/config.json") << R"({"model_type": "qwen2"})";
    std::ofstream(dir_ + "/model/tokenizer.json") << "{}";
    server_.Post(
        "/update_weights_from_disk", [this](const httplib::Request& req, httplib::Response& res) {
          const json body = json::parse(req.body);
          {
            std::lock_guard<std::mutex> lock(mu_);
            paths_.push_back(body.value("model_path", ""));
          }
          const bool ok =
              !fail_.load() && fs::exists(body.value("model_path", "") + "/model.safetensors");
          res.status = ok ? 200 : 400;
          res.set_content(json{{"success", ok}, {"message", ok ? "ok" : "no weights there"}}.dump(),
                          "application/json");
        });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() is a no-op until the accept loop runs; wait for it so teardown cannot hang.
    while (!server_.is_running()) std::this_thread::yield();
    OpenAiBackendOptions o;
    o.base_url = "http://127.0.0.1:" + std::to_string(port_);
    o.flavour = ServerFlavour::kSglang;
    o.served_models["actor"] = dir_ + "/model";
    backend_ = std::move(OpenAiBackend::Create(o)).value();
  }
  void TearDown() override {
    backend_.reset();  // Closes its idle connections, so stop() need not wait for them.
    server_.stop();
    thread_.join();
    fs::remove_all(dir_);
  }

  weights::WeightSnapshot Snapshot(int64_t version) {
    weights::fixtures::Model m = weights::fixtures::RandomModel(static_cast<uint64_t>(version));
    return weights::WeightSnapshot::Build(m.Views(), version).value();
  }

  std::string dir_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::string> paths_;
  std::atomic<bool> fail_{false};
  std::unique_ptr<OpenAiBackend> backend_;
};

TEST_F(ExternalWeightSinkTest, WritesALoadableDirectoryThenReloadsAndPrunes) {
  ExternalWeightSink sink(backend_.get(), dir_ + "/volume", dir_ + "/model", 2);
  for (int64_t v = 1; v <= 3; ++v) {
    const weights::WeightSnapshot s = Snapshot(v);
    ASSERT_TRUE(sink.ApplyWeights("actor", s).ok()) << v;
    const std::string vdir = sink.VersionDir("actor", v);
    EXPECT_EQ(test_support::ReadFileOrEmpty(vdir + "/model.safetensors"), std::string(s.image()));
    EXPECT_EQ(test_support::ReadFileOrEmpty(vdir + "/config.json"), R"({"model_type": "qwen2"})");
    EXPECT_TRUE(fs::exists(vdir + "/tokenizer.json"));
    EXPECT_EQ(backend_->served_version("actor"), v);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ASSERT_EQ(paths_.size(), 3u);
    EXPECT_EQ(paths_[2], sink.VersionDir("actor", 3));
  }
  EXPECT_FALSE(fs::exists(sink.VersionDir("actor", 1)));  // keep 2.
  EXPECT_TRUE(fs::exists(sink.VersionDir("actor", 2)));
  EXPECT_FALSE(fs::exists(sink.VersionDir("actor", 3) + ".tmp"));
}

TEST_F(ExternalWeightSinkTest, AFailedReloadKeepsTheServedVersion) {
  ExternalWeightSink sink(backend_.get(), dir_ + "/volume", dir_ + "/model", 2);
  ASSERT_TRUE(sink.ApplyWeights("actor", Snapshot(1)).ok());
  fail_ = true;
  Status s = sink.ApplyWeights("actor", Snapshot(2));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no weights there"), std::string::npos) << s.ToString();
  EXPECT_EQ(backend_->served_version("actor"), 1);
}

}  // namespace
}  // namespace sluice::rollout
