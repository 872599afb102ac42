// OpenAiBackend: the GenerationBackend that drives an external inference server, vLLM or SGLang
// running as a sidecar container, instead of the built-in engine.
//
// Versions followed (see completion_protocol.h and weight_reload.h for the calls):
// - vLLM 0.10 / 0.11 OpenAI-compatible server: generation through POST /v1/completions with a
//   token-id prompt; weight reload through the dev-mode endpoints /collective_rpc and
//   /reset_prefix_cache, which need the sidecar started with VLLM_SERVER_DEV_MODE=1.
// - SGLang 0.4 / 0.5: generation through the native POST /generate (it returns token ids with
//   their log-probs); weight reload through POST /update_weights_from_disk.
//
// Generation: one non-streamed HTTP request per Generate call, sampling.n completions from it.
// At most max_concurrent_requests are in flight; further callers wait (cancellably) for a slot.
// The server batches concurrent requests itself.
//
// Weight versions: the server does not tag tokens, so every token of a completion gets the
// version this backend served when the request was sent. A reload that lands while a request
// runs may make its later tokens newer than that tag, never older, so staleness is never
// understated. Requests whose sampling.on_weight_swap is kAbort are not sent while a reload
// runs, and those in flight when one starts are aborted (their connection closed, before any
// reload call is made); their completions then end with "abort" and hold no tokens, because a
// non-streamed request returns nothing of a sequence it did not finish.
//
// Cancellation: cancelling Generate's token closes the connection, which makes both servers
// abort the request (vLLM and SGLang watch for client disconnects), and Generate returns
// Cancelled.
//
// Errors: InvalidArgument for an unknown policy or a bad request (field "policy", "prompt",
// "sampling.<key>"); a server's non-2xx reply becomes the Status of its HTTP code with the
// server's message; a malformed reply is InvalidArgument whose field is its JSON path
// ("choices[1].logprobs.tokens[3]"); Unavailable when the server cannot be reached, drops the
// connection, or stays silent past request_timeout (the HTTP client cannot tell a read timeout
// before the reply's head from a dropped connection).
//
// Thread safety: Generate, ReloadWeights and served_version may be called from any thread;
// ReloadWeights calls are serialised.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/http/client.h"
#include "common/process/cancellation.h"
#include "common/status.h"
#include "workers/rollout/external/completion_protocol.h"
#include "workers/rollout/external/weight_reload.h"
#include "workers/rollout/generation_backend.h"

namespace sluice::rollout {

struct OpenAiBackendOptions {
  std::string base_url;  // The server, e.g. "http://127.0.0.1:8000" for a sidecar.
  ServerFlavour flavour = ServerFlavour::kVllm;
  // Policy -> the model name the server serves it under (vLLM's --served-model-name, sent as
  // "model"; SGLang's /generate takes none, so there it may be empty). Exactly one entry: a
  // server holds one set of weights, which a reload replaces; run one backend per sidecar.
  std::map<std::string, std::string> served_models;
  // Sent as "Authorization: Bearer <api_key>" (the servers' --api-key); empty: no header.
  std::string api_key;
  // How long a request may wait for the reply. A non-streamed completion is silent until it is
  // finished, so this bounds one Generate call once it is sent. > 0.
  std::chrono::milliseconds request_timeout{std::chrono::minutes(10)};
  // The same for each reload call (loading a large model from disk takes minutes). > 0.
  std::chrono::milliseconds reload_timeout{std::chrono::minutes(10)};
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(5)};
  int max_concurrent_requests = 64;  // Generate requests in flight at most, >= 1.
  int64_t initial_version = 0;       // Version of the weights the server started with, >= 0.
  // The POSTs of a reload, in order; empty: DefaultReloadCalls(flavour). Paths start with "/".
  std::vector<ReloadCall> reload_calls;
  // Times each Generate call (Completion::seconds). Borrowed, must outlive the backend; null: the
  // system clock.
  Clock* clock = nullptr;
};

class OpenAiBackend final : public GenerationBackend {
 public:
  // InvalidArgument naming the option ("served_models", "max_concurrent_requests", ...).
  static Result<std::unique_ptr<OpenAiBackend>> Create(OpenAiBackendOptions options);
  ~OpenAiBackend() override;
  OpenAiBackend(const OpenAiBackend&) = delete;
  OpenAiBackend& operator=(const OpenAiBackend&) = delete;

  Result<std::vector<Completion>> Generate(const GenerateRequest& request,
                                           const CancellationToken& cancel) override;

  // Makes the server load the HF-format model directory `directory` (a path the sidecar sees:
  // the volume both containers mount) by POSTing the reload calls in order, stopping at the
  // first failure. On success `policy` is served at `version` from then on; on failure its
  // version is unchanged (the server may still have loaded some weights; kAbort requests are
  // aborted all the same). InvalidArgument for an unknown policy, an empty directory or a
  // negative version; otherwise the server's error, naming the call that failed.
  Status ReloadWeights(const std::string& policy, const std::string& directory, int64_t version);

  // The version `policy` is served at; -1 for a policy this backend does not serve.
  int64_t served_version(const std::string& policy) const;

  const OpenAiBackendOptions& options() const { return options_; }

 private:
  OpenAiBackend(OpenAiBackendOptions options, std::unique_ptr<http::Client> generate_client,
                std::unique_ptr<http::Client> control_client);

  // POSTs `body` (none when null) and returns the whole reply; the connection is closed as
  // soon as `cancel` fires.
  Result<http::Response> Post(http::Client& client, const std::string& path,
                              const nlohmann::json& body, const CancellationToken& cancel);
  Result<std::vector<Completion>> ParseReply(const http::Response& reply, const std::string& what,
                                             int32_t n) const;

  const OpenAiBackendOptions options_;
  const std::string policy_;                             // The one key of served_models.
  const std::string model_;                              // Its value.
  const std::unique_ptr<http::Client> generate_client_;  // read timeout: request_timeout
  const std::unique_ptr<http::Client> control_client_;   // read timeout: reload_timeout

  std::mutex reload_mu_;  // Serialises ReloadWeights.

  mutable std::mutex mu_;
  // Signalled when a slot is freed, a reload ends, or a waiting caller is cancelled.
  std::condition_variable cv_;
  int free_slots_;          // max_concurrent_requests minus the requests in flight.
  int64_t version_;         // The version served now.
  bool reloading_ = false;  // A ReloadWeights is between its first and last call.
  uint64_t reloads_ = 0;    // Reloads started so far; a change during a request is a swap.
  uint64_t next_call_id_ = 0;
  // In-flight requests to abort when a reload starts (on_weight_swap kAbort). The sources live
  // on their Generate's stack; entries are removed under mu_ before those return.
  std::map<uint64_t, CancellationSource*> abort_on_swap_;
};

}  // namespace sluice::rollout
