// Parse: merges flags, environment and the YAML file into a typed Config, per a Spec.
//
// Precedence per option: flag > environment variable > file > default. Only the winning text is
// parsed (see RawValue). The file is named by --config FILE or <PREFIX>_CONFIG.
//
// Flags: `--name=value` or `--name value`; a value that starts with "--" must use the '=' form.
// Booleans: `--name`, `--name=false`, `--no-name` (they never take the next argument). Repeating
// a flag keeps the last value, except lists, where repeats add items: `--peer a --peer b,c`.
// Flags and positional arguments may be interleaved; "--" ends flags. `-h`/`--help` and
// `--version` anywhere before "--" stop parsing with Config::HelpRequested/VersionRequested set.
// An environment variable set to the empty string counts as unset.
//
// Every problem is collected; the error is one InvalidArgument Status whose message lists them one
// per line, each naming its source and key:
//   flag --replicas: "abc" is not an integer
//   env SLUICE_X_PORT: 70000 is above the maximum 65535
//   file config.yaml: key http.listenAddress: expected a string, got a map (line 3)
//   file config.yaml: unknown key "http.listenAdress" (did you mean "http.listenAddress"?) (line 2)
//   unknown flag --replcias (did you mean --replicas?)
//   missing required option --token (set flag --token, env SLUICE_X_TOKEN or file key token)
// (Missing required options are not reported when the config file could not be read at all.)
//
// Thread safety: pure apart from reading the config file.
#pragma once

#include <string>
#include <vector>

#include "common/config/config.h"
#include "common/config/environment.h"
#include "common/config/spec.h"
#include "common/status.h"

namespace sluice::config {

struct ParseOptions {
  // Stop reading flags at the first positional argument, which with everything after it goes to
  // Args(): for a command dispatcher whose subcommands parse their own flags.
  bool stop_at_first_positional = false;
};

// `args` excludes the program name.
Result<Config> Parse(const Spec& spec, const std::vector<std::string>& args, const Environment& env,
                     const ParseOptions& options = {});
// From main's arguments; argv[0] (the program name) is skipped.
Result<Config> Parse(const Spec& spec, int argc, const char* const* argv, const Environment& env,
                     const ParseOptions& options = {});

}  // namespace sluice::config
