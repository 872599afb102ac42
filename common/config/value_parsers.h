// Value parsers: pure functions turning the text of one configuration value into a typed value.
//
// The same text syntax is used for flags, environment variables and YAML scalars, so a value means
// the same thing wherever it is written. Each parser returns InvalidArgument with a message that
// describes the problem only (`"abc" is not an integer`); the caller prefixes where the text came
// from (`flag --replicas: `).
//
// Syntax:
//   int       decimal, optional sign: "-3", "42". No hex, no separators, no spaces.
//   double    decimal or exponent form: "0.5", "1e-3". Must be finite.
//   bool      true/false, yes/no, on/off, 1/0; case-insensitive.
//   duration  a sequence of <number><unit>, units ns, us, ms, s, m, h, numbers may have a fraction:
//             "500ms", "30s", "1h30m", "1.5h". A plain number is seconds: "30" = 30s, "0.5" =
//             500ms. Not negative. Sub-nanosecond fractions are truncated.
//   byte size a Kubernetes quantity: a number with an optional suffix, k M G T P E (powers of 1000)
//             or Ki Mi Gi Ti Pi Ei (powers of 1024): "512k", "100M", "64Mi", "1.5Gi", "4096". The
//             result must be a whole number of bytes.
//   list      comma-separated items, each trimmed of spaces; empty items are dropped: "a, b,,c".
//
// Thread safety: pure functions.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace sluice::config {

Result<int64_t> ParseInt(std::string_view text);
Result<double> ParseDouble(std::string_view text);
Result<bool> ParseBool(std::string_view text);
Result<std::chrono::nanoseconds> ParseDuration(std::string_view text);
Result<uint64_t> ParseByteSize(std::string_view text);
std::vector<std::string> ParseStringList(std::string_view text);

// Renderings that the parsers above read back to the same value; used for defaults in --help.
// "1h30m", "1s500ms", "0s".
std::string FormatDuration(std::chrono::nanoseconds d);
// The largest exact unit, binary preferred: "64Mi", "1k", "1000000001", "0".
std::string FormatByteSize(uint64_t bytes);
// Shortest text that reads back to the same double: "0.5", "1e-07".
std::string FormatDouble(double v);
// `"text"` with quotes, backslashes and control characters escaped, for error messages.
std::string Quote(std::string_view text);

}  // namespace sluice::config
