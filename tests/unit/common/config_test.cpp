#include "common/config/config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "common/config/config_file.h"
#include "common/config/environment.h"
#include "common/config/help.h"
#include "common/config/option.h"
#include "common/config/parse.h"
#include "common/config/spec.h"
#include "common/config/suggest.h"

namespace sluice::config {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;
using Args = std::vector<std::string>;
using Strings = std::vector<std::string>;

Spec TestSpec() {
  Spec spec("SLUICE_TEST");
  spec.Add(Option::String("listen-address", ":8080", "Address to serve HTTP on.")
               .YamlKey("http.listenAddress"));
  spec.Add(Option::Bool("tls-enabled", true, "Serve HTTPS.").YamlKey("http.tls.enabled"));
  spec.Add(Option::Int("replicas", 1, "Number of workers.").Min(0).Max(64));
  spec.Add(Option::Int("port", 8080, "Metrics port.").Min(1).Max(65535));
  spec.Add(Option::Double("ratio", 0.5, "Sampling ratio.").Min(0).Max(1));
  spec.Add(Option::Bool("verbose", false, "Log more."));
  spec.Add(Option::Duration("resync-period", minutes(5), "Full resync interval."));
  spec.Add(Option::Bytes("max-body", uint64_t{64} << 20, "Largest request body."));
  spec.Add(Option::StringList("peers", {}, "Peer addresses."));
  spec.Add(Option::Enum("mode", {"fast", "safe"}, "safe", "Commit mode."));
  spec.Add(Option::String("kubeconfig", "", "Path to a kubeconfig.").Env("KUBECONFIG"));
  spec.Add(Option::String("token", "", "API token.").Required());
  return spec;
}

// A YAML file in the test's temporary directory, removed at the end of the test.
class TempFile {
 public:
  explicit TempFile(const std::string& contents) {
    static int counter = 0;
    // The pid keeps parallel test processes (ctest -j) from sharing a file.
    path_ = testing::TempDir() + "sluice_config_test_" + std::to_string(::getpid()) + "_" +
            std::to_string(++counter) + ".yaml";
    std::ofstream(path_) << contents;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class ConfigTest : public testing::Test {
 protected:
  // Parses with the required --token already given unless the test says otherwise.
  Result<Config> Run(Args args, const Environment& env = {}, bool add_token = true) {
    if (add_token) args.insert(args.begin(), "--token=t");
    return Parse(spec_, args, env);
  }
  std::string Error(Args args, const Environment& env = {}, bool add_token = true) {
    const Result<Config> r = Run(std::move(args), env, add_token);
    EXPECT_FALSE(r.ok());
    if (r.ok()) return "";
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    return r.status().message();
  }

  Spec spec_ = TestSpec();
};

TEST_F(ConfigTest, DefaultsWhenNothingIsGiven) {
  const Result<Config> r = Run({});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Config& c = *r;
  EXPECT_EQ(c.GetString("listen-address"), ":8080");
  EXPECT_TRUE(c.GetBool("tls-enabled"));
  EXPECT_EQ(c.GetInt("replicas"), 1);
  EXPECT_DOUBLE_EQ(c.GetDouble("ratio"), 0.5);
  EXPECT_FALSE(c.GetBool("verbose"));
  EXPECT_EQ(c.GetDuration("resync-period"), minutes(5));
  EXPECT_EQ(c.GetBytes("max-body"), uint64_t{64} << 20);
  EXPECT_TRUE(c.GetStringList("peers").empty());
  EXPECT_EQ(c.GetString("mode"), "safe");
  EXPECT_EQ(c.Source("replicas"), ValueSource::kDefault);
  EXPECT_FALSE(c.IsSet("replicas"));
  EXPECT_EQ(c.Source("token"), ValueSource::kFlag);
  EXPECT_TRUE(c.Args().empty());
  EXPECT_FALSE(c.HelpRequested());
  EXPECT_TRUE(c.ConfigFile().empty());
}

TEST_F(ConfigTest, PrecedenceFlagOverEnvOverFileOverDefault) {
  TempFile file("replicas: 3\n");
  const std::string config = "--config=" + file.path();
  struct Case {
    bool flag, env, file;
    int64_t want;
    ValueSource source;
  };
  const Case cases[] = {
      {false, false, false, 1, ValueSource::kDefault}, {false, false, true, 3, ValueSource::kFile},
      {false, true, false, 2, ValueSource::kEnv},      {false, true, true, 2, ValueSource::kEnv},
      {true, false, false, 4, ValueSource::kFlag},     {true, false, true, 4, ValueSource::kFlag},
      {true, true, false, 4, ValueSource::kFlag},      {true, true, true, 4, ValueSource::kFlag},
  };
  for (const Case& c : cases) {
    Args args;
    Environment env;
    if (c.flag) args.push_back("--replicas=4");
    if (c.env) env["SLUICE_TEST_REPLICAS"] = "2";
    if (c.file) args.push_back(config);
    const Result<Config> r = Run(args, env);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->GetInt("replicas"), c.want) << c.flag << c.env << c.file;
    EXPECT_EQ(r->Source("replicas"), c.source) << c.flag << c.env << c.file;
  }
}

TEST_F(ConfigTest, OverriddenValuesAreNotParsed) {
  TempFile file("replicas: many\n");
  const Result<Config> r =
      Run({"--replicas=5", "--config", file.path()}, {{"SLUICE_TEST_REPLICAS", "lots"}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->GetInt("replicas"), 5);
}

TEST_F(ConfigTest, ConfigFileFromEnvironmentAndFlagWins) {
  TempFile from_env("replicas: 7\n");
  TempFile from_flag("replicas: 8\n");
  Result<Config> r = Run({}, {{"SLUICE_TEST_CONFIG", from_env.path()}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->GetInt("replicas"), 7);
  EXPECT_EQ(r->ConfigFile(), from_env.path());
  r = Run({"--config", from_flag.path()}, {{"SLUICE_TEST_CONFIG", from_env.path()}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->GetInt("replicas"), 8);
  EXPECT_EQ(r->ConfigFile(), from_flag.path());
}

TEST_F(ConfigTest, MissingConfigFile) {
  EXPECT_EQ(Error({"--config=/nonexistent/sluice.yaml"}),
            "file /nonexistent/sluice.yaml: cannot read: No such file or directory");
}

TEST_F(ConfigTest, UnreadableConfigFile) {
  const std::string dir = testing::TempDir();
  EXPECT_EQ(Error({"--config", dir}), "file " + dir + ": cannot read: Is a directory");
  // A file that cannot be read may hold the required option, so that is not reported too.
  EXPECT_EQ(Error({"--config=/nonexistent.yaml"}, {}, /*add_token=*/false),
            "file /nonexistent.yaml: cannot read: No such file or directory");
  TempFile broken("token: [\n");
  const std::string message = Error({"--config", broken.path()}, {}, /*add_token=*/false);
  EXPECT_EQ(message.find("missing required"), std::string::npos) << message;
  EXPECT_NE(message.find("YAML syntax error"), std::string::npos) << message;
}

TEST_F(ConfigTest, FlagSyntaxes) {
  const Result<Config> r =
      Run({"--listen-address", "0.0.0.0:1", "--replicas=2", "--ratio", "-0", "--max-body=1Gi",
           "--resync-period", "1h30m", "--mode=fast", "--kubeconfig=", "--port", "-5"});
  // "-5" is taken as the value of --port (a value may start with a single dash), then rejected.
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "flag --port: -5 is below the minimum 1");

  const Result<Config> ok =
      Run({"--listen-address", "0.0.0.0:1", "--replicas=2", "--ratio", "0.25", "--max-body=1Gi",
           "--resync-period", "1h30m", "--mode=fast", "--kubeconfig="});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->GetString("listen-address"), "0.0.0.0:1");
  EXPECT_EQ(ok->GetInt("replicas"), 2);
  EXPECT_DOUBLE_EQ(ok->GetDouble("ratio"), 0.25);
  EXPECT_EQ(ok->GetBytes("max-body"), uint64_t{1} << 30);
  EXPECT_EQ(ok->GetDuration("resync-period"), minutes(90));
  EXPECT_EQ(ok->GetString("mode"), "fast");
  EXPECT_EQ(ok->GetString("kubeconfig"), "");
  EXPECT_EQ(ok->Source("kubeconfig"), ValueSource::kFlag);
}

TEST_F(ConfigTest, RepeatedFlagLastWins) {
  const Result<Config> r = Run({"--replicas=2", "--replicas=3"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->GetInt("replicas"), 3);
}

TEST_F(ConfigTest, Booleans) {
  const auto verbose = [&](Args args) {
    const Result<Config> r = Run(std::move(args));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() && r->GetBool("verbose");
  };
  EXPECT_TRUE(verbose({"--verbose"}));
  EXPECT_TRUE(verbose({"--verbose=true"}));
  EXPECT_FALSE(verbose({"--verbose=false"}));
  EXPECT_FALSE(verbose({"--no-verbose"}));
  EXPECT_TRUE(verbose({"--no-verbose", "--verbose"}));
  EXPECT_FALSE(verbose({}));
}

TEST_F(ConfigTest, BooleanFlagDoesNotTakeNextArgument) {
  const Result<Config> r = Run({"--verbose", "false"});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->GetBool("verbose"));
  EXPECT_EQ(r->Args(), Strings{"false"});
}

TEST_F(ConfigTest, BooleanFromEnvAndFile) {
  TempFile file("verbose: yes\nhttp:\n  tls:\n    enabled: false\n");
  Result<Config> r = Run({"--config", file.path()});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->GetBool("verbose"));
  EXPECT_FALSE(r->GetBool("tls-enabled"));
  r = Run({"--config", file.path()}, {{"SLUICE_TEST_VERBOSE", "0"}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->GetBool("verbose"));
}

TEST_F(ConfigTest, BadBooleanFlags) {
  EXPECT_EQ(Error({"--verbose=maybe"}),
            "flag --verbose: \"maybe\" is not a boolean (use true or false)");
  EXPECT_EQ(Error({"--no-verbose=true"}), "flag --no-verbose: takes no value (use --verbose=true)");
  EXPECT_EQ(Error({"--no-replicas"}), "unknown flag --no-replicas (did you mean --replicas?)");
}

TEST_F(ConfigTest, BadValueMessagesNameSourceAndKey) {
  EXPECT_EQ(Error({"--replicas", "abc"}), "flag --replicas: \"abc\" is not an integer");
  EXPECT_EQ(Error({}, {{"SLUICE_TEST_PORT", "70000"}}),
            "env SLUICE_TEST_PORT: 70000 is above the maximum 65535");
  EXPECT_EQ(Error({"--replicas=-1"}), "flag --replicas: -1 is below the minimum 0");
  EXPECT_EQ(Error({"--ratio=1.5"}), "flag --ratio: 1.5 is above the maximum 1");
  EXPECT_EQ(Error({}, {{"SLUICE_TEST_RATIO", "half"}}),
            "env SLUICE_TEST_RATIO: \"half\" is not a number");
  EXPECT_EQ(Error({"--resync-period=5d"}),
            "flag --resync-period: \"5d\" is not a duration: unknown unit \"d\" (use ns, us, ms, "
            "s, m, h)");
  EXPECT_EQ(Error({}, {{"SLUICE_TEST_MAX_BODY", "1.5"}}),
            "env SLUICE_TEST_MAX_BODY: \"1.5\" is not a whole number of bytes");
  EXPECT_EQ(Error({"--mode=fsat"}),
            "flag --mode: \"fsat\" is not one of: fast, safe (did you mean \"fast\"?)");
  EXPECT_EQ(Error({"--mode=turbo"}), "flag --mode: \"turbo\" is not one of: fast, safe");
}

TEST_F(ConfigTest, BadValueInFileNamesFileKeyAndLine) {
  TempFile file("http:\n  listenAddress: \":1\"\nreplicas: 100\nmode: Fast\n");
  const std::string f = "file " + file.path();
  EXPECT_EQ(Error({"--config", file.path()}),
            f + ": key replicas: 100 is above the maximum 64 (line 3)\n" + f +
                ": key mode: \"Fast\" is not one of: fast, safe (did you mean \"fast\"?) (line 4)");
}

TEST_F(ConfigTest, ValuesFromEnvironment) {
  const Result<Config> r = Run({}, {{"SLUICE_TEST_LISTEN_ADDRESS", ":9"},
                                    {"SLUICE_TEST_RESYNC_PERIOD", "30"},
                                    {"SLUICE_TEST_MAX_BODY", "512k"},
                                    {"SLUICE_TEST_PEERS", "a:1, b:2"},
                                    {"KUBECONFIG", "/kube"},
                                    {"SLUICE_TEST_KUBECONFIG", "/ignored"}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->GetString("listen-address"), ":9");
  EXPECT_EQ(r->Source("listen-address"), ValueSource::kEnv);
  EXPECT_EQ(r->GetDuration("resync-period"), seconds(30));
  EXPECT_EQ(r->GetBytes("max-body"), 512'000u);
  EXPECT_EQ(r->GetStringList("peers"), (Strings{"a:1", "b:2"}));
  EXPECT_EQ(r->GetString("kubeconfig"), "/kube");  // Overridden name.
}

TEST_F(ConfigTest, EmptyEnvironmentVariableIsUnset) {
  const Result<Config> r = Run({}, {{"SLUICE_TEST_REPLICAS", ""}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->Source("replicas"), ValueSource::kDefault);
}

TEST_F(ConfigTest, NestedKeysAndAllTypesFromFile) {
  TempFile file(R"(
http:
  listenAddress: "[::]:443"
  tls:
    enabled: false
replicas: 12
port: 9090
ratio: 0.125
verbose: true
resyncPeriod: 1m30s
maxBody: 100M
peers:
  - "a,b"
  - c
mode: fast
kubeconfig: ~
)");
  const Result<Config> r = Run({"--config", file.path()});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->GetString("listen-address"), "[::]:443");
  EXPECT_EQ(r->Source("listen-address"), ValueSource::kFile);
  EXPECT_FALSE(r->GetBool("tls-enabled"));
  EXPECT_EQ(r->GetInt("replicas"), 12);
  EXPECT_EQ(r->GetInt("port"), 9090);
  EXPECT_DOUBLE_EQ(r->GetDouble("ratio"), 0.125);
  EXPECT_TRUE(r->GetBool("verbose"));
  EXPECT_EQ(r->GetDuration("resync-period"), seconds(90));
  EXPECT_EQ(r->GetBytes("max-body"), 100'000'000u);
  // YAML list items are taken whole, not comma-split.
  EXPECT_EQ(r->GetStringList("peers"), (Strings{"a,b", "c"}));
  EXPECT_EQ(r->GetString("mode"), "fast");
  // Null is "not set".
  EXPECT_EQ(r->Source("kubeconfig"), ValueSource::kDefault);
}

TEST_F(ConfigTest, EmptyFileSetsNothing) {
  TempFile file("");
  const Result<Config> r = Run({"--config", file.path()});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->Source("replicas"), ValueSource::kDefault);
}

TEST_F(ConfigTest, ListsFromFlagsAccumulate) {
  const Result<Config> r = Run({"--peers", "a,b", "--peers=c"}, {{"SLUICE_TEST_PEERS", "x"}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->GetStringList("peers"), (Strings{"a", "b", "c"}));
  const Result<Config> empty = Run({"--peers="}, {{"SLUICE_TEST_PEERS", "x"}});
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->GetStringList("peers").empty());
  EXPECT_EQ(empty->Source("peers"), ValueSource::kFlag);
}

TEST_F(ConfigTest, FileShapeErrors) {
  TempFile file(R"(http:
  listenAddress:
    nested: 1
  tls: true
peers: a,b
replicas: [1, 2]
)");
  const std::string f = "file " + file.path();
  EXPECT_EQ(Error({"--config", file.path()}),
            f + ": key http.listenAddress: expected a string, got a map (line 3)\n" + f +
                ": key http.tls: expected a map, got a scalar (line 4)\n" + f +
                ": key peers: expected a list, got a scalar (line 5)\n" + f +
                ": key replicas: expected an integer, got a list (line 6)");
}

TEST_F(ConfigTest, UnknownFileKeysWithSuggestions) {
  TempFile file("http:\n  listenAdress: x\nreplcias: 2\ncompletelyUnrelated: 1\n");
  const std::string f = "file " + file.path();
  EXPECT_EQ(
      Error({"--config", file.path()}),
      f + ": unknown key \"http.listenAdress\" (did you mean \"http.listenAddress\"?) (line 2)\n" +
          f + ": unknown key \"replcias\" (did you mean \"replicas\"?) (line 3)\n" + f +
          ": unknown key \"completelyUnrelated\" (line 4)");
}

TEST_F(ConfigTest, OtherFileErrors) {
  TempFile list("- a\n- b\n");
  EXPECT_EQ(
      Error({"--config", list.path()}),
      "file " + list.path() + ": expected a map of keys at the top level, got a list (line 1)");
  TempFile dup("replicas: 1\nreplicas: 2\n");
  EXPECT_EQ(Error({"--config", dup.path()}),
            "file " + dup.path() + ": key replicas appears more than once (line 2)");
  TempFile docs("replicas: 1\n---\nreplicas: 2\n");
  EXPECT_EQ(Error({"--config", docs.path()}),
            "file " + docs.path() + ": expected one YAML document, found 2");
}

TEST_F(ConfigTest, YamlSyntaxErrorHasLineAndColumn) {
  TempFile file("replicas: 3\nhttp:\n  listenAddress: [a, b\nport: 1\n");
  const std::string message = Error({"--config", file.path()});
  EXPECT_EQ(message.rfind("file " + file.path() + ": YAML syntax error at line ", 0), 0u)
      << message;
  TempFile tab("replicas: 3\n\tport: 1\n");
  const std::string tab_message = Error({"--config", tab.path()});
  EXPECT_NE(tab_message.find("YAML syntax error at line 2, column"), std::string::npos)
      << tab_message;
}

TEST_F(ConfigTest, UnknownFlagsWithSuggestions) {
  EXPECT_EQ(Error({"--replcias=3"}), "unknown flag --replcias (did you mean --replicas?)");
  EXPECT_EQ(Error({"--listen_address", "x"}),
            "unknown flag --listen_address (did you mean --listen-address?)");
  EXPECT_EQ(Error({"--no-verbos"}), "unknown flag --no-verbos (did you mean --no-verbose?)");
  EXPECT_EQ(Error({"-replicas=3"}), "unknown flag -replicas=3 (did you mean --replicas?)");
  EXPECT_EQ(Error({"--zzz"}), "unknown flag --zzz");
  EXPECT_EQ(Error({"-v"}), "unknown flag -v");
}

TEST_F(ConfigTest, MissingFlagValue) {
  EXPECT_EQ(Error({"--replicas"}), "flag --replicas: missing value");
  EXPECT_EQ(Error({"--listen-address", "--replicas=1"}), "flag --listen-address: missing value");
  EXPECT_EQ(Error({"--config"}), "flag --config: missing value");
  const Result<Config> r = Run({"--listen-address=--weird"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->GetString("listen-address"), "--weird");
}

TEST_F(ConfigTest, MissingRequiredNamesAllThreeWays) {
  EXPECT_EQ(Error({}, {}, /*add_token=*/false),
            "missing required option --token (set flag --token, env SLUICE_TEST_TOKEN or file key "
            "token)");
  TempFile file("token: abc\n");
  const Result<Config> r = Run({"--config", file.path()}, {}, /*add_token=*/false);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->GetString("token"), "abc");
}

TEST_F(ConfigTest, AllErrorsAreCollected) {
  TempFile file("replicas: 2\nhttp:\n  listenAdress: x\n");
  const std::string message =
      Error({"--bogus", "--port=0", "--config", file.path()}, {{"SLUICE_TEST_RATIO", "2"}},
            /*add_token=*/false);
  const std::string f = "file " + file.path();
  EXPECT_EQ(message, "unknown flag --bogus\n" + f +
                         ": unknown key \"http.listenAdress\" (did you mean "
                         "\"http.listenAddress\"?) (line 3)\n"
                         "flag --port: 0 is below the minimum 1\n"
                         "env SLUICE_TEST_RATIO: 2 is above the maximum 1\n"
                         "missing required option --token (set flag --token, env "
                         "SLUICE_TEST_TOKEN or file key token)");
}

TEST_F(ConfigTest, PositionalArgumentsAndDoubleDash) {
  const Result<Config> r = Run({"run", "--replicas", "2", "a.yaml", "-", "--", "--verbose", "b"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->Args(), (Strings{"run", "a.yaml", "-", "--verbose", "b"}));
  EXPECT_EQ(r->GetInt("replicas"), 2);
  EXPECT_FALSE(r->GetBool("verbose"));
}

TEST_F(ConfigTest, StopAtFirstPositional) {
  ParseOptions options;
  options.stop_at_first_positional = true;
  const Result<Config> r =
      Parse(spec_, Args{"--token=t", "--verbose", "exec", "--replicas=2", "x"}, {}, options);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->GetBool("verbose"));
  EXPECT_EQ(r->Source("replicas"), ValueSource::kDefault);
  EXPECT_EQ(r->Args(), (Strings{"exec", "--replicas=2", "x"}));
}

TEST_F(ConfigTest, ArgcArgvSkipsProgramName) {
  const char* argv[] = {"sluice-test", "--token", "t", "--replicas=9", "pos"};
  const Result<Config> r = Parse(spec_, 5, argv, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->GetInt("replicas"), 9);
  EXPECT_EQ(r->Args(), Strings{"pos"});
}

TEST_F(ConfigTest, HelpAndVersionStopParsing) {
  for (const char* flag : {"--help", "-h"}) {
    // Neither the unknown flag nor the missing required option is an error when help is asked.
    const Result<Config> r = Run({"--bogus", flag, "--config=/nonexistent"}, {}, false);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(r->HelpRequested());
    EXPECT_FALSE(r->VersionRequested());
    EXPECT_EQ(r->GetInt("replicas"), 1);
  }
  const Result<Config> v = Run({"--version"}, {}, false);
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->VersionRequested());
  EXPECT_FALSE(v->HelpRequested());
  // After "--" it is an argument.
  const Result<Config> a = Run({"--", "--help"});
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->HelpRequested());
  EXPECT_EQ(Error({"--help=yes"}), "flag --help: takes no value");
}

TEST_F(ConfigTest, HelpTextListsEveryOption) {
  const std::string help = HelpText(spec_, "sluice-test",
                                    "Runs the test component. It exists only so that this "
                                    "summary is long enough to need wrapping at one hundred "
                                    "columns, which it now surely does.");
  for (const Option& option : spec_.options()) {
    const std::string dashes = option.type() == OptionType::kBool ? "--[no-]" : "--";
    EXPECT_NE(help.find("\n  " + dashes + option.flag() + " "), std::string::npos) << option.flag();
    EXPECT_NE(help.find(option.env()), std::string::npos) << option.env();
    EXPECT_NE(help.find("File key: " + option.yaml_key() + "."), std::string::npos)
        << option.yaml_key();
    EXPECT_NE(help.find(option.help()), std::string::npos) << option.help();
  }
  EXPECT_EQ(help.rfind("Usage: sluice-test [flags] [args...]\n", 0), 0u);
  EXPECT_NE(help.find("--[no-]verbose bool\n"), std::string::npos);
  EXPECT_NE(help.find("--replicas int, 0 to 64\n"), std::string::npos);
  EXPECT_NE(help.find("--mode fast|safe\n"), std::string::npos);
  EXPECT_NE(help.find("--peers list, comma-separated\n"), std::string::npos);
  EXPECT_NE(help.find("Default: 5m."), std::string::npos);
  EXPECT_NE(help.find("Default: 64Mi."), std::string::npos);
  EXPECT_NE(help.find("Default: \":8080\"."), std::string::npos);
  EXPECT_NE(help.find("Required."), std::string::npos);
  EXPECT_NE(help.find("--config FILE"), std::string::npos);
  EXPECT_NE(help.find("SLUICE_TEST_CONFIG"), std::string::npos);
  EXPECT_NE(help.find("-h, --help"), std::string::npos);
  EXPECT_NE(help.find("--version"), std::string::npos);
  size_t start = 0;
  while (start < help.size()) {
    const size_t end = help.find('\n', start);
    ASSERT_NE(end, std::string::npos);
    EXPECT_LE(end - start, 100u) << help.substr(start, end - start);
    EXPECT_TRUE(end == start || help[end - 1] != ' ') << "trailing space";
    start = end + 1;
  }
}

TEST(ConfigFileTest, ParsesTextIntoRawValues) {
  const Spec spec = TestSpec();
  const ConfigFileContents contents =
      ParseConfigYaml(spec, "replicas: 3\npeers: [a, b]\n", "inline.yaml");
  EXPECT_TRUE(contents.errors.empty());
  EXPECT_FALSE(contents.unreadable);
  const RawValue& replicas = contents.values.at("replicas");
  EXPECT_EQ(replicas.texts, Strings{"3"});
  EXPECT_EQ(replicas.origin, "file inline.yaml: key replicas");
  EXPECT_EQ(replicas.source, ValueSource::kFile);
  EXPECT_EQ(replicas.line, 1);
  const RawValue& peers = contents.values.at("peers");
  EXPECT_EQ(peers.texts, (Strings{"a", "b"}));
  EXPECT_FALSE(peers.split_commas);
  EXPECT_EQ(peers.line, 2);
}

TEST(WrapTest, WrapsAtWidthWithIndent) {
  EXPECT_EQ(Wrap("aaa bbb ccc", 2, 9), "  aaa bbb\n  ccc\n");
  EXPECT_EQ(Wrap("averyveryverylongword x", 2, 8), "  averyveryverylongword\n  x\n");
  EXPECT_EQ(Wrap("one\ntwo", 1, 80), " one\n two\n");
}

TEST(SpecTest, DerivesNames) {
  EXPECT_EQ(EnvNameForFlag("SLUICE_DATAFLOW", "listen-address"), "SLUICE_DATAFLOW_LISTEN_ADDRESS");
  EXPECT_EQ(EnvNameForFlag("", "port"), "PORT");
  EXPECT_EQ(YamlKeyForFlag("listen-address"), "listenAddress");
  EXPECT_EQ(YamlKeyForFlag("max-body-bytes"), "maxBodyBytes");
  EXPECT_EQ(YamlKeyForFlag("port"), "port");
  const Spec spec = TestSpec();
  EXPECT_EQ(spec.config_env(), "SLUICE_TEST_CONFIG");
  ASSERT_NE(spec.Find("listen-address"), nullptr);
  EXPECT_EQ(spec.Find("listen-address")->env(), "SLUICE_TEST_LISTEN_ADDRESS");
  EXPECT_EQ(spec.Find("replicas")->yaml_key(), "replicas");
  EXPECT_EQ(spec.FindByYamlKey("http.tls.enabled")->flag(), "tls-enabled");
  EXPECT_TRUE(spec.IsYamlSection("http"));
  EXPECT_TRUE(spec.IsYamlSection("http.tls"));
  EXPECT_FALSE(spec.IsYamlSection("http.listenAddress"));
  EXPECT_EQ(spec.Find("nope"), nullptr);
}

TEST(SpecDeathTest, DeclarationMistakesAreChecked) {
  EXPECT_DEATH(Spec("X").Add(Option::Int("a", 1, "")).Add(Option::Int("a", 1, "")), "CHECK");
  EXPECT_DEATH(Spec("X").Add(Option::Int("help", 1, "")), "CHECK");
  EXPECT_DEATH(Spec("X").Add(Option::Int("Bad_Name", 1, "")), "CHECK");
  EXPECT_DEATH(Spec("X").Add(Option::Int("a", 5, "").Max(4)), "CHECK");
  EXPECT_DEATH(Spec("X").Add(Option::Enum("m", {"a"}, "b", "")), "CHECK");
  EXPECT_DEATH(Option::String("s", "", "").Min(1), "CHECK");
  EXPECT_DEATH(Spec("X")
                   .Add(Option::Int("a", 1, "").YamlKey("x"))
                   .Add(Option::Int("b", 1, "").YamlKey("x.y")),
               "CHECK");
  EXPECT_DEATH(Spec("X").Add(Option::Bool("x", false, "")).Add(Option::Int("no-x", 1, "")),
               "CHECK");
}

TEST(ConfigDeathTest, UndeclaredKeyOrWrongTypeIsAProgrammingError) {
  Config config;
  config.Set("replicas", OptionType::kInt, Value(int64_t{3}), ValueSource::kFlag);
  EXPECT_EQ(config.GetInt("replicas"), 3);
  EXPECT_DEATH((void)config.GetInt("replica"), "undeclared option \"replica\"");
  EXPECT_DEATH((void)config.GetString("replicas"), "CHECK");
  EXPECT_DEATH((void)config.GetBool("replicas"), "has type int, not bool");
}

TEST(SuggestTest, EditDistance) {
  EXPECT_EQ(EditDistance("", ""), 0u);
  EXPECT_EQ(EditDistance("abc", ""), 3u);
  EXPECT_EQ(EditDistance("replicas", "replcias"), 1u);  // Transposition.
  EXPECT_EQ(EditDistance("listenAddress", "listenAdress"), 1u);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(EditDistance("Port", "port"), 0u);
  EXPECT_EQ(ClosestMatch("prot", {"port", "host"}), "port");
  EXPECT_EQ(ClosestMatch("xyz", {"port", "host"}), std::nullopt);
  EXPECT_EQ(ClosestMatch("a", {}), std::nullopt);
}

TEST(EnvironmentTest, ReadsTheProcessEnvironment) {
  ASSERT_EQ(setenv("SLUICE_CONFIG_TEST_VAR", "a=b", 1), 0);
  const Environment env = EnvironmentFromProcess();
  const auto it = env.find("SLUICE_CONFIG_TEST_VAR");
  ASSERT_NE(it, env.end());
  EXPECT_EQ(it->second, "a=b");
  unsetenv("SLUICE_CONFIG_TEST_VAR");
}

}  // namespace
}  // namespace sluice::config
