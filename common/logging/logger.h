// Logger: structured logging as JSON lines, one object per line, on stderr.
//
//   log::Logger logger("dataflow");
//   logger.Info("lease expired", {{"lease", id}, {"age_seconds", 3.5}});
//   log::Logger policy_log = logger.With({{"policy", "p1"}});  // Adds the field to every line.
//
// Each line is a JSON object whose keys come in this order: "time" (RFC 3339, UTC, with
// milliseconds: "2026-11-22T10:00:00.123Z"), "level" ("debug", "info", "warn", "error"),
// "component", "msg", then the fields of With (outermost first) and of the call, in the order
// given. Field values are any JSON (string, integer, double, bool, null, object, array); a
// non-finite double is written as null, which is what JSON allows. Key rules:
//
//   * a field named like a fixed key ("time", "level", "component", "msg") is renamed to
//     "fields.<key>" rather than dropped or allowed to replace the fixed value, so the data
//     survives and the line stays well-formed;
//   * a field given twice (in With and in the call, say) keeps its first position and takes its
//     last value, so a call can override a child logger's field.
//
// Bytes that are not valid UTF-8, in the message, keys or values, are replaced by U+FFFD so
// every line is valid JSON. Lines below MinLevel() (level.h) are dropped before formatting;
// check Enabled() first to skip building costly fields.
//
// Ownership: a Logger is a small value, cheap to copy; copies and children made by With share
// the parent's output (sink, clock and lock). The clock passed to the constructor must outlive
// every logger sharing that output.
//
// Thread safety: every method may be called from any thread. Each line is written with one
// call to the sink under a lock shared by all loggers on that output (for the default output,
// by every default Logger in the process), so lines from concurrent threads never interleave.
// The stderr output writes each line, newline included, with a single write(2) where the
// kernel allows.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/logging/level.h"

namespace sluice::log {

// Receives each line, without its trailing newline. Calls are serialized by the Logger.
using LineSink = std::function<void(std::string_view line)>;

// One structured field: a key and any JSON value.
using Field = std::pair<std::string, nlohmann::json>;
using Fields = std::vector<Field>;

class Logger {
 public:
  // Writes to stderr with time from SystemClock.
  explicit Logger(std::string component);
  // Writes to `sink` with time from `clock` (tests pass a FakeClock and collect lines).
  Logger(std::string component, const Clock& clock, LineSink sink);

  // Whether a line at `level` would be written now.
  bool Enabled(Level level) const { return level >= MinLevel(); }

  void Log(Level level, std::string_view msg, const Fields& fields = {}) const;
  void Debug(std::string_view msg, const Fields& fields = {}) const {
    Log(Level::kDebug, msg, fields);
  }
  void Info(std::string_view msg, const Fields& fields = {}) const {
    Log(Level::kInfo, msg, fields);
  }
  void Warn(std::string_view msg, const Fields& fields = {}) const {
    Log(Level::kWarn, msg, fields);
  }
  void Error(std::string_view msg, const Fields& fields = {}) const {
    Log(Level::kError, msg, fields);
  }

  // A logger with the same component and output that adds `fields` (after this logger's own
  // fixed fields) to every line.
  Logger With(const Fields& fields) const;

  const std::string& component() const { return component_; }

 private:
  struct Output;

  static const std::shared_ptr<Output>& StderrOutput();

  Logger(std::shared_ptr<Output> output, std::string component, Fields fields);

  std::shared_ptr<Output> output_;
  std::string component_;
  Fields fields_;
};

// `t` as RFC 3339 in UTC with milliseconds, truncated: "2026-11-22T10:00:00.123Z".
std::string FormatTimestamp(Clock::WallTime t);

}  // namespace sluice::log
