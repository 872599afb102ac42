// Tests of RunProbe (httpGet against a local server, tcpSocket, exec), ProbeTimingOf and
// ProbeState.
#include "localcluster/node/probe.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/tls/certificates.h"
#include "tests/support/free_port.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait_until.h"

namespace sluice::node {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using test_support::FreePort;

// A listening socket on 127.0.0.1; never accepts (connections complete in the backlog).
class Listener {
 public:
  Listener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(::listen(fd_, 16), 0);
    socklen_t len = sizeof(addr);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~Listener() { Close(); }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

class ProbeHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("ok", "text/plain");
    });
    server_.Get("/fail", [](const httplib::Request&, httplib::Response& res) {
      res.status = 503;
      res.set_content("down", "text/plain");
    });
    server_.Get("/moved", [](const httplib::Request&, httplib::Response& res) {
      res.status = 302;
      res.set_header("Location", "http://198.51.100.1/elsewhere");
    });
    server_.Get("/headers", [](const httplib::Request& req, httplib::Response& res) {
      res.status = req.get_header_value("X-Probe") == "yes" &&
                           req.get_header_value("User-Agent").rfind("kube-probe/", 0) == 0
                       ? 200
                       : 400;
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    const auto deadline = std::chrono::steady_clock::now() + seconds(20);
    while (!server_.is_running() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(1));
    }
  }
  void TearDown() override {
    server_.stop();
    thread_.join();
  }

  json HttpProbe(const std::string& path, json port) const {
    return {{"httpGet", {{"path", path}, {"port", port}}}, {"timeoutSeconds", 5}};
  }

  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

TEST_F(ProbeHttpTest, SuccessOn2xxAnd3xx) {
  ProbeResult r = RunProbe(HttpProbe("/healthz", port_), "127.0.0.1", json::object(), {});
  EXPECT_TRUE(r.success) << r.message;
  r = RunProbe(HttpProbe("/moved", port_), "127.0.0.1", json::object(), {});
  EXPECT_TRUE(r.success) << r.message;
}

TEST_F(ProbeHttpTest, FailureOnErrorStatus) {
  ProbeResult r = RunProbe(HttpProbe("/fail", port_), "127.0.0.1", json::object(), {});
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.message, "HTTP probe failed with statuscode: 503");
  r = RunProbe(HttpProbe("/missing", port_), "127.0.0.1", json::object(), {});
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.message, "HTTP probe failed with statuscode: 404");
}

TEST_F(ProbeHttpTest, NamedPortsHostAndHeaders) {
  json container = {{"ports",
                     {{{"name", "metrics"}, {"containerPort", 1}},
                      {{"name", "http"}, {"containerPort", port_}}}}};
  ProbeResult r = RunProbe(HttpProbe("/healthz", "http"), "127.0.0.1", container, {});
  EXPECT_TRUE(r.success) << r.message;
  r = RunProbe(HttpProbe("/healthz", std::to_string(port_)), "127.0.0.1", json::object(), {});
  EXPECT_TRUE(r.success) << r.message;
  r = RunProbe(HttpProbe("/healthz", "nope"), "127.0.0.1", container, {});
  EXPECT_FALSE(r.success);
  EXPECT_NE(r.message.find("nope"), std::string::npos) << r.message;

  // The host field wins over the pod IP (which here points nowhere useful).
  json probe = HttpProbe("healthz", port_);  // A path without '/' gets one.
  probe["httpGet"]["host"] = "127.0.0.1";
  r = RunProbe(probe, "203.0.113.1", json::object(), {});
  EXPECT_TRUE(r.success) << r.message;

  json with_headers = HttpProbe("/headers", port_);
  with_headers["httpGet"]["httpHeaders"] = {{{"name", "X-Probe"}, {"value", "yes"}}};
  r = RunProbe(with_headers, "127.0.0.1", json::object(), {});
  EXPECT_TRUE(r.success) << r.message;
  r = RunProbe(HttpProbe("/headers", port_), "127.0.0.1", json::object(), {});
  EXPECT_FALSE(r.success);
}

TEST(ProbeTest, HttpConnectionRefused) {
  const int port = FreePort();
  json probe = {{"httpGet", {{"path", "/healthz"}, {"port", port}}}};
  ProbeResult r = RunProbe(probe, "127.0.0.1", json::object(), {});
  EXPECT_FALSE(r.success);
  const std::string hp = "127.0.0.1:" + std::to_string(port);
  EXPECT_EQ(r.message,
            "Get \"http://" + hp + "/healthz\": dial tcp " + hp + ": connect: connection refused");
}

TEST(ProbeTest, HttpTimeout) {
  Listener silent;  // Accepts the connection in the kernel, never answers.
  json probe = {{"httpGet", {{"path", "/"}, {"port", silent.port()}}}, {"timeoutSeconds", 1}};
  const auto start = std::chrono::steady_clock::now();
  ProbeResult r = RunProbe(probe, "127.0.0.1", json::object(), {});
  EXPECT_FALSE(r.success);
  EXPECT_NE(r.message.find("Get \"http://127.0.0.1:"), std::string::npos) << r.message;
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(15));
}

// As the kubelet: an HTTPS probe does not verify the certificate (here one from a CA the node
// does not know, naming another host), only that the container answers 200-399 over TLS.
TEST(ProbeTest, HttpsProbesSkipVerification) {
  test_support::TempDir dir;
  const Clock::WallTime now = SystemClock::Instance().WallNow();
  Result<tls::CertifiedKey> ca = tls::NewCertificateAuthority({"ca", now, std::chrono::hours(1)});
  ASSERT_TRUE(ca.ok()) << ca.status().ToString();
  Result<tls::CertifiedKey> cert = tls::IssueServingCertificate(
      *ca, {"dataflow", now, std::chrono::hours(1)}, {"dataflow.rl.svc"});
  ASSERT_TRUE(cert.ok()) << cert.status().ToString();
  std::ofstream(dir.File("tls.crt")) << cert->cert_pem;
  std::ofstream(dir.File("tls.key")) << cert->key_pem;
  httplib::SSLServer server(dir.File("tls.crt").c_str(), dir.File("tls.key").c_str());
  ASSERT_TRUE(server.is_valid());
  server.Get("/readyz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok", "text/plain");
  });
  server.Get("/fail", [](const httplib::Request&, httplib::Response& res) { res.status = 503; });
  const int port = server.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread thread([&] { server.listen_after_bind(); });
  test_support::WaitUntil([&] { return server.is_running(); }, seconds(20), milliseconds(1));

  const json https = {{"httpGet", {{"path", "/readyz"}, {"port", port}, {"scheme", "HTTPS"}}},
                      {"timeoutSeconds", 5}};
  ProbeResult r = RunProbe(https, "127.0.0.1", json::object(), {});
  EXPECT_TRUE(r.success) << r.message;
  json failing = https;
  failing["httpGet"]["path"] = "/fail";
  r = RunProbe(failing, "127.0.0.1", json::object(), {});
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.message, "HTTP probe failed with statuscode: 503");
  // Plain HTTP to a TLS port does not pass.
  json plain = https;
  plain["httpGet"]["scheme"] = "HTTP";
  EXPECT_FALSE(RunProbe(plain, "127.0.0.1", json::object(), {}).success);
  server.stop();
  thread.join();
}

TEST(ProbeTest, UnsupportedActions) {
  ProbeResult r =
      RunProbe({{"httpGet", {{"port", 80}, {"scheme", "FTP"}}}}, "127.0.0.1", json::object(), {});
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.message, "unsupported scheme: FTP");
  r = RunProbe({{"grpc", {{"port", 80}}}}, "127.0.0.1", json::object(), {});
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.message, "grpc probes are not supported");
  r = RunProbe(json::object(), "127.0.0.1", json::object(), {});
  EXPECT_FALSE(r.success);
}

TEST(ProbeTest, TcpSocket) {
  Listener listener;
  ProbeResult r =
      RunProbe({{"tcpSocket", {{"port", listener.port()}}}}, "127.0.0.1", json::object(), {});
  EXPECT_TRUE(r.success) << r.message;
  json container = {{"ports", {{{"name", "db"}, {"containerPort", listener.port()}}}}};
  r = RunProbe({{"tcpSocket", {{"port", "db"}, {"host", "127.0.0.1"}}}}, "", container, {});
  EXPECT_TRUE(r.success) << r.message;

  const int closed = FreePort();
  r = RunProbe({{"tcpSocket", {{"port", closed}}}}, "127.0.0.1", json::object(), {});
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.message,
            "dial tcp 127.0.0.1:" + std::to_string(closed) + ": connect: connection refused");
}

const std::vector<std::pair<std::string, std::string>> kEnv = {
    {"PATH", "/usr/local/bin:/usr/bin:/bin"}, {"FOO", "bar"}};

json Exec(std::vector<std::string> command, int timeout = 10) {
  return {{"exec", {{"command", command}}}, {"timeoutSeconds", timeout}};
}

TEST(ProbeTest, ExecSuccessAndFailure) {
  ProbeResult r = RunProbe(Exec({"true"}), "", json::object(), kEnv);
  EXPECT_TRUE(r.success) << r.message;
  r = RunProbe(Exec({"/bin/sh", "-c", "test \"$FOO\" = bar"}), "", json::object(), kEnv);
  EXPECT_TRUE(r.success) << r.message;
  r = RunProbe(Exec({"/bin/sh", "-c", "exit 2"}), "", json::object(), kEnv);
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.message, "command \"/bin/sh -c exit 2\" exited with code 2");
  r = RunProbe(Exec({"sh", "-c", "echo not healthy; echo oops >&2; exit 1"}), "", json::object(),
               kEnv);
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.message, "not healthy\noops");
  r = RunProbe(Exec({"sluice-no-such-command"}), "", json::object(), kEnv);
  EXPECT_FALSE(r.success);
  EXPECT_NE(r.message.find("sluice-no-such-command"), std::string::npos) << r.message;
  r = RunProbe(Exec({}), "", json::object(), kEnv);
  EXPECT_FALSE(r.success);
}

TEST(ProbeTest, ExecTimeoutKillsTheCommand) {
  const auto start = std::chrono::steady_clock::now();
  ProbeResult r =
      RunProbe(Exec({"/bin/sh", "-c", "sleep 30 & sleep 30"}, 1), "", json::object(), kEnv);
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.message, "command \"/bin/sh -c sleep 30 & sleep 30\" timed out");
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(15));
}

TEST(ProbeTest, ExecWithBackgroundChildDoesNotWaitForIt) {
  const auto start = std::chrono::steady_clock::now();
  ProbeResult r =
      RunProbe(Exec({"/bin/sh", "-c", "sleep 30 & exit 0"}, 20), "", json::object(), kEnv);
  EXPECT_TRUE(r.success) << r.message;
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(15));
}

TEST(ProbeTimingTest, DefaultsAndValues) {
  ProbeTiming d = ProbeTimingOf(json::object());
  EXPECT_EQ(d.initial_delay, milliseconds(0));
  EXPECT_EQ(d.period, seconds(10));
  EXPECT_EQ(d.timeout, seconds(1));
  EXPECT_EQ(d.success_threshold, 1);
  EXPECT_EQ(d.failure_threshold, 3);

  ProbeTiming t = ProbeTimingOf({{"initialDelaySeconds", 5},
                                 {"periodSeconds", 2},
                                 {"timeoutSeconds", 3},
                                 {"successThreshold", 2},
                                 {"failureThreshold", 4}});
  EXPECT_EQ(t.initial_delay, seconds(5));
  EXPECT_EQ(t.period, seconds(2));
  EXPECT_EQ(t.timeout, seconds(3));
  EXPECT_EQ(t.success_threshold, 2);
  EXPECT_EQ(t.failure_threshold, 4);

  ProbeTiming bad = ProbeTimingOf({{"periodSeconds", 0}, {"timeoutSeconds", "x"}});
  EXPECT_EQ(bad.period, seconds(10));
  EXPECT_EQ(bad.timeout, seconds(1));
}

TEST(ProbeStateTest, ReadinessStartsFailingAndFollowsThresholds) {
  ProbeTiming t;
  t.success_threshold = 2;
  t.failure_threshold = 3;
  ProbeState s = ProbeState::Readiness(t);
  EXPECT_FALSE(s.passing());
  EXPECT_FALSE(s.Observe(true));
  EXPECT_FALSE(s.Observe(false));  // Resets the success run.
  EXPECT_FALSE(s.Observe(true));
  EXPECT_TRUE(s.Observe(true));
  EXPECT_EQ(s.consecutive_successes(), 2);
  EXPECT_TRUE(s.Observe(false));
  EXPECT_TRUE(s.Observe(false));
  EXPECT_EQ(s.consecutive_failures(), 2);
  EXPECT_FALSE(s.Observe(ProbeResult{false, "HTTP probe failed with statuscode: 503"}));
  EXPECT_EQ(s.last_message(), "HTTP probe failed with statuscode: 503");
  EXPECT_EQ(s.consecutive_successes(), 0);
}

TEST(ProbeStateTest, LivenessStartsPassing) {
  ProbeState s = ProbeState::Liveness(ProbeTiming{});
  EXPECT_TRUE(s.passing());
  EXPECT_TRUE(s.Observe(false));
  EXPECT_TRUE(s.Observe(false));
  EXPECT_FALSE(s.Observe(false));
  EXPECT_TRUE(s.Observe(true));  // success_threshold 1.
}

TEST(ProbeStateTest, StartupStartsFailing) {
  ProbeState s = ProbeState::Startup(ProbeTiming{});
  EXPECT_FALSE(s.passing());
  EXPECT_TRUE(s.Observe(true));
}

}  // namespace
}  // namespace sluice::node
