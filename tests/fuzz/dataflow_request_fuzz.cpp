// libFuzzer target for what the dataflow service's HTTP routes parse (workers/dataflow/
// dataflow_service.cpp, dataflow_service_acks.cpp, dataset_route.cpp) and what its clients parse
// back: the JSON bodies (common/http/json_body.h ParseJsonObject, then the key readers of
// workers/dataflow/request_fields.h), the query parameters (QueryInt, QuerySeconds,
// ParseTrainPageQuery), the trajectory-group frame of POST /v1/trajectories and the batch frame of
// GET /v1/batches (workers/dataflow/client/trajectory_codec.h), and the error body every client
// turns into a Status (StatusFromReply). The HTTP server itself is not involved.
//
// The first byte selects the route (its low 4 bits, modulo the route count: '0'..'9' are routes
// 0..9) and, for JSON bodies, the Content-Type sent (bits 4-5: none, text/plain,
// application/merge-patch+json, application/json; the digits '0'..'9' send application/json).
// The rest is the body, query string or frame.
//
// Nothing may crash; errors are Statuses. Checked:
//   - ParseJsonObject accepts exactly the JSON objects, under a JSON Content-Type, that
//     ParseJsonText accepts; every key reader of a route's body returns what the body holds, leaves
//     its output alone for an absent or null key, and names the key in an InvalidArgument
//     otherwise; RejectUnknownKeys refuses exactly the bodies with a key outside the route's list;
//   - every InvalidArgument survives the trip through its error body (ErrorJson, StatusFromReply)
//     with its code and field, as a client sees it;
//   - accepted query parameters are decimal integers / finite seconds >= 0; a train page query is
//     in range;
//   - an accepted trajectory group or batch obeys the codec's limits and per-sample parallel
//     arrays, and re-encoding is stable: Encode(Decode(Encode(Decode(x)))) == Encode(Decode(x));
//   - StatusFromReply is OK exactly for 2xx, else has the code of the HTTP status (or
//     AlreadyExists), and echoes at most 512 bytes of a body it does not understand.
//
// Fuzz it with `scripts/fuzz.sh dataflow_request [seconds]` (tests/fuzz/CMakeLists.txt).
#include <httplib.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/http/json_body.h"
#include "common/json/json_depth.h"
#include "common/status.h"
#include "tests/fuzz/fuzz_require.h"
#include "workers/dataflow/client/trajectory_codec.h"
#include "workers/dataflow/dataset_route.h"
#include "workers/dataflow/request_fields.h"

namespace {

using nlohmann::json;
using sluice::Status;
using sluice::StatusCode;
namespace dataflow = sluice::dataflow;

constexpr size_t kMaxInputBytes = 64 << 10;

using sluice::fuzz::Require;

enum Route : uint8_t {
  kLeaseBody,        // POST /v1/leases
  kReleaseBody,      // POST /v1/leases/{id}/release
  kAckBody,          // POST /v1/batches/{id}/ack
  kHeldBody,         // POST /v1/policies/{policy}/held/release and .../resume
  kAnnounceBody,     // POST /v1/policies/{policy}/versions
  kTrajectoryFrame,  // POST /v1/trajectories
  kQuery,            // GET /v1/batches/{policy}?groups&wait, GET /v1/dataset/train?offset&limit
  kBatchFrame,       // GET /v1/batches/{policy}'s reply, as the trainer decodes it
  kErrorReply,       // Any route's error reply, as DataflowClient reads it (http::Response)
  kReserved,         // Same as kErrorReply; keeps '0'..'9' one route each.
  kRouteCount,
};

constexpr const char* kContentTypes[] = {nullptr, "text/plain", "application/merge-patch+json",
                                         "application/json"};

// ---- JSON bodies: the key readers the routes call, in the routes' order. ----

enum class Kind { kString, kInt, kSeconds, kBool };
struct Key {
  const char* name;
  Kind kind;
  bool required;
};
struct BodyRoute {
  std::initializer_list<std::string_view> known;
  std::initializer_list<Key> keys;
};

// The bodies of dataflow_service.cpp's handlers (ParseLeaseRequest, HandleRelease, HandleAck,
// ReadThrough, HandleAnnounce).
const BodyRoute& BodyRouteFor(Route route) {
  static const BodyRoute kLease = {
      {"worker_id", "pool", "region", "hosted_policies", "capacity", "wait"},
      {{"worker_id", Kind::kString, true},
       {"pool", Kind::kString, false},
       {"region", Kind::kString, false},
       {"capacity", Kind::kInt, false},
       {"wait", Kind::kSeconds, false}}};
  static const BodyRoute kRelease = {{"error"}, {{"error", Kind::kString, false}}};
  static const BodyRoute kAck = {{"hold"}, {{"hold", Kind::kBool, false}}};
  static const BodyRoute kHeld = {{"through"}, {{"through", Kind::kInt, true}}};
  static const BodyRoute kAnnounce = {{"number", "url", "digest", "delta_base", "evaluate"},
                                      {{"number", Kind::kInt, true},
                                       {"url", Kind::kString, false},
                                       {"digest", Kind::kString, false},
                                       {"delta_base", Kind::kInt, false},
                                       {"evaluate", Kind::kBool, false}}};
  switch (route) {
    case kLeaseBody:
      return kLease;
    case kReleaseBody:
      return kRelease;
    case kAckBody:
      return kAck;
    case kHeldBody:
      return kHeld;
    default:
      return kAnnounce;
  }
}

bool IsAscii(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

// What a client makes of the error body the server sends for `s` (an InvalidArgument).
void CheckErrorTravels(const Status& s) {
  Require(s.code() == StatusCode::kInvalidArgument, "request errors are InvalidArgument");
  const std::string body =
      sluice::http::ErrorJson(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  const Status back = sluice::http::StatusFromReply(sluice::HttpStatusFor(s.code()), body);
  Require(back.code() == s.code(), "an error body keeps its code");
  Require(back.field() == s.field(), "an error body keeps its field");
  if (IsAscii(s.message())) Require(back.message() == s.message(), "an error body keeps its text");
}

// The reader's error for a key it refuses.
void CheckRefusal(const Status& s, const char* key) {
  Require(!s.ok(), "a bad value is refused");
  Require(s.field() == key, "the refusal names the key");
  CheckErrorTravels(s);
}

void CheckKey(const json& body, const Key& key) {
  auto it = body.find(key.name);
  const bool absent = it == body.end() || it->is_null();
  Status s;
  bool unchanged = false;
  switch (key.kind) {
    case Kind::kString: {
      const std::string sentinel = "\x01unset";
      std::string out = sentinel;
      s = dataflow::ReadString(body, key.name, key.required, out);
      unchanged = out == sentinel;
      if (!absent && it->is_string()) {
        Require(s.ok() && out == it->get<std::string>(), "ReadString returns the string");
        return;
      }
      break;
    }
    case Kind::kInt: {
      constexpr int64_t kSentinel = -424242;
      int64_t out = kSentinel;
      s = dataflow::ReadInt(body, key.name, key.required, out);
      unchanged = out == kSentinel;
      const bool fits = !absent && it->is_number_integer() &&
                        (!it->is_number_unsigned() || it->get<uint64_t>() <= uint64_t{INT64_MAX});
      if (fits) {
        Require(s.ok() && out == it->get<int64_t>(), "ReadInt returns the integer");
        return;
      }
      break;
    }
    case Kind::kSeconds: {
      constexpr double kSentinel = -7.5;
      double out = kSentinel;
      s = dataflow::ReadSeconds(body, key.name, out);
      unchanged = out == kSentinel;
      if (s.ok() && !absent) {
        Require(it->is_number() && std::isfinite(out) && out >= 0 && out == it->get<double>(),
                "ReadSeconds returns finite seconds >= 0");
        return;
      }
      break;
    }
    case Kind::kBool: {
      bool out = true;
      bool out2 = false;
      s = dataflow::ReadBool(body, key.name, out);
      const Status s2 = dataflow::ReadBool(body, key.name, out2);
      Require(s.ok() == s2.ok(), "ReadBool is a function of the body");
      unchanged = out && !out2;
      if (!absent && it->is_boolean()) {
        Require(s.ok() && out == it->get<bool>() && out2 == out, "ReadBool returns the boolean");
        return;
      }
      break;
    }
  }
  if (absent && !key.required) {
    Require(s.ok() && unchanged, "an absent optional key leaves the output alone");
    return;
  }
  CheckRefusal(s, key.name);
  Require(unchanged, "a refused key leaves the output alone");
}

void FuzzJsonBody(Route route, const char* content_type, std::string_view body) {
  httplib::Request req;
  req.body = std::string(body);
  if (content_type != nullptr) req.set_header("Content-Type", content_type);
  auto parsed = sluice::http::ParseJsonObject(req);
  auto text = sluice::http::ParseJsonText(body, "request body");
  const bool json_type = content_type == nullptr || std::string_view(content_type) != "text/plain";
  if (parsed.ok()) {
    Require(json_type, "a non-JSON Content-Type is refused");
    Require(parsed->is_object(), "ParseJsonObject gives an object");
    Require(text.ok() && *text == *parsed, "ParseJsonObject agrees with ParseJsonText");
  } else {
    CheckErrorTravels(parsed.status());
    Require(!json_type || !text.ok() || !text->is_object(), "a JSON object body is accepted");
    return;
  }
  const json& j = *parsed;
  const BodyRoute& r = BodyRouteFor(route);

  const Status unknown = dataflow::RejectUnknownKeys(j, r.known);
  bool all_known = true;
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    for (std::string_view k : r.known) known |= k == key;
    all_known &= known;
  }
  Require(unknown.ok() == all_known, "RejectUnknownKeys refuses exactly the unknown keys");
  if (!unknown.ok()) {
    bool named = false;
    for (std::string_view k : r.known) named |= k == unknown.field();
    Require(!named && j.contains(unknown.field()), "RejectUnknownKeys names an unknown key");
    CheckErrorTravels(unknown);
  }
  for (const Key& key : r.keys) CheckKey(j, key);
}

// ---- Query parameters. ----

bool IsDecimal(std::string_view s) {
  if (s.starts_with('-')) s.remove_prefix(1);
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

void FuzzQuery(std::string_view query) {
  httplib::Params params;
  httplib::detail::parse_query_text(std::string(query), params);
  // GET /v1/batches/{policy}: groups, wait.
  int64_t groups = -3;
  const Status g = dataflow::QueryInt(params, "groups", groups);
  auto first = params.lower_bound("groups");  // QueryInt reads the first occurrence.
  if (first == params.end() || first->first != "groups") {
    Require(g.ok() && groups == -3, "an absent parameter leaves the output alone");
  } else if (g.ok()) {
    Require(IsDecimal(first->second), "QueryInt accepts decimal integers only");
  } else {
    CheckRefusal(g, "groups");
  }
  double wait = -1;
  const Status w = dataflow::QuerySeconds(params, "wait", wait);
  if (w.ok()) {
    Require(params.find("wait") == params.end() ? wait == -1 : std::isfinite(wait) && wait >= 0,
            "QuerySeconds gives finite seconds >= 0");
  } else {
    CheckRefusal(w, "wait");
  }
  // GET /v1/dataset/train: offset, limit.
  auto page = dataflow::ParseTrainPageQuery(params);
  if (page.ok()) {
    Require(page->offset >= 0 && page->limit >= 1 && page->limit <= dataflow::kMaxTrainPageRows,
            "a train page query is in range");
    Require(params.count("offset") <= 1 && params.count("limit") <= 1,
            "a repeated train page parameter is refused");
  } else {
    Require(page.status().field() == "offset" || page.status().field() == "limit",
            "a train page error names its parameter");
    CheckErrorTravels(page.status());
  }
}

// ---- Frames. ----

void CheckSample(const dataflow::Sample& s) {
  Require(dataflow::ValidateSample(s).ok(), "a decoded sample validates");
  Require(s.tokens.size() <= dataflow::kMaxTokensPerSample, "tokens within the limit");
  Require(s.policies.size() <= dataflow::kMaxPoliciesPerSample, "policies within the limit");
  for (uint32_t t : s.turn_starts) Require(t <= s.tokens.size(), "turn starts within the tokens");
}

void FuzzTrajectoryGroup(std::string_view body) {
  auto group = dataflow::DecodeTrajectoryGroup(body);
  if (!group.ok()) return;
  Require(!group->task_id.empty(), "a group names its task");
  Require(!group->samples.empty() && group->samples.size() <= dataflow::kMaxSamplesPerGroup,
          "a group holds 1 to kMaxSamplesPerGroup samples");
  for (const dataflow::Sample& s : group->samples) {
    CheckSample(s);
    Require(s.task_id == group->task_id, "samples carry the group's task");
  }
  std::string once;
  Require(dataflow::EncodeTrajectoryGroup(*group, &once).ok(), "a decoded group encodes");
  auto again = dataflow::DecodeTrajectoryGroup(once);
  Require(again.ok(), "an encoded group decodes");
  std::string twice;
  Require(dataflow::EncodeTrajectoryGroup(*again, &twice).ok(), "a re-decoded group encodes");
  Require(once == twice, "trajectory group re-encoding is stable");
}

void FuzzBatch(std::string_view body) {
  auto batch = dataflow::DecodeBatch(body);
  if (!batch.ok()) return;
  const size_t n = batch->samples.size();
  Require(n <= dataflow::kMaxSamplesPerBatch, "samples within the limit");
  Require(batch->group_index.size() == n && batch->replayed.size() == n, "per-sample batch arrays");
  for (const dataflow::Sample& s : batch->samples) {
    const size_t t = s.tokens.size();
    Require(s.loss_mask.size() == t && s.behaviour_logprobs.size() == t && s.versions.size() == t,
            "per-token arrays are parallel");
    Require(s.policy == batch->policy, "samples carry the batch's policy");
    Require(s.group_mean.has_value() && s.group_std.has_value(), "group statistics are set");
  }
  Require(!batch->stats.is_discarded(), "stats are JSON");
  // Encoding dumps the stats recursively; nothing dumps a batch's stats this deep in production.
  if (sluice::JsonValueDepth(batch->stats) > sluice::kMaxJsonDepth) return;
  std::string once;
  Require(dataflow::EncodeBatch(*batch, &once).ok(), "a decoded batch encodes");
  auto again = dataflow::DecodeBatch(once);
  Require(again.ok(), "an encoded batch decodes");
  std::string twice;
  Require(dataflow::EncodeBatch(*again, &twice).ok(), "a re-decoded batch encodes");
  Require(once == twice, "batch re-encoding is stable");
}

// ---- Error replies. ----

void FuzzErrorReply(uint8_t selector, std::string_view body) {
  static constexpr int kStatuses[] = {200, 201, 204, 206, 400, 401, 403, 404, 409, 410,
                                      413, 416, 422, 429, 499, 500, 502, 503, 504, 302};
  const int http_status = kStatuses[selector % std::size(kStatuses)];
  const Status s = sluice::http::StatusFromReply(http_status, body);
  if (http_status >= 200 && http_status < 300) {
    Require(s.ok(), "2xx is OK");
    return;
  }
  Require(!s.ok(), "an error status is an error");
  Require(
      s.code() == sluice::StatusCodeForHttp(http_status) || s.code() == StatusCode::kAlreadyExists,
      "the code follows the HTTP status");
  // A body that is no JSON object is echoed, cut at 512 bytes.
  if (!json::parse(body, nullptr, /*allow_exceptions=*/false).is_object()) {
    const std::string prefix = "HTTP " + std::to_string(http_status);
    Require(s.message().starts_with(prefix) && s.message().size() <= prefix.size() + 2 + 512,
            "an unknown body is echoed briefly");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  if (size == 0 || size > kMaxInputBytes) return 0;
  const auto route = static_cast<Route>((bytes[0] & 0x0f) % kRouteCount);
  const char* content_type = kContentTypes[(bytes[0] >> 4) & 3];
  const std::string_view rest(reinterpret_cast<const char*>(bytes) + 1, size - 1);
  switch (route) {
    case kLeaseBody:
    case kReleaseBody:
    case kAckBody:
    case kHeldBody:
    case kAnnounceBody:
      FuzzJsonBody(route, content_type, rest);
      break;
    case kTrajectoryFrame:
      FuzzTrajectoryGroup(rest);
      break;
    case kQuery:
      FuzzQuery(rest);
      break;
    case kBatchFrame:
      FuzzBatch(rest);
      break;
    case kErrorReply:
    case kReserved:
    case kRouteCount:
      if (!rest.empty()) FuzzErrorReply(static_cast<uint8_t>(rest[0]), rest.substr(1));
      break;
  }
  return 0;
}
