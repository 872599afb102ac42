// The command line of `sluice`: its subcommands, their flags, and the typed options each
// parses to. Pure: the environment comes in as a map and nothing is read from disk; paths are
// returned as given (the commands make them absolute).
//
//   sluice up      [--config FILE] [--state-dir DIR] [--bin-dir DIR] [--apiserver-port N]
//                  [--node-port N] [--prometheus] [--timeout SECONDS]
//   sluice down    [--state-dir DIR] [--timeout SECONDS]
//   sluice status  [--state-dir DIR]
//   sluice node    cordon|uncordon|fail|recover NODE [--state-dir DIR]
//   sluice logs    COMPONENT [--state-dir DIR] [-f|--follow] [--tail N]
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
  bool prometheus = false;
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

}  // namespace sluice::cli
