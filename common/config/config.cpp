#include "common/config/config.h"

#include <cstdio>
#include <string>
#include <utility>

#include "common/check.h"

namespace sluice::config {
namespace {

// Whether `value` holds the alternative used for options of `type`.
bool HoldsTypeOf(const Value& value, OptionType type) {
  switch (type) {
    case OptionType::kString:
    case OptionType::kEnum:
      return std::holds_alternative<std::string>(value);
    case OptionType::kInt:
      return std::holds_alternative<int64_t>(value);
    case OptionType::kDouble:
      return std::holds_alternative<double>(value);
    case OptionType::kBool:
      return std::holds_alternative<bool>(value);
    case OptionType::kDuration:
      return std::holds_alternative<std::chrono::nanoseconds>(value);
    case OptionType::kBytes:
      return std::holds_alternative<uint64_t>(value);
    case OptionType::kStringList:
      return std::holds_alternative<std::vector<std::string>>(value);
  }
  return false;
}

}  // namespace

std::string_view SourceName(ValueSource source) {
  switch (source) {
    case ValueSource::kDefault:
      return "default";
    case ValueSource::kFile:
      return "file";
    case ValueSource::kEnv:
      return "env";
    case ValueSource::kFlag:
      return "flag";
  }
  return "?";
}

void Config::Set(std::string key, OptionType type, Value value, ValueSource source) {
  SLUICE_CHECK(HoldsTypeOf(value, type));
  entries_.insert_or_assign(std::move(key), Entry{type, std::move(value), source});
}

const Config::Entry& Config::Lookup(std::string_view key) const {
  const auto it = entries_.find(key);
  if (it == entries_.end()) {
    // The check below aborts; name the key first so the bug is easy to find.
    std::fprintf(stderr, "config: undeclared option \"%.*s\"\n", static_cast<int>(key.size()),
                 key.data());
  }
  SLUICE_CHECK(it != entries_.end());
  return it->second;
}

const Config::Entry& Config::LookupTyped(std::string_view key, OptionType type) const {
  const Entry& entry = Lookup(key);
  if (entry.type != type) {
    std::fprintf(stderr, "config: option \"%.*s\" has type %s, not %s\n",
                 static_cast<int>(key.size()), key.data(),
                 std::string(TypeName(entry.type)).c_str(), std::string(TypeName(type)).c_str());
  }
  SLUICE_CHECK(entry.type == type);
  return entry;
}

const std::string& Config::GetString(std::string_view key) const {
  const Entry& entry = Lookup(key);
  SLUICE_CHECK(entry.type == OptionType::kString || entry.type == OptionType::kEnum);
  return std::get<std::string>(entry.value);
}

int64_t Config::GetInt(std::string_view key) const {
  return std::get<int64_t>(LookupTyped(key, OptionType::kInt).value);
}

double Config::GetDouble(std::string_view key) const {
  return std::get<double>(LookupTyped(key, OptionType::kDouble).value);
}

bool Config::GetBool(std::string_view key) const {
  return std::get<bool>(LookupTyped(key, OptionType::kBool).value);
}

std::chrono::nanoseconds Config::GetDuration(std::string_view key) const {
  return std::get<std::chrono::nanoseconds>(LookupTyped(key, OptionType::kDuration).value);
}

uint64_t Config::GetBytes(std::string_view key) const {
  return std::get<uint64_t>(LookupTyped(key, OptionType::kBytes).value);
}

const std::vector<std::string>& Config::GetStringList(std::string_view key) const {
  return std::get<std::vector<std::string>>(LookupTyped(key, OptionType::kStringList).value);
}

ValueSource Config::Source(std::string_view key) const { return Lookup(key).source; }

}  // namespace sluice::config
