#include "workers/rollout/rollout_flags.h"

#include <chrono>
#include <sstream>

#include "common/service/service_main.h"
#include "workers/model/cpu_thread_options.h"

namespace sluice::rollout {

config::Spec RolloutFlagSpec() {
  using config::Option;
  using std::chrono::seconds;
  config::Spec spec("SLUICE_ROLLOUT");
  service::ServingDefaults serving;
  serving.token_help =
      "Bearer token for the dataflow, the trainers and relays, and for this replica's own /v1 "
      "routes (with --control-token-file only for its relay's weight reads); empty: none "
      "(development only). Never sent to environments.";
  serving.control_token_help =
      "Bearer token of whoever controls this replica (the operator): admits every route, and "
      "--token-file's token then admits only the relay's weight reads, so a peer cannot drain "
      "this replica or re-point its relay; empty: --token-file's admits every route.";
  service::AddServingOptions(spec, serving);
  spec.Add(Option::String("dataflow-url", "", "Base URL of the dataflow.").Required())
      .Add(Option::String("environment-token-file", "",
                          "Bearer token for an HTTP environment (the Dataflow's "
                          "spec.workflow.environment.tokenSecretRef); empty: none."))
      .Add(Option::String("policies", "", "Hosted policies, comma-separated.").Required())
      .Add(Option::String("policy-config", "/etc/sluice/config/rollout.json",
                          "rollout.json: the Policies (model, tokenizer, chat template)."))
      .Add(Option::Enum("engine", {"builtin", "vllm", "sglang"}, "builtin",
                        "Inference engine (vllm and sglang: see docs/rollout.md)."))
      .Add(Option::String("engine-url", "http://127.0.0.1:8000",
                          "vllm/sglang: base URL of the inference server (a sidecar)."))
      .Add(Option::String("served-model-name", "",
                          "vllm/sglang: the model name the server serves; default: the model "
                          "directory (what `vllm serve <dir>` names it)."))
      .Add(Option::String("weights-volume", "/var/lib/sluice/weights",
                          "vllm/sglang: directory shared with the server where fetched versions "
                          "are written for it to reload."))
      .Add(Option::Int("tensor-parallel-size", 1, "GPUs per replica (the CPU engine uses 1).")
               .Min(1))
      .Add(Option::Int("max-batch-tokens", 2048, "Tokens per engine step (decode + prefill).")
               .Min(16))
      .Add(Option::Int("max-concurrent-sequences", 64, "Sequences decoding at once per policy.")
               .Min(1))
      .Add(Option::Double("kv-cache-fraction", 0.85,
                          "Fraction of free memory for the KV cache (host memory on CPU builds, "
                          "capped by --kv-cache-max-bytes).")
               .Min(0.01)
               .Max(1.0))
      .Add(Option::Bytes("kv-cache-max-bytes", uint64_t{1} << 30,
                         "Upper bound of one policy's KV cache."))
      .Add(Option::Int("max-episodes", 0,
                       "Tasks running at once; 0: max-concurrent-sequences / 4 (at least 1).")
               .Min(0))
      .Add(Option::String("region", "", "Placement region of this replica."))
      .Add(Option::String("replica", "", "This replica's name (the Pod's); default: the host."))
      .Add(Option::String("pool", "", "The RolloutPool; default: rollout.json's pool."))
      .Add(Option::String("weights-relay", "",
                          "Base URL of the region's weight relay (another replica); empty: "
                          "fetch from the trainers."))
      .Add(Option::String("relay-server-name", "",
                          "The name relays' certificates hold (relays are reached at their pod "
                          "IP; the operator gives the pool's role name); empty: the relay URL's "
                          "host."))
      .Add(Option::String("model-cache-dir", "",
                          "Where a Policy's spec.model.source.uri is downloaded "
                          "(<dir>/<hash of the URI>) and reused from; empty: "
                          "$TMPDIR/sluice-models (/tmp when TMPDIR is unset)."))
      .Add(Option::String("staging-dir", "",
                          "Where full weight downloads land (resumable); default: a directory "
                          "under $TMPDIR."))
      .Add(Option::Enum("sandbox-isolation", {"namespaces", "best-effort", "limits-only"},
                        "namespaces",
                        "How model-written code (code-execution rewards, the python "
                        "environment) is isolated: namespaces (user, PID, mount, network; "
                        "refuses to run the code where the kernel forbids them), best-effort "
                        "(falls back to limits only), limits-only (resource limits and the "
                        "seccomp filter; the code runs as this worker's user). docs/security.md."))
      .Add(Option::Duration("lease-wait", seconds(5), "Long-poll wait of an idle lease request."))
      .Add(Option::Duration("drain-grace", seconds(30),
                            "On SIGTERM: how long running episodes may take to finish before "
                            "they are handed back."))
      .Add(model::TorchThreadsOption())
      .Add(model::BlasThreadsOption())
      .Add(Option::Enum("log-level", {"debug", "info", "warn", "error"}, "info",
                        "Minimum level of the JSON log lines on stderr."));
  return spec;
}

std::vector<std::string> SplitPolicyList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

}  // namespace sluice::rollout
