#include "workers/dataflow/settings/dataflow_flags.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "common/config/option.h"
#include "common/service/service_main.h"
#include "workers/dataflow/algorithms/filters.h"
#include "workers/dataflow/algorithms/group_stats.h"
#include "workers/dataflow/algorithms/replay.h"
#include "workers/dataflow/algorithms/staleness.h"

namespace sluice::dataflow {
namespace {

Result<nlohmann::json> JsonFlag(const config::Config& cfg, const char* flag, bool array) {
  const std::string& text = cfg.GetString(flag);
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || (array ? !j.is_array() : !j.is_object())) {
    return Status::InvalidArgument(std::string("must be a JSON ") + (array ? "array" : "object"),
                                   std::string("--") + flag);
  }
  return j;
}

}  // namespace

size_t DefaultMaxWaitingLeases(size_t worker_threads) {
  const size_t kept = std::max<size_t>(4, worker_threads / 4);
  return worker_threads > kept ? worker_threads - kept : 1;
}

config::Spec DataflowFlagSpec() {
  using config::Option;
  using std::chrono::seconds;
  config::Spec spec("SLUICE_DATAFLOW");
  service::ServingDefaults serving;
  serving.address_help = "Address to listen on.";
  serving.token_help =
      "File holding the bearer token every /v1 route requires; empty: no authentication "
      "(development only).";
  serving.shutdown_grace = seconds(20);
  serving.max_body_bytes = uint64_t{64} << 20;
  serving.worker_threads = 16;
  serving.rollout_token_help =
      "Bearer token of the rollout replicas: it admits leasing, submitting, the versions and the "
      "final weights' reads, not batches, acks or announcements (--token-file's does); empty: "
      "none.";
  service::AddServingOptions(spec, serving);
  // The Dataflow resource (docs/dataflow.md, "Configuration from a Dataflow resource").
  spec.Add(Option::String("dataflow-manifest", "",
                          "YAML file with a Dataflow object to configure from; flags set "
                          "explicitly override its values."))
      .Add(Option::String("dataflow-name", "",
                          "Dataflow to use when the manifest has several (metadata.name)."))
      .Add(Option::String("dataset-mount-dir", DataflowMounts{}.dataset_dir,
                          "Where spec.dataset.configMap is mounted: the file is <dir>/<key>."))
      .Add(Option::String("dataset-pvc-mount-dir", DataflowMounts{}.pvc_dir,
                          "Where spec.dataset.pvc's claim is mounted: the file is <dir><path>."))
      .Add(Option::Duration("max-wait", seconds(30),
                            "Cap on the `wait` of lease and batch long polls."))
      .Add(Option::Int("max-waiting-leases", 0,
                       "Lease long polls that may wait at once (each holds a worker thread; "
                       "more get 429 and Retry-After); 0: the worker threads less a quarter, "
                       "keeping at least 4 for batches, submits and acks."))
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
      .Add(Option::Enum("builtin-generator", {"arithmetic", "arithmetic-chain", "reverse"},
                        "arithmetic", "Built-in generator used when --dataset-file is empty."))
      .Add(Option::Int("builtin-count", 10000, "Rows the generator makes.").Min(1).Max(10000000))
      .Add(Option::Int("builtin-max-operand", 100, "Largest generated operand.")
               .Min(1)
               .Max(1000000000))
      .Add(Option::Int("builtin-seed", 0, "Seed of the generator.").Min(0))
      .Add(Option::String("builtin-operations", "+-*/",
                          "Operations arithmetic draws from, one character each (e.g. +-)."))
      .Add(Option::Int("builtin-length", 4, "Digits per problem of the reverse generator.")
               .Min(1)
               .Max(18))
      .Add(Option::Enum("builtin-prompt-style", {"question", "equation"}, "question",
                        "How a problem is asked: \"What is 7 * 12? ...\" or \"7 * 12 =\"."))
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
      .Add(Option::Int("eval-samples", 0,
                       "Eval rows per round (the same subset every round); 0: all.")
               .Min(0))
      .Add(Option::Bool("eval-at-start", false,
                        "Also evaluate the initial weights (a round at version 0)."))
      .Add(Option::Bool("eval-from-train", false,
                        "Evaluate rows of the train split instead of the eval split."))
      .Add(Option::String("eval-sampling", "{}",
                          "Sampling overrides for eval tasks (JSON object, merge patch)."))
      .Add(Option::Enum("log-level", {"debug", "info", "warn", "error"}, "info",
                        "Minimum level of the JSON log lines on stderr."));
  return spec;
}

Result<DataflowFlagSettings> ResolveDataflowFlags(const config::Config& cfg,
                                                  const DataflowSettings* manifest) {
  // Whether the flag's value is used: always without a manifest, else only when set.
  auto use = [&](const char* key) { return manifest == nullptr || cfg.IsSet(key); };
  DataflowFlagSettings s;
  if (manifest != nullptr) {
    s.dataset = manifest->dataset;
    s.config = manifest->config;
    s.service.groups_per_batch_by_policy = manifest->groups_per_batch_by_policy;
    s.config.groups_per_batch_by_policy = manifest->groups_per_batch_by_policy;
  }
  DatasetSource& d = s.dataset;
  if (use("dataset-file")) {
    if (const std::string& file = cfg.GetString("dataset-file"); !file.empty()) {
      d.file = file;
      d.builtin.reset();
    } else {
      d.file.reset();
      d.builtin = BuiltinDataset{};
    }
  }
  if (d.builtin) {
    if (use("builtin-generator")) d.builtin->generator = cfg.GetString("builtin-generator");
    if (use("builtin-count")) d.builtin->count = cfg.GetInt("builtin-count");
    if (use("builtin-max-operand")) d.builtin->max_operand = cfg.GetInt("builtin-max-operand");
    if (use("builtin-seed")) d.builtin->seed = static_cast<uint64_t>(cfg.GetInt("builtin-seed"));
    if (use("builtin-operations")) d.builtin->operations = cfg.GetString("builtin-operations");
    if (use("builtin-length")) d.builtin->length = cfg.GetInt("builtin-length");
    if (use("builtin-prompt-style"))
      d.builtin->prompt_style = cfg.GetString("builtin-prompt-style");
  }
  if (use("dataset-name")) d.name = cfg.GetString("dataset-name");
  if (use("field-prompt")) d.fields.prompt = cfg.GetString("field-prompt");
  if (use("field-answer")) d.fields.answer = cfg.GetString("field-answer");
  if (use("field-id")) d.fields.id = cfg.GetString("field-id");
  if (use("eval-split")) d.eval_split = cfg.GetDouble("eval-split");
  if (use("shuffle")) d.shuffle = cfg.GetBool("shuffle");
  if (use("shuffle-seed")) d.shuffle_seed = static_cast<uint64_t>(cfg.GetInt("shuffle-seed"));
  if (use("epochs")) d.epochs = cfg.GetInt("epochs");

  DataflowConfig& c = s.config;
  if (use("policies")) c.policies = cfg.GetStringList("policies");
  if (use("group-size")) c.group_size = cfg.GetInt("group-size");
  if (use("sampling")) {
    SLUICE_ASSIGN_OR_RETURN(c.sampling, JsonFlag(cfg, "sampling", false));
  }
  if (use("workflow")) {
    SLUICE_ASSIGN_OR_RETURN(c.workflow, JsonFlag(cfg, "workflow", false));
  }
  if (use("lease-duration")) {
    c.lease_duration = std::chrono::ceil<std::chrono::seconds>(cfg.GetDuration("lease-duration"));
  }
  if (use("max-attempts")) c.max_attempts = static_cast<int>(cfg.GetInt("max-attempts"));
  if (use("capacity")) c.capacity_groups = cfg.GetInt("capacity");
  if (use("groups-per-batch")) c.groups_per_batch = cfg.GetInt("groups-per-batch");
  if (use("ack-timeout")) {
    c.ack_timeout = std::chrono::ceil<std::chrono::seconds>(cfg.GetDuration("ack-timeout"));
  }
  if (use("advantage")) {
    SLUICE_ASSIGN_OR_RETURN(c.group_stats.advantage,
                            ParseAdvantageMode(cfg.GetString("advantage")));
  }
  if (use("filters")) {
    SLUICE_ASSIGN_OR_RETURN(nlohmann::json filters, JsonFlag(cfg, "filters", true));
    c.filters.clear();
    for (size_t i = 0; i < filters.size(); ++i) {
      const nlohmann::json& f = filters[i];
      const std::string field = "--filters[" + std::to_string(i) + "]";
      if (!f.is_object() || !f.contains("type") || !f["type"].is_string()) {
        return Status::InvalidArgument("must be an object with a string \"type\"", field);
      }
      FilterSpec spec{f["type"].get<std::string>(), f.value("options", nlohmann::json::object())};
      c.filters.push_back(std::move(spec));
    }
  }
  if (use("curator")) c.curator = cfg.GetString("curator");
  if (use("curator-options")) {
    SLUICE_ASSIGN_OR_RETURN(c.curator_options, JsonFlag(cfg, "curator-options", false));
  }
  if (use("max-staleness")) c.staleness.max_staleness = cfg.GetInt("max-staleness");
  if (use("stale-action")) {
    SLUICE_ASSIGN_OR_RETURN(c.staleness.stale_action,
                            ParseStaleAction(cfg.GetString("stale-action")));
  }
  if (use("order")) {
    SLUICE_ASSIGN_OR_RETURN(c.staleness.order, ParseQueueOrder(cfg.GetString("order")));
  }
  if (use("down-weight-decay")) c.staleness.down_weight_decay = cfg.GetDouble("down-weight-decay");
  if (use("replay-ratio")) c.replay.replay_ratio = cfg.GetDouble("replay-ratio");
  if (use("replay-selector")) {
    SLUICE_ASSIGN_OR_RETURN(c.replay.selector,
                            ParseReplaySelector(cfg.GetString("replay-selector")));
  }
  if (use("replay-capacity"))
    c.replay.capacity = static_cast<size_t>(cfg.GetInt("replay-capacity"));
  if (use("version-barrier")) c.version_barrier = cfg.GetBool("version-barrier");
  if (use("eval-every-versions")) c.eval.every_versions = cfg.GetInt("eval-every-versions");
  if (use("eval-k")) c.eval.k = cfg.GetInt("eval-k");
  if (use("eval-samples")) c.eval.samples = cfg.GetInt("eval-samples");
  if (use("eval-at-start")) c.eval.at_start = cfg.GetBool("eval-at-start");
  if (use("eval-from-train")) c.eval.from_train = cfg.GetBool("eval-from-train");
  if (use("eval-sampling")) {
    SLUICE_ASSIGN_OR_RETURN(c.eval.sampling, JsonFlag(cfg, "eval-sampling", false));
  }
  c.shuffle = d.shuffle;
  c.shuffle_seed = d.shuffle_seed;
  c.epochs = d.epochs;

  DataflowServiceOptions& o = s.service;
  o.wal.dir = cfg.GetString("wal-dir");
  o.wal.fsync = cfg.GetBool("fsync");
  o.wal.group_commit_delay =
      std::chrono::duration_cast<std::chrono::microseconds>(cfg.GetDuration("group-commit-delay"));
  o.wal.segment_bytes =
      use("segment-bytes") ? cfg.GetBytes("segment-bytes") : manifest->segment_bytes;
  o.snapshot_bytes =
      use("snapshot-bytes") ? cfg.GetBytes("snapshot-bytes") : manifest->snapshot_bytes;
  o.maintenance_interval = std::chrono::duration_cast<std::chrono::milliseconds>(
      cfg.GetDuration("maintenance-interval"));
  if (o.maintenance_interval.count() < 10) {
    return Status::InvalidArgument("must be at least 10ms", "--maintenance-interval");
  }
  o.max_wait = std::chrono::duration_cast<std::chrono::milliseconds>(cfg.GetDuration("max-wait"));
  const int64_t waiting_leases = cfg.GetInt("max-waiting-leases");
  const int64_t threads = cfg.GetInt("worker-threads");
  if (waiting_leases < 0 || (waiting_leases > 0 && waiting_leases >= threads)) {
    // Waiting leases at or above the threads would leave none for the trainers' batches.
    return Status::InvalidArgument("must be 0 (from --worker-threads) or below --worker-threads (" +
                                       std::to_string(threads) + ")",
                                   "--max-waiting-leases");
  }
  o.max_waiting_leases =
      waiting_leases > 0
          ? static_cast<size_t>(waiting_leases)
          : DefaultMaxWaitingLeases(static_cast<size_t>(std::max<int64_t>(threads, 1)));
  o.seed = static_cast<uint64_t>(cfg.GetInt("seed"));
  return s;
}

}  // namespace sluice::dataflow
