// ExportRoute: POST /v1/weights/{version}/export on trainer rank 0, which writes a version the
// WeightStore still holds as a Hugging Face model directory <root>/<policy>-v<version>
// (weights/hf_export.h; docs/trainer.md, "Exporting a version").
//
// Replies: 200 {"version", "path", "digest", "bytes", "created"}; 400 for a version that is not
// a non-negative integer; 404 for a version not held (naming the held ones); 409 when no export
// root is configured; 503 before the model is loaded; the export's own errors otherwise.
//
// Thread safety: Handle runs on HTTP worker threads while training runs. The store is
// thread-safe and a snapshot it hands out stays valid after eviction; the model config, known
// only once the model is loaded (after the server already answers /healthz), and the extra files,
// known only once a uri model is downloaded, are set under a lock.
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/http/server.h"
#include "common/logging/logger.h"
#include "workers/model/model_config.h"
#include "workers/weights/hf_export.h"
#include "workers/weights/weight_store.h"

namespace sluice::trainer {

class ExportRoute {
 public:
  // `root` empty: no export directory configured (every request is 409). `extra_files` are
  // copied into each export (the tokenizer files of the Policy's source directory).
  ExportRoute(const weights::WeightStore& store, std::string root, std::string policy,
              std::vector<std::string> extra_files, log::Logger& logger)
      : store_(store), root_(std::move(root)), logger_(logger) {
    options_.policy = std::move(policy);
    options_.extra_files = std::move(extra_files);
  }

  // Replaces the files copied into each export (see the constructor).
  void SetExtraFiles(std::vector<std::string> extra_files) {
    std::lock_guard<std::mutex> lock(mu_);
    options_.extra_files = std::move(extra_files);
  }

  void SetModelConfig(const model::ModelConfig& config) {
    std::lock_guard<std::mutex> lock(mu_);
    config_ = config;
  }

  void Register(http::Server& server) {
    server.Post(R"(/v1/weights/([^/]+)/export)",
                [this](const httplib::Request& req, httplib::Response& res) { Handle(req, res); });
  }

 private:
  void Handle(const httplib::Request& req, httplib::Response& res);

  const weights::WeightStore& store_;
  const std::string root_;
  log::Logger& logger_;
  std::mutex mu_;
  weights::HfExportOptions options_;          // Guarded by mu_.
  std::optional<model::ModelConfig> config_;  // Guarded by mu_.
};

}  // namespace sluice::trainer
