#include "common/metrics/exposition.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>

#include "common/check.h"
#include "common/utf8.h"

namespace sluice::metrics {
namespace {

constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";  // U+FFFD in UTF-8.

// Appends `s` with backslash and newline escaped, and double quote too when `quote` is set.
void AppendEscaped(std::string& out, std::string_view s, bool quote) {
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quote) {
      out += "\\\"";
    } else {
      const size_t len = ValidUtf8Length(s, i);
      if (len == 0) {
        out += kReplacementCharacter;
        ++i;
      } else {
        out.append(s, i, len);
        i += len;
      }
      continue;
    }
    ++i;
  }
}

// Appends `{a="x",b="y"}` (with `le` last when given), or nothing when there are no labels.
void AppendLabels(std::string& out, const std::vector<std::string>& names,
                  const std::vector<std::string>& values, const std::string* le) {
  SLUICE_CHECK(names.size() == values.size());
  if (names.empty() && le == nullptr) return;
  out += '{';
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ',';
    out += names[i];
    out += "=\"";
    AppendEscaped(out, values[i], /*quote=*/true);
    out += '"';
  }
  if (le != nullptr) {
    if (!names.empty()) out += ',';
    out += "le=\"";
    out += *le;
    out += '"';
  }
  out += '}';
}

void AppendSample(std::string& out, const std::string& name, std::string_view suffix,
                  const FamilySnapshot& family, const ChildSnapshot& child, const std::string* le,
                  const std::string& value) {
  out += name;
  out += suffix;
  AppendLabels(out, family.label_names, child.label_values, le);
  out += ' ';
  out += value;
  out += '\n';
}

void AppendFamily(std::string& out, const FamilySnapshot& family) {
  if (family.children.empty()) return;
  out += "# HELP ";
  out += family.name;
  out += ' ';
  AppendEscaped(out, family.help, /*quote=*/false);
  out += "\n# TYPE ";
  out += family.name;
  out += ' ';
  out += MetricTypeName(family.type);
  out += '\n';
  for (const ChildSnapshot& child : family.children) {
    if (family.type != MetricType::kHistogram) {
      AppendSample(out, family.name, "", family, child, nullptr, FormatValue(child.value));
      continue;
    }
    const HistogramSnapshot& h = child.histogram;
    SLUICE_CHECK(h.cumulative_counts.size() == h.upper_bounds.size() + 1);
    for (size_t i = 0; i < h.cumulative_counts.size(); ++i) {
      const std::string le =
          i < h.upper_bounds.size() ? FormatValue(h.upper_bounds[i]) : std::string("+Inf");
      AppendSample(out, family.name, "_bucket", family, child, &le,
                   std::to_string(h.cumulative_counts[i]));
    }
    AppendSample(out, family.name, "_sum", family, child, nullptr, FormatValue(h.sum));
    AppendSample(out, family.name, "_count", family, child, nullptr, std::to_string(h.count));
  }
}

}  // namespace

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  // Without a format argument to_chars gives the shortest text that round-trips.
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  SLUICE_CHECK(ec == std::errc());
  return std::string(buf, end);
}

std::string ExposeText(const std::vector<FamilySnapshot>& families) {
  std::string out;
  for (const FamilySnapshot& family : families) AppendFamily(out, family);
  return out;
}

std::string ExposeText(const Registry& registry) { return ExposeText(registry.Collect()); }

}  // namespace sluice::metrics
