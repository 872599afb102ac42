// HttpEnvironment: an environment served over HTTP by the user's own server (spec.workflow.
// environment.url), speaking the protocol in environment.h: POST <url>/reset once per episode,
// then POST <url>/step per tool call, each carrying the session string /reset returned.
//
// Each call is one HTTP request, never retried: a step changes the environment's state, and a
// repeated reset would open a second session; the workflow already ends the sample when a call
// fails. A call fails with
//   - Unavailable when the server cannot be reached or closes the connection;
//   - DeadlineExceeded when no reply arrives within the timeout, or the reply is still arriving
//     when the timeout has passed;
//   - the server's own error (Response::ToStatus) for a non-2xx reply, with its message;
//   - InvalidArgument naming the field ("environment reply.observation") for a reply that is not
//     a JSON object of the protocol's shape, TooLarge for one over kMaxEnvironmentReplyBytes;
//   - Cancelled as soon as the caller's token is cancelled, even while the server is silent.
//
// Thread safety: an instance belongs to one episode (one thread at a time).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "workers/rollout/environments/environment.h"

namespace sluice::http {
class Client;
}  // namespace sluice::http

namespace sluice::rollout {

// Largest reply body accepted from an environment server. Observations go into the model's
// context, so a reply anywhere near this is a server bug, not an observation.
inline constexpr size_t kMaxEnvironmentReplyBytes = size_t{16} << 20;

class HttpEnvironment final : public Environment {
 public:
  // `base_url` is "http(s)://host[:port][/prefix]"; "/reset" and "/step" are appended. `timeout`
  // bounds each call. `bearer_token`, when not empty, is sent as "Authorization: Bearer ...".
  // Errors: InvalidArgument naming "workflow.environment.url" for a URL the client rejects.
  static Result<std::unique_ptr<HttpEnvironment>> Create(const std::string& base_url,
                                                         std::chrono::seconds timeout,
                                                         const std::string& bearer_token);
  ~HttpEnvironment() override;
  HttpEnvironment(const HttpEnvironment&) = delete;
  HttpEnvironment& operator=(const HttpEnvironment&) = delete;

  // POST /reset; remembers the reply's session for the steps that follow.
  Result<std::string> Reset(const EnvironmentTask& task, const CancellationToken& cancel) override;
  // POST /step with the session of the last Reset ("" when there was none or it sent none).
  Result<StepResult> Step(const ToolCall& call, const std::string& text,
                          const CancellationToken& cancel) override;

  // The session the last successful Reset returned.
  const std::string& session() const { return session_; }

 private:
  HttpEnvironment(std::unique_ptr<http::Client> client, std::chrono::seconds timeout);
  // POSTs `body` to `path` and returns the reply, a JSON object (see the header comment for the
  // errors).
  Result<nlohmann::json> Call(std::string_view path, const nlohmann::json& body,
                              const CancellationToken& cancel);

  std::unique_ptr<http::Client> client_;
  std::chrono::seconds timeout_;
  std::string session_;
};

}  // namespace sluice::rollout
