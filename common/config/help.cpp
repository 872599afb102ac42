#include "common/config/help.h"

#include <string>
#include <variant>

#include "common/config/value_parsers.h"
#include "common/join_strings.h"

namespace sluice::config {
namespace {

constexpr size_t kOptionIndent = 2;
constexpr size_t kTextIndent = 8;

// "int", "int, 1 to 64", "float, at least 0", "fast|slow".
std::string TypeLabel(const Option& option) {
  if (option.type() == OptionType::kEnum) return JoinStrings(option.allowed(), "|");
  std::string label(TypeName(option.type()));
  if (option.type() == OptionType::kStringList) label += ", comma-separated";
  std::string low, high;
  if (option.min_int()) low = std::to_string(*option.min_int());
  if (option.max_int()) high = std::to_string(*option.max_int());
  if (option.min_double()) low = FormatDouble(*option.min_double());
  if (option.max_double()) high = FormatDouble(*option.max_double());
  if (!low.empty() && !high.empty()) {
    label += ", " + low + " to " + high;
  } else if (!low.empty()) {
    label += ", at least " + low;
  } else if (!high.empty()) {
    label += ", at most " + high;
  }
  return label;
}

std::string DefaultText(const Option& option) {
  const Value& v = option.default_value();
  switch (option.type()) {
    case OptionType::kString:
    case OptionType::kEnum:
      return Quote(std::get<std::string>(v));
    case OptionType::kInt:
      return std::to_string(std::get<int64_t>(v));
    case OptionType::kDouble:
      return FormatDouble(std::get<double>(v));
    case OptionType::kBool:
      return std::get<bool>(v) ? "true" : "false";
    case OptionType::kDuration:
      return FormatDuration(std::get<std::chrono::nanoseconds>(v));
    case OptionType::kBytes:
      return FormatByteSize(std::get<uint64_t>(v));
    case OptionType::kStringList: {
      const auto& items = std::get<std::vector<std::string>>(v);
      return items.empty() ? "none" : Quote(JoinStrings(items, ","));
    }
  }
  return "?";
}

void AddEntry(std::string* out, const std::string& heading, const std::string& help,
              const std::string& details) {
  *out += std::string(kOptionIndent, ' ') + heading + "\n";
  if (!help.empty()) *out += Wrap(help, kTextIndent);
  if (!details.empty()) *out += Wrap(details, kTextIndent);
}

}  // namespace

std::string Wrap(std::string_view text, size_t indent, size_t width) {
  std::string out;
  size_t paragraph_start = 0;
  while (paragraph_start <= text.size()) {
    size_t paragraph_end = text.find('\n', paragraph_start);
    if (paragraph_end == std::string_view::npos) paragraph_end = text.size();
    const std::string_view paragraph =
        text.substr(paragraph_start, paragraph_end - paragraph_start);
    std::string line;
    size_t pos = 0;
    while (pos < paragraph.size()) {
      if (paragraph[pos] == ' ') {
        ++pos;
        continue;
      }
      size_t end = paragraph.find(' ', pos);
      if (end == std::string_view::npos) end = paragraph.size();
      const std::string_view word = paragraph.substr(pos, end - pos);
      if (!line.empty() && indent + line.size() + 1 + word.size() > width) {
        out += std::string(indent, ' ') + line + "\n";
        line.clear();
      }
      if (!line.empty()) line += ' ';
      line += word;
      pos = end;
    }
    out += line.empty() ? "\n" : std::string(indent, ' ') + line + "\n";
    paragraph_start = paragraph_end + 1;
  }
  return out;
}

std::string HelpText(const Spec& spec, std::string_view program, std::string_view summary) {
  std::string out = "Usage: " + std::string(program) + " [flags] [args...]\n";
  if (!summary.empty()) out += "\n" + Wrap(summary, 0);
  out += "\nFlags (precedence: flag > environment > config file > default):\n";
  for (const Option& option : spec.options()) {
    const bool is_bool = option.type() == OptionType::kBool;
    std::string heading = (is_bool ? "--[no-]" : "--") + option.flag() + " " + TypeLabel(option);
    std::string details = option.required() ? "Required." : "Default: " + DefaultText(option) + ".";
    details += " Env: " + option.env() + ". File key: " + option.yaml_key() + ".";
    AddEntry(&out, heading, option.help(), details);
  }
  AddEntry(&out, "--config FILE",
           "YAML file to read settings from; its keys are the \"File key\"s above.",
           "Env: " + spec.config_env() + ".");
  AddEntry(&out, "-h, --help", "Print this help and exit.", "");
  AddEntry(&out, "--version", "Print the version and exit.", "");
  return out;
}

}  // namespace sluice::config
