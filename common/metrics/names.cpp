#include "common/metrics/names.h"

#include <string>

namespace sluice::metrics {
namespace {

bool IsAsciiLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }
bool HasUpper(std::string_view s) {
  for (char c : s) {
    if (c >= 'A' && c <= 'Z') return true;
  }
  return false;
}

}  // namespace

bool IsValidMetricName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = IsAsciiLetter(c) || c == '_' || c == ':' || (i > 0 && IsAsciiDigit(c));
    if (!ok) return false;
  }
  return true;
}

bool IsValidLabelName(std::string_view name) {
  if (name.empty() || name.starts_with("__")) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = IsAsciiLetter(c) || c == '_' || (i > 0 && IsAsciiDigit(c));
    if (!ok) return false;
  }
  return true;
}

Status ValidateFamily(MetricType type, std::string_view name, std::string_view help,
                      const std::vector<std::string>& label_names) {
  const std::string quoted = "\"" + std::string(name) + "\"";
  if (!IsValidMetricName(name)) {
    return Status::InvalidArgument(
        "metric name " + quoted + " does not match [a-zA-Z_:][a-zA-Z0-9_:]*", "name");
  }
  if (name.find(':') != std::string_view::npos) {
    return Status::InvalidArgument(
        "metric name " + quoted + " contains ':', which is reserved for recording rules", "name");
  }
  if (HasUpper(name)) {
    return Status::InvalidArgument("metric name " + quoted + " is not lower snake_case", "name");
  }
  const bool total = name.ends_with("_total");
  if (type == MetricType::kCounter && !total) {
    return Status::InvalidArgument("counter name " + quoted + " must end in \"_total\"", "name");
  }
  if (type != MetricType::kCounter && total) {
    return Status::InvalidArgument(
        "metric name " + quoted + " ends in \"_total\", which is reserved for counters", "name");
  }
  // Histograms too: a histogram "x_sum" would clash with the "x_sum" series of a histogram "x".
  if (name.ends_with("_bucket") || name.ends_with("_sum") || name.ends_with("_count")) {
    return Status::InvalidArgument("metric name " + quoted +
                                       " ends in a suffix reserved for histogram series "
                                       "(\"_bucket\", \"_sum\", \"_count\")",
                                   "name");
  }
  if (help.empty()) {
    return Status::InvalidArgument("metric " + quoted + " has no help text", "help");
  }
  for (size_t i = 0; i < label_names.size(); ++i) {
    const std::string& label = label_names[i];
    const std::string field = "label_names[" + std::to_string(i) + "]";
    const std::string where = " (metric " + quoted + ")";
    if (!IsValidLabelName(label)) {
      return Status::InvalidArgument("label name \"" + label +
                                         "\" does not match [a-zA-Z_][a-zA-Z0-9_]* or starts "
                                         "with the reserved \"__\"" +
                                         where,
                                     field);
    }
    if (HasUpper(label)) {
      return Status::InvalidArgument("label name \"" + label + "\" is not lower snake_case" + where,
                                     field);
    }
    if (label == "le" || label == "quantile") {
      return Status::InvalidArgument("label name \"" + label + "\" is reserved" + where, field);
    }
    for (size_t j = 0; j < i; ++j) {
      if (label_names[j] == label) {
        return Status::InvalidArgument("label name \"" + label + "\" is repeated" + where, field);
      }
    }
  }
  return Status::Ok();
}

}  // namespace sluice::metrics
