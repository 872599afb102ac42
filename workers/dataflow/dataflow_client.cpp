#include "workers/dataflow/dataflow_client.h"

#include <nlohmann/json.hpp>
#include <utility>

namespace sluice::dataflow {

Result<std::optional<std::string>> DataflowClient::TakeBatchFrame(const std::string& policy,
                                                                  int64_t groups,
                                                                  std::chrono::seconds wait,
                                                                  const CancellationToken& cancel) {
  http::Request req;
  req.method = "GET";
  req.path = "/v1/batches/" + policy + "?groups=" + std::to_string(groups) +
             "&wait=" + std::to_string(wait.count());
  req.cancel = cancel;
  Result<http::Response> res = client_->Send(std::move(req));
  if (!res.ok()) return res.status();
  if (res->status == 204) return std::optional<std::string>();
  SLUICE_RETURN_IF_ERROR(res->ToStatus().WithContext("GET /v1/batches/" + policy));
  return std::optional<std::string>(std::move(res->body));
}

Result<std::optional<Batch>> DataflowClient::TakeBatch(const std::string& policy, int64_t groups,
                                                       std::chrono::seconds wait,
                                                       const CancellationToken& cancel) {
  Result<std::optional<std::string>> frame = TakeBatchFrame(policy, groups, wait, cancel);
  if (!frame.ok()) return frame.status();
  if (!frame->has_value()) return std::optional<Batch>();
  Result<Batch> batch = DecodeBatch(**frame);
  if (!batch.ok()) return batch.status();
  return std::optional<Batch>(std::move(*batch));
}

Status DataflowClient::Ack(const std::string& batch_id) {
  http::Request req;
  req.method = "POST";
  req.path = "/v1/batches/" + batch_id + "/ack";
  req.idempotent = true;  // Acking twice is OK.
  Result<http::Response> res = client_->Send(std::move(req));
  if (!res.ok()) return res.status();
  return res->ToStatus().WithContext("POST /v1/batches/" + batch_id + "/ack");
}

Status DataflowClient::Announce(const std::string& policy, const VersionAnnouncement& version) {
  nlohmann::json body = {{"number", version.number}, {"delta_base", version.delta_base}};
  if (!version.url.empty()) body["url"] = version.url;
  if (!version.digest.empty()) body["digest"] = version.digest;
  http::Request req;
  req.method = "POST";
  req.path = "/v1/policies/" + policy + "/versions";
  req.body = body.dump();
  req.content_type = "application/json";
  req.idempotent = true;  // Re-announcing is answered 409, which is fine.
  Result<http::Response> res = client_->Send(std::move(req));
  if (!res.ok()) return res.status();
  if (res->status == 409) return Status::Ok();
  return res->ToStatus().WithContext("POST /v1/policies/" + policy + "/versions");
}

}  // namespace sluice::dataflow
