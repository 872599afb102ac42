// The command line of `sluice`: its subcommands, their flags, and the typed options each
// parses to. Pure: the environment comes in as a map and nothing is read from disk; paths are
// returned as given (the commands make them absolute).
//
//   sluice up      [--config FILE] [--state-dir DIR] [--bin-dir DIR] [--apiserver-port N]
//                  [--node-port N] [--[no-]operator] [--prometheus] [--prometheus-port N]
//                  [--prometheus-scrape-interval DURATION] [--timeout SECONDS]
//   sluice down    [--state-dir DIR] [--timeout SECONDS]
//   sluice status  [--state-dir DIR]
//   sluice node    cordon|uncordon|fail|recover NODE [--state-dir DIR]
//   sluice logs    COMPONENT [--state-dir DIR] [-f|--follow] [--tail N]
//   sluice run     MANIFEST... [--state-dir DIR] [--namespace NS] [--name EXPERIMENT]
//                  [--interval SECONDS] [--timeout SECONDS] [--eval-wait DURATION] [--no-follow]
//   sluice plot    EXPERIMENT [--state-dir DIR] [--output FILE] [--format png|svg|auto]
//
// The state directory defaults to $HOME/.sluice. Each Parse* returns either options, or help
// (the text to print, exit 0), or an InvalidArgument error whose message names the bad argument
// (exit 2; the dispatcher prefixes "sluice <command>: ").
//
// Thread safety: pure functions.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "common/config/environment.h"
#include "common/status.h"
#include "localcluster/cli/flags.h"
#include "localcluster/cli/node_actions.h"

namespace sluice::cli {

// Exit codes of `sluice`.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

struct UpOptions {
  std::string state_dir;
  bool state_dir_given = false;  // --state-dir was passed (the hints printed then repeat it).
  std::string cluster_config;    // "" : look for examples/local-cluster.yaml.
  std::string bin_dir;           // "" : the directory of the sluice executable.
  int apiserver_port = 6443;
  int node_port = 10250;
  int operator_port = 18080;            // Metrics; health on operator_port + 1.
  std::string pod_ip_prefix = "127.1";  // sluice-node --pod-ip-prefix.
  // Start sluice-operator (as the ServiceAccount sluice-system/sluice-operator). Off: the
  // cluster runs without one, e.g. to install the operator with the Helm chart.
  bool run_operator = true;
  bool prometheus = false;
  int prometheus_port = 9090;  // On 127.0.0.1; the operator's --prometheus-url points at it.
  std::chrono::milliseconds prometheus_scrape_interval{15000};
  std::chrono::seconds timeout{60};
};

struct DownOptions {
  std::string state_dir;
  std::chrono::seconds timeout{30};  // Per component, between SIGTERM and SIGKILL.
};

struct StatusOptions {
  std::string state_dir;
};

struct NodeOptions {
  NodeAction action = NodeAction::kCordon;
  std::string node;
  std::string state_dir;
};

struct LogsOptions {
  std::string component;
  std::string state_dir;
  bool follow = false;
  std::optional<size_t> tail;
};

// How `sluice run` shows progress while following.
enum class RunDisplay {
  kAuto,   // kLive when stdout is a terminal (and the output stream is std::cout), else kPlain.
  kPlain,  // One line per TrainerJob per interval.
  kLive,   // A compact view redrawn in place with ANSI escapes.
};

struct RunOptions {
  std::vector<std::string> manifests;  // Files, in order; at least one.
  std::string state_dir;
  std::string namespace_ = "default";  // For documents without metadata.namespace.
  std::string experiment;              // --name, else the first manifest's stem.
  std::chrono::milliseconds interval{2000};
  std::chrono::seconds timeout{0};  // 0: none.
  // After every TrainerJob succeeded: how long to keep sampling for the evaluation round at the
  // final version (eval_wait.h). 0: do not wait.
  std::chrono::milliseconds eval_wait{120000};
  // Stop following (exit 1) once every read of the followed objects has failed to reach the API
  // server for this long (the cluster was stopped, or died). 0: follow regardless.
  std::chrono::milliseconds unreachable_timeout{60000};
  bool follow = true;
  RunDisplay display = RunDisplay::kAuto;  // Not a flag: tests pick kPlain or kLive.
};

enum class PlotFormat { kAuto, kPng, kSvg };

struct PlotOptions {
  std::string experiment;
  std::string state_dir;
  std::string output;  // "": DIR/experiments/EXPERIMENT/progress.{png,svg}.
  PlotFormat format = PlotFormat::kAuto;
  std::string search_path;  // $PATH, where gnuplot is looked for.
};

// Whether `name` can be an experiment's directory name: non-empty, at most 253 characters, no
// '/', no NUL, not "." or "..". InvalidArgument naming `what` otherwise.
Status CheckExperimentName(const std::string& name, const std::string& what);

// The experiment name a manifest path gives: its file name without the last extension
// ("examples/grpo.yaml" -> "grpo").
std::string ExperimentNameFromPath(const std::string& path);

// Either options or help text.
template <typename T>
struct Parsed {
  std::optional<T> options;
  std::string help;  // Non-empty when help was asked for.
};

struct SubcommandInfo {
  std::string name;     // "up".
  std::string summary;  // One line for `sluice --help`.
};

// The subcommands, in the order `sluice --help` lists them.
const std::vector<SubcommandInfo>& Subcommands();
// `sluice --help`.
std::string TopLevelHelp();

CommandSpec UpSpec();
CommandSpec DownSpec();
CommandSpec StatusSpec();
CommandSpec NodeSpec();
CommandSpec LogsSpec();
CommandSpec RunSpec();
CommandSpec PlotSpec();

// `args` are the words after the subcommand name.
Result<Parsed<UpOptions>> ParseUp(const std::vector<std::string>& args,
                                  const config::Environment& env);
Result<Parsed<DownOptions>> ParseDown(const std::vector<std::string>& args,
                                      const config::Environment& env);
Result<Parsed<StatusOptions>> ParseStatus(const std::vector<std::string>& args,
                                          const config::Environment& env);
Result<Parsed<NodeOptions>> ParseNode(const std::vector<std::string>& args,
                                      const config::Environment& env);
Result<Parsed<LogsOptions>> ParseLogs(const std::vector<std::string>& args,
                                      const config::Environment& env);
Result<Parsed<RunOptions>> ParseRun(const std::vector<std::string>& args,
                                    const config::Environment& env);
// search_path is env's PATH ("" when unset).
Result<Parsed<PlotOptions>> ParsePlot(const std::vector<std::string>& args,
                                      const config::Environment& env);

}  // namespace sluice::cli
