// Log levels, their names, and the process-wide minimum level below which lines are dropped.
//
// Levels, lowest first: debug, info, warn, error. The minimum is set once at startup from the
// --log-level flag (ParseLevel) and defaults to info; changing it later is allowed and takes
// effect for all loggers at once.
//
// Thread safety: every function may be called from any thread (the minimum is an atomic).
#pragma once

#include <cstdint>
#include <string_view>

#include "common/status.h"

namespace sluice::log {

enum class Level : uint8_t { kDebug, kInfo, kWarn, kError };

// "debug", "info", "warn", "error": the spelling in log lines and in --log-level.
std::string_view LevelName(Level level);

// The level named `text`, ignoring ASCII case. Otherwise InvalidArgument naming the bad value
// and the allowed ones.
Result<Level> ParseLevel(std::string_view text);

void SetMinLevel(Level level);
Level MinLevel();

}  // namespace sluice::log
