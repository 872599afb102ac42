// DataflowService's acknowledgement routes: POST /v1/batches/{id}/ack (final, or held until the
// trainer's checkpoint) and the held batches' release and take-back (dataflow_core.h, "Held
// acknowledgements").
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "common/http/json_body.h"
#include "workers/dataflow/dataflow_service.h"
#include "workers/dataflow/request_fields.h"

namespace sluice::dataflow {

using nlohmann::json;

namespace {

// {"through": integer >= 0}, nothing else.
Status ReadThrough(const httplib::Request& req, int64_t& through) {
  Result<json> body = http::ParseJsonObject(req);
  if (!body.ok()) return body.status();
  SLUICE_RETURN_IF_ERROR(RejectUnknownKeys(*body, {"through"}));
  SLUICE_RETURN_IF_ERROR(ReadInt(*body, "through", true, through));
  if (through < 0) return BadField("must be >= 0", "through");
  return Status::Ok();
}

}  // namespace

void DataflowService::HandleAck(const httplib::Request& req, httplib::Response& res) {
  const std::string id = req.matches[1];
  bool hold = false;
  if (!req.body.empty()) {  // No body: a final acknowledgement, as before held ones existed.
    Result<json> body = http::ParseJsonObject(req);
    Status s = body.status();
    if (s.ok()) s = RejectUnknownKeys(*body, {"hold"});
    if (s.ok()) s = ReadBool(*body, "hold", hold);
    if (!s.ok()) return http::ReplyError(res, s);
  }
  BeginOp();
  Result<int64_t> acked = int64_t{0};
  if (hold) {
    acked = core_->AckHeld(id);
  } else if (Status s = core_->Ack(id); !s.ok()) {
    acked = s;
  }
  Status durable = EndOp();
  if (!acked.ok()) return http::ReplyError(res, acked.status());
  if (!durable.ok()) return http::ReplyError(res, durable);
  json reply = {{"batch_id", id}, {"acked", true}};
  if (hold) reply["held"] = *acked;
  http::ReplyJson(res, reply);
}

void DataflowService::HandleReleaseHeld(const httplib::Request& req, httplib::Response& res) {
  HandleHeld(req, res, &DataflowCore::ReleaseHeld, "released");
}

void DataflowService::HandleResumeHeld(const httplib::Request& req, httplib::Response& res) {
  HandleHeld(req, res, &DataflowCore::ResumeHeld, "taken_back");
}

void DataflowService::HandleHeld(const httplib::Request& req, httplib::Response& res,
                                 Result<int64_t> (DataflowCore::*call)(std::string_view, int64_t),
                                 const char* count) {
  const std::string policy = req.matches[1];
  int64_t through = 0;
  if (Status s = ReadThrough(req, through); !s.ok()) return http::ReplyError(res, s);
  BeginOp();
  Result<int64_t> n = ((*core_).*call)(policy, through);
  Status durable = EndOp();
  if (!n.ok()) return http::ReplyError(res, n.status());
  if (!durable.ok()) return http::ReplyError(res, durable);
  http::ReplyJson(res, {{"policy", policy}, {count, *n}});
}

}  // namespace sluice::dataflow
