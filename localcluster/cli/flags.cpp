#include "localcluster/cli/flags.h"

#include <charconv>

#include "common/check.h"
#include "common/config/help.h"
#include "common/config/suggest.h"

namespace sluice::cli {
namespace {

const FlagSpec* FindFlag(const CommandSpec& spec, std::string_view name) {
  for (const FlagSpec& flag : spec.flags) {
    if (flag.name == name) return &flag;
  }
  return nullptr;
}

const FlagSpec* FindShort(const CommandSpec& spec, char c) {
  for (const FlagSpec& flag : spec.flags) {
    if (flag.short_name != '\0' && flag.short_name == c) return &flag;
  }
  return nullptr;
}

std::optional<int64_t> ParseInt(std::string_view text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

std::optional<bool> ParseBool(std::string_view text) {
  if (text == "true" || text == "1" || text == "yes") return true;
  if (text == "false" || text == "0" || text == "no") return false;
  return std::nullopt;
}

std::string Quoted(std::string_view text) { return "\"" + std::string(text) + "\""; }

}  // namespace

const ParsedFlags::Value& ParsedFlags::Lookup(std::string_view name, FlagType type) const {
  auto it = values_.find(name);
  SLUICE_CHECK(it != values_.end());
  SLUICE_CHECK(it->second.type == type);
  return it->second;
}

const std::string& ParsedFlags::GetString(std::string_view name) const {
  return Lookup(name, FlagType::kString).text;
}
int64_t ParsedFlags::GetInt(std::string_view name) const {
  return Lookup(name, FlagType::kInt).number;
}
bool ParsedFlags::GetBool(std::string_view name) const {
  return Lookup(name, FlagType::kBool).number != 0;
}
bool ParsedFlags::IsSet(std::string_view name) const {
  auto it = values_.find(name);
  SLUICE_CHECK(it != values_.end());
  return it->second.set;
}

Result<ParsedFlags> ParseFlags(const CommandSpec& spec, const std::vector<std::string>& args) {
  ParsedFlags parsed;
  std::vector<std::string> errors;
  std::vector<std::string> candidates;
  for (const FlagSpec& flag : spec.flags) {
    candidates.push_back(flag.name);
    if (flag.type == FlagType::kBool) candidates.push_back("no-" + flag.name);
  }
  candidates.push_back("help");
  // Raw text per flag; converted after the scan so a later repeat wins.
  std::map<std::string, std::pair<std::string, std::string>> raw;  // name -> (as written, text)

  auto unknown = [&](const std::string& as_written, std::string_view name) {
    std::string message = "unknown flag " + as_written;
    if (auto match = config::ClosestMatch(name, candidates)) {
      message += " (did you mean --" + *match + "?)";
    }
    errors.push_back(std::move(message));
  };

  bool flags_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (flags_done) {
      parsed.positional_.push_back(arg);
    } else if (arg == "--") {
      flags_done = true;
    } else if (arg == "-h" || arg == "--help") {
      parsed.help_ = true;
    } else if (arg.size() > 2 && arg.compare(0, 2, "--") == 0) {
      const size_t eq = arg.find('=');
      std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      std::optional<std::string> value;
      if (eq != std::string::npos) value = arg.substr(eq + 1);
      const FlagSpec* flag = FindFlag(spec, name);
      if (flag == nullptr && name.rfind("no-", 0) == 0) {
        const FlagSpec* negated = FindFlag(spec, std::string_view(name).substr(3));
        if (negated != nullptr && negated->type == FlagType::kBool) {
          if (value) {
            errors.push_back("flag --" + name + ": takes no value");
          } else {
            raw[negated->name] = {"--" + name, "false"};
          }
          continue;
        }
      }
      if (flag == nullptr) {
        unknown(arg.substr(0, eq), name);
        continue;
      }
      if (flag->type == FlagType::kBool) {
        raw[flag->name] = {"--" + name, value.value_or("true")};
        continue;
      }
      if (!value) {
        if (i + 1 >= args.size() || args[i + 1].rfind("--", 0) == 0) {
          errors.push_back("flag --" + name + ": missing value");
          continue;
        }
        value = args[++i];
      }
      raw[flag->name] = {"--" + name, *value};
    } else if (arg.size() == 2 && arg[0] == '-' && arg[1] != '-') {
      const FlagSpec* flag = FindShort(spec, arg[1]);
      if (flag == nullptr) {
        errors.push_back("unknown flag " + arg);
      } else if (flag->type == FlagType::kBool) {
        raw[flag->name] = {arg, "true"};
      } else if (i + 1 >= args.size()) {
        errors.push_back("flag " + arg + ": missing value");
      } else {
        raw[flag->name] = {arg, args[++i]};
      }
    } else if (arg.size() > 1 && arg[0] == '-' && arg[1] != '-') {
      unknown(arg, std::string_view(arg).substr(1));  // "-port": point at --port.
    } else {
      parsed.positional_.push_back(arg);
    }
  }
  if (parsed.help_) return parsed;

  for (const FlagSpec& flag : spec.flags) {
    ParsedFlags::Value value{flag.type, flag.default_value, 0, false};
    std::string as_written = "--" + flag.name;
    if (auto it = raw.find(flag.name); it != raw.end()) {
      as_written = it->second.first;
      value.text = it->second.second;
      value.set = true;
    }
    const std::string origin = "flag " + as_written + ": ";
    if (flag.type == FlagType::kInt) {
      std::optional<int64_t> n = ParseInt(value.text);
      if (!n) {
        errors.push_back(origin + Quoted(value.text) + " is not an integer");
      } else if (flag.min && *n < *flag.min) {
        errors.push_back(origin + value.text + " is below the minimum " +
                         std::to_string(*flag.min));
      } else if (flag.max && *n > *flag.max) {
        errors.push_back(origin + value.text + " is above the maximum " +
                         std::to_string(*flag.max));
      } else {
        value.number = *n;
      }
    } else if (flag.type == FlagType::kBool) {
      std::optional<bool> b = ParseBool(value.text);
      if (!b) {
        errors.push_back(origin + Quoted(value.text) + " is not a boolean (true or false)");
      } else {
        value.number = *b ? 1 : 0;
      }
    } else if (value.set && value.text.empty()) {
      errors.push_back(origin + "must not be empty");
    }
    parsed.values_[flag.name] = std::move(value);
  }
  if (!errors.empty()) {
    std::string message;
    for (const std::string& e : errors) message += (message.empty() ? "" : "\n") + e;
    return Status::InvalidArgument(message);
  }
  return parsed;
}

std::string CommandHelp(const CommandSpec& spec) {
  std::string out = "Usage: " + spec.usage + "\n";
  if (!spec.summary.empty()) out += "\n" + config::Wrap(spec.summary, 0);
  out += "\nFlags:\n";
  auto entry = [&](const std::string& heading, const std::string& text) {
    out += "  " + heading + "\n";
    out += config::Wrap(text, 8);
  };
  for (const FlagSpec& flag : spec.flags) {
    std::string heading;
    if (flag.short_name != '\0') heading += std::string("-") + flag.short_name + ", ";
    heading += (flag.type == FlagType::kBool ? "--[no-]" : "--") + flag.name;
    if (flag.type != FlagType::kBool) heading += " " + flag.value_name;
    std::string text = flag.help;
    if (!flag.default_value.empty()) text += " Default: " + flag.default_value + ".";
    entry(heading, text);
  }
  entry("-h, --help", "Print this help and exit.");
  return out;
}

}  // namespace sluice::cli
