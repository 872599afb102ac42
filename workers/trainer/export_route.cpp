#include "workers/trainer/export_route.h"

#include <charconv>
#include <memory>

#include "common/http/json_body.h"

namespace sluice::trainer {

void ExportRoute::Handle(const httplib::Request& req, httplib::Response& res) {
  const std::string text = req.matches[1].str();
  int64_t version = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), version);
  if (ec != std::errc() || end != text.data() + text.size() || version < 0) {
    return http::ReplyError(res, Status::InvalidArgument("version must be a non-negative "
                                                         "integer, got \"" +
                                                             text.substr(0, 64) + "\"",
                                                         "version"));
  }
  if (root_.empty()) {
    return http::ReplyError(
        res, Status::Conflict("no export directory is configured: start the trainer with "
                              "--export-dir or --checkpoint-dir"));
  }
  std::shared_ptr<const weights::WeightSnapshot> snapshot = store_.Full(version);
  if (!snapshot) {
    std::string held;
    for (const weights::VersionInfo& v : store_.Versions()) {
      held += (held.empty() ? "" : ", ") + std::to_string(v.version);
    }
    return http::ReplyError(res, Status::NotFound("weights version " + std::to_string(version) +
                                                  " is not held (held: [" + held + "])"));
  }
  std::optional<model::ModelConfig> config;
  weights::HfExportOptions options;
  {
    std::lock_guard<std::mutex> lock(mu_);
    config = config_;
    options = options_;
  }
  if (!config) return http::ReplyError(res, Status::Unavailable("the model is not loaded yet"));
  const std::string dir = root_ + "/" + weights::HfExportName(options.policy, version);
  Result<weights::HfExport> e = weights::ExportHfDirectory(*snapshot, *config, options, dir);
  if (!e.ok()) {
    logger_.Warn("export failed", {{"version", version}, {"error", e.status().ToString()}});
    return http::ReplyError(res, e.status());
  }
  if (e->created) {
    logger_.Info("exported", {{"version", version}, {"path", e->path}, {"bytes", e->bytes}});
  }
  http::ReplyJson(res, {{"version", e->version},
                        {"path", e->path},
                        {"digest", e->digest},
                        {"bytes", e->bytes},
                        {"created", e->created}});
}

}  // namespace sluice::trainer
