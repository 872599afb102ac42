#include "common/config/value_parsers.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <system_error>

#include "common/ascii.h"

namespace sluice::config {
namespace {

// Exact arithmetic for fractions times units; __extension__ keeps -Wpedantic quiet.
__extension__ typedef unsigned __int128 Uint128;

char AsciiLower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

// The text without one leading '+'; empty when a sign follows it ("+-1"), which is then rejected.
std::string_view StripPlus(std::string_view text) {
  if (text.empty() || text.front() != '+') return text;
  text.remove_prefix(1);
  if (!text.empty() && (text.front() == '-' || text.front() == '+')) return {};
  return text;
}

// A decimal number without sign: integer digits, optionally '.' and fraction digits.
struct Decimal {
  uint64_t whole = 0;
  uint64_t fraction = 0;    // The fraction digits as an integer...
  int fraction_digits = 0;  // ...over 10^fraction_digits.
  bool overflow = false;
  bool dropped_nonzero = false;  // A nonzero fraction digit past the 18th was dropped.
};

// Reads a decimal at text[*pos]; false when there is not at least one digit. Fraction digits past
// 18 are dropped: they are far below a nanosecond or a byte for every unit here.
bool ReadDecimal(std::string_view text, size_t* pos, Decimal* out) {
  size_t i = *pos;
  bool any_digit = false;
  while (i < text.size() && IsAsciiDigit(text[i])) {
    const uint64_t digit = static_cast<uint64_t>(text[i] - '0');
    if (out->whole > (std::numeric_limits<uint64_t>::max() - digit) / 10) out->overflow = true;
    out->whole = out->whole * 10 + digit;
    any_digit = true;
    ++i;
  }
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && IsAsciiDigit(text[i])) {
      if (out->fraction_digits < 18) {
        out->fraction = out->fraction * 10 + static_cast<uint64_t>(text[i] - '0');
        ++out->fraction_digits;
      } else if (text[i] != '0') {
        out->dropped_nonzero = true;
      }
      any_digit = true;
      ++i;
    }
  }
  *pos = i;
  return any_digit;
}

uint64_t Pow10(int n) {
  uint64_t p = 1;
  for (int i = 0; i < n; ++i) p *= 10;
  return p;
}

struct Unit {
  std::string_view name;
  uint64_t multiplier;
};

constexpr std::array<Unit, 7> kDurationUnits = {{
    {"ns", 1},
    {"us", 1'000},
    {"\xC2\xB5s", 1'000},  // µs (micro sign), as Go writes it.
    {"ms", 1'000'000},
    {"s", 1'000'000'000},
    {"m", 60'000'000'000},
    {"h", 3'600'000'000'000},
}};

constexpr uint64_t kKilo = 1000;
constexpr uint64_t kKibi = 1024;
constexpr std::array<Unit, 12> kByteUnits = {{
    {"k", kKilo},
    {"M", kKilo* kKilo},
    {"G", kKilo* kKilo* kKilo},
    {"T", kKilo* kKilo* kKilo* kKilo},
    {"P", kKilo* kKilo* kKilo* kKilo* kKilo},
    {"E", kKilo* kKilo* kKilo* kKilo* kKilo* kKilo},
    {"Ki", kKibi},
    {"Mi", kKibi* kKibi},
    {"Gi", kKibi* kKibi* kKibi},
    {"Ti", kKibi* kKibi* kKibi* kKibi},
    {"Pi", kKibi* kKibi* kKibi* kKibi* kKibi},
    {"Ei", kKibi* kKibi* kKibi* kKibi* kKibi* kKibi},
}};

Status NotADuration(std::string_view text, std::string_view why = {}) {
  std::string msg = Quote(text) + " is not a duration";
  if (!why.empty()) {
    msg += ": ";
    msg += why;
  } else {
    msg += " (use a number with a unit, e.g. 500ms, 30s, 5m, 1h30m; a plain number is seconds)";
  }
  return Status::InvalidArgument(std::move(msg));
}

}  // namespace

std::string Quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

Result<int64_t> ParseInt(std::string_view text) {
  // from_chars takes '-' but not '+'; a leading '+' is harmless and people write it.
  const std::string_view digits = StripPlus(text);
  if (digits.empty()) return Status::InvalidArgument(Quote(text) + " is not an integer");
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec == std::errc::result_out_of_range) {
    return Status::InvalidArgument(Quote(text) + " is out of range for a 64-bit integer");
  }
  if (ec != std::errc() || end != digits.data() + digits.size()) {
    return Status::InvalidArgument(Quote(text) + " is not an integer");
  }
  return value;
}

Result<double> ParseDouble(std::string_view text) {
  const std::string_view digits = StripPlus(text);
  if (digits.empty()) return Status::InvalidArgument(Quote(text) + " is not a number");
  double value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec == std::errc::result_out_of_range) {
    return Status::InvalidArgument(Quote(text) + " is out of range for a number");
  }
  if (ec != std::errc() || end != digits.data() + digits.size()) {
    return Status::InvalidArgument(Quote(text) + " is not a number");
  }
  if (!std::isfinite(value)) {
    return Status::InvalidArgument(Quote(text) + " is not a finite number");
  }
  return value;
}

Result<bool> ParseBool(std::string_view text) {
  std::string lower;
  for (char c : text) lower += AsciiLower(c);
  if (lower == "true" || lower == "yes" || lower == "on" || lower == "1") return true;
  if (lower == "false" || lower == "no" || lower == "off" || lower == "0") return false;
  return Status::InvalidArgument(Quote(text) + " is not a boolean (use true or false)");
}

Result<std::chrono::nanoseconds> ParseDuration(std::string_view text) {
  if (text.empty()) return NotADuration(text);
  if (text.front() == '-') return NotADuration(text, "negative durations are not allowed");
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  const Status too_large = NotADuration(text, "too large (the maximum is about 292 years)");

  size_t pos = text.front() == '+' ? 1 : 0;
  Uint128 total = 0;
  bool first = true;
  while (pos < text.size() || first) {
    Decimal number;
    if (!ReadDecimal(text, &pos, &number)) return NotADuration(text);
    if (number.overflow) return too_large;
    size_t unit_end = pos;
    while (unit_end < text.size() && !IsAsciiDigit(text[unit_end]) && text[unit_end] != '.') {
      ++unit_end;
    }
    const std::string_view unit_name = text.substr(pos, unit_end - pos);
    uint64_t multiplier = 0;
    if (unit_name.empty()) {
      // Only a number standing alone means seconds; "1h30" is a typo, not 1h30s.
      if (!first) {
        return NotADuration(text, "missing unit after the last number (use ns, us, ms, s, m, h)");
      }
      multiplier = 1'000'000'000;
    } else {
      for (const Unit& unit : kDurationUnits) {
        if (unit.name == unit_name) multiplier = unit.multiplier;
      }
      if (multiplier == 0) {
        return NotADuration(text,
                            "unknown unit " + Quote(unit_name) + " (use ns, us, ms, s, m, h)");
      }
    }
    pos = unit_end;
    total += static_cast<Uint128>(number.whole) * multiplier;
    total += static_cast<Uint128>(number.fraction) * multiplier / Pow10(number.fraction_digits);
    if (total > kMax) return too_large;
    first = false;
  }
  return std::chrono::nanoseconds(static_cast<int64_t>(total));
}

Result<uint64_t> ParseByteSize(std::string_view text) {
  const auto not_a_size = [&](std::string_view why) {
    std::string msg = Quote(text) + " is not a byte size";
    msg += why;
    return Status::InvalidArgument(std::move(msg));
  };
  if (text.empty() || text.front() == '-') {
    return not_a_size(" (use a number of bytes or a quantity such as 512k, 100M, 64Mi, 1Gi)");
  }
  size_t pos = text.front() == '+' ? 1 : 0;
  Decimal number;
  if (!ReadDecimal(text, &pos, &number)) {
    return not_a_size(" (use a number of bytes or a quantity such as 512k, 100M, 64Mi, 1Gi)");
  }
  const std::string_view suffix = text.substr(pos);
  uint64_t multiplier = suffix.empty() ? 1 : 0;
  for (const Unit& unit : kByteUnits) {
    if (unit.name == suffix) multiplier = unit.multiplier;
  }
  if (multiplier == 0) {
    return not_a_size(": unknown unit " + Quote(suffix) +
                      " (use k, M, G, T, P, E for powers of 1000 or Ki, Mi, Gi, Ti, Pi, Ei for "
                      "powers of 1024)");
  }
  const Status too_large = Status::InvalidArgument(Quote(text) + " is too large for a byte size");
  if (number.overflow) return too_large;
  const Uint128 scaled_fraction = static_cast<Uint128>(number.fraction) * multiplier;
  const uint64_t denominator = Pow10(number.fraction_digits);
  if (number.dropped_nonzero || scaled_fraction % denominator != 0) {
    return Status::InvalidArgument(Quote(text) + " is not a whole number of bytes");
  }
  const Uint128 total =
      static_cast<Uint128>(number.whole) * multiplier + scaled_fraction / denominator;
  if (total > std::numeric_limits<uint64_t>::max()) return too_large;
  return static_cast<uint64_t>(total);
}

std::vector<std::string> ParseStringList(std::string_view text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view item = text.substr(start, comma - start);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (!item.empty()) items.emplace_back(item);
    start = comma + 1;
  }
  return items;
}

std::string FormatDuration(std::chrono::nanoseconds d) {
  if (d.count() == 0) return "0s";
  std::string out;
  // Negative durations do not parse, but a readable rendering beats an abort in --help.
  uint64_t ns = static_cast<uint64_t>(d.count());
  if (d.count() < 0) {
    out = "-";
    ns = ~ns + 1;  // Magnitude, well defined even for INT64_MIN.
  }
  static constexpr std::array<std::pair<std::string_view, uint64_t>, 6> kParts = {{
      {"h", 3'600'000'000'000},
      {"m", 60'000'000'000},
      {"s", 1'000'000'000},
      {"ms", 1'000'000},
      {"us", 1'000},
      {"ns", 1},
  }};
  for (const auto& [name, size] : kParts) {
    if (ns >= size) {
      out += std::to_string(ns / size);
      out += name;
      ns %= size;
    }
  }
  return out;
}

std::string FormatByteSize(uint64_t bytes) {
  if (bytes == 0) return "0";
  // Binary units first: sizes in Sluice are mostly buffers and memory, where Mi/Gi are natural.
  for (int i = 5; i >= 0; --i) {
    const Unit& unit = kByteUnits[6 + i];
    if (bytes % unit.multiplier == 0)
      return std::to_string(bytes / unit.multiplier) + std::string(unit.name);
  }
  for (int i = 5; i >= 0; --i) {
    const Unit& unit = kByteUnits[i];
    if (bytes % unit.multiplier == 0)
      return std::to_string(bytes / unit.multiplier) + std::string(unit.name);
  }
  return std::to_string(bytes);
}

std::string FormatDouble(double v) {
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  if (ec != std::errc()) return "?";
  return std::string(buf, end);
}

}  // namespace sluice::config
