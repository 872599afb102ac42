// Config: the merged, typed configuration of a Sluice binary, as produced by Parse.
//
// Every declared option has a value (from a flag, an environment variable, the YAML file or its
// default) and Source() says which. Keys are the options' flag names without dashes:
// config.GetInt("replicas"). Asking for an undeclared key, or with the getter of another type, is
// a programming error (SLUICE_CHECK), since the key set is fixed by the binary's Spec.
//
// When HelpRequested() or VersionRequested() is true, Parse stopped early: values are the defaults
// and nothing else was read or checked. main prints help or the version and exits 0.
//
// Thread safety: a value; const methods may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/config/option.h"

namespace sluice::config {

// Where a value came from, lowest precedence first.
enum class ValueSource : uint8_t { kDefault, kFile, kEnv, kFlag };

// "default", "file", "env", "flag".
std::string_view SourceName(ValueSource source);

class Config {
 public:
  // kString and kEnum options.
  const std::string& GetString(std::string_view key) const;
  int64_t GetInt(std::string_view key) const;
  double GetDouble(std::string_view key) const;
  bool GetBool(std::string_view key) const;
  std::chrono::nanoseconds GetDuration(std::string_view key) const;
  // A number of bytes.
  uint64_t GetBytes(std::string_view key) const;
  const std::vector<std::string>& GetStringList(std::string_view key) const;

  ValueSource Source(std::string_view key) const;
  // Whether the value was given (by flag, env or file) rather than defaulted.
  bool IsSet(std::string_view key) const { return Source(key) != ValueSource::kDefault; }

  // Positional arguments, in order: non-flag arguments and everything after "--".
  const std::vector<std::string>& Args() const { return args_; }
  bool HelpRequested() const { return help_requested_; }
  bool VersionRequested() const { return version_requested_; }
  // The YAML file that was read, from --config or <PREFIX>_CONFIG; empty when none.
  const std::string& ConfigFile() const { return config_file_; }

  // Construction, by Parse; tests of components that take a Config may also build one directly.
  // The value must hold the alternative that `type` uses (see Value).
  void Set(std::string key, OptionType type, Value value, ValueSource source);
  void SetArgs(std::vector<std::string> args) { args_ = std::move(args); }
  void SetHelpRequested(bool v) { help_requested_ = v; }
  void SetVersionRequested(bool v) { version_requested_ = v; }
  void SetConfigFile(std::string path) { config_file_ = std::move(path); }

 private:
  struct Entry {
    OptionType type;
    Value value;
    ValueSource source;
  };
  const Entry& Lookup(std::string_view key) const;
  const Entry& LookupTyped(std::string_view key, OptionType type) const;

  std::map<std::string, Entry, std::less<>> entries_;
  std::vector<std::string> args_;
  bool help_requested_ = false;
  bool version_requested_ = false;
  std::string config_file_;
};

}  // namespace sluice::config
