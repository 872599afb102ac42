#include "localcluster/node/container_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <vector>

namespace sluice::node {

namespace {

using std::chrono::system_clock;

bool ParseDigits(std::string_view text, size_t pos, size_t n, int* out) {
  if (pos + n > text.size()) return false;
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    v = v * 10 + (text[i] - '0');
  }
  *out = v;
  return true;
}

Result<int64_t> ParseInt(const std::string& name, const std::string& value) {
  int64_t v = 0;
  const char* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, v);
  if (value.empty() || ec != std::errc() || ptr != end) {
    return Status::InvalidArgument(name + ": \"" + value + "\" is not a valid integer", name);
  }
  return v;
}

Result<bool> ParseBool(const std::string& name, const std::string& value) {
  if (value == "true" || value == "1" || value == "True" || value == "TRUE") return true;
  if (value.empty() || value == "false" || value == "0" || value == "False" || value == "FALSE") {
    return false;
  }
  return Status::InvalidArgument(name + ": \"" + value + "\" is not a valid boolean", name);
}

// Joins records into output lines: partial records are held until the record that ends them.
class LineAssembler {
 public:
  // Returns the line `record` completes, if any.
  std::optional<LogLine> Feed(LogRecord record) {
    if (!pending_) {
      pending_ = LogLine{record.time, std::move(record.content), false};
    } else {
      pending_->content += record.content;
    }
    if (record.partial) return std::nullopt;
    LogLine line = std::move(*pending_);
    pending_.reset();
    line.complete = true;
    return line;
  }
  // The partial records seen since the last complete line, as an incomplete line.
  const std::optional<LogLine>& pending() const { return pending_; }
  std::optional<LogLine> TakePending() {
    std::optional<LogLine> out = std::move(pending_);
    pending_.reset();
    return out;
  }

 private:
  std::optional<LogLine> pending_;
};

std::optional<system_clock::time_point> SinceCutoff(const LogOptions& options,
                                                    system_clock::time_point now) {
  if (options.since_seconds) return now - std::chrono::seconds(*options.since_seconds);
  return options.since_time;
}

// Splits the complete lines ("...\n") at the start of `data`, feeding each parsed record to
// `assembler` and each completed line to `out`. Returns how many bytes were consumed (an
// unterminated last line, a record still being written, is left).
size_t ConsumeRecords(std::string_view data, LineAssembler* assembler,
                      const std::function<void(LogLine)>& out) {
  size_t pos = 0;
  while (pos < data.size()) {
    const size_t nl = data.find('\n', pos);
    if (nl == std::string_view::npos) break;
    if (std::optional<LogRecord> record = ParseCriRecord(data.substr(pos, nl - pos))) {
      if (std::optional<LogLine> line = assembler->Feed(std::move(*record))) out(std::move(*line));
    }
    pos = nl + 1;
  }
  return pos;
}

Status ReadError(const std::filesystem::path& file, int err) {
  if (err == ENOENT) return Status::NotFound("log file " + file.string() + " does not exist");
  return Status::Internal("cannot read log file " + file.string() + ": " + std::strerror(err));
}

// Reads from `fd` at its current offset to EOF, appending to `buf`.
Status ReadToEnd(int fd, const std::filesystem::path& file, std::string* buf) {
  char chunk[64 * 1024];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ReadError(file, errno);
    }
    if (n == 0) return Status::Ok();
    buf->append(chunk, static_cast<size_t>(n));
  }
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// The initial part of a log (what ReadLog returns), leaving the unconsumed bytes in `buf` and
// trailing partial records in `assembler`. `include_pending` adds those as an incomplete line.
std::vector<LogLine> InitialLines(std::string* buf, LineAssembler* assembler,
                                  const LogOptions& options, system_clock::time_point now,
                                  bool include_pending) {
  const std::optional<system_clock::time_point> cutoff = SinceCutoff(options, now);
  std::deque<LogLine> lines;
  auto keep = [&](LogLine line) {
    if (cutoff && line.time < *cutoff) return;
    lines.push_back(std::move(line));
    // Bound memory for a tail of a big file.
    if (options.tail_lines && lines.size() > static_cast<size_t>(*options.tail_lines) + 1) {
      lines.pop_front();
    }
  };
  const size_t used = ConsumeRecords(*buf, assembler, keep);
  buf->erase(0, used);
  if (include_pending && assembler->pending()) keep(*assembler->pending());
  if (options.tail_lines) {
    while (lines.size() > static_cast<size_t>(*options.tail_lines)) lines.pop_front();
  }
  return {std::make_move_iterator(lines.begin()), std::make_move_iterator(lines.end())};
}

}  // namespace

std::string FormatCriTimestamp(system_clock::time_point t) {
  const auto ns = std::chrono::time_point_cast<std::chrono::nanoseconds>(t);
  const auto secs = std::chrono::floor<std::chrono::seconds>(ns);
  const int64_t frac = (ns - secs).count();
  const auto day = std::chrono::floor<std::chrono::days>(secs);
  const std::chrono::year_month_day ymd(day);
  const std::chrono::hh_mm_ss hms(secs - day);
  char out[64];
  std::snprintf(out, sizeof(out), "%04d-%02u-%02uT%02d:%02d:%02d.%09lldZ",
                static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()),
                static_cast<unsigned>(ymd.day()), static_cast<int>(hms.hours().count()),
                static_cast<int>(hms.minutes().count()), static_cast<int>(hms.seconds().count()),
                static_cast<long long>(frac));
  return out;
}

std::optional<system_clock::time_point> ParseCriTimestamp(std::string_view text) {
  int year, month, day, hour, minute, second;
  if (text.size() < 20 || !ParseDigits(text, 0, 4, &year) || text[4] != '-' ||
      !ParseDigits(text, 5, 2, &month) || text[7] != '-' || !ParseDigits(text, 8, 2, &day) ||
      (text[10] != 'T' && text[10] != 't') || !ParseDigits(text, 11, 2, &hour) || text[13] != ':' ||
      !ParseDigits(text, 14, 2, &minute) || text[16] != ':' || !ParseDigits(text, 17, 2, &second)) {
    return std::nullopt;
  }
  size_t pos = 19;
  int64_t nanos = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    int digits = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (digits < 9) {
        nanos = nanos * 10 + (text[pos] - '0');
        ++digits;
      }
      ++pos;
    }
    if (digits == 0) return std::nullopt;
    for (; digits < 9; ++digits) nanos *= 10;
  }
  int offset_minutes = 0;
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    int oh, om;
    if (!ParseDigits(text, pos + 1, 2, &oh) || pos + 3 >= text.size() || text[pos + 3] != ':' ||
        !ParseDigits(text, pos + 4, 2, &om)) {
      return std::nullopt;
    }
    offset_minutes = (oh * 60 + om) * (text[pos] == '-' ? -1 : 1);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != text.size()) return std::nullopt;
  const std::chrono::year_month_day ymd{std::chrono::year(year),
                                        std::chrono::month(static_cast<unsigned>(month)),
                                        std::chrono::day(static_cast<unsigned>(day))};
  if (!ymd.ok() || hour > 23 || minute > 59 || second > 60) return std::nullopt;
  const auto t = std::chrono::sys_days(ymd) + std::chrono::hours(hour) +
                 std::chrono::minutes(minute - offset_minutes) + std::chrono::seconds(second) +
                 std::chrono::nanoseconds(nanos);
  return system_clock::time_point(std::chrono::duration_cast<system_clock::duration>(
      std::chrono::nanoseconds(t.time_since_epoch())));
}

std::string FormatCriRecord(system_clock::time_point t, std::string_view stream, bool partial,
                            std::string_view content) {
  std::string out = FormatCriTimestamp(t);
  out.reserve(out.size() + stream.size() + content.size() + 5);
  out += ' ';
  out += stream;
  out += partial ? " P " : " F ";
  out += content;
  out += '\n';
  return out;
}

std::optional<LogRecord> ParseCriRecord(std::string_view line) {
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  const size_t s1 = line.find(' ');
  if (s1 == std::string_view::npos) return std::nullopt;
  const size_t s2 = line.find(' ', s1 + 1);
  if (s2 == std::string_view::npos) return std::nullopt;
  std::optional<system_clock::time_point> t = ParseCriTimestamp(line.substr(0, s1));
  if (!t) return std::nullopt;
  LogRecord record;
  record.time = *t;
  record.stream = std::string(line.substr(s1 + 1, s2 - s1 - 1));
  if (record.stream != "stdout" && record.stream != "stderr") return std::nullopt;
  const size_t s3 = line.find(' ', s2 + 1);
  const std::string_view tag =
      line.substr(s2 + 1, s3 == std::string_view::npos ? std::string_view::npos : s3 - s2 - 1);
  // The tag may carry more ':'-separated fields; the first is F (full) or P (partial).
  const std::string_view kind = tag.substr(0, tag.find(':'));
  if (kind == "P") {
    record.partial = true;
  } else if (kind != "F") {
    return std::nullopt;
  }
  if (s3 != std::string_view::npos) record.content = std::string(line.substr(s3 + 1));
  return record;
}

Result<LogOptions> ParseLogOptions(const std::map<std::string, std::string>& query) {
  LogOptions options;
  for (const auto& [name, value] : query) {
    if (name == "tailLines") {
      SLUICE_ASSIGN_OR_RETURN(int64_t v, ParseInt(name, value));
      if (v < 0) return Status::InvalidArgument("tailLines: must be >= 0", name);
      options.tail_lines = v;
    } else if (name == "sinceSeconds") {
      SLUICE_ASSIGN_OR_RETURN(int64_t v, ParseInt(name, value));
      if (v < 1) return Status::InvalidArgument("sinceSeconds: must be >= 1", name);
      options.since_seconds = v;
    } else if (name == "limitBytes") {
      SLUICE_ASSIGN_OR_RETURN(int64_t v, ParseInt(name, value));
      if (v < 1) return Status::InvalidArgument("limitBytes: must be >= 1", name);
      options.limit_bytes = v;
    } else if (name == "timestamps") {
      SLUICE_ASSIGN_OR_RETURN(options.timestamps, ParseBool(name, value));
    } else if (name == "follow") {
      SLUICE_ASSIGN_OR_RETURN(options.follow, ParseBool(name, value));
    } else if (name == "previous") {
      SLUICE_ASSIGN_OR_RETURN(options.previous, ParseBool(name, value));
    } else if (name == "sinceTime") {
      std::optional<system_clock::time_point> t = ParseCriTimestamp(value);
      if (!t) {
        return Status::InvalidArgument("sinceTime: \"" + value + "\" is not an RFC 3339 time",
                                       name);
      }
      options.since_time = t;
    }
  }
  return options;
}

std::string FormatLogLine(const LogLine& line, bool timestamps) {
  std::string out;
  if (timestamps) {
    out = FormatCriTimestamp(line.time);
    out += ' ';
  }
  out += line.content;
  if (line.complete) out += '\n';
  return out;
}

Result<std::string> ReadLog(const std::filesystem::path& file, const LogOptions& options,
                            system_clock::time_point now) {
  Fd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return ReadError(file, errno);
  std::string buf;
  SLUICE_RETURN_IF_ERROR(ReadToEnd(fd.get(), file, &buf));
  LineAssembler assembler;
  std::string out;
  for (const LogLine& line : InitialLines(&buf, &assembler, options, now, true)) {
    out += FormatLogLine(line, options.timestamps);
    if (options.limit_bytes && out.size() >= static_cast<size_t>(*options.limit_bytes)) break;
  }
  if (options.limit_bytes && out.size() > static_cast<size_t>(*options.limit_bytes)) {
    out.resize(static_cast<size_t>(*options.limit_bytes));
  }
  return out;
}

Status FollowLog(const std::filesystem::path& file, const LogOptions& options,
                 system_clock::time_point now, const CancellationToken& cancel,
                 const std::function<bool()>& ended,
                 const std::function<bool(std::string_view)>& write,
                 std::chrono::milliseconds poll) {
  Fd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return ReadError(file, errno);
  const std::optional<system_clock::time_point> cutoff = SinceCutoff(options, now);
  int64_t written = 0;
  bool done = false;  // The client stopped reading or the byte limit was reached.
  auto emit = [&](const LogLine& line) {
    if (done) return;
    if (cutoff && line.time < *cutoff) return;
    std::string text = FormatLogLine(line, options.timestamps);
    if (options.limit_bytes &&
        written + static_cast<int64_t>(text.size()) >= *options.limit_bytes) {
      text.resize(static_cast<size_t>(*options.limit_bytes - written));
      done = true;
    }
    written += static_cast<int64_t>(text.size());
    if (!text.empty() && !write(text)) done = true;
  };

  std::string buf;
  SLUICE_RETURN_IF_ERROR(ReadToEnd(fd.get(), file, &buf));
  LineAssembler assembler;
  for (const LogLine& line : InitialLines(&buf, &assembler, options, now, false)) emit(line);

  for (;;) {
    if (done || cancel.IsCancelled()) return Status::Ok();
    // Asked before reading: once the container has ended, this read sees all it wrote.
    const bool finished = ended && ended();
    const size_t before = buf.size();
    SLUICE_RETURN_IF_ERROR(ReadToEnd(fd.get(), file, &buf));
    const bool grew = buf.size() != before;
    if (grew) {
      const size_t used = ConsumeRecords(buf, &assembler, emit);
      buf.erase(0, used);
    }
    if (finished && !grew) {
      if (std::optional<LogLine> rest = assembler.TakePending()) emit(*rest);
      return Status::Ok();
    }
    if (!grew && cancel.WaitFor(poll)) return Status::Ok();
  }
}

}  // namespace sluice::node
