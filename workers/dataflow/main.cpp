// sluice-dataflow: the data plane of one experiment (docs/dataflow.md). Loads the dataset,
// recovers its state from the write-ahead log in --wal-dir, and serves the /v1 API to rollout
// workers and trainers until SIGTERM; then it stops accepting, lets in-flight requests finish,
// writes a snapshot and closes the log.
//
// Exit status: 0 after a clean shutdown, 1 for a runtime failure (log locked or damaged, port in
// use, the log failing while serving), 2 for bad flags or a dataset/config that cannot be used.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/config/help.h"
#include "common/config/parse.h"
#include "common/http/bearer_token.h"
#include "common/http/server.h"
#include "common/logging/level.h"
#include "common/logging/logger.h"
#include "common/metrics/registry.h"
#include "common/process/signals.h"
#include "workers/dataflow/algorithms/filters.h"
#include "workers/dataflow/algorithms/group_stats.h"
#include "workers/dataflow/algorithms/replay.h"
#include "workers/dataflow/algorithms/staleness.h"
#include "workers/dataflow/dataflow_service.h"
#include "workers/dataflow/dataset.h"

namespace sluice::dataflow {
namespace {

constexpr const char* kProgram = "sluice-dataflow";

config::Spec MakeSpec() {
  using config::Option;
  using std::chrono::seconds;
  config::Spec spec("SLUICE_DATAFLOW");
  // Serving.
  spec.Add(Option::String("address", "0.0.0.0", "Address to listen on."))
      .Add(Option::Int("port", 8080, "Port to listen on; 0 picks a free one.").Min(0).Max(65535))
      .Add(Option::String("token-file", "",
                          "File holding the bearer token every /v1 route requires; empty: no "
                          "authentication (development only)."))
      .Add(Option::Bytes("max-body-bytes", uint64_t{64} << 20,
                         "Largest request body; larger submits get 413."))
      .Add(Option::Int("worker-threads", 16, "HTTP worker threads (long polls hold one each).")
               .Min(2)
               .Max(1024))
      .Add(Option::Duration("max-wait", seconds(30),
                            "Cap on the `wait` of lease and batch long polls."))
      .Add(Option::Duration("shutdown-grace", seconds(20),
                            "Time in-flight requests get to finish on SIGTERM."))
      // Durability.
      .Add(Option::String("wal-dir", "", "Directory of the write-ahead log (a PVC).").Required())
      .Add(Option::Bool("fsync", true,
                        "fdatasync the log before replying (off: survives kill -9 but not power "
                        "loss)."))
      .Add(Option::Duration("group-commit-delay", std::chrono::nanoseconds(0),
                            "Extra wait before each fsync to batch more records into it."))
      .Add(Option::Bytes("segment-bytes", uint64_t{64} << 20, "Log segment size."))
      .Add(Option::Bytes("snapshot-bytes", uint64_t{64} << 20,
                         "Write a snapshot (and truncate the log) once this many log bytes "
                         "follow the last one."))
      .Add(Option::Duration("maintenance-interval", seconds(1),
                            "How often leases are expired and the snapshot threshold checked."))
      .Add(Option::Int("seed", 1,
                       "Seed of the dataflow's random choices; keep it fixed for one log.")
               .Min(0))
      // Dataset.
      .Add(Option::String("dataset-file", "", "JSONL dataset file; empty: the built-in generator."))
      .Add(Option::String("dataset-name", "", "Dataset name (default: file stem or generator)."))
      .Add(Option::Enum("builtin-generator", {"arithmetic", "arithmetic-chain"}, "arithmetic",
                        "Built-in generator used when --dataset-file is empty."))
      .Add(Option::Int("builtin-count", 10000, "Rows the generator makes.").Min(1).Max(10000000))
      .Add(Option::Int("builtin-max-operand", 100, "Largest generated operand.")
               .Min(1)
               .Max(1000000000))
      .Add(Option::Int("builtin-seed", 0, "Seed of the generator.").Min(0))
      .Add(Option::String("field-prompt", "prompt", "JSONL field holding the prompt."))
      .Add(Option::String("field-answer", "answer", "JSONL field holding the answer."))
      .Add(Option::String("field-id", "id", "JSONL field holding the row id."))
      .Add(Option::Double("eval-split", 0.0, "Fraction of rows held out for evaluation.")
               .Min(0.0)
               .Max(0.5))
      .Add(Option::Bool("shuffle", true, "Shuffle the train split every epoch."))
      .Add(Option::Int("shuffle-seed", 0, "Seed of the shuffle and the eval split.").Min(0))
      .Add(Option::Int("epochs", 1, "Passes over the train split.").Min(1).Max(100000))
      // Work distribution.
      .Add(Option::StringList("policies", {"actor"},
                              "Policies of the workflow; the first is the primary one."))
      .Add(Option::Int("group-size", 8, "Completions per train prompt.").Min(1).Max(4096))
      .Add(Option::Duration("lease-duration", seconds(300), "Lease length (renewable)."))
      .Add(Option::Int("max-attempts", 3, "Failures before a task is set aside.").Min(1))
      .Add(Option::Int("capacity", 256,
                       "Admission limit per policy in groups: buffered + unacknowledged + leased.")
               .Min(1))
      .Add(Option::String("sampling", "{}", "Sampling parameters passed to tasks (JSON object)."))
      .Add(Option::String("workflow", "{}", "Workflow passed to tasks (JSON object)."))
      // Buffers and batches.
      .Add(Option::Int("groups-per-batch", 32, "Groups in a batch when the trainer asks for 0.")
               .Min(1))
      .Add(Option::Duration("ack-timeout", seconds(600),
                            "An unacknowledged batch is served again after this."))
      .Add(Option::String("filters", "[]",
                          "Filter chain as JSON: [{\"type\": \"dynamic-sampling\", \"options\": "
                          "{...}}, ...]."))
      .Add(Option::Enum("advantage", {"none", "grpo", "mean-only"}, "none",
                        "Advantage stamped on samples."))
      .Add(Option::Enum("curator", {"accept-all", "filter-solved", "greso"}, "accept-all",
                        "Prompt curator."))
      .Add(Option::String("curator-options", "{}", "Curator options (JSON object)."))
      .Add(Option::Int("max-staleness", 4, "Versions a sample may lag before it is stale.")
               .Min(0)
               .Max(100000))
      .Add(Option::Enum("stale-action", {"drop", "down-weight"}, "drop", "What stale samples get."))
      .Add(Option::Double("down-weight-decay", 0.5, "Loss-weight decay per stale version.")
               .Min(0.0)
               .Max(1.0))
      .Add(Option::Enum("order", {"edf", "fifo"}, "edf", "Serving order."))
      .Add(Option::Double("replay-ratio", 0.0, "Fraction of each batch from replay memory.")
               .Min(0.0)
               .Max(0.95))
      .Add(Option::Enum("replay-selector", {"latest", "prioritized"}, "latest", "Replay selector."))
      .Add(Option::Int("replay-capacity", 1024, "Groups kept in replay memory.").Min(1))
      .Add(Option::Bool("version-barrier", false, "All policies advance together."))
      // Evaluation.
      .Add(Option::Int("eval-every-versions", 0, "Evaluate every N primary versions; 0: off.")
               .Min(0))
      .Add(Option::Int("eval-k", 1, "Completions per eval prompt (pass@k's k).").Min(1))
      .Add(Option::String("eval-sampling", "{}",
                          "Sampling overrides for eval tasks (JSON object, merge patch)."))
      .Add(Option::Enum("log-level", {"debug", "info", "warn", "error"}, "info",
                        "Minimum level of the JSON log lines on stderr."));
  return spec;
}

Result<nlohmann::json> JsonFlag(const config::Config& cfg, const char* flag, bool array) {
  const std::string& text = cfg.GetString(flag);
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || (array ? !j.is_array() : !j.is_object())) {
    return Status::InvalidArgument(std::string("must be a JSON ") + (array ? "array" : "object"),
                                   std::string("--") + flag);
  }
  return j;
}

struct Settings {
  DatasetSource dataset;
  DataflowConfig config;
  DataflowServiceOptions service;
};

Result<Settings> Resolve(const config::Config& cfg) {
  Settings s;
  DatasetSource& d = s.dataset;
  if (const std::string& file = cfg.GetString("dataset-file"); !file.empty()) {
    d.file = file;
  } else {
    d.builtin = BuiltinDataset{cfg.GetString("builtin-generator"), cfg.GetInt("builtin-count"),
                               cfg.GetInt("builtin-max-operand"),
                               static_cast<uint64_t>(cfg.GetInt("builtin-seed"))};
  }
  d.name = cfg.GetString("dataset-name");
  d.fields = {cfg.GetString("field-prompt"), cfg.GetString("field-answer"),
              cfg.GetString("field-id")};
  d.eval_split = cfg.GetDouble("eval-split");
  d.shuffle = cfg.GetBool("shuffle");
  d.shuffle_seed = static_cast<uint64_t>(cfg.GetInt("shuffle-seed"));
  d.epochs = cfg.GetInt("epochs");

  DataflowConfig& c = s.config;
  c.policies = cfg.GetStringList("policies");
  c.group_size = cfg.GetInt("group-size");
  SLUICE_ASSIGN_OR_RETURN(c.sampling, JsonFlag(cfg, "sampling", false));
  SLUICE_ASSIGN_OR_RETURN(c.workflow, JsonFlag(cfg, "workflow", false));
  c.lease_duration = std::chrono::ceil<std::chrono::seconds>(cfg.GetDuration("lease-duration"));
  c.max_attempts = static_cast<int>(cfg.GetInt("max-attempts"));
  c.capacity_groups = cfg.GetInt("capacity");
  c.groups_per_batch = cfg.GetInt("groups-per-batch");
  c.ack_timeout = std::chrono::ceil<std::chrono::seconds>(cfg.GetDuration("ack-timeout"));
  SLUICE_ASSIGN_OR_RETURN(c.group_stats.advantage, ParseAdvantageMode(cfg.GetString("advantage")));
  SLUICE_ASSIGN_OR_RETURN(nlohmann::json filters, JsonFlag(cfg, "filters", true));
  for (size_t i = 0; i < filters.size(); ++i) {
    const nlohmann::json& f = filters[i];
    const std::string field = "--filters[" + std::to_string(i) + "]";
    if (!f.is_object() || !f.contains("type") || !f["type"].is_string()) {
      return Status::InvalidArgument("must be an object with a string \"type\"", field);
    }
    FilterSpec spec{f["type"].get<std::string>(), f.value("options", nlohmann::json::object())};
    c.filters.push_back(std::move(spec));
  }
  c.curator = cfg.GetString("curator");
  SLUICE_ASSIGN_OR_RETURN(c.curator_options, JsonFlag(cfg, "curator-options", false));
  c.staleness.max_staleness = cfg.GetInt("max-staleness");
  SLUICE_ASSIGN_OR_RETURN(c.staleness.stale_action,
                          ParseStaleAction(cfg.GetString("stale-action")));
  SLUICE_ASSIGN_OR_RETURN(c.staleness.order, ParseQueueOrder(cfg.GetString("order")));
  c.staleness.down_weight_decay = cfg.GetDouble("down-weight-decay");
  c.replay.replay_ratio = cfg.GetDouble("replay-ratio");
  SLUICE_ASSIGN_OR_RETURN(c.replay.selector, ParseReplaySelector(cfg.GetString("replay-selector")));
  c.replay.capacity = static_cast<size_t>(cfg.GetInt("replay-capacity"));
  c.version_barrier = cfg.GetBool("version-barrier");
  c.eval.every_versions = cfg.GetInt("eval-every-versions");
  c.eval.k = cfg.GetInt("eval-k");
  SLUICE_ASSIGN_OR_RETURN(c.eval.sampling, JsonFlag(cfg, "eval-sampling", false));
  c.shuffle = d.shuffle;
  c.shuffle_seed = d.shuffle_seed;
  c.epochs = d.epochs;

  DataflowServiceOptions& o = s.service;
  o.wal.dir = cfg.GetString("wal-dir");
  o.wal.fsync = cfg.GetBool("fsync");
  o.wal.group_commit_delay =
      std::chrono::duration_cast<std::chrono::microseconds>(cfg.GetDuration("group-commit-delay"));
  o.wal.segment_bytes = cfg.GetBytes("segment-bytes");
  o.snapshot_bytes = cfg.GetBytes("snapshot-bytes");
  o.maintenance_interval = std::chrono::duration_cast<std::chrono::milliseconds>(
      cfg.GetDuration("maintenance-interval"));
  if (o.maintenance_interval.count() < 10) {
    return Status::InvalidArgument("must be at least 10ms", "--maintenance-interval");
  }
  o.max_wait = std::chrono::duration_cast<std::chrono::milliseconds>(cfg.GetDuration("max-wait"));
  o.seed = static_cast<uint64_t>(cfg.GetInt("seed"));
  return s;
}

int Main(int argc, char** argv) {
  const config::Spec spec = MakeSpec();
  Result<config::Config> cfg = config::Parse(spec, argc, argv, config::EnvironmentFromProcess());
  if (!cfg.ok()) {
    std::cerr << kProgram << ": " << cfg.status().message() << "\n";
    return 2;
  }
  if (cfg->HelpRequested()) {
    std::cout << config::HelpText(
        spec, kProgram,
        "The dataflow of one Sluice experiment: leases prompts to rollout workers, buffers their "
        "trajectories per policy and serves training batches, with a write-ahead log so that a "
        "restart loses nothing acknowledged. API and guarantees: docs/dataflow.md.");
    return 0;
  }
  if (cfg->VersionRequested()) {
    std::cout << kProgram << " 0.1.0\n";
    return 0;
  }
  log::SetMinLevel(log::ParseLevel(cfg->GetString("log-level")).value());
  CancellationSource stop;
  if (Status s = InstallShutdownSignals(stop); !s.ok()) {
    std::cerr << kProgram << ": " << s.ToString() << "\n";
    return 1;
  }
  log::Logger logger("dataflow");

  Result<Settings> settings = Resolve(*cfg);
  if (!settings.ok()) {
    std::cerr << kProgram << ": " << settings.status().ToString() << "\n";
    return 2;
  }
  Result<Dataset> dataset = Dataset::Load(settings->dataset);
  if (!dataset.ok()) {
    std::cerr << kProgram << ": dataset: " << dataset.status().ToString() << "\n";
    return 2;
  }
  logger.Info("dataset loaded", {{"name", dataset->name()},
                                 {"train_rows", dataset->train_size()},
                                 {"eval_rows", dataset->eval_size()}});

  std::shared_ptr<http::TokenSource> token;
  if (const std::string& file = cfg->GetString("token-file"); !file.empty()) {
    Result<std::shared_ptr<http::TokenSource>> source = http::TokenSource::FromFile(file);
    if (!source.ok()) {
      std::cerr << kProgram << ": flag --token-file: " << source.status().message() << "\n";
      return 2;
    }
    token = *source;
  } else {
    logger.Warn("no --token-file: the API is open to anyone who can reach it");
  }

  metrics::Registry registry;
  http::ServerOptions options;
  options.name = "dataflow";
  options.address = cfg->GetString("address");
  options.port = static_cast<int>(cfg->GetInt("port"));
  options.max_body_bytes = cfg->GetBytes("max-body-bytes");
  options.worker_threads = static_cast<size_t>(cfg->GetInt("worker-threads"));
  options.shutdown_grace =
      std::chrono::duration_cast<std::chrono::milliseconds>(cfg->GetDuration("shutdown-grace"));
  options.auth = token;
  // Long polls may hold a request up to max-wait; writing a large batch takes time too.
  options.read_timeout = std::chrono::milliseconds(60000);
  options.write_timeout = std::chrono::milliseconds(60000);
  http::Server server(options, &registry, logger);
  DataflowService service(settings->service, settings->config, &*dataset, &SystemClock::Instance(),
                          &registry, logger);
  service.Register(server);
  if (Status s = server.Start(); !s.ok()) {
    std::cerr << kProgram << ": " << s.ToString() << "\n";
    return 1;
  }
  logger.Info("listening", {{"url", server.BaseUrl()}, {"port", server.port()}});
  if (Status s = service.Recover(); !s.ok()) {
    std::cerr << kProgram << ": " << s.ToString() << "\n";
    server.Shutdown();
    return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
  }

  // Serve until SIGTERM/SIGINT or a log failure.
  CancellationSource done;
  CancellationRegistration on_stop = stop.Token().OnCancel([&done] { done.Cancel(); });
  CancellationRegistration on_fatal = service.fatal_token().OnCancel([&done] { done.Cancel(); });
  done.Token().Wait();
  const bool fatal = service.fatal_token().IsCancelled();
  logger.Info("shutting down", {{"reason", fatal ? "write-ahead log failure" : "signal"}});
  server.Shutdown();
  Status stopped = service.Stop();
  if (fatal || !stopped.ok()) return 1;
  logger.Info("stopped cleanly");
  return 0;
}

}  // namespace
}  // namespace sluice::dataflow

int main(int argc, char** argv) { return sluice::dataflow::Main(argc, argv); }
