// Container log files in the CRI format, and what the kubelet's /containerLogs endpoint serves
// from them.
//
// A CRI log file (what containerd writes and the kubelet reads) holds one record a line:
//
//   <RFC3339Nano UTC timestamp> <stdout|stderr> <F|P> <content>\n
//
// F marks the end of an output line; P a partial one (the line was longer than 16 KiB, or the
// stream ended without a newline): its content continues in the next record. ContainerProcess
// (container_process.h) writes these files; ReadLog and FollowLog turn them back into what
// `kubectl logs` prints: the contents, partial records joined to one line, optionally prefixed
// with the timestamp of the line's first record.
//
// Thread safety: free functions; they only read the file, which may grow while they read it.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/process/cancellation.h"
#include "common/status.h"

namespace sluice::node {

// A record longer than this is split into partial records (kubelet's and containerd's limit).
inline constexpr size_t kMaxLogRecordBytes = 16 * 1024;

// "2024-05-01T12:00:00.123456789Z": UTC, always nine fractional digits (what the kubelet prints
// for `timestamps=true`; it sorts as text).
std::string FormatCriTimestamp(std::chrono::system_clock::time_point t);
// Parses RFC 3339 with any number of fractional digits and a "Z" or "+hh:mm" offset.
std::optional<std::chrono::system_clock::time_point> ParseCriTimestamp(std::string_view text);

// One record of a CRI log file. `stream` is "stdout" or "stderr".
struct LogRecord {
  std::chrono::system_clock::time_point time;
  std::string stream;
  bool partial = false;
  std::string content;  // Without the record's trailing newline.
};

// The line for `record` ("<ts> <stream> <F|P> <content>\n").
std::string FormatCriRecord(std::chrono::system_clock::time_point t, std::string_view stream,
                            bool partial, std::string_view content);
// Parses one line of a CRI log file (with or without its '\n'); nullopt when malformed.
std::optional<LogRecord> ParseCriRecord(std::string_view line);

// What the kubelet's /containerLogs endpoint takes (the PodLogOptions query parameters).
struct LogOptions {
  std::optional<int64_t> tail_lines;     // tailLines: only the last N lines.
  bool timestamps = false;               // timestamps: prefix each line with its time.
  std::optional<int64_t> since_seconds;  // sinceSeconds: only lines newer than now - N s.
  std::optional<int64_t> limit_bytes;    // limitBytes: at most N bytes of output.
  // Also parsed, for the caller: follow (stream as the file grows), previous (the previous
  // instance of the container: the caller picks the file), sinceTime (RFC 3339; when both
  // are given sinceSeconds wins).
  bool follow = false;
  bool previous = false;
  std::optional<std::chrono::system_clock::time_point> since_time;
};

// Parses the query parameters tailLines, timestamps, sinceSeconds, limitBytes, follow,
// previous, sinceTime. Booleans accept "true"/"1" (and "false"/"0"/""). Unknown parameters are
// ignored. Errors: InvalidArgument naming the parameter (field = its name) for a value that is
// not a number, or out of range (tailLines < 0, sinceSeconds < 1, limitBytes < 1).
Result<LogOptions> ParseLogOptions(const std::map<std::string, std::string>& query);

// One output line assembled from one or more records.
struct LogLine {
  std::chrono::system_clock::time_point time;  // Of its first record.
  std::string content;                         // The records' contents joined.
  bool complete = true;  // Ended by an F record; false for trailing partial records.
};

// The text kubectl shows for `line`: "[<timestamp> ]<content>" plus '\n' when complete.
std::string FormatLogLine(const LogLine& line, bool timestamps);

// The log as `kubectl logs` expects it, per `options` (follow and previous are ignored here):
// records older than the since cut-off (since_seconds before `now`, or since_time) are dropped,
// then the last tail_lines lines are kept, then the output is cut at limit_bytes. Malformed
// lines in the file are skipped. The file is read whole into memory.
// Errors: NotFound when the file does not exist; Internal when it cannot be read.
Result<std::string> ReadLog(const std::filesystem::path& file, const LogOptions& options,
                            std::chrono::system_clock::time_point now);

// `kubectl logs -f`: writes what ReadLog would, then every new line as the file grows (the file
// is polled every `poll`), until one of:
//   - `cancel` fires (the client went away, the server shuts down) -> OK;
//   - `ended()` returns true and everything written before that call has been sent (the
//     container exited and its log is complete; trailing partial records are then sent
//     without a newline) -> OK;
//   - `write` returns false (the connection broke) -> OK;
//   - limit_bytes have been written -> OK.
// `ended` may be null (follow until cancelled). `write` receives whole lines (FormatLogLine).
// Errors: NotFound when the file does not exist at the start; Internal on a read error.
// The file must only grow (no rotation or truncation while followed).
Status FollowLog(const std::filesystem::path& file, const LogOptions& options,
                 std::chrono::system_clock::time_point now, const CancellationToken& cancel,
                 const std::function<bool()>& ended,
                 const std::function<bool(std::string_view)>& write,
                 std::chrono::milliseconds poll = std::chrono::milliseconds(100));

}  // namespace sluice::node
