// PrometheusClient against a fake Prometheus (an http::Server on 127.0.0.1 returning canned
// replies) and, when /usr/bin/prometheus is installed, against the real one.
#include "operator/autoscale/prometheus_client.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/http/server.h"
#include "common/logging/logger.h"
#include "tests/support/free_port.h"

extern char** environ;

namespace sluice::autoscale {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using test_support::FreePort;

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A fake Prometheus: /api/v1/query answers with the reply the test sets and records the
// decoded query and raw target of each request.
class FakePrometheus : public ::testing::Test {
 protected:
  void SetUp() override {
    http::ServerOptions options;
    options.name = "fake-prometheus";
    options.access_log = false;
    options.worker_threads = 2;
    server_ = std::make_unique<http::Server>(options, nullptr, logger_);
    server_->Get("/api/v1/query", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      queries_.push_back(req.get_param_value("query"));
      targets_.push_back(req.target);
      timeouts_.push_back(req.get_param_value("timeout"));
      res.status = status_;
      res.set_content(body_, "application/json");
    });
    ASSERT_TRUE(server_->Start().ok());
    Result<std::unique_ptr<PrometheusClient>> client =
        PrometheusClient::Create(server_->BaseUrl(), milliseconds(5000));
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(client).value();
  }
  void TearDown() override {
    client_.reset();  // Closes its keep-alive connections, so Shutdown need not wait for them.
    server_->Shutdown();
  }

  void Reply(int status, std::string body) {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = status;
    body_ = std::move(body);
  }
  std::vector<std::string> Queries() {
    std::lock_guard<std::mutex> lock(mu_);
    return queries_;
  }
  std::vector<std::string> Targets() {
    std::lock_guard<std::mutex> lock(mu_);
    return targets_;
  }

  static std::string Vector(const std::vector<std::string>& values) {
    std::string result;
    for (size_t i = 0; i < values.size(); ++i) {
      if (i > 0) result += ",";
      result += R"({"metric":{"pod":"p)" + std::to_string(i) + R"("},"value":[1700000000.123,")" +
                values[i] + R"("]})";
    }
    return R"({"status":"success","data":{"resultType":"vector","result":[)" + result + "]}}";
  }

  log::Logger logger_{"test", SystemClock::Instance(), [](std::string_view) {}};
  std::unique_ptr<http::Server> server_;
  std::unique_ptr<PrometheusClient> client_;
  std::mutex mu_;
  int status_ = 200;
  std::string body_;
  std::vector<std::string> queries_;
  std::vector<std::string> targets_;
  std::vector<std::string> timeouts_;
};

TEST_F(FakePrometheus, VectorWithOneSampleGivesItsValue) {
  Reply(200, Vector({"420.5"}));
  Result<double> v = client_->QueryScalar("sum(sluice_pending_work)");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_DOUBLE_EQ(*v, 420.5);
  Reply(200, Vector({"1.5e+03"}));
  v = client_->QueryScalar("q");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_DOUBLE_EQ(*v, 1500);
}

TEST_F(FakePrometheus, EmptyVectorIsZero) {
  Reply(200, Vector({}));
  Result<double> v = client_->QueryScalar("sum(absent_series)");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, 0.0);
}

TEST_F(FakePrometheus, SeveralSeriesAreAnErrorNamingTheCount) {
  Reply(200, Vector({"1", "2", "3"}));
  Result<double> v = client_->QueryScalar("pending_work");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kUnprocessable);
  EXPECT_TRUE(Contains(v.status().message(), "query must return one series; got 3: sum() it"))
      << v.status().ToString();
  Reply(200, Vector({"1", "2"}));
  v = client_->QueryScalar("pending_work");
  ASSERT_FALSE(v.ok());
  EXPECT_TRUE(Contains(v.status().message(), "got 2")) << v.status().ToString();
}

TEST_F(FakePrometheus, ScalarGivesItsValue) {
  Reply(200, R"({"status":"success","data":{"resultType":"scalar","result":[1700000000,"7"]}})");
  Result<double> v = client_->QueryScalar("scalar(x)");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, 7.0);
}

TEST_F(FakePrometheus, NonFiniteValuesAreErrors) {
  for (const std::string value : {"NaN", "+Inf", "-Inf"}) {
    Reply(200, Vector({value}));
    Result<double> v = client_->QueryScalar("a / b");
    ASSERT_FALSE(v.ok()) << value;
    EXPECT_EQ(v.status().code(), StatusCode::kUnprocessable);
    EXPECT_TRUE(Contains(v.status().message(), value)) << v.status().ToString();
  }
  Reply(200, R"({"status":"success","data":{"resultType":"scalar","result":[1,"NaN"]}})");
  EXPECT_FALSE(client_->QueryScalar("scalar(x)").ok());
}

TEST_F(FakePrometheus, PrometheusErrorRepliesCarryTypeAndMessage) {
  Reply(
      400,
      R"({"status":"error","errorType":"bad_data","error":"1:5: parse error: unclosed left parenthesis"})");
  Result<double> v = client_->QueryScalar("sum(");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(v.status().message(),
            "prometheus bad_data: 1:5: parse error: unclosed left parenthesis");

  Reply(422, R"({"status":"error","errorType":"execution","error":"many-to-many matching"})");
  v = client_->QueryScalar("a * b");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kUnprocessable);
  EXPECT_TRUE(Contains(v.status().message(), "execution: many-to-many matching"));

  // A status "error" on HTTP 200 is still an error.
  Reply(200, R"({"status":"error","errorType":"internal","error":"boom"})");
  v = client_->QueryScalar("x");
  ASSERT_FALSE(v.ok());
  EXPECT_TRUE(Contains(v.status().message(), "internal: boom"));
}

TEST_F(FakePrometheus, Non200RepliesAreErrors) {
  Reply(500, "upstream exploded");
  Result<double> v = client_->QueryScalar("x");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kInternal);
  EXPECT_TRUE(Contains(v.status().message(), "prometheus returned HTTP 500: upstream exploded"))
      << v.status().ToString();

  // 503 is retried once, then reported with Prometheus's message.
  Reply(503, R"({"status":"error","errorType":"timeout","error":"query timed out"})");
  const size_t before = Queries().size();
  v = client_->QueryScalar("slow");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(Contains(v.status().message(), "timeout: query timed out"));
  EXPECT_EQ(Queries().size() - before, 2u);
}

TEST_F(FakePrometheus, MalformedRepliesAreErrors) {
  for (const std::string& body :
       {std::string("not json"), std::string(R"({"status":"success"})"),
        std::string(
            R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{}}]}})"),
        std::string(
            R"({"status":"success","data":{"resultType":"vector","result":[{"value":[1,"x"]}]}})"),
        std::string(R"({"status":"success","data":{"resultType":"scalar","result":[1,2]}})")}) {
    Reply(200, body);
    Result<double> v = client_->QueryScalar("x");
    ASSERT_FALSE(v.ok()) << body;
    EXPECT_EQ(v.status().code(), StatusCode::kInternal) << v.status().ToString();
  }
  Reply(200, R"({"status":"success","data":{"resultType":"matrix","result":[]}})");
  Result<double> v = client_->QueryScalar("x[5m]");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kUnprocessable);
  EXPECT_TRUE(Contains(v.status().message(), "matrix")) << v.status().ToString();
}

TEST_F(FakePrometheus, QueryIsPercentEncoded) {
  Reply(200, Vector({"1"}));
  const std::string q = R"(sum(sluice_pending{pool="p-1",namespace=~"a|b"}) + 1 / 2 & x?y=#z)";
  ASSERT_TRUE(client_->QueryScalar(q).ok());
  ASSERT_EQ(Queries().size(), 1u);
  EXPECT_EQ(Queries()[0], q);
  const std::string target = Targets()[0];
  EXPECT_EQ(target.rfind("/api/v1/query?query=sum%28sluice_pending%7Bpool%3D%22p-1%22", 0), 0u)
      << target;
  EXPECT_TRUE(Contains(target, "%20%2B%201%20%2F%202%20%26%20x%3Fy%3D%23z")) << target;
  EXPECT_TRUE(Contains(target, "&timeout=5000ms")) << target;
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_EQ(timeouts_[0], "5000ms");
}

TEST(PrometheusClientTest, BaseUrlPathPrefixIsKept) {
  log::Logger logger("test", SystemClock::Instance(), [](std::string_view) {});
  http::ServerOptions options;
  options.access_log = false;
  http::Server server(options, nullptr, logger);
  server.Get("/prom/api/v1/query", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"success","data":{"resultType":"scalar","result":[1,"3"]}})",
                    "application/json");
  });
  ASSERT_TRUE(server.Start().ok());
  auto client = PrometheusClient::Create(server.BaseUrl() + "/prom", milliseconds(5000));
  ASSERT_TRUE(client.ok());
  Result<double> v = (*client)->QueryScalar("x");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, 3.0);
  client->reset();
  server.Shutdown();
}

TEST(PrometheusClientTest, CreateRejectsBadUrlsAndTimeouts) {
  auto c = PrometheusClient::Create("prometheus:9090", milliseconds(1000));
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(Contains(c.status().message(), "prometheus:9090")) << c.status().ToString();
  EXPECT_FALSE(PrometheusClient::Create("http://127.0.0.1:9090", milliseconds(0)).ok());
}

TEST(PrometheusClientTest, UnreachableServerIsUnavailable) {
  auto c = PrometheusClient::Create("http://127.0.0.1:" + std::to_string(FreePort()),
                                    milliseconds(2000));
  ASSERT_TRUE(c.ok());
  Result<double> v = (*c)->QueryScalar("x");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kUnavailable) << v.status().ToString();
}

TEST(ExpandQueryTest, ReplacesPoolAndNamespace) {
  EXPECT_EQ(ExpandQuery(R"(sum(pending{pool="$pool",namespace="$namespace"}))", "gen", "rl"),
            R"(sum(pending{pool="gen",namespace="rl"}))");
  EXPECT_EQ(ExpandQuery("$pool $pool $namespace$namespace", "a", "b"), "a a bb");
  EXPECT_EQ(ExpandQuery("no placeholders $ here", "a", "b"), "no placeholders $ here");
  EXPECT_EQ(ExpandQuery("", "a", "b"), "");
  // Replacement text is not expanded again.
  EXPECT_EQ(ExpandQuery("$pool", "$namespace", "x"), "$namespace");
}

// ---- The real Prometheus, when installed ------------------------------------------------

class RealPrometheus : public ::testing::Test {
 protected:
  static constexpr const char* kBinary = "/usr/bin/prometheus";

  void SetUp() override {
    ASSERT_EQ(::access(kBinary, X_OK), 0)
        << kBinary << " is not installed (make deps installs Debian's prometheus)";
    std::string tmpl = (fs::temp_directory_path() / "sluice-prom-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    std::ofstream(dir_ / "prometheus.yml") << "global:\n  evaluation_interval: 1m\n";
    const int port = FreePort();
    url_ = "http://127.0.0.1:" + std::to_string(port);

    std::vector<std::string> args = {kBinary, "--config.file=" + (dir_ / "prometheus.yml").string(),
                                     "--storage.tsdb.path=" + (dir_ / "data").string(),
                                     "--web.listen-address=127.0.0.1:" + std::to_string(port),
                                     "--log.level=warn"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string log = (dir_ / "prometheus.log").string();
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    const int rc = ::posix_spawn(&pid_, kBinary, &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ASSERT_EQ(rc, 0) << "posix_spawn: " << rc;

    // Wait for /-/ready (generous: the machine may be busy).
    http::ClientOptions options;
    options.base_url = url_;
    options.max_attempts = 1;
    options.connect_timeout = milliseconds(1000);
    options.read_timeout = milliseconds(2000);
    auto probe = http::Client::Create(options);
    ASSERT_TRUE(probe.ok());
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    bool ready = false;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      Result<http::Response> r = (*probe)->Get("/-/ready");
      if (r.ok() && r->status == 200) {
        ready = true;
        break;
      }
      std::this_thread::sleep_for(milliseconds(100));
    }
    ASSERT_TRUE(ready) << "prometheus did not become ready; log:\n" << ReadLog();
  }

  void TearDown() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      int status = 0;
      while (::waitpid(pid_, &status, WNOHANG) == 0) {
        if (std::chrono::steady_clock::now() > deadline) {
          ::kill(pid_, SIGKILL);
          ::waitpid(pid_, &status, 0);
          break;
        }
        std::this_thread::sleep_for(milliseconds(20));
      }
      pid_ = -1;
    }
    if (!dir_.empty()) {
      std::error_code ec;
      fs::remove_all(dir_, ec);
    }
  }

  std::string ReadLog() const {
    std::ifstream in(dir_ / "prometheus.log");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  pid_t pid_ = -1;
  fs::path dir_;
  std::string url_;
};

TEST_F(RealPrometheus, AnswersInstantQueries) {
  auto client = PrometheusClient::Create(url_, milliseconds(10000));
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  PrometheusClient& prom = **client;

  Result<double> v = prom.QueryScalar("vector(42)");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, 42.0);

  v = prom.QueryScalar("scalar(vector(7))");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, 7.0);

  v = prom.QueryScalar("sum(no_such_series)");  // No series at all.
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, 0.0);

  v = prom.QueryScalar(
      R"(label_replace(vector(1), "a", "x", "", "") or label_replace(vector(2), "a", "y", "", ""))");
  ASSERT_FALSE(v.ok());
  EXPECT_TRUE(Contains(v.status().message(), "got 2")) << v.status().ToString();

  v = prom.QueryScalar("vector(0) / vector(0)");  // NaN.
  ASSERT_FALSE(v.ok());
  EXPECT_TRUE(Contains(v.status().message(), "NaN")) << v.status().ToString();

  v = prom.QueryScalar("sum(");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument) << v.status().ToString();
  EXPECT_TRUE(Contains(v.status().message(), "prometheus bad_data: ")) << v.status().ToString();
  EXPECT_TRUE(Contains(v.status().message(), "parse error")) << v.status().ToString();
}

}  // namespace
}  // namespace sluice::autoscale
