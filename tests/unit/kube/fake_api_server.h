// A tiny in-memory API server for tests of the lease and event code: objects by URL path,
// resourceVersion per write, 404/409 (AlreadyExists, Conflict) like the real one, merge patch.
// `fail_writes` makes every write answer 500.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/unit/kube/test_server.h"

namespace sluice::kube::testing {

class FakeApiServer {
 public:
  FakeApiServer() {
    server_.SetHandler(
        [this](const httplib::Request& req, httplib::Response& res) { Handle(req, res); });
  }
  std::string Url() const { return server_.Url(); }
  std::optional<nlohmann::json> Object(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = objects_.find(path);
    if (it == objects_.end()) return std::nullopt;
    return it->second;
  }
  size_t Size() {
    std::lock_guard<std::mutex> lock(mu_);
    return objects_.size();
  }
  std::vector<SeenRequest> Requests() { return server_.Requests(); }
  std::atomic<bool> fail_writes{false};

 private:
  void Handle(const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu_);
    if (req.method != "GET" && fail_writes) return ReplyStatus(res, 500, "InternalError", "boom");
    if (req.method == "GET") {
      auto it = objects_.find(req.path);
      if (it == objects_.end()) return ReplyStatus(res, 404, "NotFound", "not found");
      return Reply(res, it->second);
    }
    nlohmann::json body = nlohmann::json::parse(req.body, nullptr, false);
    if (req.method == "POST") {
      const std::string path = req.path + "/" + body["metadata"]["name"].get<std::string>();
      if (objects_.count(path)) return ReplyStatus(res, 409, "AlreadyExists", "exists");
      body["metadata"]["resourceVersion"] = std::to_string(++rv_);
      body["metadata"]["uid"] = "uid-" + std::to_string(rv_);
      objects_[path] = body;
      res.status = 201;
      return Reply(res, body);
    }
    auto it = objects_.find(req.path);
    if (it == objects_.end()) return ReplyStatus(res, 404, "NotFound", "not found");
    if (req.method == "PUT") {
      if (body["metadata"].value("resourceVersion", "") !=
          it->second["metadata"].value("resourceVersion", "")) {
        return ReplyStatus(res, 409, "Conflict", "the object has been modified");
      }
      body["metadata"]["resourceVersion"] = std::to_string(++rv_);
      it->second = body;
      return Reply(res, body);
    }
    if (req.method == "PATCH") {
      it->second.merge_patch(body);
      it->second["metadata"]["resourceVersion"] = std::to_string(++rv_);
      return Reply(res, it->second);
    }
    if (req.method == "DELETE") {
      nlohmann::json gone = it->second;
      objects_.erase(it);
      return Reply(res, gone);
    }
    res.status = 405;
  }
  static void Reply(httplib::Response& res, const nlohmann::json& body) {
    res.set_content(body.dump(), "application/json");
  }

  std::mutex mu_;
  std::map<std::string, nlohmann::json> objects_;
  int64_t rv_ = 100;
  // Last: destroyed first, so its handler threads are joined before the state they use goes.
  ScriptedServer server_;
};

}  // namespace sluice::kube::testing
