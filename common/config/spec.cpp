#include "common/config/spec.h"

#include <algorithm>
#include <utility>

#include "common/check.h"

namespace sluice::config {
namespace {

bool IsValidFlagName(std::string_view flag) {
  if (flag.empty() || flag.front() == '-' || flag.back() == '-') return false;
  return std::all_of(flag.begin(), flag.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
}

bool IsValidYamlPath(std::string_view path) {
  if (path.empty() || path.front() == '.' || path.back() == '.') return false;
  return path.find("..") == std::string_view::npos;
}

bool IsReservedFlag(std::string_view flag) {
  return flag == "help" || flag == "h" || flag == "version" || flag == "config";
}

}  // namespace

std::string EnvNameForFlag(std::string_view env_prefix, std::string_view flag) {
  std::string name(env_prefix);
  if (!name.empty()) name += '_';
  for (char c : flag) {
    if (c == '-') {
      name += '_';
    } else if (c >= 'a' && c <= 'z') {
      name += static_cast<char>(c - 'a' + 'A');
    } else {
      name += c;
    }
  }
  return name;
}

std::string YamlKeyForFlag(std::string_view flag) {
  std::string key;
  bool upper_next = false;
  for (char c : flag) {
    if (c == '-') {
      upper_next = true;
    } else if (upper_next && c >= 'a' && c <= 'z') {
      key += static_cast<char>(c - 'a' + 'A');
      upper_next = false;
    } else {
      key += c;
      upper_next = false;
    }
  }
  return key;
}

Spec::Spec(std::string env_prefix)
    : env_prefix_(std::move(env_prefix)), config_env_(EnvNameForFlag(env_prefix_, "config")) {}

Spec& Spec::Add(Option option) {
  const std::string& flag = option.flag();
  SLUICE_CHECK(IsValidFlagName(flag));  // Lower-case words joined by '-': "listen-address".
  SLUICE_CHECK(!IsReservedFlag(flag));
  SLUICE_CHECK(by_flag_.find(flag) == by_flag_.end());
  // --no-<flag> negates a bool, so "no-x" and a bool "x" cannot both exist.
  if (option.type() == OptionType::kBool) SLUICE_CHECK(Find("no-" + flag) == nullptr);
  if (flag.rfind("no-", 0) == 0) {
    const Option* negated = Find(flag.substr(3));
    SLUICE_CHECK(negated == nullptr || negated->type() != OptionType::kBool);
  }

  if (option.env().empty()) option.Env(EnvNameForFlag(env_prefix_, flag));
  SLUICE_CHECK(option.env() != config_env_);
  SLUICE_CHECK(env_names_.find(option.env()) == env_names_.end());

  if (option.yaml_key().empty()) option.YamlKey(YamlKeyForFlag(flag));
  const std::string& key = option.yaml_key();
  SLUICE_CHECK(IsValidYamlPath(key));
  SLUICE_CHECK(by_yaml_key_.find(key) == by_yaml_key_.end());
  // A key cannot hold both a value and nested keys.
  SLUICE_CHECK(yaml_sections_.find(key) == yaml_sections_.end());
  std::vector<std::string> sections;
  for (size_t dot = key.find('.'); dot != std::string::npos; dot = key.find('.', dot + 1)) {
    sections.push_back(key.substr(0, dot));
    SLUICE_CHECK(by_yaml_key_.find(sections.back()) == by_yaml_key_.end());
  }

  const bool has_default = !option.required();
  switch (option.type()) {
    case OptionType::kInt: {
      const int64_t v = std::get<int64_t>(option.default_value());
      if (option.min_int() && option.max_int())
        SLUICE_CHECK(*option.min_int() <= *option.max_int());
      if (has_default && option.min_int()) SLUICE_CHECK(v >= *option.min_int());
      if (has_default && option.max_int()) SLUICE_CHECK(v <= *option.max_int());
      break;
    }
    case OptionType::kDouble: {
      const double v = std::get<double>(option.default_value());
      if (option.min_double() && option.max_double()) {
        SLUICE_CHECK(*option.min_double() <= *option.max_double());
      }
      if (has_default && option.min_double()) SLUICE_CHECK(v >= *option.min_double());
      if (has_default && option.max_double()) SLUICE_CHECK(v <= *option.max_double());
      break;
    }
    case OptionType::kEnum: {
      const auto& allowed = option.allowed();
      SLUICE_CHECK(!allowed.empty());
      if (has_default) {
        const auto& v = std::get<std::string>(option.default_value());
        SLUICE_CHECK(std::find(allowed.begin(), allowed.end(), v) != allowed.end());
      }
      break;
    }
    default:
      break;
  }

  const size_t index = options_.size();
  by_flag_.emplace(flag, index);
  env_names_.insert(option.env());
  by_yaml_key_.emplace(key, index);
  for (std::string& section : sections) yaml_sections_.insert(std::move(section));
  options_.push_back(std::move(option));
  return *this;
}

const Option* Spec::Find(std::string_view flag) const {
  const auto it = by_flag_.find(flag);
  return it == by_flag_.end() ? nullptr : &options_[it->second];
}

const Option* Spec::FindByYamlKey(std::string_view path) const {
  const auto it = by_yaml_key_.find(path);
  return it == by_yaml_key_.end() ? nullptr : &options_[it->second];
}

bool Spec::IsYamlSection(std::string_view path) const {
  return yaml_sections_.find(path) != yaml_sections_.end();
}

}  // namespace sluice::config
