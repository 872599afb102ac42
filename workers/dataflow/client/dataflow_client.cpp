#include "workers/dataflow/client/dataflow_client.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "common/http/json_body.h"

namespace sluice::dataflow {

namespace {

// The `versions` list of a lease reply or of GET /v1/versions; `where` names it in errors.
Result<std::vector<AnnouncedVersion>> ParseVersions(const nlohmann::json& list,
                                                    const std::string& where) {
  if (!list.is_array()) return Status::InvalidArgument("must be a list", where);
  std::vector<AnnouncedVersion> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const nlohmann::json& v = list[i];
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (!v.is_object() || !v.contains("policy") || !v["policy"].is_string() ||
        !v.contains("number") || !v["number"].is_number_integer()) {
      return Status::InvalidArgument("must be an object with policy and number", at);
    }
    AnnouncedVersion a;
    a.policy = v["policy"].get<std::string>();
    a.number = v["number"].get<int64_t>();
    if (v.contains("url") && v["url"].is_string()) a.url = v["url"].get<std::string>();
    if (v.contains("digest") && v["digest"].is_string()) a.digest = v["digest"].get<std::string>();
    if (v.contains("delta_base") && v["delta_base"].is_number_integer()) {
      a.delta_base = v["delta_base"].get<int64_t>();
    }
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace

bool IsDrained(const Status& status) { return status.code() == StatusCode::kGone; }

Result<std::optional<std::string>> DataflowClient::TakeBatchFrame(const std::string& policy,
                                                                  int64_t groups,
                                                                  std::chrono::seconds wait,
                                                                  const CancellationToken& cancel) {
  http::Request req;
  req.method = "GET";
  req.path = "/v1/batches/" + policy + "?groups=" + std::to_string(groups) +
             "&wait=" + std::to_string(wait.count());
  req.cancel = cancel;
  req.bulk_body = true;  // Up to hundreds of MB: read in large pieces (bulk_exchange.h).
  Result<http::Response> res = client_->Send(std::move(req));
  if (!res.ok()) return res.status();
  if (res->status == 204) return std::optional<std::string>();
  if (res->status == 410) {
    // Drained: the message is the dataflow's sentence, passed on as it is (the trainer reports it).
    const nlohmann::json body = nlohmann::json::parse(res->body, nullptr, false);
    const nlohmann::json::json_pointer reason("/error/reason");
    if (body.is_object() && body.contains(reason) && body.at(reason) == kDrainedReason) {
      return Status::Gone(res->ToStatus().message());
    }
  }
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

namespace {

// POSTs `body` to `path` (idempotent: a retry of an applied call changes nothing) and reads the
// integer `field` of the reply; InvalidArgument naming the field when it is missing.
Result<int64_t> PostForCount(http::Client& client, const std::string& path,
                             const nlohmann::json& body, const char* field) {
  http::Request req;
  req.method = "POST";
  req.path = path;
  req.body = body.dump();
  req.content_type = "application/json";
  req.idempotent = true;
  Result<http::Response> res = client.Send(std::move(req));
  if (!res.ok()) return res.status();
  SLUICE_RETURN_IF_ERROR(res->ToStatus().WithContext("POST " + path));
  SLUICE_ASSIGN_OR_RETURN(nlohmann::json reply, http::ParseJsonText(res->body, "POST " + path));
  if (!reply.contains(field) || !reply[field].is_number_integer()) {
    return Status::InvalidArgument(std::string("the reply to POST ") + path + " has no integer " +
                                   field);
  }
  return reply[field].get<int64_t>();
}

}  // namespace

Result<int64_t> DataflowClient::AckHeld(const std::string& batch_id) {
  return PostForCount(*client_, "/v1/batches/" + batch_id + "/ack", {{"hold", true}}, "held");
}

Result<int64_t> DataflowClient::ReleaseHeld(const std::string& policy, int64_t through) {
  return PostForCount(*client_, "/v1/policies/" + policy + "/held/release", {{"through", through}},
                      "released");
}

Result<int64_t> DataflowClient::ResumeHeld(const std::string& policy, int64_t through) {
  return PostForCount(*client_, "/v1/policies/" + policy + "/held/resume", {{"through", through}},
                      "taken_back");
}

Status DataflowClient::Announce(const std::string& policy, const VersionAnnouncement& version) {
  nlohmann::json body = {{"number", version.number}, {"delta_base", version.delta_base}};
  if (!version.url.empty()) body["url"] = version.url;
  if (!version.digest.empty()) body["digest"] = version.digest;
  if (version.evaluate) body["evaluate"] = true;
  http::Request req;
  req.method = "POST";
  req.path = "/v1/policies/" + policy + "/versions";
  req.body = body.dump();
  req.content_type = "application/json";
  // A retry of an announcement that was applied is answered 200 (the same announcement again).
  req.idempotent = true;
  Result<http::Response> res = client_->Send(std::move(req));
  if (!res.ok()) return res.status();
  return res->ToStatus().WithContext("POST /v1/policies/" + policy + "/versions");
}

Result<bool> DataflowClient::PutFinalWeights(const std::string& policy, int64_t version,
                                             const std::string& digest, std::string image,
                                             size_t part_bytes) {
  constexpr size_t kSmallestPart = size_t{64} << 10;
  const std::string path = "/v1/final/" + policy + "/v1/weights/" + std::to_string(version);
  auto put = [&](const std::string& to, std::string body, bool part) {
    http::Request req;
    req.method = "PUT";
    req.path = to;
    req.headers.emplace("X-Sluice-Weights-Digest", digest);
    if (part) req.headers.emplace("X-Sluice-Weights-Size", std::to_string(image.size()));
    req.body = std::move(body);
    req.content_type = "application/octet-stream";
    return client_->Send(std::move(req));
  };
  part_bytes = std::max(part_bytes, kSmallestPart);
  if (image.size() <= part_bytes) {
    Result<http::Response> res = put(path, image, false);
    if (!res.ok()) return res.status();
    // Past the dataflow's body cap: in parts instead.
    if (res->status != 413) {
      SLUICE_RETURN_IF_ERROR(res->ToStatus().WithContext("PUT " + path));
      return res->status == 201;
    }
    part_bytes = std::max(image.size() / 2, kSmallestPart);
  }
  size_t offset = 0;
  while (true) {
    const size_t n = std::min(part_bytes, image.size() - offset);
    const std::string part_path = path + "/parts/" + std::to_string(offset);
    Result<http::Response> res = put(part_path, image.substr(offset, n), true);
    if (!res.ok()) return res.status();
    if (res->status == 413 && part_bytes > kSmallestPart) {
      part_bytes = std::max(part_bytes / 2, kSmallestPart);
      continue;
    }
    SLUICE_RETURN_IF_ERROR(res->ToStatus().WithContext("PUT " + part_path));
    if (res->status != 202) return res->status == 201;  // The last part: stored, or held.
    offset += n;
    if (offset >= image.size()) {
      return Status::Internal("PUT " + part_path + ": the dataflow still waits for bytes after " +
                              "the last part (202)");
    }
  }
}

Result<TrainRowsPage> DataflowClient::TrainRows(int64_t offset, int64_t limit) {
  const std::string what = "GET /v1/dataset/train";
  http::Request req;
  req.method = "GET";  // Retried by the http::Client on connection failures and 5xx.
  req.path =
      "/v1/dataset/train?offset=" + std::to_string(offset) + "&limit=" + std::to_string(limit);
  Result<http::Response> res = client_->Send(std::move(req));
  if (!res.ok()) return res.status();
  SLUICE_RETURN_IF_ERROR(res->ToStatus().WithContext(what));
  SLUICE_ASSIGN_OR_RETURN(const nlohmann::json reply,
                          http::ParseJsonText(res->body, "train rows reply"));
  const std::string where = "train rows reply";
  TrainRowsPage page;
  auto total = reply.find("total");
  if (total == reply.end() || !total->is_number_integer() || total->get<int64_t>() < 0) {
    return Status::InvalidArgument("must be an integer >= 0", where + ".total");
  }
  page.total = total->get<int64_t>();
  auto rows = reply.find("rows");
  if (rows == reply.end() || !rows->is_array()) {
    return Status::InvalidArgument("must be a list", where + ".rows");
  }
  if (static_cast<int64_t>(rows->size()) > limit) {
    return Status::InvalidArgument("has more than the " + std::to_string(limit) + " rows asked for",
                                   where + ".rows");
  }
  page.rows.reserve(rows->size());
  for (size_t i = 0; i < rows->size(); ++i) {
    const nlohmann::json& r = (*rows)[i];
    const std::string at = where + ".rows[" + std::to_string(i) + "]";
    if (!r.is_object()) return Status::InvalidArgument("must be an object", at);
    PromptRow row;
    for (auto [key, member] :
         {std::pair{"id", &PromptRow::id}, std::pair{"prompt", &PromptRow::prompt},
          std::pair{"answer", &PromptRow::answer}}) {
      auto it = r.find(key);
      if (it == r.end() || !it->is_string()) {
        return Status::InvalidArgument("must be a string", at + "." + key);
      }
      row.*member = it->get<std::string>();
    }
    // Optional: only rows that have one carry it (older dataflows send none).
    if (auto it = r.find("expression"); it != r.end()) {
      if (!it->is_string()) return Status::InvalidArgument("must be a string", at + ".expression");
      row.row = nlohmann::json{{"expression", *it}};
    }
    page.rows.push_back(std::move(row));
  }
  return page;
}

Result<std::vector<PromptRow>> DataflowClient::AllTrainRows(int64_t page) {
  std::vector<PromptRow> all;
  int64_t total = -1;  // Unknown until the first page.
  while (total < 0 || static_cast<int64_t>(all.size()) < total) {
    const auto offset = static_cast<int64_t>(all.size());
    SLUICE_ASSIGN_OR_RETURN(TrainRowsPage p, TrainRows(offset, page));
    if (total >= 0 && p.total != total) {
      return Status::Conflict("the train split changed from " + std::to_string(total) + " to " +
                              std::to_string(p.total) + " rows while it was read");
    }
    total = p.total;
    const auto left = static_cast<size_t>(total - std::min(offset, total));
    if (p.rows.size() > left || (p.rows.empty() && left > 0)) {
      return Status::InvalidArgument("has " + std::to_string(p.rows.size()) + " rows at offset " +
                                         std::to_string(offset) + " of " + std::to_string(total),
                                     "train rows reply.rows");
    }
    for (PromptRow& r : p.rows) all.push_back(std::move(r));
  }
  return all;
}

Result<LeaseAnswer> DataflowClient::Lease(const LeaseQuery& query,
                                          const CancellationToken& cancel) {
  nlohmann::json body = {{"worker_id", query.worker_id}, {"pool", query.pool},
                         {"region", query.region},       {"hosted_policies", query.hosted_policies},
                         {"capacity", query.capacity},   {"wait", query.wait.count()}};
  http::Request req;
  req.method = "POST";
  req.path = "/v1/leases";
  req.body = body.dump();
  req.content_type = "application/json";
  req.cancel = cancel;
  // Not retried: a lost reply would leave leases nobody works on until they expire.
  req.idempotent = false;
  Result<http::Response> res = client_->Send(std::move(req));
  if (!res.ok()) return res.status();
  SLUICE_RETURN_IF_ERROR(res->ToStatus().WithContext("POST /v1/leases"));
  Result<nlohmann::json> reply = http::ParseJsonText(res->body, "lease reply");
  if (!reply.ok()) return reply.status();
  LeaseAnswer answer;
  const nlohmann::json& r = *reply;
  if (auto it = r.find("tasks"); it != r.end()) {
    if (!it->is_array()) return Status::InvalidArgument("must be a list", "lease reply.tasks");
    answer.tasks = *it;
  }
  if (auto it = r.find("versions"); it != r.end()) {
    SLUICE_ASSIGN_OR_RETURN(answer.versions, ParseVersions(*it, "lease reply.versions"));
  }
  if (auto it = r.find("backpressure"); it != r.end() && it->is_boolean()) {
    answer.backpressure = it->get<bool>();
  }
  if (auto it = r.find("lease_seconds"); it != r.end() && it->is_number_integer()) {
    answer.lease_seconds = it->get<int64_t>();
  }
  return answer;
}

Result<std::vector<AnnouncedVersion>> DataflowClient::AnnouncedVersions(
    const CancellationToken& cancel) {
  http::Request req;
  req.method = "GET";  // Read-only: retried by the http::Client on connection failures and 5xx.
  req.path = "/v1/versions";
  req.cancel = cancel;
  Result<http::Response> res = client_->Send(std::move(req));
  if (!res.ok()) return res.status();
  SLUICE_RETURN_IF_ERROR(res->ToStatus().WithContext("GET /v1/versions"));
  SLUICE_ASSIGN_OR_RETURN(const nlohmann::json reply,
                          http::ParseJsonText(res->body, "versions reply"));
  auto it = reply.find("versions");
  if (it == reply.end()) return Status::InvalidArgument("is missing", "versions reply.versions");
  return ParseVersions(*it, "versions reply.versions");
}

Status DataflowClient::Renew(const std::string& lease_id) {
  http::Request req;
  req.method = "POST";
  req.path = "/v1/leases/" + lease_id + "/renew";
  req.idempotent = true;  // Renewing twice only extends the deadline again.
  Result<http::Response> res = client_->Send(std::move(req));
  if (!res.ok()) return res.status();
  return res->ToStatus().WithContext("POST /v1/leases/" + lease_id + "/renew");
}

Status DataflowClient::Release(const std::string& lease_id, const std::string& error) {
  http::Request req;
  req.method = "POST";
  req.path = "/v1/leases/" + lease_id + "/release";
  if (!error.empty()) {
    req.body = nlohmann::json{{"error", error}}.dump();
    req.content_type = "application/json";
  }
  req.idempotent = false;  // A second release with an error would count a second failure.
  Result<http::Response> res = client_->Send(std::move(req));
  if (!res.ok()) return res.status();
  return res->ToStatus().WithContext("POST /v1/leases/" + lease_id + "/release");
}

Result<nlohmann::json> DataflowClient::Submit(const TrajectoryGroup& group) {
  http::Request req;
  req.method = "POST";
  req.path = "/v1/trajectories";
  SLUICE_RETURN_IF_ERROR(EncodeTrajectoryGroup(group, &req.body));
  req.content_type = "application/octet-stream";
  req.idempotent = true;  // Submits are idempotent by task id.
  Result<http::Response> res = client_->Send(std::move(req));
  if (!res.ok()) return res.status();
  SLUICE_RETURN_IF_ERROR(res->ToStatus().WithContext("POST /v1/trajectories"));
  return http::ParseJsonText(res->body, "submit reply");
}

}  // namespace sluice::dataflow
