#include "workers/trainer/trainer_flags.h"

#include <chrono>

#include "common/service/service_main.h"
#include "workers/model/cpu_thread_options.h"

namespace sluice::trainer {

config::Spec TrainerFlagSpec() {
  using config::Option;
  using std::chrono::seconds;
  config::Spec spec("SLUICE_TRAINER");
  service::ServingDefaults serving;
  serving.token_help =
      "Bearer token for the dataflow and for this rank's own /v1 routes; empty: none "
      "(development only).";
  serving.rollout_token_help =
      "Bearer token of the rollout replicas: it admits reading this rank's weight versions, not "
      "exports (--token-file's does); empty: none.";
  service::AddServingOptions(spec, serving);
  spec.Add(Option::String("dataflow-url", "", "Base URL of the dataflow.").Required())
      .Add(Option::String("advertise-address", "",
                          "Host in the weights URL announced to the dataflow; empty: --address "
                          "(or 127.0.0.1 when that is 0.0.0.0)."))
      .Add(Option::Int("rank", 0, "This rank, 0 .. world-size - 1.").Min(0))
      .Add(Option::Int("world-size", 1, "Ranks in the gang.").Min(1).Max(4096))
      .Add(Option::String("master-addr", "127.0.0.1",
                          "Rank 0's host (a name is looked up in $SLUICE_HOSTS_FILE first)."))
      .Add(Option::Int("master-port", 29500, "Rank 0's rendezvous port.").Min(1).Max(65535))
      .Add(Option::Int("steps", 0, "Training steps; 0: the TrainerJob's spec.steps.").Min(0))
      .Add(Option::String("checkpoint-dir", "",
                          "Directory of checkpoints (resume from the newest); empty: none."))
      .Add(Option::String("export-dir", "",
                          "Root of the Hugging Face exports written by POST "
                          "/v1/weights/{version}/export (<root>/<policy>-v<version>); empty: "
                          "<checkpoint-dir>/exports, or no exports without --checkpoint-dir."))
      .Add(Option::String("model-cache-dir", "",
                          "Where a Policy's spec.model.source.uri is downloaded "
                          "(<dir>/<hash of the URI>) and reused from; empty: "
                          "$TMPDIR/sluice-models (/tmp when TMPDIR is unset)."))
      .Add(Option::Int("groups-per-batch", 0,
                       "Groups per batch asked of the dataflow; 0: the dataflow's setting.")
               .Min(0))
      .Add(Option::Duration("batch-wait", seconds(10), "Long-poll wait of each batch request."))
      .Add(Option::Duration("collective-timeout", seconds(120),
                            "Rendezvous and collective timeout: a rank silent this long fails "
                            "the gang."))
      .Add(Option::Duration("dataflow-timeout", seconds(600),
                            "Give up when the dataflow is unreachable this long."))
      .Add(model::TorchThreadsOption())
      .Add(model::BlasThreadsOption())
      .Add(Option::Duration("final-weights-grace", seconds(0),
                            "After the last step, rank 0 keeps serving its weights and "
                            "/v1/status (phase Succeeded) until SIGTERM or for this long, so "
                            "rollout replicas still loading the final version can finish; 0 "
                            "exits at once. The operator sets it and stops the rank once every "
                            "pool holds the final version."))
      .Add(Option::Enum("log-level", {"debug", "info", "warn", "error"}, "info",
                        "Minimum level of the JSON log lines on stderr."));
  return spec;
}

std::string ExportRoot(const config::Config& cfg) {
  if (const std::string& dir = cfg.GetString("export-dir"); !dir.empty()) return dir;
  if (const std::string& dir = cfg.GetString("checkpoint-dir"); !dir.empty()) {
    return dir + "/exports";
  }
  return "";
}

std::string TakeTrainerConfig(int& argc, char** argv) {
  std::string path = "/etc/sluice/config/trainer.json";
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--config=", 0) == 0) {
      path = arg.substr(9);
    } else if (arg == "--config" && i + 1 < argc) {
      path = argv[++i];
    } else {
      argv[out++] = argv[i];
    }
  }
  argc = out;
  return path;
}

}  // namespace sluice::trainer
