// Test helpers for the kube client tests: a scripted HTTP(S) server on 127.0.0.1 (port 0) whose
// every request goes to one handler the test sets, and a thread that advances a FakeClock
// whenever someone sleeps on it (so retry and rate-limit waits take no real time).
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"

namespace sluice::kube::testing {

struct SeenRequest {
  std::string method;
  std::string path;    // Without the query.
  std::string target;  // With the query.
  httplib::Headers headers;
  httplib::Params params;
  std::string body;
  std::string Header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
  std::string Param(const std::string& name) const {
    auto it = params.find(name);
    return it == params.end() ? "" : it->second;
  }
};

class ScriptedServer {
 public:
  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;

  // Plain HTTP.
  ScriptedServer() : server_(std::make_unique<httplib::Server>()) { Init(); }
  // HTTPS with `cert`/`key`; clients must present a certificate signed by `client_ca` when set.
  ScriptedServer(const std::string& cert, const std::string& key, const std::string& client_ca)
      : server_(client_ca.empty() ? std::make_unique<httplib::SSLServer>(cert.c_str(), key.c_str())
                                  : std::make_unique<httplib::SSLServer>(cert.c_str(), key.c_str(),
                                                                         client_ca.c_str())),
        tls_(true) {
    Init();
  }
  ~ScriptedServer() {
    server_->stop();
    if (thread_.joinable()) thread_.join();
  }

  void SetHandler(Handler h) {
    std::lock_guard<std::mutex> lock(mu_);
    handler_ = std::move(h);
  }
  std::string Url() const {
    return std::string(tls_ ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_);
  }
  std::vector<SeenRequest> Requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }
  size_t Count() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_.size();
  }

 private:
  void Init() {
    auto route = [this](const httplib::Request& req, httplib::Response& res) {
      Handler h;
      {
        std::lock_guard<std::mutex> lock(mu_);
        SeenRequest s{req.method, req.path, req.target, req.headers, req.params, req.body};
        seen_.push_back(std::move(s));
        h = handler_;
      }
      if (h) {
        h(req, res);
      } else {
        res.status = 404;
      }
    };
    server_->Get(".*", route);
    server_->Post(".*", route);
    server_->Put(".*", route);
    server_->Patch(".*", route);
    server_->Delete(".*", route);
    port_ = server_->bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    // stop() is a no-op until the accept loop runs; wait for it so teardown cannot hang.
    while (!server_->is_running()) std::this_thread::yield();
  }

  std::unique_ptr<httplib::Server> server_;
  bool tls_ = false;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  Handler handler_;
  std::vector<SeenRequest> seen_;
};

inline void ReplyStatus(httplib::Response& res, int code, const std::string& reason,
                        const std::string& message, const std::string& details = "{}") {
  res.status = code;
  res.set_content(R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":")" + message +
                      R"(","reason":")" + reason + R"(","details":)" + details + R"(,"code":)" +
                      std::to_string(code) + "}",
                  "application/json");
}

// Advances `clock` in `step`s whenever a thread sleeps on it; `advanced()` is the total.
class AutoAdvance {
 public:
  explicit AutoAdvance(FakeClock& clock,
                       std::chrono::milliseconds step = std::chrono::milliseconds(20))
      : clock_(clock), step_(step), thread_([this] { Loop(); }) {}
  ~AutoAdvance() {
    stop_ = true;
    thread_.join();
  }
  std::chrono::milliseconds advanced() const { return std::chrono::milliseconds(advanced_ms_); }

 private:
  void Loop() {
    while (!stop_) {
      // Only sleepers whose time has not come: one already due but not yet woken (slow under
      // load) must not make the clock run on past it.
      if (clock_.PendingSleepers() > 0) {
        clock_.Advance(step_);
        advanced_ms_ += step_.count();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    }
  }
  FakeClock& clock_;
  std::chrono::milliseconds step_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> advanced_ms_{0};
  std::thread thread_;
};

}  // namespace sluice::kube::testing
