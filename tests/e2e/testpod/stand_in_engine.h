// sluice-testpod's `engine` mode: a scripted stand-in for a vLLM OpenAI-compatible server, run as
// the engine container of a RolloutPool replica with spec.engine.type vllm on the local cluster
// (SLUICE_TESTPOD_MODE=engine, whatever the args). It takes the arguments the operator gives a
// vLLM server (--model DIR --served-model-name NAME --host H --port P; the rest are accepted and
// ignored) and serves what sluice-rollout's adapter calls (docs/rollout.md, "External engines"):
//
//   GET  /health              200 while --model names a directory this process can read, else
//                             503 saying why (the engine container's probes)
//   POST /v1/completions      vLLM's reply shape: n choices, each the last (up to 3) prompt
//                             tokens reversed and then the request's first stop_token_ids entry,
//                             finish_reason "stop", log-prob -0.5 per token; 404 for a "model"
//                             other than the served name, 400 for a malformed body
//   POST /collective_rpc      the dev-mode reload calls: update_config's directory (args[0].
//                             model_config.model) must hold model.safetensors and config.json
//                             (500 otherwise); 200 {}, logged as "reload update_config DIR" or
//                             "reload <method>"
//   POST /reset_prefix_cache  200 {}
//
// Every request is logged as one line ("completion n=4 prompt=37 tokens", "reload ..."), so an
// end-to-end test can read what the worker asked of its server from the container's log.
#pragma once

#include <atomic>
#include <map>
#include <string>

namespace sluice::testpod {

// Serves until SIGTERM (the caller's flag `term`); returns the exit status.
int RunStandInEngine(const std::map<std::string, std::string>& flags,
                     const std::atomic<bool>& term);

}  // namespace sluice::testpod
