// WeightRoutes and the fetcher over real HTTP: an in-process server on a free port with bearer
// auth, the real client, and files in a temporary directory.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/http/client.h"
#include "common/http/server.h"
#include "common/logging/logger.h"
#include "common/metrics/exposition.h"
#include "common/metrics/registry.h"
#include "tests/support/read_file.h"
#include "tests/support/test_client.h"
#include "tests/unit/workers/weights/weight_fixtures.h"
#include "workers/weights/weight_fetcher.h"
#include "workers/weights/weight_routes.h"
#include "workers/weights/weight_store.h"

namespace sluice::weights {
namespace weight_http_test {

using nlohmann::json;

constexpr char kToken[] = "weights-test-token";

void WriteFile(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

class WeightHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sluice-weights-http-XXXXXX";
    dir_ = mkdtemp(tmpl);
    http::ServerOptions so;
    so.name = "weights-test";
    so.auth = http::TokenSource::FromValue(kToken);
    so.access_log = false;
    so.shutdown_grace = std::chrono::milliseconds(2000);
    server_ = std::make_unique<http::Server>(so, &registry_, logger_);
    routes_ = std::make_unique<WeightRoutes>(store_, &registry_);
    routes_->Register(*server_);
    ASSERT_TRUE(server_->Start().ok());
    client_ = MakeClient(kToken);
    std::mt19937_64 rng(1);
    for (int64_t v = 1; v <= 3; ++v) {
      fixtures::Perturb(model_, 0.01, rng);
      ASSERT_TRUE(store_.Publish(model_.Views(), v).ok());
    }
  }
  void TearDown() override {
    client_.reset();
    server_->Shutdown();
    server_.reset();
    routes_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::unique_ptr<http::Client> MakeClient(const std::string& token) {
    return ::sluice::test_support::TestClient(server_->BaseUrl(), token);
  }

  http::Response GetWithRange(const std::string& path, const std::string& range) {
    http::Request req;
    req.path = path;
    req.headers.emplace("Range", range);
    Result<http::Response> r = client_->Send(req);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(r).value() : http::Response{};
  }

  std::string Image(int64_t v) { return std::string(store_.Full(v)->image()); }

  std::string dir_;
  metrics::Registry registry_;
  log::Logger logger_{"weights-test"};
  WeightStore store_{3};
  fixtures::Model model_ = fixtures::RandomModel(42);
  std::unique_ptr<http::Server> server_;
  std::unique_ptr<WeightRoutes> routes_;
  std::unique_ptr<http::Client> client_;
};

TEST_F(WeightHttpTest, ListsVersions) {
  Result<http::Response> r = client_->Get("/v1/weights");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->status, 200) << r->body;
  json body = json::parse(r->body);
  EXPECT_EQ(body["latest"], 3);
  ASSERT_EQ(body["versions"].size(), 3u);
  EXPECT_EQ(body["versions"][0]["deltaFrom"], nullptr);
  EXPECT_EQ(body["versions"][2]["deltaFrom"], 2);
  EXPECT_EQ(body["versions"][2]["digest"], store_.Full(3)->digest());
  EXPECT_GT(body["versions"][2]["deltaDensity"].get<double>(), 0.0);
  EXPECT_LT(body["versions"][2]["deltaBytes"].get<uint64_t>(),
            body["versions"][2]["bytes"].get<uint64_t>());
}

TEST_F(WeightHttpTest, FullDownloadIsTheImage) {
  Result<http::Response> r = client_->Get("/v1/weights/2");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->status, 200);
  EXPECT_TRUE(r->body == Image(2));
  EXPECT_EQ(r->Header("X-Sluice-Weights-Digest"), store_.Full(2)->digest());
  EXPECT_EQ(r->Header("X-Sluice-Weights-Version"), "2");
  EXPECT_EQ(r->Header("ETag"), "\"" + store_.Full(2)->digest() + "\"");
  EXPECT_EQ(r->Header("Accept-Ranges"), "bytes");
  EXPECT_EQ(r->Header("Content-Type"), "application/octet-stream");

  EXPECT_EQ(client_->Get("/v1/weights/9")->status, 404);
  EXPECT_EQ(client_->Get("/v1/weights/abc")->status, 400);
  EXPECT_EQ(client_->Get("/v1/weights/-1")->status, 400);

  std::string text = metrics::ExposeText(registry_);
  EXPECT_NE(text.find("sluice_weights_served_bytes_total{kind=\"full\"} " +
                      std::to_string(Image(2).size())),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("sluice_weights_latest_version 3"), std::string::npos);
}

TEST_F(WeightHttpTest, RangeRequests) {
  const std::string image = Image(3);
  const std::string size = std::to_string(image.size());
  http::Response mid = GetWithRange("/v1/weights/3", "bytes=10-19");
  EXPECT_EQ(mid.status, 206);
  EXPECT_EQ(mid.body, image.substr(10, 10));
  EXPECT_EQ(mid.Header("Content-Range"), "bytes 10-19/" + size);

  http::Response open = GetWithRange("/v1/weights/3", "bytes=100-");
  EXPECT_EQ(open.status, 206);
  EXPECT_TRUE(open.body == image.substr(100));
  EXPECT_EQ(open.Header("Content-Range"),
            "bytes 100-" + std::to_string(image.size() - 1) + "/" + size);

  http::Response suffix = GetWithRange("/v1/weights/3", "bytes=-16");
  EXPECT_EQ(suffix.status, 206);
  EXPECT_EQ(suffix.body, image.substr(image.size() - 16));

  http::Response past_end = GetWithRange("/v1/weights/3", "bytes=5-999999999");
  EXPECT_EQ(past_end.status, 206);
  EXPECT_TRUE(past_end.body == image.substr(5));

  http::Response beyond = GetWithRange("/v1/weights/3", "bytes=" + size + "-");
  EXPECT_EQ(beyond.status, 416);
  EXPECT_EQ(beyond.Header("Content-Range"), "bytes */" + size);

  // cpp-httplib 0.11 answers a Range its own parser rejects with 416 before any handler runs,
  // so these never reach ParseRangeHeader (tested directly below); what matters is that no
  // weight bytes are served.
  for (const char* bad : {"bytes=abc", "items=0-5", "bytes=9-2"}) {
    http::Response malformed = GetWithRange("/v1/weights/3", bad);
    EXPECT_EQ(malformed.status, 416) << bad << ": " << malformed.body;
    EXPECT_EQ(malformed.body.find("safetensors"), std::string::npos);
    EXPECT_LT(malformed.body.size(), 200u);
  }

  http::Response several = GetWithRange("/v1/weights/3", "bytes=0-1,4-5");
  EXPECT_EQ(several.status, 400);
  EXPECT_NE(several.body.find("Range"), std::string::npos) << several.body;
}

TEST(RangeHeaderTest, ParsesTheThreeForms) {
  auto r = ParseRangeHeader("bytes=2-5", 10);
  ASSERT_TRUE(r.ok() && r->has_value());
  EXPECT_EQ((*r)->offset, 2u);
  EXPECT_EQ((*r)->length, 4u);
  r = ParseRangeHeader("bytes=-3", 10);
  ASSERT_TRUE(r.ok() && r->has_value());
  EXPECT_EQ((*r)->offset, 7u);
  EXPECT_EQ((*r)->length, 3u);
  r = ParseRangeHeader("bytes=-30", 10);  // A suffix longer than the body is all of it.
  ASSERT_TRUE(r.ok() && r->has_value());
  EXPECT_EQ((*r)->offset, 0u);
  EXPECT_EQ((*r)->length, 10u);
  r = ParseRangeHeader("bytes=9-", 10);
  ASSERT_TRUE(r.ok() && r->has_value());
  EXPECT_EQ((*r)->length, 1u);
  EXPECT_FALSE(ParseRangeHeader("", 10)->has_value());
  for (const char* bad : {"bytes=abc", "bytes=5-2", "items=0-1", "bytes=0-1,3-4", "bytes=-",
                          "bytes=1-x", "bytes= 1-2"}) {
    auto e = ParseRangeHeader(bad, 10);
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(e.status().field(), "Range");
  }
  for (const char* unsatisfiable : {"bytes=10-", "bytes=-0", "bytes=10-20"}) {
    auto e = ParseRangeHeader(unsatisfiable, 10);
    ASSERT_FALSE(e.ok()) << unsatisfiable;
    EXPECT_EQ(e.status().code(), StatusCode::kUnprocessable) << unsatisfiable;
  }
}

TEST_F(WeightHttpTest, FetchFullWritesTheImageAtomically) {
  const std::string dest = dir_ + "/model.safetensors";
  Result<FetchStats> stats = FetchFull(*client_, 3, dest);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->mode, "full");
  EXPECT_EQ(stats->digest, store_.Full(3)->digest());
  EXPECT_EQ(stats->bytes_transferred, Image(3).size());
  EXPECT_TRUE(test_support::ReadFileOrEmpty(dest) == Image(3));
  EXPECT_FALSE(std::filesystem::exists(dest + ".partial"));
  EXPECT_EQ(FetchFull(*client_, 17, dir_ + "/x").status().code(), StatusCode::kNotFound);
}

TEST_F(WeightHttpTest, FetchFullResumesFromAPartialFile) {
  const std::string dest = dir_ + "/model.safetensors";
  const std::string image = Image(2);
  WriteFile(dest + ".partial", std::string_view(image).substr(0, 1000));
  Result<FetchStats> stats = FetchFull(*client_, 2, dest);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->bytes_transferred, image.size() - 1000);
  EXPECT_EQ(stats->attempts, 1);
  EXPECT_TRUE(test_support::ReadFileOrEmpty(dest) == image);

  // A partial file that is already complete needs no body at all.
  std::filesystem::remove(dest);
  WriteFile(dest + ".partial", image);
  stats = FetchFull(*client_, 2, dest);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->bytes_transferred, 0u);
  EXPECT_TRUE(test_support::ReadFileOrEmpty(dest) == image);
}

TEST_F(WeightHttpTest, ACorruptedPartialFileIsDetectedByTheDigest) {
  const std::string dest = dir_ + "/model.safetensors";
  std::string wrong = Image(2).substr(0, 1000);
  wrong[500] ^= 0x01;
  WriteFile(dest + ".partial", wrong);
  Result<FetchStats> stats = FetchFull(*client_, 2, dest);
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.status().code(), StatusCode::kCorruption);
  EXPECT_EQ(stats.status().field(), "digest");
  EXPECT_FALSE(std::filesystem::exists(dest + ".partial"));
  EXPECT_FALSE(std::filesystem::exists(dest));
  // The next attempt starts from scratch and succeeds.
  ASSERT_TRUE(FetchFull(*client_, 2, dest).ok());
  EXPECT_TRUE(test_support::ReadFileOrEmpty(dest) == Image(2));
}

TEST_F(WeightHttpTest, DeltaChainThroughHttpIsBitExact) {
  Result<WeightSnapshot> held = WeightSnapshot::Parse(Image(1), store_.Full(1)->digest());
  ASSERT_TRUE(held.ok());
  Result<FetchedWeights> got = FetchUpdate(*client_, *held, 3);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->stats.mode, "delta");
  EXPECT_EQ(got->snapshot.version(), 3);
  EXPECT_TRUE(got->snapshot.image() == Image(3));
  EXPECT_LT(got->stats.bytes_transferred, Image(3).size() / 4);
  EXPECT_EQ(got->stats.bytes_transferred, store_.PlanDelta(1, 3)->bytes);

  Result<http::Response> raw = client_->Get("/v1/weights/3/delta?from=1");
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(raw->status, 200);
  EXPECT_EQ(raw->Header("X-Sluice-Weights-From"), "1");
  EXPECT_EQ(client_->Get("/v1/weights/3/delta?from=x")->status, 400);
  EXPECT_EQ(client_->Get("/v1/weights/3/delta")->status, 400);
  EXPECT_EQ(client_->Get("/v1/weights/8/delta?from=1")->status, 404);
  std::string text = metrics::ExposeText(registry_);
  EXPECT_NE(text.find("sluice_weights_served_bytes_total{kind=\"delta\"}"), std::string::npos);
}

TEST_F(WeightHttpTest, FetchUpdateFallsBackToFullOn409) {
  // Version 0 was never held by the store: the server answers 409 with the full path.
  fixtures::Model old = fixtures::RandomModel(42);
  Result<WeightSnapshot> held = WeightSnapshot::Build(old.Views(), 0);
  ASSERT_TRUE(held.ok());
  Result<http::Response> raw = client_->Get("/v1/weights/3/delta?from=0");
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(raw->status, 409);
  EXPECT_EQ(json::parse(raw->body)["full"], "/v1/weights/3");
  EXPECT_EQ(raw->ToStatus().code(), StatusCode::kConflict);

  Result<FetchedWeights> got = FetchUpdate(*client_, *held, 3);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->stats.mode, "full");
  EXPECT_EQ(got->stats.bytes_transferred, Image(3).size());
  EXPECT_TRUE(got->snapshot.image() == Image(3));
  EXPECT_NE(metrics::ExposeText(registry_).find(
                "sluice_weights_requests_total{kind=\"delta\",outcome=\"fallback\"} 2"),
            std::string::npos);
}

TEST_F(WeightHttpTest, ChunkedDownloadsThroughTheRoutes) {
  // chunk_bytes (spec.weightSync.chunkSizeMiB): one Range request per chunk, each answered 206
  // by the routes; the delta request of FetchUpdate stays one, its full fallback is chunked.
  FetchOptions options;
  options.chunk_bytes = 4096;
  const std::string image = Image(3);
  const int chunks = static_cast<int>((image.size() + 4095) / 4096);
  ASSERT_GE(chunks, 3);
  const std::string dest = dir_ + "/model.safetensors";
  Result<FetchStats> stats = FetchFull(*client_, 3, dest, options);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->attempts, chunks);
  EXPECT_EQ(stats->bytes_transferred, image.size());
  EXPECT_EQ(stats->digest, store_.Full(3)->digest());
  EXPECT_TRUE(test_support::ReadFileOrEmpty(dest) == image);

  fixtures::Model old = fixtures::RandomModel(42);
  Result<WeightSnapshot> held = WeightSnapshot::Build(old.Views(), 0);
  ASSERT_TRUE(held.ok());
  Result<FetchedWeights> got = FetchUpdate(*client_, *held, 3, options);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->stats.mode, "full");
  EXPECT_EQ(got->stats.attempts, chunks + 1);
  EXPECT_TRUE(got->snapshot.image() == image);
  const std::string text = metrics::ExposeText(registry_);
  EXPECT_NE(text.find("sluice_weights_requests_total{kind=\"full\",outcome=\"partial\"} " +
                      std::to_string(2 * chunks)),
            std::string::npos)
      << text;

  // A delta chain is one request whatever the chunk size.
  Result<WeightSnapshot> one = WeightSnapshot::Parse(Image(1), store_.Full(1)->digest());
  ASSERT_TRUE(one.ok());
  options.chunk_bytes = 16;
  Result<FetchedWeights> delta = FetchUpdate(*client_, *one, 3, options);
  ASSERT_TRUE(delta.ok()) << delta.status().ToString();
  EXPECT_EQ(delta->stats.mode, "delta");
  EXPECT_EQ(delta->stats.attempts, 1);
}

TEST_F(WeightHttpTest, BearerTokenIsEnforced) {
  std::unique_ptr<http::Client> anonymous = MakeClient("");
  EXPECT_EQ(anonymous->Get("/v1/weights")->status, 401);
  EXPECT_EQ(anonymous->Get("/v1/weights/3")->status, 401);
  std::unique_ptr<http::Client> wrong = MakeClient("not-the-token");
  EXPECT_EQ(wrong->Get("/v1/weights/3/delta?from=2")->status, 401);
  Result<FetchStats> stats = FetchFull(*wrong, 3, dir_ + "/m.safetensors");
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.status().code(), StatusCode::kUnauthenticated);
}

// A server that breaks off the first full download after `cut` bytes, to exercise resumption of
// a transfer interrupted mid-body. It serves Range requests like WeightRoutes.
TEST(WeightFetchResumeTest, ResumesAfterTheConnectionBreaks) {
  const fixtures::Model m = fixtures::RandomModel(9);
  Result<WeightSnapshot> snap = WeightSnapshot::Build(m.Views(), 5);
  ASSERT_TRUE(snap.ok());
  const std::string image(snap->image());
  const size_t cut = image.size() / 3;
  std::atomic<int> requests{0};
  httplib::Server server;
  server.Get("/v1/weights/5", [&](const httplib::Request& req, httplib::Response& res) {
    const int n = requests++;
    const_cast<httplib::Request&>(req).ranges.clear();
    res.set_header("X-Sluice-Weights-Digest", snap->digest());
    auto range = ParseRangeHeader(req.get_header_value("Range"), image.size());
    ASSERT_TRUE(range.ok());
    ByteRange want{0, image.size()};
    if (range->has_value()) {
      want = **range;
      res.status = 206;
      res.set_header("Content-Range", "bytes " + std::to_string(want.offset) + "-" +
                                          std::to_string(want.offset + want.length - 1) + "/" +
                                          std::to_string(image.size()));
    }
    res.set_content_provider(want.length, "application/octet-stream",
                             [&, n, want](size_t offset, size_t, httplib::DataSink& sink) {
                               if (n == 0) {  // Half a body, then the connection drops.
                                 sink.write(image.data(), cut);
                                 return false;
                               }
                               sink.write(image.data() + want.offset + offset,
                                          want.length - offset);
                               return true;
                             });
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  std::thread t([&] { server.listen_after_bind(); });
  while (!server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  auto client = ::sluice::test_support::TestClient("http://127.0.0.1:" + std::to_string(port));
  char tmpl[] = "/tmp/sluice-weights-resume-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  Result<FetchStats> stats = FetchFull(*client, 5, dir + "/m.safetensors");
  client.reset();  // Closes its keep-alive connection, which would hold stop() for seconds.
  server.stop();
  t.join();
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->attempts, 2);
  EXPECT_EQ(stats->bytes_transferred, image.size());  // Each byte came over the network once.
  EXPECT_TRUE(test_support::ReadFileOrEmpty(dir + "/m.safetensors") == image);
  std::filesystem::remove_all(dir);
}

// A weights server for one image that answers Range requests like WeightRoutes and records the
// Range header of every request (empty for none). Knobs: break off request number
// `break_request` (0-based) after half its body; ignore Range (always 200 with the whole image);
// serve bytes that differ from the digest it announces.
class RecordingImageServer {
 public:
  struct Behaviour {
    int break_request = -1;
    bool ignore_range = false;
    bool corrupt = false;
  };

  RecordingImageServer(std::string image, std::string digest, int64_t version, Behaviour b)
      : body_(std::move(image)), digest_(std::move(digest)), behaviour_(b) {
    if (behaviour_.corrupt) body_[body_.size() / 2] ^= 0x01;
    server_.Get(FullWeightsPath(version),
                [this](const httplib::Request& req, httplib::Response& res) { Handle(req, res); });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~RecordingImageServer() {
    server_.stop();
    thread_.join();
  }

  std::unique_ptr<http::Client> Client() const {
    return ::sluice::test_support::TestClient("http://127.0.0.1:" + std::to_string(port_));
  }
  std::vector<std::string> ranges() const {
    std::lock_guard<std::mutex> lock(mu_);
    return ranges_;
  }

 private:
  void Handle(const httplib::Request& req, httplib::Response& res) {
    int n = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      n = static_cast<int>(ranges_.size());
      ranges_.push_back(req.get_header_value("Range"));
    }
    const_cast<httplib::Request&>(req).ranges.clear();  // See WeightRoutes::HandleFull.
    res.set_header(std::string(kWeightsDigestHeader), digest_);
    const std::string size = std::to_string(body_.size());
    ByteRange want{0, body_.size()};
    if (!behaviour_.ignore_range) {
      Result<std::optional<ByteRange>> range =
          ParseRangeHeader(req.get_header_value("Range"), body_.size());
      if (!range.ok()) {
        res.status = 416;
        res.set_header("Content-Range", "bytes */" + size);
        return;
      }
      if (range->has_value()) {
        want = **range;
        res.status = 206;
        res.set_header("Content-Range", "bytes " + std::to_string(want.offset) + "-" +
                                            std::to_string(want.offset + want.length - 1) + "/" +
                                            size);
      }
    }
    const bool cut = n == behaviour_.break_request;
    res.set_content_provider(want.length, "application/octet-stream",
                             [this, want, cut](size_t offset, size_t, httplib::DataSink& sink) {
                               if (cut) {  // Half the body, then the connection drops.
                                 sink.write(body_.data() + want.offset, want.length / 2);
                                 return false;
                               }
                               sink.write(body_.data() + want.offset + offset,
                                          want.length - offset);
                               return true;
                             });
  }

  std::string body_;
  const std::string digest_;
  const Behaviour behaviour_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  mutable std::mutex mu_;
  std::vector<std::string> ranges_;
};

class WeightFetchChunkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sluice-weights-chunks-XXXXXX";
    dir_ = mkdtemp(tmpl);
    Result<WeightSnapshot> snap = WeightSnapshot::Build(model_.Views(), 6);
    ASSERT_TRUE(snap.ok());
    image_ = std::string(snap->image());
    digest_ = snap->digest();
    // Not a divisor of the size: the last chunk is short.
    chunk_ = image_.size() / 4 + 5;
    ASSERT_NE(image_.size() % chunk_, 0u);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // "bytes=a-b" for the chunk grid from byte `from` on; the first range starts at `from`.
  std::vector<std::string> Grid(uint64_t from) const {
    std::vector<std::string> out;
    for (uint64_t a = from; a < image_.size(); a = (a / chunk_ + 1) * chunk_) {
      out.push_back("bytes=" + std::to_string(a) + "-" +
                    std::to_string((a / chunk_ + 1) * chunk_ - 1));
    }
    return out;
  }

  Result<FetchStats> Fetch(RecordingImageServer& server) {
    std::unique_ptr<http::Client> client = server.Client();
    FetchOptions options;
    options.chunk_bytes = chunk_;
    // The client is destroyed before the server stops: its keep-alive connection would hold
    // stop() for seconds.
    return FetchFull(*client, 6, dest(), options);
  }
  std::string dest() const { return dir_ + "/m.safetensors"; }

  std::string dir_;
  const fixtures::Model model_ = fixtures::RandomModel(11);
  std::string image_;
  std::string digest_;
  uint64_t chunk_ = 0;
};

TEST_F(WeightFetchChunkTest, OneRangeRequestPerChunk) {
  RecordingImageServer server(image_, digest_, 6, {});
  Result<FetchStats> stats = Fetch(server);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  const size_t chunks = (image_.size() + chunk_ - 1) / chunk_;
  EXPECT_EQ(chunks, 4u);
  EXPECT_EQ(stats->attempts, static_cast<int>(chunks));
  // The last range reaches past the end; the server clamps it.
  std::vector<std::string> want;
  for (uint64_t k = 0; k < chunks; ++k) {
    want.push_back("bytes=" + std::to_string(k * chunk_) + "-" +
                   std::to_string((k + 1) * chunk_ - 1));
  }
  EXPECT_EQ(server.ranges(), want);
  EXPECT_EQ(stats->bytes_transferred, image_.size());
  EXPECT_EQ(stats->digest, digest_);
  EXPECT_TRUE(test_support::ReadFileOrEmpty(dest()) == image_);
  EXPECT_FALSE(std::filesystem::exists(dest() + ".partial"));
}

TEST_F(WeightFetchChunkTest, ABrokenChunkIsResumedWithinTheChunk) {
  // The second request breaks off after half its chunk: the next asks for the rest of that
  // chunk, and the grid goes on.
  RecordingImageServer server(image_, digest_, 6, {.break_request = 1});
  Result<FetchStats> stats = Fetch(server);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  std::vector<std::string> want = Grid(0);
  want.insert(want.begin() + 2, Grid(chunk_ + chunk_ / 2).front());
  EXPECT_EQ(server.ranges(), want);
  EXPECT_EQ(stats->attempts, static_cast<int>(want.size()));
  EXPECT_EQ(stats->bytes_transferred, image_.size());  // Each byte came over the network once.
  EXPECT_TRUE(test_support::ReadFileOrEmpty(dest()) == image_);
}

TEST_F(WeightFetchChunkTest, APartialFileStartsMidChunk) {
  WriteFile(dest() + ".partial", std::string_view(image_).substr(0, 1000));
  ASSERT_LT(1000u, chunk_);
  RecordingImageServer server(image_, digest_, 6, {});
  Result<FetchStats> stats = Fetch(server);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(server.ranges(), Grid(1000));
  EXPECT_EQ(stats->bytes_transferred, image_.size() - 1000);
  EXPECT_TRUE(test_support::ReadFileOrEmpty(dest()) == image_);
}

TEST_F(WeightFetchChunkTest, AServerIgnoringRangeSendsTheWholeImageOnce) {
  RecordingImageServer server(image_, digest_, 6, {.ignore_range = true});
  Result<FetchStats> stats = Fetch(server);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(server.ranges(), std::vector<std::string>{"bytes=0-" + std::to_string(chunk_ - 1)});
  EXPECT_EQ(stats->bytes_transferred, image_.size());
  EXPECT_TRUE(test_support::ReadFileOrEmpty(dest()) == image_);
}

TEST_F(WeightFetchChunkTest, TheDigestCoversEveryChunk) {
  // One flipped byte in the second chunk: every chunk arrives, the whole file fails the digest.
  RecordingImageServer server(image_, digest_, 6, {.corrupt = true});
  Result<FetchStats> stats = Fetch(server);
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.status().code(), StatusCode::kCorruption) << stats.status().ToString();
  EXPECT_EQ(stats.status().field(), "digest");
  EXPECT_EQ(server.ranges().size(), 4u);
  EXPECT_FALSE(std::filesystem::exists(dest() + ".partial"));
  EXPECT_FALSE(std::filesystem::exists(dest()));
}

}  // namespace weight_http_test
}  // namespace sluice::weights
