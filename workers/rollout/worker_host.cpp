#include "workers/rollout/worker_host.h"

#include <string>
#include <thread>
#include <utility>

#include "common/http/json_body.h"

namespace sluice::rollout {

WorkerHost::WorkerHost(WeightUpdater* updater, std::chrono::seconds drain_grace,
                       log::Logger* logger)
    : updater_(updater), drain_grace_(drain_grace), logger_(logger) {}

void WorkerHost::Register(http::Server& server) {
  // Ready once the models are loaded and the worker has loaded the announced weights (its join),
  // so a replica that joins late never counts as serving the initial weights.
  server.AddReadinessCheck("policies", [this]() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!worker_) return Status::Unavailable("loading the policies");
    return worker_->Readiness();
  });
  server.Get("/v1/status", [this](const httplib::Request&, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!worker_) {
      http::ReplyJson(res, {{"in_flight", 0},
                            {"draining", false},
                            {"drained", false},
                            {"policies", nlohmann::json::array()},
                            {"tokens_per_second", 0.0},
                            {"loading", true}});
      return;
    }
    http::ReplyJson(res, worker_->StatusJson());
  });
  server.Post("/v1/drain", [this](const httplib::Request& req, httplib::Response& res) {
    std::chrono::seconds grace = drain_grace_;
    if (req.has_param("grace")) {
      const std::string text = req.get_param_value("grace");
      size_t used = 0;
      long long seconds = -1;
      try {
        seconds = std::stoll(text, &used);
      } catch (...) {
        used = 0;
      }
      if (used == 0 || used != text.size() || seconds < 0) {
        return http::ReplyError(
            res, Status::InvalidArgument("must be a whole number of seconds", "grace"));
      }
      grace = std::chrono::seconds(seconds);
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (!worker_) return http::ReplyError(res, Status::Unavailable("still loading the policies"));
    worker_->Drain(grace);
    http::ReplyJson(res, worker_->StatusJson());
  });
  // The operator names the region's relay (operator/placement/weight_relays.h); "" makes this
  // replica fetch from the trainers itself.
  server.Post("/v1/relay", [this](const httplib::Request& req, httplib::Response& res) {
    Result<nlohmann::json> body = http::ParseJsonObject(req);
    if (!body.ok()) return http::ReplyError(res, body.status());
    auto it = body->find("url");
    if (it == body->end() || !it->is_string()) {
      return http::ReplyError(res, Status::InvalidArgument("must be a string", "url"));
    }
    const std::string url = it->get<std::string>();
    if (!url.empty() && url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0) {
      return http::ReplyError(
          res,
          Status::InvalidArgument("must be empty or an http(s) URL, got \"" + url + "\"", "url"));
    }
    updater_->SetRelay(url);
    logger_->Info("weight relay", {{"relay", url}});
    http::ReplyJson(res, {{"relay", url}});
  });
  updater_->RegisterRoutes(server);
}

void WorkerHost::SetWorker(std::unique_ptr<RolloutWorker> worker) {
  std::lock_guard<std::mutex> lock(mu_);
  worker_ = std::move(worker);
}

void WorkerHost::Run(CancellationSource stop) {
  RolloutWorker* worker = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    worker = worker_.get();
  }
  // SIGTERM: drain (stop leasing, let episodes finish within the grace), then stop.
  CancellationSource finish;
  std::thread shutdown_watch([&] {
    stop.Token().Wait();
    {
      std::lock_guard<std::mutex> lock(mu_);
      worker->Drain(drain_grace_);
    }
    Clock& clock = worker->clock();
    const Clock::MonoTime deadline = clock.Now() + drain_grace_ + std::chrono::seconds(1);
    while (!worker->drained() && clock.Now() < deadline &&
           !finish.Token().WaitFor(std::chrono::milliseconds(100))) {
    }
    finish.Cancel();
  });
  worker->Run(finish.Token());
  finish.Cancel();
  stop.Cancel();
  shutdown_watch.join();
}

}  // namespace sluice::rollout
