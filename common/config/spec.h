// Spec: the full set of options a Sluice binary accepts, with the names they go by.
//
// A binary declares its Spec once in main (or in a function main calls) and hands it to Parse and
// HelpText. The Spec fills in the derived names of each option as it is added:
//   environment variable  <env_prefix>_<FLAG_IN_UPPER_SNAKE_CASE>: "SLUICE_DATAFLOW_LISTEN_ADDRESS"
//   YAML key path          the flag in lowerCamelCase: "listenAddress"
// and reserves --help/-h, --version and --config (whose variable is <env_prefix>_CONFIG).
// Declaration mistakes (duplicate names, reserved names, a default outside its bounds, a YAML key
// that is both a value and a section) are programming errors and fail SLUICE_CHECK in Add.
//
// Thread safety: build on one thread; afterwards const methods may be called from any thread.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/config/option.h"

namespace sluice::config {

class Spec {
 public:
  // `env_prefix` such as "SLUICE_DATAFLOW"; empty means derived variables have no prefix.
  explicit Spec(std::string env_prefix);

  Spec& Add(Option option);

  // Options in declaration order, with env() and yaml_key() filled in.
  const std::vector<Option>& options() const { return options_; }
  // The option with this flag name (no dashes), or nullptr.
  const Option* Find(std::string_view flag) const;
  // The option at this YAML key path ("http.port"), or nullptr.
  const Option* FindByYamlKey(std::string_view path) const;
  // Whether the path is a section holding declared keys: "http" when "http.port" is declared.
  bool IsYamlSection(std::string_view path) const;

  const std::string& env_prefix() const { return env_prefix_; }
  // The variable naming the config file, like --config: "<env_prefix>_CONFIG".
  const std::string& config_env() const { return config_env_; }

 private:
  std::string env_prefix_;
  std::string config_env_;
  std::vector<Option> options_;
  std::map<std::string, size_t, std::less<>> by_flag_;
  std::map<std::string, size_t, std::less<>> by_yaml_key_;
  std::set<std::string, std::less<>> env_names_;
  std::set<std::string, std::less<>> yaml_sections_;
};

// "SLUICE_DATAFLOW", "listen-address" -> "SLUICE_DATAFLOW_LISTEN_ADDRESS".
std::string EnvNameForFlag(std::string_view env_prefix, std::string_view flag);
// "listen-address" -> "listenAddress".
std::string YamlKeyForFlag(std::string_view flag);

}  // namespace sluice::config
