// http::Client against an HTTPS server that closes idle keep-alive connections (the local API
// server's case). A TLS connection the server has closed still looks alive to the client (the
// server's close_notify is readable data), so the next request written into it fails. The client
// then resends on a new connection; taking another pooled connection instead, closed just the
// same, lost an operator's event (a POST) in CI.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "common/http/client.h"
#include "common/http/json_body.h"
#include "common/http/server.h"
#include "common/logging/logger.h"
#include "common/metrics/registry.h"

namespace sluice::http {
namespace http_tls_keep_alive_test {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

// A self-signed certificate for 127.0.0.1, made by the openssl command line tool.
class SelfSignedCert {
 public:
  SelfSignedCert()
      : dir_(fs::temp_directory_path() / ("sluice-keepalive-" + std::to_string(::getpid()))) {
    fs::create_directories(dir_);
    const std::string script =
        "cd " + dir_.string() +
        " && openssl req -x509 -newkey rsa:2048 -nodes -keyout key.pem -out cert.pem -days 2 "
        "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 2>/dev/null";
    ok_ = std::system(script.c_str()) == 0;
  }
  ~SelfSignedCert() { fs::remove_all(dir_); }
  bool ok() const { return ok_; }
  std::string cert() const { return (dir_ / "cert.pem").string(); }
  std::string key() const { return (dir_ / "key.pem").string(); }

 private:
  fs::path dir_;
  bool ok_ = false;
};

// POST /v1/events answers once `together` requests are in the handler at once (so that the client
// holds that many connections), and records each request's client port (its connection).
class EventServer {
 public:
  EventServer(const SelfSignedCert& cert, int together) : together_(together) {
    ServerOptions options;
    options.tls = ServerTlsOptions{cert.cert(), cert.key(), ""};
    options.keep_alive_timeout = std::chrono::seconds(1);
    options.worker_threads = 4;
    server_ = std::make_unique<Server>(
        std::move(options), &registry_,
        log::Logger("test", SystemClock::Instance(), [](std::string_view) {}));
    server_->Post("/v1/events", [this](const httplib::Request& req, httplib::Response& res) {
      std::unique_lock<std::mutex> lock(mu_);
      ports_.insert(req.remote_port);
      ++arrived_;
      cv_.notify_all();
      cv_.wait_for(lock, std::chrono::seconds(5), [&] { return arrived_ >= together_; });
      ReplyJson(res, {{"ok", true}}, 201);
    });
  }
  ~EventServer() { server_->Shutdown(); }
  Status Start() { return server_->Start(); }
  std::string url() const { return server_->BaseUrl(); }
  size_t connections() {
    std::lock_guard<std::mutex> lock(mu_);
    return ports_.size();
  }

 private:
  metrics::Registry registry_;
  std::unique_ptr<Server> server_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<int> ports_;
  int arrived_ = 0;
  const int together_;
};

TEST(HttpTlsKeepAliveTest, APostAfterTheServerClosedEveryPooledConnectionIsSentOnANewOne) {
  SelfSignedCert cert;
  ASSERT_TRUE(cert.ok()) << "the openssl command could not make a test certificate";
  EventServer server(cert, 2);
  ASSERT_TRUE(server.Start().ok());
  ClientOptions options;
  options.base_url = server.url();
  options.tls.insecure_skip_verify = true;
  options.max_attempts = 1;  // No ordinary retries: only the resend on a new connection.
  options.max_idle_time = milliseconds(60000);  // Keep the closed connections pooled.
  std::unique_ptr<Client> client = Client::Create(options).value();
  // Two requests at once leave two pooled connections.
  Result<Response> a = Status::Internal("unset");
  std::thread other([&] { a = client->Post("/v1/events", "{}", "application/json"); });
  Result<Response> b = client->Post("/v1/events", "{}", "application/json");
  other.join();
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  ASSERT_EQ(server.connections(), 2u);
  // The server's keep-alive timer closes both (1 s); nothing observable says when but time.
  std::this_thread::sleep_for(milliseconds(1800));
  Result<Response> event = client->Post("/v1/events", "{}", "application/json");
  ASSERT_TRUE(event.ok()) << event.status().ToString();
  EXPECT_EQ(event->status, 201);
  EXPECT_EQ(server.connections(), 3u);
}

}  // namespace http_tls_keep_alive_test
}  // namespace sluice::http
