// Option: the declaration of one configuration setting of a Sluice binary.
//
// An option has a flag name (the key used everywhere in code: "listen-address"), a type, a typed
// default, help text and optionally: an environment variable name and a YAML key path (both
// derived by Spec::Add when not given), bounds (int, double), allowed values (enum) and whether it
// is required. Options are built with the factory for their type and chained setters:
//
//   Option::Int("replicas", 1, "Number of workers.").Min(0).Max(64)
//   Option::Duration("resync-period", std::chrono::minutes(5), "Full resync interval.")
//   Option::String("kubeconfig", "", "Path to a kubeconfig.").Env("KUBECONFIG")
//
// Mistakes in a declaration (a bound on a string, a default outside the allowed values) are
// programming errors: SLUICE_CHECK, here or in Spec::Add.
//
// Thread safety: a value; immutable once added to a Spec.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace sluice::config {

enum class OptionType : uint8_t {
  kString,
  kInt,  // int64_t
  kDouble,
  kBool,
  kDuration,  // std::chrono::nanoseconds
  kBytes,     // uint64_t, a number of bytes
  kStringList,
  kEnum,  // std::string, one of the allowed values
};

// "string", "int", "float", "bool", "duration", "bytes", "list", "enum".
std::string_view TypeName(OptionType type);

// A typed option value. kString and kEnum hold std::string.
using Value = std::variant<std::string, int64_t, double, bool, std::chrono::nanoseconds, uint64_t,
                           std::vector<std::string>>;

class Option {
 public:
  static Option String(std::string flag, std::string default_value, std::string help);
  static Option Int(std::string flag, int64_t default_value, std::string help);
  static Option Double(std::string flag, double default_value, std::string help);
  static Option Bool(std::string flag, bool default_value, std::string help);
  static Option Duration(std::string flag, std::chrono::nanoseconds default_value,
                         std::string help);
  static Option Bytes(std::string flag, uint64_t default_value, std::string help);
  static Option StringList(std::string flag, std::vector<std::string> default_value,
                           std::string help);
  static Option Enum(std::string flag, std::vector<std::string> allowed, std::string default_value,
                     std::string help);

  // Overrides the environment variable (default <PREFIX>_<FLAG_IN_UPPER_SNAKE_CASE>).
  Option& Env(std::string name);
  // Overrides the YAML key path (default: the flag in lowerCamelCase). Dots nest: "http.port".
  Option& YamlKey(std::string path);
  // The option must be set by a flag, the environment or the file; the default is not used.
  Option& Required();
  // Inclusive bounds, for kInt and kDouble options only. The int overloads resolve `Min(0)`.
  Option& Min(int v) { return Min(static_cast<int64_t>(v)); }
  Option& Min(int64_t v);
  Option& Min(double v);
  Option& Max(int v) { return Max(static_cast<int64_t>(v)); }
  Option& Max(int64_t v);
  Option& Max(double v);

  const std::string& flag() const { return flag_; }
  OptionType type() const { return type_; }
  const std::string& help() const { return help_; }
  const Value& default_value() const { return default_; }
  bool required() const { return required_; }
  // Empty until Spec::Add derives it, unless set with Env / YamlKey.
  const std::string& env() const { return env_; }
  const std::string& yaml_key() const { return yaml_key_; }
  const std::optional<int64_t>& min_int() const { return min_int_; }
  const std::optional<int64_t>& max_int() const { return max_int_; }
  const std::optional<double>& min_double() const { return min_double_; }
  const std::optional<double>& max_double() const { return max_double_; }
  // The allowed values of a kEnum option, in declaration order.
  const std::vector<std::string>& allowed() const { return allowed_; }

 private:
  Option(std::string flag, OptionType type, Value default_value, std::string help);

  std::string flag_;
  OptionType type_;
  Value default_;
  std::string help_;
  bool required_ = false;
  std::string env_;
  std::string yaml_key_;
  std::optional<int64_t> min_int_;
  std::optional<int64_t> max_int_;
  std::optional<double> min_double_;
  std::optional<double> max_double_;
  std::vector<std::string> allowed_;
};

}  // namespace sluice::config
