// Component log files (DIR/logs/<component>.log): the last lines of one, for `sluice logs
// --tail N` and for the excerpt `sluice up` prints when a component fails to become healthy,
// and following one as it grows (`sluice logs -f`, like tail -F: a file that shrinks, because it
// was truncated or replaced, is read again from its start).
//
// LastLines is the pure part. ReadLastLines reads at most the last 1 MiB of the file, so a huge
// log costs little; lines beyond that window are not returned.
//
// Thread safety: plain functions.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "common/status.h"

namespace sluice::cli {

// The last `n` lines of `text` (a final line without a newline counts), with their newlines.
std::string LastLines(std::string_view text, size_t n);

// The last `n` lines of the file; NotFound when it does not exist.
Result<std::string> ReadLastLines(const std::string& path, size_t n);

struct PrintLogOptions {
  std::optional<size_t> tail;  // Only the last N lines; nullopt: the whole file.
  bool follow = false;
  std::chrono::milliseconds poll_interval{200};
  // Asked between polls while following; returning true ends the follow (tests; main never
  // stops: Ctrl-C ends the process).
  std::function<bool()> stop;
};

// Writes the log to `out` (flushing as it goes when following). NotFound when the file does not
// exist and not following; when following, waits for it to appear.
Status PrintLog(const std::string& path, const PrintLogOptions& options, std::ostream& out);

}  // namespace sluice::cli
