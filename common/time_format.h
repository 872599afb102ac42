// Kubernetes timestamps: metav1.Time ("2026-11-22T10:00:00Z", RFC 3339, seconds) and
// metav1.MicroTime ("2026-11-22T10:00:00.123456Z"), to and from wall-clock time points.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/status.h"

namespace sluice {

// "2026-11-22T10:00:00Z" (UTC, whole seconds), as metav1.Time is written.
std::string FormatTime(Clock::WallTime t);
// "2026-11-22T10:00:00.123456Z" (UTC, microseconds), as metav1.MicroTime is written.
std::string FormatMicroTime(Clock::WallTime t);
// Parses RFC 3339 with an optional fraction and a "Z" or "+hh:mm"/"-hh:mm" offset.
Result<Clock::WallTime> ParseTime(std::string_view text);
// ParseTime's time, or nullopt when `text` is not one (or is empty).
std::optional<Clock::WallTime> TryParseTime(std::string_view text);
// ParseTime's time, or the epoch (Clock::WallTime{}) when `text` is empty or does not parse: for
// timestamps read back from objects, where an unreadable one counts as long ago.
Clock::WallTime ParseTimeOrEpoch(std::string_view text);
// ParseTimeOrEpoch in Unix seconds (0 for the epoch).
int64_t UnixSecondsOrZero(std::string_view text);

}  // namespace sluice
