#include "common/config/parse.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <string_view>
#include <utility>

#include "common/config/config_file.h"
#include "common/config/raw_value.h"
#include "common/config/suggest.h"
#include "common/config/value_parsers.h"

namespace sluice::config {
namespace {

using RawMap = std::map<std::string, RawValue, std::less<>>;

std::string JoinAllowed(const std::vector<std::string>& allowed) {
  std::string out;
  for (const std::string& value : allowed) {
    if (!out.empty()) out += ", ";
    out += value;
  }
  return out;
}

template <typename T>
Status CheckBounds(T v, const std::optional<T>& min, const std::optional<T>& max,
                   const std::function<std::string(T)>& format) {
  if (min && v < *min) {
    return Status::InvalidArgument(format(v) + " is below the minimum " + format(*min));
  }
  if (max && v > *max) {
    return Status::InvalidArgument(format(v) + " is above the maximum " + format(*max));
  }
  return Status::Ok();
}

// Types the winning text of an option; the Status message is the problem only.
Result<Value> Convert(const Option& option, const RawValue& raw) {
  const std::string& text = raw.texts.back();
  switch (option.type()) {
    case OptionType::kString:
      return Value(text);
    case OptionType::kInt: {
      SLUICE_ASSIGN_OR_RETURN(const int64_t v, ParseInt(text));
      SLUICE_RETURN_IF_ERROR(CheckBounds<int64_t>(v, option.min_int(), option.max_int(),
                                                  [](int64_t x) { return std::to_string(x); }));
      return Value(v);
    }
    case OptionType::kDouble: {
      SLUICE_ASSIGN_OR_RETURN(const double v, ParseDouble(text));
      SLUICE_RETURN_IF_ERROR(
          CheckBounds<double>(v, option.min_double(), option.max_double(), FormatDouble));
      return Value(v);
    }
    case OptionType::kBool: {
      SLUICE_ASSIGN_OR_RETURN(const bool v, ParseBool(text));
      return Value(v);
    }
    case OptionType::kDuration: {
      SLUICE_ASSIGN_OR_RETURN(const std::chrono::nanoseconds v, ParseDuration(text));
      return Value(v);
    }
    case OptionType::kBytes: {
      SLUICE_ASSIGN_OR_RETURN(const uint64_t v, ParseByteSize(text));
      return Value(v);
    }
    case OptionType::kEnum: {
      const auto& allowed = option.allowed();
      if (std::find(allowed.begin(), allowed.end(), text) != allowed.end()) return Value(text);
      std::string message = Quote(text) + " is not one of: " + JoinAllowed(allowed);
      if (auto match = ClosestMatch(text, allowed))
        message += " (did you mean " + Quote(*match) + "?)";
      return Status::InvalidArgument(std::move(message));
    }
    case OptionType::kStringList: {
      std::vector<std::string> items;
      for (const std::string& t : raw.texts) {
        if (!raw.split_commas) {
          items.push_back(t);
          continue;
        }
        for (std::string& item : ParseStringList(t)) items.push_back(std::move(item));
      }
      return Value(std::move(items));
    }
  }
  return Status::Internal("unknown option type");
}

// Reads argv into raw flag values, positional arguments and the special flags.
class FlagScanner {
 public:
  FlagScanner(const Spec& spec, const ParseOptions& options) : spec_(spec), options_(options) {
    for (const Option& option : spec.options()) {
      candidates_.push_back(option.flag());
      if (option.type() == OptionType::kBool) candidates_.push_back("no-" + option.flag());
    }
    candidates_.insert(candidates_.end(), {"help", "version", "config"});
  }

  void Scan(const std::vector<std::string>& args) {
    bool flags_done = false;
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string& arg = args[i];
      if (flags_done) {
        positional.push_back(arg);
      } else if (arg == "--") {
        flags_done = true;
      } else if (arg == "-h") {
        help = true;
      } else if (arg.size() > 2 && arg.compare(0, 2, "--") == 0) {
        ScanFlag(args, &i);
      } else if (arg.size() > 1 && arg[0] == '-') {
        // Single-dash long flags are a common slip; point at the double-dash form.
        UnknownFlag(arg, arg.substr(1));
      } else {
        positional.push_back(arg);  // Including "-", which by convention means stdin.
        if (options_.stop_at_first_positional) flags_done = true;
      }
    }
  }

  RawMap values;
  std::vector<std::string> positional;
  std::vector<std::string> errors;
  std::optional<std::string> config_file;
  bool help = false;
  bool version = false;

 private:
  void ScanFlag(const std::vector<std::string>& args, size_t* i) {
    const std::string_view arg = args[*i];
    const size_t eq = arg.find('=');
    const std::string name(arg.substr(2, eq == std::string_view::npos ? arg.npos : eq - 2));
    std::optional<std::string> value;
    if (eq != std::string_view::npos) value = std::string(arg.substr(eq + 1));
    const std::string origin = "flag --" + name;

    if (name == "help" || name == "version") {
      if (value) {
        errors.push_back(origin + ": takes no value");
      } else {
        (name == "help" ? help : version) = true;
      }
      return;
    }
    const Option* option = spec_.Find(name);
    if (option == nullptr && name.rfind("no-", 0) == 0) {
      const Option* negated = spec_.Find(std::string_view(name).substr(3));
      if (negated != nullptr && negated->type() == OptionType::kBool) {
        if (value) {
          errors.push_back(origin + ": takes no value (use --" + negated->flag() + "=" + *value +
                           ")");
        } else {
          Record(*negated, origin, "false");
        }
        return;
      }
    }
    if (option == nullptr && name != "config") {
      UnknownFlag(std::string(arg.substr(0, eq)), name);
      return;
    }
    if (option != nullptr && option->type() == OptionType::kBool) {
      Record(*option, origin, value.value_or("true"));
      return;
    }
    if (!value) {
      if (*i + 1 >= args.size() || args[*i + 1].rfind("--", 0) == 0) {
        errors.push_back(origin + ": missing value");
        return;
      }
      value = args[++*i];
    }
    if (option == nullptr) {
      config_file = *value;
    } else {
      Record(*option, origin, std::move(*value));
    }
  }

  void Record(const Option& option, const std::string& origin, std::string text) {
    RawValue& raw = values[option.flag()];
    raw.source = ValueSource::kFlag;
    raw.origin = origin;
    if (option.type() != OptionType::kStringList) raw.texts.clear();
    raw.texts.push_back(std::move(text));
  }

  void UnknownFlag(const std::string& as_written, std::string_view name) {
    std::string message = "unknown flag " + as_written;
    if (auto match = ClosestMatch(name, candidates_))
      message += " (did you mean --" + *match + "?)";
    errors.push_back(std::move(message));
  }

  const Spec& spec_;
  const ParseOptions& options_;
  std::vector<std::string> candidates_;
};

Config Defaults(const Spec& spec) {
  Config config;
  for (const Option& option : spec.options()) {
    config.Set(option.flag(), option.type(), option.default_value(), ValueSource::kDefault);
  }
  return config;
}

}  // namespace

Result<Config> Parse(const Spec& spec, const std::vector<std::string>& args, const Environment& env,
                     const ParseOptions& options) {
  FlagScanner flags(spec, options);
  flags.Scan(args);

  Config config = Defaults(spec);
  config.SetArgs(std::move(flags.positional));
  if (flags.help || flags.version) {
    config.SetHelpRequested(flags.help);
    config.SetVersionRequested(flags.version);
    return config;
  }

  std::vector<std::string> errors = std::move(flags.errors);

  std::string config_file;
  if (flags.config_file) {
    config_file = *flags.config_file;
  } else if (const auto it = env.find(spec.config_env()); it != env.end()) {
    config_file = it->second;
  }
  ConfigFileContents file;
  if (!config_file.empty()) {
    file = ReadConfigFile(spec, config_file);
    errors.insert(errors.end(), file.errors.begin(), file.errors.end());
    config.SetConfigFile(config_file);
  }

  std::vector<std::string> missing;
  for (const Option& option : spec.options()) {
    const RawValue* winner = nullptr;
    RawValue from_env;
    if (const auto it = flags.values.find(option.flag()); it != flags.values.end()) {
      winner = &it->second;
    } else if (const auto e = env.find(option.env()); e != env.end() && !e->second.empty()) {
      from_env.source = ValueSource::kEnv;
      from_env.origin = "env " + option.env();
      from_env.texts.push_back(e->second);
      winner = &from_env;
    } else if (const auto f = file.values.find(option.flag()); f != file.values.end()) {
      winner = &f->second;
    }

    if (winner == nullptr) {
      // A file that could not be read may well set it; "missing" would mislead.
      if (option.required() && !file.unreadable) {
        missing.push_back("missing required option --" + option.flag() + " (set flag --" +
                          option.flag() + ", env " + option.env() + " or file key " +
                          option.yaml_key() + ")");
      }
      continue;
    }
    Result<Value> value = Convert(option, *winner);
    if (!value.ok()) {
      std::string message = winner->origin + ": " + value.status().message();
      if (winner->line > 0) message += " (line " + std::to_string(winner->line) + ")";
      errors.push_back(std::move(message));
      continue;
    }
    config.Set(option.flag(), option.type(), std::move(value).value(), winner->source);
  }
  errors.insert(errors.end(), missing.begin(), missing.end());

  if (!errors.empty()) {
    std::string message;
    for (const std::string& error : errors) {
      if (!message.empty()) message += '\n';
      message += error;
    }
    return Status::InvalidArgument(std::move(message));
  }
  return config;
}

Result<Config> Parse(const Spec& spec, int argc, const char* const* argv, const Environment& env,
                     const ParseOptions& options) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return Parse(spec, args, env, options);
}

}  // namespace sluice::config
