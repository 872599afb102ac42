#include "localcluster/cli/cli.h"

#include "localcluster/cli/command_line.h"
#include "localcluster/cli/down_command.h"
#include "localcluster/cli/logs_command.h"
#include "localcluster/cli/node_command.h"
#include "localcluster/cli/plot_command.h"
#include "localcluster/cli/run_command.h"
#include "localcluster/cli/status_command.h"
#include "localcluster/cli/up_command.h"

namespace sluice::cli {
namespace {

// Parses with `parse`, then prints help, reports a usage error, or runs `run`.
template <typename Options, typename ParseFn, typename RunFn>
int Dispatch(const std::string& command, const std::vector<std::string>& args,
             const config::Environment& env, std::ostream& out, std::ostream& err, ParseFn parse,
             RunFn run) {
  Result<Parsed<Options>> parsed = parse(args, env);
  if (!parsed.ok()) {
    // One line per problem, each naming the command.
    const std::string message = parsed.status().message();
    size_t start = 0;
    while (start <= message.size()) {
      size_t end = message.find('\n', start);
      if (end == std::string::npos) end = message.size();
      err << "sluice " << command << ": " << message.substr(start, end - start) << "\n";
      start = end + 1;
    }
    err << "Run `sluice " << command << " --help` for usage.\n";
    return kExitUsage;
  }
  if (!parsed->help.empty()) {
    out << parsed->help;
    return kExitOk;
  }
  return run(*parsed->options, out, err);
}

std::string CommandNames() {
  std::string out;
  for (const SubcommandInfo& c : Subcommands()) out += (out.empty() ? "" : ", ") + c.name;
  return out;
}

}  // namespace

int RunCli(const std::vector<std::string>& args, const config::Environment& env, std::ostream& out,
           std::ostream& err) {
  if (args.empty()) {
    err << TopLevelHelp();
    return kExitUsage;
  }
  const std::string& command = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (command == "-h" || command == "--help" || command == "help") {
    out << TopLevelHelp();
    return kExitOk;
  }
  if (command == "--version" || command == "version") {
    out << "sluice 0.1.0\n";
    return kExitOk;
  }
  if (command == "up") {
    return Dispatch<UpOptions>(command, rest, env, out, err, ParseUp, RunUp);
  }
  if (command == "down") {
    return Dispatch<DownOptions>(command, rest, env, out, err, ParseDown, RunDown);
  }
  if (command == "status") {
    return Dispatch<StatusOptions>(command, rest, env, out, err, ParseStatus, RunStatus);
  }
  if (command == "node") {
    return Dispatch<NodeOptions>(command, rest, env, out, err, ParseNode, RunNode);
  }
  if (command == "logs") {
    return Dispatch<LogsOptions>(command, rest, env, out, err, ParseLogs, RunLogs);
  }
  if (command == "run") {
    return Dispatch<RunOptions>(command, rest, env, out, err, ParseRun, RunRun);
  }
  if (command == "plot") {
    return Dispatch<PlotOptions>(command, rest, env, out, err, ParsePlot, RunPlot);
  }
  err << "sluice: unknown command \"" << command << "\" (known: " << CommandNames() << ")\n"
      << "Run `sluice --help` for usage.\n";
  return kExitUsage;
}

}  // namespace sluice::cli
