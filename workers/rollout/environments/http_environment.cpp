#include "workers/rollout/environments/http_environment.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "common/http/bearer_token.h"
#include "common/http/client.h"
#include "common/http/json_body.h"

namespace sluice::rollout {

namespace {

using nlohmann::json;
// Real time for I/O timeouts and latencies; decisions read a sluice::Clock (common/clock.h).
using Steady = std::chrono::steady_clock;

constexpr std::string_view kReply = "environment reply";
// Connecting is quick or hopeless; a long call timeout (a slow tool) should not also mean waiting
// that long for an unreachable host.
constexpr std::chrono::milliseconds kMaxConnectTimeout{5000};
// httplib's read timeout is measured by poll(), which may wake a little before the nominal time;
// an Unavailable that took at least the timeout less this slack was a timeout.
constexpr std::chrono::milliseconds kTimeoutSlack{100};

std::string FieldName(std::string_view key) { return std::string(kReply) + "." + std::string(key); }

Status WrongType(std::string_view key, std::string_view expected, const json& value) {
  return Status::InvalidArgument(
      "must be " + std::string(expected) + ", got " + std::string(value.type_name()),
      FieldName(key));
}

// The string at reply[key]. Absent (or null) is `fallback` when given, an error otherwise.
Status ReadString(const json& reply, std::string_view key, const std::string* fallback,
                  std::string* out) {
  auto it = reply.find(key);
  if (it == reply.end() || it->is_null()) {
    if (fallback != nullptr) {
      *out = *fallback;
      return Status::Ok();
    }
    return Status::InvalidArgument("is required", FieldName(key));
  }
  if (!it->is_string()) return WrongType(key, "a string", *it);
  *out = it->get<std::string>();
  return Status::Ok();
}

Status ReadStepResult(const json& reply, StepResult* out) {
  SLUICE_RETURN_IF_ERROR(ReadString(reply, "observation", nullptr, &out->observation));
  if (auto it = reply.find("reward"); it != reply.end() && !it->is_null()) {
    if (!it->is_number()) return WrongType("reward", "a number", *it);
    const double reward = it->get<double>();
    // JSON has no infinity and our parser rejects 1e999, but a reward is an input to training:
    // checked where it enters rather than trusted to the parser.
    if (!std::isfinite(reward))
      return Status::InvalidArgument("must be finite", FieldName("reward"));
    out->reward = reward;
  }
  if (auto it = reply.find("done"); it != reply.end() && !it->is_null()) {
    if (!it->is_boolean()) return WrongType("done", "a boolean", *it);
    out->done = it->get<bool>();
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<HttpEnvironment>> HttpEnvironment::Create(const std::string& base_url,
                                                                 std::chrono::seconds timeout,
                                                                 const std::string& bearer_token) {
  http::ClientOptions options;
  options.base_url = base_url;
  options.connect_timeout = std::min<std::chrono::milliseconds>(timeout, kMaxConnectTimeout);
  options.read_timeout = timeout;
  options.write_timeout = timeout;
  options.max_attempts = 1;          // See the header: no call is safe to repeat.
  options.max_idle_connections = 1;  // One episode, one call at a time.
  if (!bearer_token.empty()) options.token = http::TokenSource::FromValue(bearer_token);
  Result<std::unique_ptr<http::Client>> client = http::Client::Create(std::move(options));
  if (!client.ok()) {
    return Status::InvalidArgument(client.status().message(), "workflow.environment.url");
  }
  return std::unique_ptr<HttpEnvironment>(new HttpEnvironment(std::move(client).value(), timeout));
}

HttpEnvironment::HttpEnvironment(std::unique_ptr<http::Client> client, std::chrono::seconds timeout)
    : client_(std::move(client)), timeout_(timeout) {}

HttpEnvironment::~HttpEnvironment() = default;

Result<std::string> HttpEnvironment::Reset(const EnvironmentTask& task,
                                           const CancellationToken& cancel) {
  const json body = {{"task",
                      {{"task_id", task.task_id},
                       {"prompt", task.prompt},
                       {"answer", task.answer},
                       {"row", task.row}}}};
  SLUICE_ASSIGN_OR_RETURN(json reply, Call("/reset", body, cancel));
  std::string observation;
  std::string session;
  const std::string no_session;
  Status status = ReadString(reply, "observation", nullptr, &observation);
  if (status.ok()) status = ReadString(reply, "session", &no_session, &session);
  if (!status.ok()) return status.WithContext("environment POST /reset");
  session_ = std::move(session);
  return observation;
}

Result<StepResult> HttpEnvironment::Step(const ToolCall& call, const std::string& text,
                                         const CancellationToken& cancel) {
  const json body = {
      {"session", session_}, {"tool", call.name}, {"arguments", call.arguments}, {"text", text}};
  SLUICE_ASSIGN_OR_RETURN(json reply, Call("/step", body, cancel));
  StepResult result;
  if (Status status = ReadStepResult(reply, &result); !status.ok()) {
    return status.WithContext("environment POST /step");
  }
  return result;
}

Result<json> HttpEnvironment::Call(std::string_view path, const json& body,
                                   const CancellationToken& cancel) {
  const std::string what = "environment POST " + std::string(path);
  http::Request request;
  request.method = "POST";
  request.path = std::string(path);
  // Replace invalid UTF-8 (a model's text may end inside a multi-byte character) instead of
  // throwing.
  request.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  request.content_type = std::string(http::kJsonContentType);
  request.cancel = cancel;

  // Streaming, although replies are small, because only a streamed call has its socket shut
  // down by cancellation (client.h); a plain Send would wait for the reply or the timeout.
  const Steady::time_point start = Steady::now();
  const Steady::time_point deadline = start + timeout_;
  std::string reply;
  Status stopped;  // Why the body was not read to the end.
  auto on_data = [&](std::string_view data) {
    if (reply.size() + data.size() > kMaxEnvironmentReplyBytes) {
      stopped = Status::TooLarge(what + ": the reply is over " +
                                 std::to_string(kMaxEnvironmentReplyBytes >> 20) + " MiB");
      return false;
    }
    // The read timeout bounds each silence; this bounds a reply that trickles in.
    if (Steady::now() > deadline) {
      stopped = Status::DeadlineExceeded(what + ": the reply took longer than " +
                                         std::to_string(timeout_.count()) + " s");
      return false;
    }
    reply.append(data);
    return true;
  };
  Result<http::Response> response = client_->Stream(std::move(request), {}, on_data);
  if (!response.ok()) {
    Status status = response.status();
    if (status.code() == StatusCode::kUnavailable &&
        Steady::now() - start >= timeout_ - kTimeoutSlack) {
      return Status::DeadlineExceeded(what + ": no reply within " +
                                      std::to_string(timeout_.count()) + " s (" + status.message() +
                                      ")");
    }
    return status.WithContext("environment");
  }
  if (!stopped.ok()) return stopped;
  if (Status status = response->ToStatus(); !status.ok()) return status.WithContext(what);

  if (reply.empty()) {
    return Status::InvalidArgument(what + ": the body is empty; expected a JSON object",
                                   std::string(kReply));
  }
  // Nesting depth, syntax, and numbers beyond a double ("1e999") are all refused here.
  Result<json> read = http::ParseJsonText(reply, what + ": the body");
  if (!read.ok()) return Status::InvalidArgument(read.status().message(), std::string(kReply));
  json parsed = std::move(*read);
  if (!parsed.is_object()) {
    return Status::InvalidArgument(
        what + ": the body must be a JSON object, got " + std::string(parsed.type_name()),
        std::string(kReply));
  }
  return parsed;
}

}  // namespace sluice::rollout
