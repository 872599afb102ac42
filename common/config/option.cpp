#include "common/config/option.h"

#include <utility>

#include "common/check.h"

namespace sluice::config {

std::string_view TypeName(OptionType type) {
  switch (type) {
    case OptionType::kString:
      return "string";
    case OptionType::kInt:
      return "int";
    case OptionType::kDouble:
      return "float";
    case OptionType::kBool:
      return "bool";
    case OptionType::kDuration:
      return "duration";
    case OptionType::kBytes:
      return "bytes";
    case OptionType::kStringList:
      return "list";
    case OptionType::kEnum:
      return "enum";
  }
  return "?";
}

Option::Option(std::string flag, OptionType type, Value default_value, std::string help)
    : flag_(std::move(flag)),
      type_(type),
      default_(std::move(default_value)),
      help_(std::move(help)) {}

Option Option::String(std::string flag, std::string default_value, std::string help) {
  return Option(std::move(flag), OptionType::kString, std::move(default_value), std::move(help));
}

Option Option::Int(std::string flag, int64_t default_value, std::string help) {
  return Option(std::move(flag), OptionType::kInt, default_value, std::move(help));
}

Option Option::Double(std::string flag, double default_value, std::string help) {
  return Option(std::move(flag), OptionType::kDouble, default_value, std::move(help));
}

Option Option::Bool(std::string flag, bool default_value, std::string help) {
  return Option(std::move(flag), OptionType::kBool, default_value, std::move(help));
}

Option Option::Duration(std::string flag, std::chrono::nanoseconds default_value,
                        std::string help) {
  return Option(std::move(flag), OptionType::kDuration, default_value, std::move(help));
}

Option Option::Bytes(std::string flag, uint64_t default_value, std::string help) {
  return Option(std::move(flag), OptionType::kBytes, default_value, std::move(help));
}

Option Option::StringList(std::string flag, std::vector<std::string> default_value,
                          std::string help) {
  return Option(std::move(flag), OptionType::kStringList, std::move(default_value),
                std::move(help));
}

Option Option::Enum(std::string flag, std::vector<std::string> allowed, std::string default_value,
                    std::string help) {
  Option option(std::move(flag), OptionType::kEnum, std::move(default_value), std::move(help));
  option.allowed_ = std::move(allowed);
  return option;
}

Option& Option::Env(std::string name) {
  env_ = std::move(name);
  return *this;
}

Option& Option::YamlKey(std::string path) {
  yaml_key_ = std::move(path);
  return *this;
}

Option& Option::Required() {
  required_ = true;
  return *this;
}

Option& Option::Min(int64_t v) {
  if (type_ == OptionType::kDouble) return Min(static_cast<double>(v));
  SLUICE_CHECK(type_ == OptionType::kInt);
  min_int_ = v;
  return *this;
}

Option& Option::Min(double v) {
  SLUICE_CHECK(type_ == OptionType::kDouble);
  min_double_ = v;
  return *this;
}

Option& Option::Max(int64_t v) {
  if (type_ == OptionType::kDouble) return Max(static_cast<double>(v));
  SLUICE_CHECK(type_ == OptionType::kInt);
  max_int_ = v;
  return *this;
}

Option& Option::Max(double v) {
  SLUICE_CHECK(type_ == OptionType::kDouble);
  max_double_ = v;
  return *this;
}

}  // namespace sluice::config
