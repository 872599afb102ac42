#include "workers/rollout/external/openai_backend.h"

#include <string_view>
#include <utility>

#include "common/http/json_body.h"

namespace sluice::rollout {
namespace {

using nlohmann::json;

// A reply larger than this is refused rather than buffered: n * max_tokens completions with
// their logprobs stay far below it.
constexpr size_t kMaxReplyBytes = size_t{256} << 20;

std::string GeneratePath(ServerFlavour flavour) {
  return flavour == ServerFlavour::kVllm ? "/v1/completions" : "/generate";
}

std::string Quote(std::string_view text) { return "\"" + std::string(text.substr(0, 128)) + "\""; }

double SecondsSince(const Clock& clock, Clock::MonoTime start) {
  return std::chrono::duration<double>(clock.Now() - start).count();
}

// What Generate returns for a kAbort request a weight swap interrupted: n empty completions.
std::vector<Completion> AbortedCompletions(int32_t n, double seconds) {
  std::vector<Completion> out(static_cast<size_t>(n));
  for (Completion& c : out) {
    c.finish_reason = "abort";
    c.seconds = seconds;
  }
  return out;
}

Status ValidateOptions(const OpenAiBackendOptions& o) {
  if (o.base_url.empty()) return Status::InvalidArgument("must be set", "base_url");
  if (o.served_models.size() != 1) {
    return Status::InvalidArgument(
        "must map exactly one policy to its model name (a server holds one set of weights), got " +
            std::to_string(o.served_models.size()) + " entries",
        "served_models");
  }
  const auto& [policy, model] = *o.served_models.begin();
  if (policy.empty()) return Status::InvalidArgument("policy name is empty", "served_models");
  if (model.empty() && o.flavour == ServerFlavour::kVllm) {
    return Status::InvalidArgument(
        "model name of policy " + Quote(policy) + " is empty; vLLM needs the served model name",
        "served_models[" + policy + "]");
  }
  if (o.max_concurrent_requests < 1) {
    return Status::InvalidArgument("must be >= 1, got " + std::to_string(o.max_concurrent_requests),
                                   "max_concurrent_requests");
  }
  if (o.request_timeout.count() <= 0) {
    return Status::InvalidArgument("must be > 0", "request_timeout");
  }
  if (o.reload_timeout.count() <= 0)
    return Status::InvalidArgument("must be > 0", "reload_timeout");
  if (o.initial_version < 0) {
    return Status::InvalidArgument("must be >= 0, got " + std::to_string(o.initial_version),
                                   "initial_version");
  }
  for (size_t i = 0; i < o.reload_calls.size(); ++i) {
    if (!o.reload_calls[i].path.starts_with("/")) {
      return Status::InvalidArgument("must start with \"/\", got " + Quote(o.reload_calls[i].path),
                                     "reload_calls[" + std::to_string(i) + "].path");
    }
  }
  return Status::Ok();
}

Result<std::unique_ptr<http::Client>> MakeClient(const OpenAiBackendOptions& o,
                                                 std::chrono::milliseconds read_timeout,
                                                 size_t idle_connections) {
  http::ClientOptions co;
  co.base_url = o.base_url;
  co.connect_timeout = o.connect_timeout;
  co.read_timeout = read_timeout;
  if (!o.api_key.empty()) co.token = http::TokenSource::FromValue(o.api_key);
  co.max_idle_connections = idle_connections;
  // An external engine is outside Sluice: even n samples of maxNewTokens with log-probs fit
  // in this, so anything larger is a fault, not a reply to buffer.
  co.max_response_bytes = 256u << 20;
  Result<std::unique_ptr<http::Client>> client = http::Client::Create(std::move(co));
  if (!client.ok()) {
    return Status::InvalidArgument(client.status().message(), "base_url");
  }
  return client;
}

}  // namespace

Result<std::unique_ptr<OpenAiBackend>> OpenAiBackend::Create(OpenAiBackendOptions options) {
  SLUICE_RETURN_IF_ERROR(ValidateOptions(options));
  if (options.reload_calls.empty()) options.reload_calls = DefaultReloadCalls(options.flavour);
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<http::Client> generate_client,
                          MakeClient(options, options.request_timeout,
                                     static_cast<size_t>(options.max_concurrent_requests)));
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<http::Client> control_client,
                          MakeClient(options, options.reload_timeout, 1));
  return std::unique_ptr<OpenAiBackend>(
      new OpenAiBackend(std::move(options), std::move(generate_client), std::move(control_client)));
}

OpenAiBackend::OpenAiBackend(OpenAiBackendOptions options,
                             std::unique_ptr<http::Client> generate_client,
                             std::unique_ptr<http::Client> control_client)
    : options_(std::move(options)),
      policy_(options_.served_models.begin()->first),
      model_(options_.served_models.begin()->second),
      generate_client_(std::move(generate_client)),
      control_client_(std::move(control_client)),
      free_slots_(options_.max_concurrent_requests),
      version_(options_.initial_version) {}

OpenAiBackend::~OpenAiBackend() = default;

Result<http::Response> OpenAiBackend::Post(http::Client& client, const std::string& path,
                                           const json& body, const CancellationToken& cancel) {
  http::Request request;
  request.method = "POST";
  request.path = path;
  if (!body.is_null()) {
    request.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
    request.content_type = std::string(http::kJsonContentType);
  }
  // Not retried (POST is not idempotent to the client): a reply that is late because the
  // server is busy generating would otherwise be requested again, adding to the load; only a
  // 429 is retried. Whether the sidecar is up is the readiness probe's business.
  request.cancel = cancel;
  // Streamed, not Send: a stream's connection is shut down the moment `cancel` fires, which is
  // what makes the server abort the request.
  std::string collected;
  bool too_large = false;
  Result<http::Response> reply = client.Stream(std::move(request), {}, [&](std::string_view data) {
    if (collected.size() + data.size() > kMaxReplyBytes) {
      too_large = true;
      return false;
    }
    collected.append(data);
    return true;
  });
  if (!reply.ok()) return reply;
  if (too_large) {
    return Status::TooLarge("POST " + path + ": reply is larger than " +
                            std::to_string(kMaxReplyBytes >> 20) + " MiB");
  }
  if (reply->status >= 200 && reply->status < 300) reply->body = std::move(collected);
  return reply;
}

Result<std::vector<Completion>> OpenAiBackend::ParseReply(const http::Response& reply,
                                                          const std::string& what,
                                                          int32_t n) const {
  if (reply.status < 200 || reply.status >= 300) {
    return ServerErrorStatus(reply.status, reply.body, what);
  }
  SLUICE_ASSIGN_OR_RETURN(json body, http::ParseJsonText(reply.body, what + " reply"));
  Result<std::vector<Completion>> completions = options_.flavour == ServerFlavour::kVllm
                                                    ? ParseVllmCompletionReply(body, n)
                                                    : ParseSglangGenerateReply(body, n);
  if (!completions.ok()) return completions.status().WithContext(what + " reply");
  return completions;
}

Result<std::vector<Completion>> OpenAiBackend::Generate(const GenerateRequest& request,
                                                        const CancellationToken& cancel) {
  const Clock& clock = ClockOrSystem(options_.clock);
  const Clock::MonoTime start = clock.Now();
  if (request.policy != policy_) {
    return Status::InvalidArgument(
        Quote(request.policy) + " is not served here (this server serves " + Quote(policy_) + ")",
        "policy");
  }
  if (request.prompt.empty()) {
    return Status::InvalidArgument("must hold at least one token id", "prompt");
  }
  SLUICE_RETURN_IF_ERROR(engine::Validate(request.sampling));
  const int32_t n = request.sampling.n;
  const bool abort_on_swap =
      request.sampling.on_weight_swap == engine::SamplingParams::OnWeightSwap::kAbort;
  const std::string path = GeneratePath(options_.flavour);
  const std::string what = std::string(FlavourDisplayName(options_.flavour)) + " POST " + path;
  const json body = options_.flavour == ServerFlavour::kVllm
                        ? VllmCompletionBody(model_, request.prompt, request.sampling)
                        : SglangGenerateBody(request.prompt, request.sampling);

  // Cancelled by the caller, or by a reload when abort_on_swap.
  CancellationSource call(cancel);
  int64_t version = 0;
  uint64_t reloads_at_send = 0;
  uint64_t id = 0;
  {
    // Wakes the wait below when the caller gives up. Registered before mu_ is taken, since a
    // token that is already cancelled runs the callback at once on this thread.
    CancellationRegistration wake = cancel.OnCancel([this] {
      std::lock_guard<std::mutex> lock(mu_);
      cv_.notify_all();
    });
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] {
      return cancel.IsCancelled() || (free_slots_ > 0 && !(abort_on_swap && reloading_));
    });
    if (cancel.IsCancelled()) return Status::Cancelled(what + ": cancelled before it was sent");
    --free_slots_;
    version = version_;
    reloads_at_send = reloads_;
    if (abort_on_swap) {
      id = ++next_call_id_;
      abort_on_swap_[id] = &call;
    }
  }

  Result<http::Response> reply = Post(*generate_client_, path, body, call.Token());

  bool swapped = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++free_slots_;
    if (abort_on_swap) abort_on_swap_.erase(id);
    swapped = reloads_ != reloads_at_send;
    cv_.notify_all();
  }
  if (cancel.IsCancelled()) return Status::Cancelled(what + ": cancelled");
  // A kAbort request whose weights were swapped: whatever came back may mix two versions.
  if (abort_on_swap && swapped) return AbortedCompletions(n, SecondsSince(clock, start));
  if (!reply.ok()) return reply.status();

  SLUICE_ASSIGN_OR_RETURN(std::vector<Completion> completions, ParseReply(*reply, what, n));
  const double seconds = SecondsSince(clock, start);
  for (Completion& c : completions) {
    c.versions.assign(c.tokens.size(), version);
    c.seconds = seconds;
  }
  return completions;
}

Status OpenAiBackend::ReloadWeights(const std::string& policy, const std::string& directory,
                                    int64_t version) {
  if (policy != policy_) {
    return Status::InvalidArgument(
        Quote(policy) + " is not served here (this server serves " + Quote(policy_) + ")",
        "policy");
  }
  if (directory.empty()) return Status::InvalidArgument("must be set", "directory");
  if (version < 0) {
    return Status::InvalidArgument("must be >= 0, got " + std::to_string(version), "version");
  }
  std::lock_guard<std::mutex> serial(reload_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    reloading_ = true;
    ++reloads_;
    // Under mu_, so no entry's Generate can return (and destroy its source) meanwhile. Cancel
    // only closes sockets; it does not take mu_.
    for (auto& [unused, source] : abort_on_swap_) source->Cancel();
  }

  Status status;
  const std::string server(FlavourDisplayName(options_.flavour));
  for (size_t i = 0; i < options_.reload_calls.size() && status.ok(); ++i) {
    const ReloadCall& call = options_.reload_calls[i];
    const std::string what = server + " POST " + call.path + " (reload call " +
                             std::to_string(i + 1) + " of " +
                             std::to_string(options_.reload_calls.size()) + ")";
    Result<http::Response> reply =
        Post(*control_client_, call.path, ExpandReloadBody(call.body, directory, version), {});
    status = reply.ok() ? CheckReloadReply(reply->status, reply->body, what)
                        : reply.status().WithContext(what);
  }

  std::lock_guard<std::mutex> lock(mu_);
  reloading_ = false;
  if (status.ok()) version_ = version;
  cv_.notify_all();
  if (!status.ok()) {
    return status.WithContext("reloading " + Quote(policy) + " to version " +
                              std::to_string(version) + " from " + Quote(directory));
  }
  return status;
}

int64_t OpenAiBackend::served_version(const std::string& policy) const {
  if (policy != policy_) return -1;
  std::lock_guard<std::mutex> lock(mu_);
  return version_;
}

}  // namespace sluice::rollout
