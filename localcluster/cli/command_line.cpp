#include "localcluster/cli/command_line.h"

#include <charconv>
#include <cmath>

#include "common/config/help.h"
#include "common/config/value_parsers.h"
#include "localcluster/cli/components.h"
#include "localcluster/cli/state_layout.h"

namespace sluice::cli {
namespace {

FlagSpec StateDirFlag() {
  return {"state-dir",
          '\0',
          FlagType::kString,
          "DIR",
          "",
          "The cluster's state directory (see `sluice up --help`). Default: $HOME/.sluice.",
          std::nullopt,
          std::nullopt};
}

FlagSpec IntFlag(std::string name, std::string value_name, int64_t def, std::string help,
                 int64_t min, int64_t max) {
  return {std::move(name),
          '\0',
          FlagType::kInt,
          std::move(value_name),
          std::to_string(def),
          std::move(help),
          min,
          max};
}

Result<std::string> StateDir(const ParsedFlags& flags, const config::Environment& env) {
  if (flags.IsSet("state-dir")) return flags.GetString("state-dir");
  return DefaultStateDir(env);
}

Status NoPositional(const ParsedFlags& flags) {
  if (!flags.positional().empty()) {
    return Status::InvalidArgument("unexpected argument \"" + flags.positional()[0] + "\"");
  }
  return Status::Ok();
}

}  // namespace

const std::vector<SubcommandInfo>& Subcommands() {
  static const std::vector<SubcommandInfo> list = {
      {"up", "Start the local cluster (API server, node agent, operator), install the CRDs."},
      {"down", "Stop the local cluster's processes."},
      {"status", "Show the components, the nodes and the Sluice resources."},
      {"node", "cordon|uncordon|fail|recover NODE: change a node, or simulate its failure."},
      {"logs", "Print (or follow) a component's log."},
      {"run", "Apply experiment manifests and follow the TrainerJobs until they finish."},
      {"plot", "Draw the progress `sluice run` recorded (reward, tokens/s, replicas, staleness)."},
  };
  return list;
}

std::string TopLevelHelp() {
  std::string out = "Usage: sluice COMMAND [flags] [args]\n\n";
  out += config::Wrap(
      "Runs a Kubernetes-compatible cluster for Sluice on this machine: an API server, a node "
      "agent that simulates the nodes of a cluster description and runs pods as processes, and "
      "the Sluice operator. kubectl works against it.",
      0);
  out += "\nCommands:\n";
  for (const SubcommandInfo& c : Subcommands()) {
    std::string name = "  " + c.name;
    name.resize(10, ' ');
    out += name + c.summary + "\n";
  }
  out += "\nRun `sluice COMMAND --help` for the flags of a command.\n";
  return out;
}

CommandSpec UpSpec() {
  CommandSpec spec;
  spec.usage = "sluice up [flags]";
  spec.summary =
      "Starts the local cluster and leaves it running in the background: sluice-apiserver, then "
      "sluice-node, then sluice-operator (skipped while that binary does not exist), and with "
      "--prometheus a Prometheus scraping them and the worker pods. Each is started detached, "
      "waited for until healthy, and then the Sluice CRDs are installed. Running `up` again "
      "leaves healthy components alone. If a component does not become healthy, the end of its "
      "log is printed and every process this invocation started is stopped again (exit 1).\n"
      "State directory layout: apiserver/ (the API server's state), kubeconfig, node/, "
      "logs/<component>.log, run/<component>.pid, prometheus/.";
  spec.flags = {
      {"config", '\0', FlagType::kString, "FILE", "",
       "The cluster description given to the node agent (--cluster-config). Default: "
       "examples/local-cluster.yaml, looked for in <bin-dir>/../../examples/ and in the current "
       "directory's examples/.",
       std::nullopt, std::nullopt},
      StateDirFlag(),
      {"bin-dir", '\0', FlagType::kString, "DIR", "",
       "Where sluice-apiserver, sluice-node and sluice-operator are. Default: the directory of "
       "this sluice executable.",
       std::nullopt, std::nullopt},
      IntFlag("apiserver-port", "N", 6443, "Port of the API server (HTTPS, on 127.0.0.1).", 1,
              65535),
      IntFlag("node-port", "N", 10250,
              "Port of the node agent (HTTP on 127.0.0.1: /readyz, /metrics, container logs).", 1,
              65535),
      {"pod-ip-prefix", '\0', FlagType::kString, "127.N", "127.1",
       "Pods get loopback addresses <prefix>.x.y; two clusters on one machine need different "
       "prefixes.",
       std::nullopt, std::nullopt},
      IntFlag("operator-port", "N", 18080,
              "Port of the operator's /metrics (HTTP on 127.0.0.1); its /healthz and /readyz are "
              "on N+1.",
              1, 65534),
      {"operator", '\0', FlagType::kBool, "", "true",
       "Start sluice-operator, as the ServiceAccount sluice-system/sluice-operator with the "
       "operator's RBAC rules. --no-operator: leave it out, e.g. to install the operator with the "
       "Helm chart (docs/operations.md).",
       std::nullopt, std::nullopt},
      {"prometheus", '\0', FlagType::kBool, "", "false",
       "Also start /usr/bin/prometheus on 127.0.0.1:--prometheus-port, scraping the API server, "
       "the node agent and the pods annotated prometheus.io/scrape (the dataflow, rollout and "
       "trainer pods; the node agent keeps their list in prometheus/targets/pods.json), and give "
       "the operator its URL (--prometheus-url), the default of RolloutPool "
       "spec.autoscaling.prometheusURL.",
       std::nullopt, std::nullopt},
      IntFlag("prometheus-port", "N", 9090, "Port of Prometheus (HTTP on 127.0.0.1).", 1, 65535),
      {"prometheus-scrape-interval", '\0', FlagType::kString, "DURATION", "15s",
       "How often Prometheus scrapes every target, and evaluates rules (100ms to 1h).",
       std::nullopt, std::nullopt},
      IntFlag("timeout", "SECONDS", 60,
              "How long each component may take to become healthy (and the CRDs to be "
              "established).",
              1, 3600),
  };
  return spec;
}

CommandSpec DownSpec() {
  CommandSpec spec;
  spec.usage = "sluice down [flags]";
  spec.summary =
      "Stops the components `sluice up` started, in reverse order: SIGTERM, then SIGKILL if one "
      "has not exited within --timeout. The node agent stops its pods' processes itself. The "
      "state (objects, certificates, logs) is kept; harmless when nothing runs.";
  spec.flags = {StateDirFlag(),
                IntFlag("timeout", "SECONDS", 30,
                        "How long each component may take to exit after SIGTERM.", 0, 3600)};
  return spec;
}

CommandSpec StatusSpec() {
  CommandSpec spec;
  spec.usage = "sluice status [flags]";
  spec.summary =
      "Shows each component (running, stopped or unhealthy), the nodes (Ready, region, GPUs, "
      "cordoned) and how many Sluice resources exist, with the phases of the TrainerJobs. Exits "
      "1 when the API server is not running.";
  spec.flags = {StateDirFlag()};
  return spec;
}

CommandSpec NodeSpec() {
  CommandSpec spec;
  spec.usage = "sluice node cordon|uncordon|fail|recover NODE [flags]";
  spec.summary =
      "cordon / uncordon: mark the node unschedulable or schedulable again (as kubectl cordon "
      "does). fail / recover: set or remove the annotation sluice.dev/simulated-failure=\"true\"; "
      "the node agent then stops the node's heartbeat and kills its pods' processes, or resumes.";
  spec.flags = {StateDirFlag()};
  return spec;
}

CommandSpec LogsSpec() {
  CommandSpec spec;
  spec.usage = "sluice logs COMPONENT [flags]";
  spec.summary = "Prints the log of a component (" + KnownComponentNames() +
                 "): <state-dir>/logs/COMPONENT.log.";
  spec.flags = {
      StateDirFlag(),
      {"follow", 'f', FlagType::kBool, "", "false",
       "Keep printing as the log grows (Ctrl-C to stop).", std::nullopt, std::nullopt},
      IntFlag("tail", "N", -1, "Only the last N lines; -1 prints everything.", -1, 1000000000)};
  return spec;
}

CommandSpec RunSpec() {
  CommandSpec spec;
  spec.usage = "sluice run MANIFEST... [flags]";
  spec.summary =
      "Applies every document of the manifests (multi-document YAML) to the local cluster: "
      "creates each object, or merge-patches an existing one with the document's labels, "
      "annotations and spec (never status), printing `KIND.GROUP/NAME created|configured|"
      "unchanged`. Then follows the experiment's TrainerJobs, Dataflows and RolloutPools every "
      "--interval: a live view on a terminal, else one line per TrainerJob, and every sample "
      "appended to <state-dir>/experiments/EXPERIMENT/progress.jsonl (see `sluice plot`). Exits "
      "0 when every TrainerJob Succeeded (or the manifests have none: nothing to follow), 1 when "
      "one Failed, a document was rejected or --timeout passed, 130 on Ctrl-C (the resources "
      "stay). Once every TrainerJob Succeeded, sampling goes on (up to --eval-wait) until each "
      "Dataflow with spec.evaluation reports the evaluation round at the TrainerJobs' final "
      "version (when that version is a multiple of everyVersions); then a summary line per "
      "TrainerJob and, per Dataflow, the eval line `eval accuracy: before X% -> after Y% "
      "(versions A -> B)` from the first and last evaluation seen while following, followed by "
      "`verifier agreement: before X% -> after Y% (on correct answers A% -> B%, on wrong C% -> "
      "D%)` (solve-and-verify) and `tool calls: before X% -> after Y%` (multi-turn) from the "
      "same two rounds when they report them.";
  spec.flags = {
      StateDirFlag(),
      {"namespace", 'n', FlagType::kString, "NS", "default",
       "Namespace of the documents that name none.", std::nullopt, std::nullopt},
      {"name", '\0', FlagType::kString, "EXPERIMENT", "",
       "The experiment's name (its directory under experiments/). Default: the first manifest's "
       "file name without its extension.",
       std::nullopt, std::nullopt},
      {"interval", '\0', FlagType::kString, "SECONDS", "2",
       "Seconds between two samples while following (fractions allowed, at least 0.05).",
       std::nullopt, std::nullopt},
      IntFlag("timeout", "SECONDS", 0,
              "Stop following and exit 1 after this long; 0 waits for the TrainerJobs. Once they "
              "succeeded it only shortens the --eval-wait.",
              0, 100000000),
      {"eval-wait", '\0', FlagType::kString, "DURATION", "120s",
       "After every TrainerJob succeeded, how long to keep following for the evaluation at the "
       "final version (e.g. 90s, 5m; a plain number is seconds, at most 24h); 0 does not wait. "
       "Ctrl-C during this wait ends it with exit 0.",
       std::nullopt, std::nullopt},
      {"unreachable-timeout", '\0', FlagType::kString, "DURATION", "60s",
       "Stop following and exit 1 once the API server has been unreachable this long (the "
       "cluster was stopped or died; e.g. 30s, 5m; at most 24h); 0 keeps following. Shorter "
       "outages (a restarted API server) are sat out.",
       std::nullopt, std::nullopt},
      {"follow", '\0', FlagType::kBool, "", "true",
       "Follow the experiment after applying (--no-follow: apply and exit 0).", std::nullopt,
       std::nullopt},
  };
  return spec;
}

CommandSpec PlotSpec() {
  CommandSpec spec;
  spec.usage = "sluice plot EXPERIMENT [flags]";
  spec.summary =
      "Draws <state-dir>/experiments/EXPERIMENT/progress.jsonl, recorded by `sluice run`, as four "
      "panels against the weight version: reward mean and eval accuracy; rollout "
      "and training tokens/s; replicas per region; staleness mean. PNG through gnuplot when "
      "`gnuplot` is in PATH, else SVG (drawn by sluice itself). Prints the path written.";
  spec.flags = {
      StateDirFlag(),
      {"output", 'o', FlagType::kString, "FILE", "",
       "Where to write. Default: <state-dir>/experiments/EXPERIMENT/progress.png or .svg.",
       std::nullopt, std::nullopt},
      {"format", '\0', FlagType::kString, "FORMAT", "auto",
       "png (needs gnuplot), svg, or auto: png when gnuplot is in PATH, else svg; with --output "
       "ending in .svg or .png, that one.",
       std::nullopt, std::nullopt},
  };
  return spec;
}

Status CheckExperimentName(const std::string& name, const std::string& what) {
  if (name.empty()) return Status::InvalidArgument(what + ": the experiment name is empty");
  if (name == "." || name == ".." || name.find('/') != std::string::npos ||
      name.find('\0') != std::string::npos || name.size() > 253) {
    return Status::InvalidArgument(what + ": \"" + name +
                                   "\" cannot name an experiment directory (no '/', not . or ..)");
  }
  return Status::Ok();
}

std::string ExperimentNameFromPath(const std::string& path) {
  std::string base = path;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  if (size_t slash = base.rfind('/'); slash != std::string::npos) base = base.substr(slash + 1);
  if (size_t dot = base.rfind('.'); dot != std::string::npos && dot > 0) base.resize(dot);
  return base;
}

Result<Parsed<UpOptions>> ParseUp(const std::vector<std::string>& args,
                                  const config::Environment& env) {
  const CommandSpec spec = UpSpec();
  SLUICE_ASSIGN_OR_RETURN(ParsedFlags flags, ParseFlags(spec, args));
  Parsed<UpOptions> parsed;
  if (flags.help()) {
    parsed.help = CommandHelp(spec);
    return parsed;
  }
  SLUICE_RETURN_IF_ERROR(NoPositional(flags));
  UpOptions o;
  SLUICE_ASSIGN_OR_RETURN(o.state_dir, StateDir(flags, env));
  o.state_dir_given = flags.IsSet("state-dir");
  o.cluster_config = flags.GetString("config");
  o.bin_dir = flags.GetString("bin-dir");
  o.apiserver_port = static_cast<int>(flags.GetInt("apiserver-port"));
  o.node_port = static_cast<int>(flags.GetInt("node-port"));
  o.operator_port = static_cast<int>(flags.GetInt("operator-port"));
  o.pod_ip_prefix = flags.GetString("pod-ip-prefix");
  o.run_operator = flags.GetBool("operator");
  o.prometheus = flags.GetBool("prometheus");
  o.prometheus_port = static_cast<int>(flags.GetInt("prometheus-port"));
  const std::string& scrape = flags.GetString("prometheus-scrape-interval");
  Result<std::chrono::nanoseconds> interval = config::ParseDuration(scrape);
  if (!interval.ok()) {
    return Status::InvalidArgument("flag --prometheus-scrape-interval: " +
                                   interval.status().message());
  }
  if (*interval < std::chrono::milliseconds(100) || *interval > std::chrono::hours(1) ||
      *interval % std::chrono::milliseconds(1) != std::chrono::nanoseconds(0)) {
    return Status::InvalidArgument("flag --prometheus-scrape-interval: " + scrape +
                                   " is not a whole number of milliseconds from 100ms to 1h");
  }
  o.prometheus_scrape_interval = std::chrono::duration_cast<std::chrono::milliseconds>(*interval);
  o.timeout = std::chrono::seconds(flags.GetInt("timeout"));
  for (int port : {o.apiserver_port, o.node_port}) {
    if (port == o.operator_port || port == o.operator_port + 1) {
      return Status::InvalidArgument("flag --operator-port: " + std::to_string(o.operator_port) +
                                     " and the next port must differ from --apiserver-port and "
                                     "--node-port");
    }
  }
  if (o.apiserver_port == o.node_port) {
    return Status::InvalidArgument("flags --apiserver-port and --node-port: both are " +
                                   std::to_string(o.node_port) + "; they must differ");
  }
  if (o.prometheus) {
    for (int port : {o.apiserver_port, o.node_port, o.operator_port, o.operator_port + 1}) {
      if (port == o.prometheus_port) {
        return Status::InvalidArgument(
            "flag --prometheus-port: Prometheus would listen on " + std::to_string(port) +
            ", which --apiserver-port, --node-port or --operator-port (or the next port) "
            "already uses");
      }
    }
  }
  parsed.options = std::move(o);
  return parsed;
}

Result<Parsed<DownOptions>> ParseDown(const std::vector<std::string>& args,
                                      const config::Environment& env) {
  const CommandSpec spec = DownSpec();
  SLUICE_ASSIGN_OR_RETURN(ParsedFlags flags, ParseFlags(spec, args));
  Parsed<DownOptions> parsed;
  if (flags.help()) {
    parsed.help = CommandHelp(spec);
    return parsed;
  }
  SLUICE_RETURN_IF_ERROR(NoPositional(flags));
  DownOptions o;
  SLUICE_ASSIGN_OR_RETURN(o.state_dir, StateDir(flags, env));
  o.timeout = std::chrono::seconds(flags.GetInt("timeout"));
  parsed.options = std::move(o);
  return parsed;
}

Result<Parsed<StatusOptions>> ParseStatus(const std::vector<std::string>& args,
                                          const config::Environment& env) {
  const CommandSpec spec = StatusSpec();
  SLUICE_ASSIGN_OR_RETURN(ParsedFlags flags, ParseFlags(spec, args));
  Parsed<StatusOptions> parsed;
  if (flags.help()) {
    parsed.help = CommandHelp(spec);
    return parsed;
  }
  SLUICE_RETURN_IF_ERROR(NoPositional(flags));
  StatusOptions o;
  SLUICE_ASSIGN_OR_RETURN(o.state_dir, StateDir(flags, env));
  parsed.options = std::move(o);
  return parsed;
}

Result<Parsed<NodeOptions>> ParseNode(const std::vector<std::string>& args,
                                      const config::Environment& env) {
  const CommandSpec spec = NodeSpec();
  SLUICE_ASSIGN_OR_RETURN(ParsedFlags flags, ParseFlags(spec, args));
  Parsed<NodeOptions> parsed;
  if (flags.help()) {
    parsed.help = CommandHelp(spec);
    return parsed;
  }
  const std::vector<std::string>& words = flags.positional();
  if (words.empty()) {
    return Status::InvalidArgument("missing action: cordon, uncordon, fail or recover");
  }
  std::optional<NodeAction> action = ParseNodeAction(words[0]);
  if (!action) {
    return Status::InvalidArgument("unknown action \"" + words[0] +
                                   "\" (want cordon, uncordon, fail or recover)");
  }
  if (words.size() < 2) {
    return Status::InvalidArgument(std::string("missing NODE: sluice node ") +
                                   NodeActionName(*action) + " NODE");
  }
  if (words.size() > 2) {
    return Status::InvalidArgument("unexpected argument \"" + words[2] + "\"");
  }
  NodeOptions o;
  o.action = *action;
  o.node = words[1];
  SLUICE_ASSIGN_OR_RETURN(o.state_dir, StateDir(flags, env));
  parsed.options = std::move(o);
  return parsed;
}

Result<Parsed<LogsOptions>> ParseLogs(const std::vector<std::string>& args,
                                      const config::Environment& env) {
  const CommandSpec spec = LogsSpec();
  SLUICE_ASSIGN_OR_RETURN(ParsedFlags flags, ParseFlags(spec, args));
  Parsed<LogsOptions> parsed;
  if (flags.help()) {
    parsed.help = CommandHelp(spec);
    return parsed;
  }
  const std::vector<std::string>& words = flags.positional();
  if (words.empty()) {
    return Status::InvalidArgument("missing COMPONENT (one of " + KnownComponentNames() + ")");
  }
  if (FindKnownComponent(words[0]) == nullptr) {
    return Status::InvalidArgument("unknown component \"" + words[0] + "\" (one of " +
                                   KnownComponentNames() + ")");
  }
  if (words.size() > 1) {
    return Status::InvalidArgument("unexpected argument \"" + words[1] + "\"");
  }
  LogsOptions o;
  o.component = words[0];
  SLUICE_ASSIGN_OR_RETURN(o.state_dir, StateDir(flags, env));
  o.follow = flags.GetBool("follow");
  if (flags.GetInt("tail") >= 0) o.tail = static_cast<size_t>(flags.GetInt("tail"));
  parsed.options = std::move(o);
  return parsed;
}

Result<Parsed<RunOptions>> ParseRun(const std::vector<std::string>& args,
                                    const config::Environment& env) {
  const CommandSpec spec = RunSpec();
  SLUICE_ASSIGN_OR_RETURN(ParsedFlags flags, ParseFlags(spec, args));
  Parsed<RunOptions> parsed;
  if (flags.help()) {
    parsed.help = CommandHelp(spec);
    return parsed;
  }
  if (flags.positional().empty()) {
    return Status::InvalidArgument("missing MANIFEST: sluice run MANIFEST... [flags]");
  }
  RunOptions o;
  o.manifests = flags.positional();
  SLUICE_ASSIGN_OR_RETURN(o.state_dir, StateDir(flags, env));
  o.namespace_ = flags.GetString("namespace");
  if (o.namespace_.empty()) return Status::InvalidArgument("flag --namespace: must not be empty");
  if (flags.IsSet("name")) {
    o.experiment = flags.GetString("name");
    SLUICE_RETURN_IF_ERROR(CheckExperimentName(o.experiment, "flag --name"));
  } else {
    o.experiment = ExperimentNameFromPath(o.manifests[0]);
    SLUICE_RETURN_IF_ERROR(CheckExperimentName(
        o.experiment, "manifest " + o.manifests[0] + " (pass --name EXPERIMENT)"));
  }
  const std::string& interval = flags.GetString("interval");
  double seconds = 0;
  const char* end = interval.data() + interval.size();
  auto [ptr, ec] = std::from_chars(interval.data(), end, seconds);
  if (interval.empty() || ec != std::errc() || ptr != end || !std::isfinite(seconds)) {
    return Status::InvalidArgument("flag --interval: \"" + interval + "\" is not a number");
  }
  if (seconds < 0.05 || seconds > 86400) {
    return Status::InvalidArgument("flag --interval: " + interval +
                                   " is outside 0.05 to 86400 seconds");
  }
  o.interval = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000 + 0.5));
  o.timeout = std::chrono::seconds(flags.GetInt("timeout"));
  const std::string& eval_wait = flags.GetString("eval-wait");
  Result<std::chrono::nanoseconds> wait = config::ParseDuration(eval_wait);
  if (!wait.ok()) return Status::InvalidArgument("flag --eval-wait: " + wait.status().message());
  if (*wait > std::chrono::hours(24)) {
    return Status::InvalidArgument("flag --eval-wait: " + eval_wait + " is longer than 24h");
  }
  o.eval_wait = std::chrono::ceil<std::chrono::milliseconds>(*wait);
  const std::string& unreachable = flags.GetString("unreachable-timeout");
  Result<std::chrono::nanoseconds> gone = config::ParseDuration(unreachable);
  if (!gone.ok()) {
    return Status::InvalidArgument("flag --unreachable-timeout: " + gone.status().message());
  }
  if (*gone > std::chrono::hours(24)) {
    return Status::InvalidArgument("flag --unreachable-timeout: " + unreachable +
                                   " is longer than 24h");
  }
  o.unreachable_timeout = std::chrono::ceil<std::chrono::milliseconds>(*gone);
  o.follow = flags.GetBool("follow");
  parsed.options = std::move(o);
  return parsed;
}

Result<Parsed<PlotOptions>> ParsePlot(const std::vector<std::string>& args,
                                      const config::Environment& env) {
  const CommandSpec spec = PlotSpec();
  SLUICE_ASSIGN_OR_RETURN(ParsedFlags flags, ParseFlags(spec, args));
  Parsed<PlotOptions> parsed;
  if (flags.help()) {
    parsed.help = CommandHelp(spec);
    return parsed;
  }
  const std::vector<std::string>& words = flags.positional();
  if (words.empty()) return Status::InvalidArgument("missing EXPERIMENT: sluice plot EXPERIMENT");
  if (words.size() > 1) {
    return Status::InvalidArgument("unexpected argument \"" + words[1] + "\"");
  }
  PlotOptions o;
  o.experiment = words[0];
  SLUICE_RETURN_IF_ERROR(CheckExperimentName(o.experiment, "EXPERIMENT"));
  SLUICE_ASSIGN_OR_RETURN(o.state_dir, StateDir(flags, env));
  o.output = flags.GetString("output");
  const std::string& format = flags.GetString("format");
  if (format == "auto") {
    o.format = PlotFormat::kAuto;
  } else if (format == "png") {
    o.format = PlotFormat::kPng;
  } else if (format == "svg") {
    o.format = PlotFormat::kSvg;
  } else {
    return Status::InvalidArgument("flag --format: \"" + format +
                                   "\" is not one of png, svg, auto");
  }
  if (auto it = env.find("PATH"); it != env.end()) o.search_path = it->second;
  parsed.options = std::move(o);
  return parsed;
}

}  // namespace sluice::cli
