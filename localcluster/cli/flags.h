// Flags: the flag parser of the `sluice` subcommands, declared per subcommand as data.
//
// Why not common/config: that parser reserves --config for its own YAML settings file, reads
// SLUICE_* environment variables and has no single-dash short flags, while `sluice up --config
// FILE` names the cluster description and `sluice logs -f` is what people type. The rules here
// follow common/config otherwise: `--name value` or `--name=value`; booleans are `--name`,
// `--name=false` or `--no-name` and never take the next argument; a repeated flag keeps the last
// value; `-h`/`--help` anywhere before "--" asks for help; "--" ends flags. Misspelled flags get
// a did-you-mean from common/config/suggest.h.
//
// Errors are InvalidArgument Statuses whose message names the flag as written:
//   unknown flag --prot (did you mean --port?)
//   flag --port: "abc" is not an integer
//   flag --timeout: 0 is below the minimum 1
//   flag --state-dir: missing value
//
// Thread safety: pure functions and values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace sluice::cli {

enum class FlagType { kString, kInt, kBool };

struct FlagSpec {
  std::string name;        // Without dashes: "state-dir".
  char short_name = '\0';  // 'f' for -f; '\0' for none.
  FlagType type = FlagType::kString;
  std::string value_name;     // Shown in help: "DIR", "N", "SECONDS".
  std::string default_value;  // As text; "" for strings means "unset" (the help says why).
  std::string help;
  std::optional<int64_t> min;  // kInt only, inclusive.
  std::optional<int64_t> max;
};

struct CommandSpec {
  std::string usage;    // "sluice up [flags]".
  std::string summary;  // One paragraph, wrapped by the help renderer.
  std::vector<FlagSpec> flags;
};

// The flags and positional arguments of one invocation, every declared flag with a value.
class ParsedFlags {
 public:
  const std::string& GetString(std::string_view name) const;
  int64_t GetInt(std::string_view name) const;
  bool GetBool(std::string_view name) const;
  // Whether the flag was given on the command line rather than defaulted.
  bool IsSet(std::string_view name) const;
  const std::vector<std::string>& positional() const { return positional_; }
  bool help() const { return help_; }

 private:
  friend Result<ParsedFlags> ParseFlags(const CommandSpec& spec,
                                        const std::vector<std::string>& args);
  struct Value {
    FlagType type;
    std::string text;
    int64_t number = 0;
    bool set = false;
  };
  const Value& Lookup(std::string_view name, FlagType type) const;

  std::map<std::string, Value, std::less<>> values_;
  std::vector<std::string> positional_;
  bool help_ = false;
};

// Parses `args` (the words after the subcommand). With -h/--help the result has help() set and
// nothing else is checked. Every problem is reported, one per line of the message.
Result<ParsedFlags> ParseFlags(const CommandSpec& spec, const std::vector<std::string>& args);

// The --help text: usage, summary, then each flag with its value name, default and help, wrapped
// to 100 columns. Ends with a newline.
std::string CommandHelp(const CommandSpec& spec);

}  // namespace sluice::cli
