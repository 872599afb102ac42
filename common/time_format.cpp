#include "common/time_format.h"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace sluice {
namespace {

std::string FormatWith(Clock::WallTime t, bool micro) {
  using namespace std::chrono;
  const auto since = t.time_since_epoch();
  const auto secs = duration_cast<seconds>(since);
  int64_t micros = duration_cast<microseconds>(since - secs).count();
  time_t tt = static_cast<time_t>(secs.count());
  if (micros < 0) {
    micros += 1000000;
    --tt;
  }
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[64];
  if (micro) {
    std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<long long>(micros));
  } else {
    std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  }
  return buf;
}

bool Digits(std::string_view s, size_t pos, size_t n, int& out) {
  if (pos + n > s.size()) return false;
  out = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    out = out * 10 + (s[i] - '0');
  }
  return true;
}

}  // namespace

std::string FormatTime(Clock::WallTime t) { return FormatWith(t, false); }
std::string FormatMicroTime(Clock::WallTime t) { return FormatWith(t, true); }

Result<Clock::WallTime> ParseTime(std::string_view s) {
  auto bad = [&] {
    return Status::InvalidArgument("\"" + std::string(s) +
                                   "\" is not an RFC 3339 time (2006-01-02T15:04:05Z)");
  };
  int year, mon, day, hour, min, sec;
  if (!Digits(s, 0, 4, year) || s.size() < 20 || s[4] != '-' || !Digits(s, 5, 2, mon) ||
      s[7] != '-' || !Digits(s, 8, 2, day) || (s[10] != 'T' && s[10] != 't') ||
      !Digits(s, 11, 2, hour) || s[13] != ':' || !Digits(s, 14, 2, min) || s[16] != ':' ||
      !Digits(s, 17, 2, sec)) {
    return bad();
  }
  size_t pos = 19;
  int64_t nanos = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    int64_t scale = 100000000;
    const size_t start = pos;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      nanos += (s[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == start) return bad();
  }
  int offset_minutes = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int oh, om;
    if (!Digits(s, pos + 1, 2, oh) || pos + 3 >= s.size() || s[pos + 3] != ':' ||
        !Digits(s, pos + 4, 2, om) || oh > 23 || om > 59) {
      return bad();
    }
    offset_minutes = (s[pos] == '+' ? 1 : -1) * (oh * 60 + om);
    pos += 6;
  } else {
    return bad();
  }
  using namespace std::chrono;
  const year_month_day date{std::chrono::year(year), month(static_cast<unsigned>(mon)),
                            std::chrono::day(static_cast<unsigned>(day))};
  // date.ok() also refuses days a month does not have (February 30).
  if (pos != s.size() || !date.ok() || hour > 23 || min > 59 || sec > 60) return bad();
  const sys_days days = date;
  const auto t = days + hours(hour) + minutes(min) + seconds(sec) + nanoseconds(nanos) -
                 minutes(offset_minutes);
  return Clock::WallTime(duration_cast<Clock::WallTime::duration>(t.time_since_epoch()));
}

Clock::WallTime ParseTimeOrEpoch(std::string_view text) {
  return TryParseTime(text).value_or(Clock::WallTime{});
}

std::optional<Clock::WallTime> TryParseTime(std::string_view text) {
  Result<Clock::WallTime> t = ParseTime(text);
  if (!t.ok()) return std::nullopt;
  return *t;
}

int64_t UnixSecondsOrZero(std::string_view text) {
  return std::chrono::duration_cast<std::chrono::seconds>(ParseTimeOrEpoch(text).time_since_epoch())
      .count();
}

}  // namespace sluice
