// Pure pieces of the HTTP layer: URLs, hosts files, backoff, bearer tokens, JSON bodies.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "common/http/backoff.h"
#include "common/http/bearer_token.h"
#include "common/http/bounded_task_queue.h"
#include "common/http/hosts_file.h"
#include "common/http/json_body.h"
#include "common/http/url.h"

namespace sluice::http {
namespace {

namespace fs = std::filesystem;

fs::path TempDir() {
  fs::path dir =
      fs::temp_directory_path() / ("sluice-http-parts-" + std::to_string(::getpid()) + "-" +
                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void WriteFile(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

TEST(UrlTest, ParsesSchemesPortsAndPaths) {
  Result<Url> u = ParseBaseUrl("https://kube.example:6443/prefix/");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->scheme, "https");
  EXPECT_EQ(u->host, "kube.example");
  EXPECT_EQ(u->port, 6443);
  EXPECT_EQ(u->path, "/prefix");
  EXPECT_TRUE(u->tls());
  EXPECT_EQ(u->ToString(), "https://kube.example:6443/prefix");

  u = ParseBaseUrl("http://dataflow.default.svc");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->port, 80);
  EXPECT_EQ(u->path, "");
  u = ParseBaseUrl("https://[::1]:8443");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->HostPort(), "[::1]:8443");
  EXPECT_EQ(ParseBaseUrl("https://10.0.0.1")->port, 443);
}

TEST(UrlTest, RejectsWhatABaseUrlCannotBe) {
  const std::pair<std::string, std::string> cases[] = {
      {"localhost:8080", "no scheme"},
      {"ftp://host", "scheme \"ftp\""},
      {"http://", "no host"},
      {"http://host:0", "port \"0\""},
      {"http://host:70000", "port \"70000\""},
      {"http://host:12ab", "port \"12ab\""},
      {"http://user:pw@host", "user information"},
      {"http://host/x?y=1", "query or fragment"},
      {"http://[::1", "unterminated"},
  };
  for (const auto& [text, fragment] : cases) {
    Result<Url> u = ParseBaseUrl(text);
    ASSERT_FALSE(u.ok()) << text;
    EXPECT_NE(u.status().message().find(fragment), std::string::npos)
        << text << " -> " << u.status().message();
  }
}

TEST(UrlTest, PercentEncode) {
  EXPECT_EQ(PercentEncode("a b/c?d=é~"), "a%20b%2Fc%3Fd%3D%C3%A9~");
  EXPECT_EQ(PercentEncode("plain-Name_1.2"), "plain-Name_1.2");
}

TEST(HostsFileTest, ParsesNamesAliasesCommentsAndBadLines) {
  HostsTable t = ParseHostsFile(
      "# local cluster\n"
      "127.0.1.2  dataflow.default.svc dataflow.default.svc.cluster.local  # pod 1\n"
      "\n"
      "127.0.1.3 Trainer-0.trainer.default.svc\n"
      "127.0.1.4 trainer-0.trainer.default.svc\n"
      "not-an-ip some.name\n"
      "127.0.1.5\n"
      "::1 ip6-localhost");
  EXPECT_EQ(t.addresses["dataflow.default.svc"], std::vector<std::string>{"127.0.1.2"});
  EXPECT_EQ(t.addresses["dataflow.default.svc.cluster.local"],
            std::vector<std::string>{"127.0.1.2"});
  EXPECT_EQ(t.addresses["trainer-0.trainer.default.svc"],
            (std::vector<std::string>{"127.0.1.3", "127.0.1.4"}));
  EXPECT_EQ(t.addresses["ip6-localhost"], std::vector<std::string>{"::1"});
  EXPECT_EQ(t.bad_lines, (std::vector<int>{6, 7}));
}

TEST(HostsFileTest, ResolverRereadsTheFileWhenItChanges) {
  const fs::path dir = TempDir();
  const fs::path file = dir / "hosts";
  HostsFileResolver resolver(file);
  EXPECT_EQ(resolver.Lookup("a.svc"), std::nullopt);  // Missing file: no records, no crash.
  WriteFile(file, "127.0.0.5 a.svc\n");
  EXPECT_EQ(resolver.Lookup("A.SVC"), "127.0.0.5");
  // A rewrite with a different size is seen even within the same mtime tick.
  WriteFile(file, "127.0.0.6 a.svc\n127.0.0.7 b.svc\n");
  EXPECT_EQ(resolver.Lookup("a.svc"), "127.0.0.6");
  EXPECT_EQ(resolver.Lookup("b.svc"), "127.0.0.7");
  EXPECT_EQ(resolver.Lookup("c.svc"), std::nullopt);
  fs::remove_all(dir);
}

TEST(BackoffTest, GrowsExponentiallyUpToTheCap) {
  BackoffPolicy p;
  p.base_delay = std::chrono::milliseconds(100);
  p.max_delay = std::chrono::milliseconds(1000);
  p.multiplier = 2;
  p.jitter = 0;
  EXPECT_EQ(BackoffDelay(p, 0, 0.7).count(), 100);
  EXPECT_EQ(BackoffDelay(p, 1, 0.7).count(), 200);
  EXPECT_EQ(BackoffDelay(p, 3, 0.7).count(), 800);
  EXPECT_EQ(BackoffDelay(p, 4, 0.7).count(), 1000);
  EXPECT_EQ(BackoffDelay(p, 10000, 0.7).count(), 1000);  // No overflow.
}

TEST(BackoffTest, JitterSpreadsWithinTheDocumentedRange) {
  BackoffPolicy p;
  p.base_delay = std::chrono::milliseconds(1000);
  p.max_delay = std::chrono::milliseconds(100000);
  p.jitter = 0.5;
  EXPECT_EQ(BackoffDelay(p, 0, 0.0).count(), 500);
  EXPECT_EQ(BackoffDelay(p, 0, 0.5).count(), 750);
  EXPECT_EQ(BackoffDelay(p, 0, 1.0).count(), 1000);
  p.jitter = 1.0;
  EXPECT_EQ(BackoffDelay(p, 1, 0.0).count(), 0);
  EXPECT_EQ(BackoffDelay(p, 1, 0.25).count(), 500);
}

TEST(BearerTokenTest, ParsesTheHeader) {
  EXPECT_EQ(ParseBearerHeader("Bearer abc"), "abc");
  EXPECT_EQ(ParseBearerHeader("bearer   abc  "), "abc");
  EXPECT_EQ(ParseBearerHeader("Basic abc"), std::nullopt);
  EXPECT_EQ(ParseBearerHeader("Bearer "), std::nullopt);
  EXPECT_EQ(ParseBearerHeader("Bearerabc"), std::nullopt);
  EXPECT_EQ(ParseBearerHeader(""), std::nullopt);
}

TEST(BearerTokenTest, ComparesSecrets) {
  EXPECT_TRUE(TokensEqual("s3cret", "s3cret"));
  EXPECT_FALSE(TokensEqual("s3cret", "s3creT"));
  EXPECT_FALSE(TokensEqual("s3cret", "s3cret-longer"));
  EXPECT_FALSE(TokensEqual("", "x"));
}

TEST(BearerTokenTest, FileSourceRereadsOnRotationAndKeepsTheLastGoodToken) {
  const fs::path dir = TempDir();
  const fs::path file = dir / "token";
  EXPECT_FALSE(TokenSource::FromFile(file).ok());  // Missing.
  WriteFile(file, "  \n");
  Result<std::shared_ptr<TokenSource>> empty = TokenSource::FromFile(file);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("is empty"), std::string::npos);

  WriteFile(file, "first\n");
  Result<std::shared_ptr<TokenSource>> source = TokenSource::FromFile(file);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  EXPECT_EQ((*source)->Get(), "first");
  WriteFile(file, "second");
  fs::last_write_time(file, fs::last_write_time(file) + std::chrono::seconds(1));
  EXPECT_EQ((*source)->Get(), "second");
  WriteFile(file, "");  // Mid-rotation: the old token stays.
  fs::last_write_time(file, fs::last_write_time(file) + std::chrono::seconds(2));
  EXPECT_EQ((*source)->Get(), "second");
  EXPECT_EQ(TokenSource::FromValue(" v \n")->Get(), "v");
  fs::remove_all(dir);
}

TEST(JsonBodyTest, ErrorJsonShape) {
  nlohmann::json j = ErrorJson(Status::InvalidArgument("must be positive", "spec.x"));
  EXPECT_EQ(j, nlohmann::json::parse(R"({"error": {"code": 400, "reason": "BadRequest",
      "message": "must be positive", "field": "spec.x"}})"));
  EXPECT_FALSE(ErrorJson(Status::NotFound("gone")).at("error").contains("field"));
}

TEST(JsonBodyTest, StatusFromReplyUnderstandsOurBodyKubernetesStatusAndText) {
  Status s = StatusFromReply(422, ErrorJson(Status::Unprocessable("bad", "spec.y")).dump());
  EXPECT_EQ(s, Status::Unprocessable("bad", "spec.y"));
  s = StatusFromReply(409, R"({"kind":"Status","apiVersion":"v1","status":"Failure",
      "message":"pods \"x\" already exists","reason":"AlreadyExists","code":409})");
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(s.message(), "pods \"x\" already exists");
  s = StatusFromReply(502, "<html>bad gateway</html>");
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_EQ(s.message(), "HTTP 502: <html>bad gateway</html>");
  EXPECT_TRUE(StatusFromReply(201, "").ok());
}

TEST(JsonBodyTest, StatusFromReplyTakesABodyOfAnyShape) {
  // Members of another type than expected read as absent instead of throwing out of the client.
  Status s = StatusFromReply(500, R"({"error":{"message":1,"field":[],"reason":{}}})");
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_EQ(s.message(), "");
  s = StatusFromReply(409, R"({"kind":7,"reason":"AlreadyExists","message":"m"})");
  EXPECT_EQ(s.code(), StatusCode::kConflict);
  s = StatusFromReply(409, R"({"kind":"Status","reason":false,"message":null})");
  EXPECT_EQ(s.code(), StatusCode::kConflict);
  EXPECT_EQ(s.message(), "");
  // Too deep a body is not parsed: it is echoed, cut, as text.
  const std::string deep = std::string(5000, '[') + std::string(5000, ']');
  s = StatusFromReply(400, deep);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "HTTP 400: " + std::string(512, '['));
}

TEST(JsonBodyTest, ParseJsonObjectSaysWhatIsWrong) {
  httplib::Request req;
  req.body = "";
  EXPECT_NE(ParseJsonObject(req).status().message().find("empty"), std::string::npos);
  req.body = R"({"a": 1,})";
  Status s = ParseJsonObject(req).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("syntax error at byte 9"), std::string::npos) << s.message();
  // A number no double holds is an error too, not an exception out of the parser.
  req.body = R"({"reward": 1e999})";
  s = ParseJsonObject(req).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("not valid JSON"), std::string::npos) << s.message();
  req.body = "[1]";
  EXPECT_NE(ParseJsonObject(req).status().message().find("must be a JSON object, got array"),
            std::string::npos);
  req.body = "{}";
  req.set_header("Content-Type", "text/plain");
  EXPECT_NE(ParseJsonObject(req).status().message().find("text/plain"), std::string::npos);
  req.headers.clear();
  req.set_header("Content-Type", "application/merge-patch+json");
  EXPECT_TRUE(ParseJsonObject(req).ok());
}

TEST(BoundedTaskQueueTest, RunsEverythingAndBlocksWhenFull) {
  std::atomic<int> ran{0};
  std::atomic<bool> release{false};
  {
    BoundedTaskQueue q(/*threads=*/1, /*max_queued=*/2);
    q.enqueue([&] {
      while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ++ran;
    });
    // Wait until the worker holds the first task, then fill the queue.
    while (q.busy() != 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    q.enqueue([&] { ++ran; });
    q.enqueue([&] { ++ran; });
    EXPECT_EQ(q.queued(), 2u);
    std::atomic<bool> fourth_enqueued{false};
    std::thread producer([&] {
      q.enqueue([&] { ++ran; });  // Blocks: the queue is full.
      fourth_enqueued = true;
    });
    // Once the producer is blocked in enqueue, it has not got through.
    while (q.blocked() != 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_FALSE(fourth_enqueued.load());
    release = true;
    producer.join();
    EXPECT_TRUE(fourth_enqueued.load());
    q.shutdown();  // Drains what is queued.
  }
  EXPECT_EQ(ran.load(), 4);
}

// With room for refusals, a task that finds the queue full runs at once as a refusal (on the
// refusal thread, RunningAsRefusal() true) instead of waiting; once the refusals are full too,
// enqueue blocks as before.
TEST(BoundedTaskQueueTest, RefusesWhatTheQueueHasNoRoomFor) {
  std::atomic<bool> release{false};
  std::atomic<bool> release_refusals{false};
  std::atomic<int> served{0};
  std::atomic<int> refused{0};
  const auto task = [&] {
    if (BoundedTaskQueue::RunningAsRefusal()) {
      while (!release_refusals.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ++refused;
    } else {
      while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ++served;
    }
  };
  {
    BoundedTaskQueue q(/*threads=*/1, /*max_queued=*/1, /*max_refusing=*/1);
    EXPECT_FALSE(BoundedTaskQueue::RunningAsRefusal());
    q.enqueue(task);
    while (q.busy() != 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    q.enqueue(task);  // Queued.
    q.enqueue(task);  // Refused: taken by the refusal thread, which holds it.
    while (q.refused() != 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    q.enqueue(task);  // A refusal too, waiting while the refusal thread holds the first.
    EXPECT_EQ(q.queued(), 1u);
    std::atomic<bool> fifth_enqueued{false};
    std::thread producer([&] {
      q.enqueue(task);  // Both full: blocks.
      fifth_enqueued = true;
    });
    while (q.blocked() != 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_FALSE(fifth_enqueued.load());
    release_refusals = true;  // Room among the refusals: the fifth becomes one.
    producer.join();
    release = true;
    q.shutdown();
  }
  EXPECT_EQ(served.load(), 2);
  EXPECT_EQ(refused.load(), 3);
}

}  // namespace
}  // namespace sluice::http
