// Weight reload of an external inference server: the HTTP calls that make a running vLLM or
// SGLang server load new weights from an HF-format model directory (config.json plus
// *.safetensors) that the rollout worker wrote to a volume shared with the sidecar.
//
// Neither server has a stable, versioned API for this, so the calls are data (ReloadCall) that
// deployments can override; the defaults:
//
// vLLM 0.10 / 0.11 (V1 engine), dev-mode endpoints, which exist only when the server runs with
// the environment variable VLLM_SERVER_DEV_MODE=1 (without it they answer 404):
//   1. POST /collective_rpc {"method": "update_config",
//                            "args": [{"model_config": {"model": "<directory>"}}]}
//      points every worker's model config at the new directory;
//   2. POST /collective_rpc {"method": "reload_weights"}
//      makes every worker load the weights in place from that directory (the RLHF "update
//      weights from disk" pattern: Worker.update_config + Worker.reload_weights);
//   3. POST /reset_prefix_cache
//      drops KV blocks computed with the old weights, which prefix caching would otherwise
//      reuse for prompts sharing a prefix.
// SGLang 0.4 / 0.5:
//   POST /update_weights_from_disk {"model_path": "<directory>"} -> {"success": bool,
//   "message": str} (HTTP 400 when success is false). SGLang flushes its radix cache itself.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "workers/rollout/external/completion_protocol.h"

namespace sluice::rollout {

// One POST of a reload. In `body`, every string containing "{directory}" or "{version}" has
// them replaced by the model directory and the decimal version, except that a string that is
// exactly "{version}" becomes the integer. A null body sends no body.
struct ReloadCall {
  std::string path;  // Relative to the server's base URL, e.g. "/collective_rpc".
  nlohmann::json body;

  friend bool operator==(const ReloadCall&, const ReloadCall&) = default;
};

// The calls listed in the header comment for `flavour`.
std::vector<ReloadCall> DefaultReloadCalls(ServerFlavour flavour);

// `body` with the placeholders substituted (see ReloadCall).
nlohmann::json ExpandReloadBody(const nlohmann::json& body, const std::string& directory,
                                int64_t version);

// Whether a reload call's reply means success: a 2xx status whose body, when it is a JSON
// object with a boolean "success" (SGLang), has it true. Otherwise the server's error, with its
// "message"; `what` names the call ("vLLM POST /collective_rpc").
Status CheckReloadReply(int http_status, std::string_view body, std::string_view what);

}  // namespace sluice::rollout
