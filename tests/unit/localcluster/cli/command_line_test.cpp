// Tests of the `sluice` argument parsing (flags.h, command_line.h) and the dispatcher's usage
// errors (cli.h): every bad argument is named, and usage errors exit 2.
#include "localcluster/cli/command_line.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "localcluster/cli/cli.h"
#include "localcluster/cli/flags.h"

namespace sluice::cli {
namespace {

const config::Environment kEnv = {{"HOME", "/home/ada"}};

TEST(FlagsTest, ParsesLongShortBoolAndPositional) {
  CommandSpec spec;
  spec.usage = "x";
  spec.flags = {{"name", '\0', FlagType::kString, "S", "dflt", "", std::nullopt, std::nullopt},
                {"count", 'n', FlagType::kInt, "N", "3", "", 0, 10},
                {"follow", 'f', FlagType::kBool, "", "false", "", std::nullopt, std::nullopt}};
  Result<ParsedFlags> p = ParseFlags(spec, {"a", "--name=x", "-n", "7", "-f", "b", "--", "--c"});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->GetString("name"), "x");
  EXPECT_EQ(p->GetInt("count"), 7);
  EXPECT_TRUE(p->GetBool("follow"));
  EXPECT_TRUE(p->IsSet("name"));
  EXPECT_EQ(p->positional(), (std::vector<std::string>{"a", "b", "--c"}));

  p = ParseFlags(spec, {"--no-follow", "--name", "y", "--name", "z"});
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->GetBool("follow"));
  EXPECT_EQ(p->GetString("name"), "z");  // The last repeat wins.
  EXPECT_EQ(p->GetInt("count"), 3);
  EXPECT_FALSE(p->IsSet("count"));
}

TEST(FlagsTest, ReportsEveryProblemNamingTheFlag) {
  CommandSpec spec;
  spec.flags = {{"count", '\0', FlagType::kInt, "N", "3", "", 1, 10},
                {"state-dir", '\0', FlagType::kString, "DIR", "", "", std::nullopt, std::nullopt}};
  Result<ParsedFlags> p = ParseFlags(spec, {"--cuont", "2", "--count", "abc"});
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("unknown flag --cuont (did you mean --count?)"),
            std::string::npos);
  EXPECT_NE(p.status().message().find("flag --count: \"abc\" is not an integer"),
            std::string::npos);
  p = ParseFlags(spec, {"--count", "0"});
  EXPECT_EQ(p.status().message(), "flag --count: 0 is below the minimum 1");
  p = ParseFlags(spec, {"--count=11"});
  EXPECT_EQ(p.status().message(), "flag --count: 11 is above the maximum 10");
  p = ParseFlags(spec, {"--state-dir"});
  EXPECT_EQ(p.status().message(), "flag --state-dir: missing value");
  p = ParseFlags(spec, {"--state-dir", "--count", "2"});
  EXPECT_EQ(p.status().message(), "flag --state-dir: missing value");
  p = ParseFlags(spec, {"-state-dir", "x"});
  EXPECT_NE(p.status().message().find("did you mean --state-dir?"), std::string::npos);
  p = ParseFlags(spec, {"-x"});
  EXPECT_EQ(p.status().message(), "unknown flag -x");
  p = ParseFlags(spec, {"--state-dir="});
  EXPECT_EQ(p.status().message(), "flag --state-dir: must not be empty");
}

TEST(FlagsTest, HelpStopsChecking) {
  CommandSpec spec;
  spec.usage = "sluice x [flags]";
  spec.summary = "Does x.";
  spec.flags = {{"count", 'c', FlagType::kInt, "N", "3", "How many.", 1, 10}};
  Result<ParsedFlags> p = ParseFlags(spec, {"--count", "nope", "-h"});
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->help());
  const std::string help = CommandHelp(spec);
  EXPECT_NE(help.find("Usage: sluice x [flags]"), std::string::npos);
  EXPECT_NE(help.find("-c, --count N"), std::string::npos);
  EXPECT_NE(help.find("How many. Default: 3."), std::string::npos);
}

TEST(CommandLineTest, UpDefaultsAndFlags) {
  Result<Parsed<UpOptions>> p = ParseUp({}, kEnv);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_TRUE(p->options);
  EXPECT_EQ(p->options->state_dir, "/home/ada/.sluice");
  EXPECT_FALSE(p->options->state_dir_given);
  EXPECT_EQ(p->options->apiserver_port, 6443);
  EXPECT_EQ(p->options->node_port, 10250);
  EXPECT_FALSE(p->options->prometheus);
  EXPECT_EQ(p->options->prometheus_port, 9090);
  EXPECT_EQ(p->options->prometheus_scrape_interval, std::chrono::seconds(15));
  EXPECT_TRUE(p->options->run_operator);
  EXPECT_EQ(p->options->timeout, std::chrono::seconds(60));
  EXPECT_EQ(p->options->cluster_config, "");

  p = ParseUp(
      {"--config", "c.yaml", "--state-dir", "/s", "--apiserver-port", "7443", "--node-port=11250",
       "--prometheus", "--timeout", "5", "--bin-dir", "/b", "--no-operator", "--prometheus-port",
       "19090", "--prometheus-scrape-interval", "500ms"},
      kEnv);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->options->cluster_config, "c.yaml");
  EXPECT_EQ(p->options->state_dir, "/s");
  EXPECT_TRUE(p->options->state_dir_given);
  EXPECT_EQ(p->options->bin_dir, "/b");
  EXPECT_EQ(p->options->apiserver_port, 7443);
  EXPECT_EQ(p->options->node_port, 11250);
  EXPECT_TRUE(p->options->prometheus);
  EXPECT_EQ(p->options->prometheus_port, 19090);
  EXPECT_EQ(p->options->prometheus_scrape_interval, std::chrono::milliseconds(500));
  EXPECT_FALSE(p->options->run_operator);
  EXPECT_EQ(p->options->timeout, std::chrono::seconds(5));
}

TEST(CommandLineTest, UpErrors) {
  EXPECT_EQ(ParseUp({"--apiserver-port", "70000"}, kEnv).status().message(),
            "flag --apiserver-port: 70000 is above the maximum 65535");
  EXPECT_EQ(ParseUp({"now"}, kEnv).status().message(), "unexpected argument \"now\"");
  // The operator takes --operator-port and the next one; both must be free of the others.
  EXPECT_EQ(ParseUp({"--operator-port", "19000"}, kEnv)->options->operator_port, 19000);
  EXPECT_NE(ParseUp({"--operator-port", "10249"}, kEnv)
                .status()
                .message()
                .find("--operator-port: 10249 and the next port must differ"),
            std::string::npos);
  EXPECT_NE(ParseUp({"--node-port", "6443"}, kEnv).status().message().find("must differ"),
            std::string::npos);
  EXPECT_NE(ParseUp({"--prometheus", "--node-port", "9090"}, kEnv)
                .status()
                .message()
                .find("flag --prometheus-port: Prometheus would listen on 9090"),
            std::string::npos);
  EXPECT_NE(ParseUp({"--prometheus", "--prometheus-port", "18081"}, kEnv)
                .status()
                .message()
                .find("flag --prometheus-port: Prometheus would listen on 18081"),
            std::string::npos);
  // Without --prometheus the port is not taken, so it may coincide.
  EXPECT_TRUE(ParseUp({"--node-port", "9090"}, kEnv).ok());
  EXPECT_EQ(ParseUp({"--prometheus-scrape-interval", "50ms"}, kEnv).status().message(),
            "flag --prometheus-scrape-interval: 50ms is not a whole number of milliseconds from "
            "100ms to 1h");
  EXPECT_EQ(ParseUp({"--prometheus-scrape-interval", "2h"}, kEnv).status().message(),
            "flag --prometheus-scrape-interval: 2h is not a whole number of milliseconds from "
            "100ms to 1h");
  EXPECT_NE(ParseUp({"--prometheus-scrape-interval", "often"}, kEnv)
                .status()
                .message()
                .find("flag --prometheus-scrape-interval: "),
            std::string::npos);
  EXPECT_NE(ParseUp({}, {}).status().message().find("HOME is not set"), std::string::npos);
  EXPECT_TRUE(ParseUp({"--state-dir", "/s"}, {}).ok());  // No HOME needed then.
  Result<Parsed<UpOptions>> help = ParseUp({"--help"}, kEnv);
  ASSERT_TRUE(help.ok());
  EXPECT_FALSE(help->options);
  EXPECT_NE(help->help.find("--apiserver-port N"), std::string::npos);
}

TEST(CommandLineTest, DownAndStatus) {
  Result<Parsed<DownOptions>> down = ParseDown({"--timeout", "0"}, kEnv);
  ASSERT_TRUE(down.ok());
  EXPECT_EQ(down->options->timeout, std::chrono::seconds(0));
  EXPECT_EQ(ParseDown({}, kEnv)->options->timeout, std::chrono::seconds(30));
  EXPECT_EQ(ParseStatus({"--state-dir", "d"}, kEnv)->options->state_dir, "d");
  EXPECT_EQ(ParseStatus({"extra"}, kEnv).status().message(), "unexpected argument \"extra\"");
}

TEST(CommandLineTest, Node) {
  Result<Parsed<NodeOptions>> p = ParseNode({"fail", "gpu-a-0", "--state-dir", "/s"}, kEnv);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->options->action, NodeAction::kFail);
  EXPECT_EQ(p->options->node, "gpu-a-0");
  EXPECT_EQ(p->options->state_dir, "/s");
  EXPECT_EQ(ParseNode({}, kEnv).status().message(),
            "missing action: cordon, uncordon, fail or recover");
  EXPECT_EQ(ParseNode({"drain", "x"}, kEnv).status().message(),
            "unknown action \"drain\" (want cordon, uncordon, fail or recover)");
  EXPECT_EQ(ParseNode({"cordon"}, kEnv).status().message(),
            "missing NODE: sluice node cordon NODE");
  EXPECT_EQ(ParseNode({"cordon", "a", "b"}, kEnv).status().message(), "unexpected argument \"b\"");
}

TEST(CommandLineTest, Logs) {
  Result<Parsed<LogsOptions>> p = ParseLogs({"node", "-f", "--tail", "20"}, kEnv);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->options->component, "node");
  EXPECT_TRUE(p->options->follow);
  EXPECT_EQ(p->options->tail, std::optional<size_t>(20));
  p = ParseLogs({"apiserver"}, kEnv);
  EXPECT_FALSE(p->options->follow);
  EXPECT_FALSE(p->options->tail);
  EXPECT_NE(ParseLogs({"kubelet"}, kEnv).status().message().find("unknown component \"kubelet\""),
            std::string::npos);
  EXPECT_NE(ParseLogs({}, kEnv).status().message().find("missing COMPONENT"), std::string::npos);
}

// --unreachable-timeout DURATION: how long `sluice run` sits out an API server it cannot reach
// (0 disables; at most 24h).
TEST(CommandLineTest, RunUnreachableTimeout) {
  using std::chrono::milliseconds;
  EXPECT_EQ(ParseRun({"a.yaml"}, kEnv)->options->unreachable_timeout, milliseconds(60000));
  EXPECT_EQ(ParseRun({"a.yaml", "--unreachable-timeout", "5m"}, kEnv)->options->unreachable_timeout,
            milliseconds(300000));
  EXPECT_EQ(ParseRun({"a.yaml", "--unreachable-timeout=0"}, kEnv)->options->unreachable_timeout,
            milliseconds(0));
  for (const auto& [text, message] : std::vector<std::pair<std::string, std::string>>{
           {"25h", "flag --unreachable-timeout: 25h is longer than 24h"},
           {"soon", "flag --unreachable-timeout: \"soon\" is not a duration"}}) {
    Result<Parsed<RunOptions>> p = ParseRun({"a.yaml", "--unreachable-timeout", text}, kEnv);
    ASSERT_FALSE(p.ok()) << text;
    EXPECT_EQ(p.status().message().rfind(message, 0), 0u) << p.status().message();
  }
}

// --eval-wait DURATION: how long `sluice run` keeps following after success for the final
// evaluation round (common/config durations; a plain number is seconds; 0 disables).
TEST(CommandLineTest, RunEvalWait) {
  using std::chrono::milliseconds;
  struct Case {
    std::string text;
    milliseconds want;
  };
  for (const Case& c : std::vector<Case>{{"90s", milliseconds(90000)},
                                         {"5m", milliseconds(300000)},
                                         {"1m30s", milliseconds(90000)},
                                         {"1.5", milliseconds(1500)},
                                         {"250ms", milliseconds(250)},
                                         {"0", milliseconds(0)},
                                         {"24h", milliseconds(86400000)}}) {
    Result<Parsed<RunOptions>> p = ParseRun({"a.yaml", "--eval-wait", c.text}, kEnv);
    ASSERT_TRUE(p.ok()) << c.text << ": " << p.status().ToString();
    EXPECT_EQ(p->options->eval_wait, c.want) << c.text;
  }
  EXPECT_EQ(ParseRun({"a.yaml"}, kEnv)->options->eval_wait, milliseconds(120000));
  EXPECT_EQ(ParseRun({"a.yaml", "--eval-wait=2m"}, kEnv)->options->eval_wait, milliseconds(120000));

  struct Bad {
    std::string text;
    std::string message_start;
  };
  for (const Bad& b :
       std::vector<Bad>{{"soon", "flag --eval-wait: \"soon\" is not a duration"},
                        {"-1s",
                         "flag --eval-wait: \"-1s\" is not a duration: negative durations are not "
                         "allowed"},
                        {"2d", "flag --eval-wait: \"2d\" is not a duration: unknown unit"},
                        {"25h", "flag --eval-wait: 25h is longer than 24h"},
                        {"", "flag --eval-wait: must not be empty"}}) {
    Result<Parsed<RunOptions>> p = ParseRun({"a.yaml", "--eval-wait", b.text}, kEnv);
    ASSERT_FALSE(p.ok()) << b.text;
    EXPECT_EQ(p.status().message().rfind(b.message_start, 0), 0u) << p.status().message();
  }

  Result<Parsed<RunOptions>> help = ParseRun({"--help"}, kEnv);
  ASSERT_TRUE(help.ok());
  EXPECT_NE(help->help.find("--eval-wait DURATION"), std::string::npos) << help->help;
  EXPECT_NE(help->help.find("Default: 120s."), std::string::npos) << help->help;
  // The summary names the eval line (checked unwrapped: the help wraps it anywhere).
  EXPECT_NE(RunSpec().summary.find("`eval accuracy: before X% -> after Y% (versions A -> B)`"),
            std::string::npos);
}

struct CliRun {
  int code;
  std::string out;
  std::string err;
};

CliRun RunSluice(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = RunCli(args, kEnv, out, err);
  return {code, out.str(), err.str()};
}

TEST(CliTest, HelpAndUnknownCommands) {
  CliRun r = RunSluice({"--help"});
  EXPECT_EQ(r.code, 0);
  for (const char* c : {"up", "down", "status", "node", "logs", "run", "plot"}) {
    EXPECT_NE(r.out.find(std::string("  ") + c + " "), std::string::npos) << c;
  }

  r = RunSluice({});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("Usage: sluice COMMAND"), std::string::npos);

  r = RunSluice({"walk", "x.yaml"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown command \"walk\" (known: up, down, status, node, logs, run, plot)"),
            std::string::npos);

  r = RunSluice({"run"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("sluice run: missing MANIFEST"), std::string::npos) << r.err;
  r = RunSluice({"run", "a.yaml", "--eval-wait", "later"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("sluice run: flag --eval-wait: \"later\" is not a duration"),
            std::string::npos)
      << r.err;
  r = RunSluice({"plot", "--format", "gif", "x"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("sluice plot: flag --format"), std::string::npos) << r.err;

  r = RunSluice({"status", "--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("Usage: sluice status"), std::string::npos);
}

TEST(CliTest, UsageErrorsExit2AndNameTheArgumentOnEveryLine) {
  CliRun r = RunSluice({"up", "--bogus", "--timeout", "x"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("sluice up: unknown flag --bogus\n"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("sluice up: flag --timeout: \"x\" is not an integer\n"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("Run `sluice up --help`"), std::string::npos);
  r = RunSluice({"node", "cordon"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("sluice node: missing NODE"), std::string::npos);
}

}  // namespace
}  // namespace sluice::cli
