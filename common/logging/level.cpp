#include "common/logging/level.h"

#include <atomic>
#include <string>

namespace sluice::log {
namespace {

std::atomic<Level> min_level{Level::kInfo};

constexpr Level kAllLevels[] = {Level::kDebug, Level::kInfo, Level::kWarn, Level::kError};

bool EqualsIgnoringAsciiCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char c = a[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != b[i]) return false;
  }
  return true;
}

}  // namespace

std::string_view LevelName(Level level) {
  switch (level) {
    case Level::kDebug:
      return "debug";
    case Level::kInfo:
      return "info";
    case Level::kWarn:
      return "warn";
    case Level::kError:
      return "error";
  }
  return "unknown";
}

Result<Level> ParseLevel(std::string_view text) {
  std::string allowed;
  for (Level level : kAllLevels) {
    if (EqualsIgnoringAsciiCase(text, LevelName(level))) return level;
    if (!allowed.empty()) allowed += ", ";
    allowed += LevelName(level);
  }
  return Status::InvalidArgument("unknown log level \"" + std::string(text) +
                                 "\"; allowed: " + allowed);
}

void SetMinLevel(Level level) { min_level.store(level, std::memory_order_relaxed); }

Level MinLevel() { return min_level.load(std::memory_order_relaxed); }

}  // namespace sluice::log
