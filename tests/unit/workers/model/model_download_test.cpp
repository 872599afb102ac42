// Model downloads (spec.model.source.uri): the list of files a directory needs (table), URL
// checks, cache naming, and downloads from a local HTTP server serving HF directories (one
// model.safetensors, and shards with an index): what is fetched, that the result opens with the
// loaders' readers, cache reuse without requests, 404s on required and optional files,
// redirects, resuming a crashed download, a foreign directory, cancellation and two concurrent
// callers sharing one download.
#include "workers/model/model_download.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/read_file.h"
#include "tests/support/temp_dir.h"
#include "workers/model/model_config.h"
#include "workers/model/safetensors.h"

namespace sluice::model {
namespace {

namespace fs = std::filesystem;

void WriteFile(const fs::path& path, std::string_view text) {
  std::ofstream(path, std::ios::binary) << text;
}

// A directory of this test's own, removed with everything in it.
class TempDir : public ::sluice::test_support::TempDir {
 public:
  TempDir() : ::sluice::test_support::TempDir("sluice_model_download_test") {}
};

// Tensors of a few hundred bytes each, so a small shard limit gives several shards.
struct Tensors {
  std::vector<std::vector<float>> data;
  std::vector<TensorView> views;
};
Tensors MakeTensors() {
  Tensors t;
  const std::vector<std::string> names = {"model.embed_tokens.weight", "model.norm.weight",
                                          "lm_head.weight"};
  for (size_t i = 0; i < names.size(); ++i) {
    std::vector<float> v(64);
    for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<float>(i * 100 + k) / 7.0f;
    t.data.push_back(std::move(v));
  }
  for (size_t i = 0; i < names.size(); ++i) {
    TensorView view;
    view.name = names[i];
    view.dtype = DType::kF32;
    view.shape = {8, 8};
    view.data = std::as_bytes(std::span<const float>(t.data[i]));
    t.views.push_back(std::move(view));
  }
  return t;
}

std::string ConfigJson() {
  Result<BuiltinModelSpec> spec = ParseBuiltinModel("builtin:tiny?layers=1&d=32&heads=2");
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  return ToHfConfig(spec->config).dump(2);
}

// A local server: /models/<dir>/<file> from `root` (Range supported), /moved/<path> redirecting
// to /models/<path>, and a log of every request.
class ModelServer {
 public:
  explicit ModelServer(const fs::path& root) {
    server_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response&) {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(req.path + (req.has_header("Range")
                                          ? " Range:" + req.get_header_value("Range")
                                          : std::string()));
      return httplib::Server::HandlerResponse::Unhandled;
    });
    server_.set_mount_point("/models", root.string());
    server_.Get("/moved/(.*)", [](const httplib::Request& req, httplib::Response& res) {
      res.set_redirect("/models/" + req.matches[1].str(), 302);
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() is a no-op until the accept loop runs; wait for it so teardown cannot hang (a test
    // that returned at once, with a cancelled token, hung its destructor once in CI).
    while (!server_.is_running()) std::this_thread::yield();
  }
  ~ModelServer() {
    server_.stop();
    thread_.join();
  }

  std::string Url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  std::vector<std::string> Requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  // Requests of exactly `entry`: a path, with " Range:<value>" when one was asked for.
  size_t Count(const std::string& entry) {
    size_t n = 0;
    for (const std::string& r : Requests()) n += r == entry ? 1 : 0;
    return n;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::string> requests_;
};

class ModelDownloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tensors_ = MakeTensors();
    const fs::path single = served_.path() / "single";
    fs::create_directories(single);
    WriteFile(single / "config.json", ConfigJson());
    ASSERT_TRUE(WriteSafetensors((single / "model.safetensors").string(), tensors_.views).ok());
    WriteFile(single / "tokenizer.json", R"({"model": {"type": "BPE"}})");
    WriteFile(single / "generation_config.json", R"({"do_sample": true})");
    WriteFile(single / "README.md", "not fetched");
    const fs::path sharded = served_.path() / "sharded";
    fs::create_directories(sharded);
    WriteFile(sharded / "config.json", ConfigJson());
    ASSERT_TRUE(WriteSharded(sharded.string(), tensors_.views, 300).ok());
  }

  std::string Entry(const std::string& name) const { return (cache_.path() / name).string(); }

  Tensors tensors_;
  TempDir served_;
  TempDir cache_;
  ModelServer server_{served_.path()};
};

TEST(ModelFilesToFetchTest, ListsWhatTheLoadersRead) {
  std::vector<ModelFile> optional;
  for (std::string_view name : kOptionalModelFiles) optional.push_back({std::string(name), false});
  auto with_optional = [&](std::vector<ModelFile> head, std::vector<ModelFile> tail = {}) {
    head.insert(head.end(), optional.begin(), optional.end());
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
  };
  struct Case {
    const char* name;
    std::optional<std::string> index;
    std::vector<std::string> extra;
    std::vector<ModelFile> want;
  };
  const std::vector<Case> cases = {
      {"one file",
       std::nullopt,
       {},
       with_optional({{"config.json", true}, {"model.safetensors", true}})},
      {"shards in name order, each once",
       R"({"metadata": {"total_size": 12}, "weight_map": {"b": "model-00002-of-00002.safetensors",
           "a": "model-00001-of-00002.safetensors", "c": "model-00002-of-00002.safetensors"}})",
       {},
       with_optional({{"config.json", true},
                      {"model.safetensors.index.json", true},
                      {"model-00001-of-00002.safetensors", true},
                      {"model-00002-of-00002.safetensors", true}})},
      {"an empty weight map",
       R"({"weight_map": {}})",
       {},
       with_optional({{"config.json", true}, {"model.safetensors.index.json", true}})},
      {"spec.tokenizer.path",
       std::nullopt,
       {"tok/tokenizer.json", "tokenizer.json"},
       with_optional({{"config.json", true}, {"model.safetensors", true}},
                     {{"tok/tokenizer.json", false}})},
  };
  for (const Case& c : cases) {
    Result<std::vector<ModelFile>> got = ModelFilesToFetch(c.index, c.extra);
    ASSERT_TRUE(got.ok()) << c.name << ": " << got.status().ToString();
    EXPECT_EQ(*got, c.want) << c.name;
  }

  struct Bad {
    std::optional<std::string> index;
    std::vector<std::string> extra;
    StatusCode code;
    std::string field;
  };
  const std::vector<Bad> bad = {
      {"[1, 2]", {}, StatusCode::kCorruption, ""},
      {"not json", {}, StatusCode::kCorruption, ""},
      {R"({"metadata": {}})", {}, StatusCode::kCorruption, "weight_map"},
      {R"({"weight_map": ["a"]})", {}, StatusCode::kCorruption, "weight_map"},
      {R"({"weight_map": {"a": "../x.safetensors"}})", {}, StatusCode::kCorruption, "weight_map.a"},
      {R"({"weight_map": {"a": "sub/x.safetensors"}})",
       {},
       StatusCode::kCorruption,
       "weight_map.a"},
      {R"({"weight_map": {"a": 3}})", {}, StatusCode::kCorruption, "weight_map.a"},
      {R"({"weight_map": {"a": ".sluice-download.json"}})",
       {},
       StatusCode::kCorruption,
       "weight_map.a"},
      {std::nullopt, {"../tokenizer.json"}, StatusCode::kInvalidArgument, ""},
      {std::nullopt, {"/etc/passwd"}, StatusCode::kInvalidArgument, ""},
      {std::nullopt, {"tok//tokenizer.json"}, StatusCode::kInvalidArgument, ""},
  };
  for (const Bad& b : bad) {
    Result<std::vector<ModelFile>> got = ModelFilesToFetch(b.index, b.extra);
    const std::string what = b.index.value_or("") + (b.extra.empty() ? "" : b.extra[0]);
    ASSERT_FALSE(got.ok()) << what;
    EXPECT_EQ(got.status().code(), b.code) << what << ": " << got.status().ToString();
    EXPECT_EQ(got.status().field(), b.field) << what << ": " << got.status().ToString();
  }
}

TEST(ModelUriTest, OnlyHttpUrlsOfADirectory) {
  for (const char* ok : {"http://host/m", "https://host:8443/org/model/resolve/main/",
                         "http://127.0.0.1:9/m", "https://[::1]/m"}) {
    EXPECT_TRUE(CheckModelUri(ok).ok()) << ok << ": " << CheckModelUri(ok).ToString();
  }
  for (const char* bad : {"", "hf://Qwen/Qwen3-0.6B", "s3://bucket/m", "gs://b/m", "ftp://h/m",
                          "HTTPS://host/m", "https://host/m?revision=main", "https://host/m#x",
                          "https://user@host/m", "https:///m", "/models/m"}) {
    const Status s = CheckModelUri(bad);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(s.field(), "spec.model.source.uri") << bad;
  }
}

TEST(ModelUriTest, CacheEntriesAreNamedByTheUrl) {
  const std::string a = ModelCacheDir("/cache", "https://host/m");
  EXPECT_EQ(a, ModelCacheDir("/cache/", "https://host/m/"));  // Trailing slashes do not count.
  EXPECT_NE(a, ModelCacheDir("/cache", "https://host/n"));
  EXPECT_NE(a, ModelCacheDir("/cache", "http://host/m"));
  ASSERT_EQ(a.size(), std::string("/cache/").size() + 32) << a;
  EXPECT_EQ(a.rfind("/cache/", 0), 0u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef", 7), std::string::npos) << a;
  EXPECT_TRUE(DefaultModelCacheRoot().ends_with("/sluice-models")) << DefaultModelCacheRoot();
}

TEST_F(ModelDownloadTest, FetchesExactlyTheFilesTheLoadersReadAndTheyOpen) {
  std::vector<std::string> reported;
  ModelDownloadOptions options;
  options.on_file = [&](const std::string& name, uint64_t bytes) {
    reported.push_back(name);
    EXPECT_EQ(bytes, fs::file_size(served_.path() / "single" / name)) << name;
  };
  const std::string dir = Entry("single");
  Result<ModelDownload> got = DownloadModelDirectory(server_.Url("/models/single"), dir, options);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_FALSE(got->reused);
  EXPECT_EQ(got->directory, dir);
  EXPECT_EQ(reported, (std::vector<std::string>{"config.json", "model.safetensors",
                                                "tokenizer.json", "generation_config.json"}));
  EXPECT_EQ(got->files, 4);
  uint64_t bytes = 0;
  for (const std::string& name : reported) {
    EXPECT_EQ(test_support::ReadFileOrEmpty(fs::path(dir) / name),
              test_support::ReadFileOrEmpty(served_.path() / "single" / name))
        << name;
    bytes += fs::file_size(fs::path(dir) / name);
  }
  EXPECT_EQ(got->bytes, bytes);
  EXPECT_FALSE(fs::exists(fs::path(dir) / "README.md"));  // Nothing the loaders do not read.
  // The index was asked for (404) and so was every optional file; nothing else.
  EXPECT_EQ(server_.Count("/models/single/model.safetensors.index.json"), 1u);
  EXPECT_EQ(server_.Requests().size(), 3 + std::size(kOptionalModelFiles));
  // What LoadHf reads opens.
  EXPECT_TRUE(LoadHfConfig(dir).ok());
  Result<ShardedCheckpoint> ckpt = ShardedCheckpoint::Open(dir);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().ToString();
  EXPECT_EQ(ckpt->size(), tensors_.views.size());
  // Only the entry is left in the cache root: no .partial, no lock, no .part file.
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(cache_.path())) {
    left.push_back(e.path().filename().string());
  }
  EXPECT_EQ(left, std::vector<std::string>{"single"});
  for (const auto& e : fs::directory_iterator(dir)) {
    EXPECT_FALSE(e.path().string().ends_with(".part")) << e.path();
  }
}

TEST_F(ModelDownloadTest, ShardsNamedByTheIndexAreFetched) {
  const std::string dir = Entry("sharded");
  Result<ModelDownload> got = DownloadModelDirectory(server_.Url("/models/sharded/"), dir);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  size_t shards = 0;
  for (const auto& e : fs::directory_iterator(served_.path() / "sharded")) {
    const std::string name = e.path().filename().string();
    EXPECT_EQ(test_support::ReadFileOrEmpty(fs::path(dir) / name),
              test_support::ReadFileOrEmpty(e.path()))
        << name;
    shards += name.ends_with(".safetensors") ? 1 : 0;
  }
  EXPECT_GE(shards, 2u);
  EXPECT_EQ(server_.Count("/models/sharded/model.safetensors"), 0u);  // The index decides.
  EXPECT_EQ(server_.Count("/models/sharded/model.safetensors.index.json"), 1u);
  Result<ShardedCheckpoint> ckpt = ShardedCheckpoint::Open(dir);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().ToString();
  for (const TensorView& want : tensors_.views) {
    Result<TensorView> t = ckpt->Get(want.name);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    ASSERT_EQ(t->data.size(), want.data.size());
    EXPECT_EQ(std::memcmp(t->data.data(), want.data.data(), want.data.size()), 0) << want.name;
  }
}

TEST_F(ModelDownloadTest, ACompleteEntryIsReusedWithoutARequest) {
  const std::string uri = server_.Url("/models/single");
  ASSERT_TRUE(DownloadModelDirectory(uri, Entry("m")).ok());
  const size_t requests = server_.Requests().size();
  Result<ModelDownload> again = DownloadModelDirectory(uri + "/", Entry("m"));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->reused);
  EXPECT_EQ(again->files, 0);
  EXPECT_EQ(again->bytes, 0u);
  EXPECT_EQ(server_.Requests().size(), requests);
}

TEST_F(ModelDownloadTest, AMissingRequiredFileNamesTheUrlAndTheField) {
  fs::remove(served_.path() / "single" / "config.json");
  const std::string uri = server_.Url("/models/single");
  Result<ModelDownload> got = DownloadModelDirectory(uri, Entry("m"));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(got.status().field(), "spec.model.source.uri");
  EXPECT_NE(got.status().message().find(uri + "/config.json"), std::string::npos)
      << got.status().ToString();
  EXPECT_FALSE(fs::exists(Entry("m")));  // Never a half entry.

  // A shard the index names.
  std::string shard;
  for (const auto& e : fs::directory_iterator(served_.path() / "sharded")) {
    if (e.path().filename().string().starts_with("model-00002")) shard = e.path().string();
  }
  ASSERT_FALSE(shard.empty());
  fs::remove(shard);
  got = DownloadModelDirectory(server_.Url("/models/sharded"), Entry("s"));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().field(), "spec.model.source.uri");
  EXPECT_NE(got.status().message().find(fs::path(shard).filename().string()), std::string::npos)
      << got.status().ToString();
  EXPECT_FALSE(fs::exists(Entry("s")));

  // No weights at all.
  fs::remove(served_.path() / "single" / "model.safetensors");
  WriteFile(served_.path() / "single" / "config.json", ConfigJson());
  got = DownloadModelDirectory(uri, Entry("w"));
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find(uri + "/model.safetensors"), std::string::npos)
      << got.status().ToString();
}

TEST_F(ModelDownloadTest, RedirectsAreFollowed) {
  Result<ModelDownload> got = DownloadModelDirectory(server_.Url("/moved/single"), Entry("r"));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(test_support::ReadFileOrEmpty(fs::path(Entry("r")) / "model.safetensors"),
            test_support::ReadFileOrEmpty(served_.path() / "single" / "model.safetensors"));
  EXPECT_EQ(server_.Count("/moved/single/config.json"), 1u);
  EXPECT_EQ(server_.Count("/models/single/config.json"), 1u);
}

TEST_F(ModelDownloadTest, ACrashedDownloadIsResumed) {
  // What a process killed mid-transfer leaves: a finished config.json and half the weights.
  const std::string uri = server_.Url("/models/single");
  const fs::path entry = Entry("m");
  const fs::path partial = cache_.path() / ".m.partial";
  fs::create_directories(partial);
  fs::copy_file(served_.path() / "single" / "config.json", partial / "config.json");
  const std::string weights =
      test_support::ReadFileOrEmpty(served_.path() / "single" / "model.safetensors");
  const size_t half = weights.size() / 2;
  WriteFile(partial / "model.safetensors.part", weights.substr(0, half));
  EXPECT_FALSE(fs::exists(entry));

  Result<ModelDownload> got = DownloadModelDirectory(uri, entry.string());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(test_support::ReadFileOrEmpty(entry / "model.safetensors"), weights);
  EXPECT_EQ(server_.Count("/models/single/config.json"), 0u);  // Kept from the crashed run.
  EXPECT_EQ(
      server_.Count("/models/single/model.safetensors Range:bytes=" + std::to_string(half) + "-"),
      1u);
  EXPECT_FALSE(fs::exists(partial));
  EXPECT_TRUE(ShardedCheckpoint::Open(entry.string()).ok());
}

TEST_F(ModelDownloadTest, AForeignDirectoryIsNotOverwritten) {
  fs::create_directories(Entry("m"));
  WriteFile(fs::path(Entry("m")) / "config.json", "{}");
  Result<ModelDownload> got = DownloadModelDirectory(server_.Url("/models/single"), Entry("m"));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kConflict) << got.status().ToString();
  EXPECT_EQ(test_support::ReadFileOrEmpty(fs::path(Entry("m")) / "config.json"), "{}");
  EXPECT_TRUE(server_.Requests().empty());
}

TEST_F(ModelDownloadTest, CancellationStopsTheDownload) {
  CancellationSource stop;
  stop.Cancel();
  ModelDownloadOptions options;
  options.cancel = stop.Token();
  Result<ModelDownload> got =
      DownloadModelDirectory(server_.Url("/models/single"), Entry("m"), options);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kCancelled) << got.status().ToString();
  EXPECT_FALSE(fs::exists(Entry("m")));
}

TEST_F(ModelDownloadTest, ConcurrentCallersShareOneDownload) {
  const std::string uri = server_.Url("/models/sharded");
  std::vector<Result<ModelDownload>> results(4, Status::Internal("not run"));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] { results[i] = DownloadModelDirectory(uri, Entry("m")); });
  }
  for (std::thread& t : threads) t.join();
  int downloaded = 0;
  for (const Result<ModelDownload>& r : results) {
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    downloaded += r->reused ? 0 : 1;
  }
  EXPECT_EQ(downloaded, 1);
  EXPECT_EQ(server_.Count("/models/sharded/config.json"), 1u);
  EXPECT_TRUE(ShardedCheckpoint::Open(Entry("m")).ok());
}

}  // namespace
}  // namespace sluice::model
