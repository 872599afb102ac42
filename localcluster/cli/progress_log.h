// The progress log of an experiment: DIR/experiments/<name>/progress.jsonl, one ProgressRow
// (progress_row.h) per JSON line, appended by `sluice run` at every sample and read by
// `sluice plot`. Appending across runs of the same experiment is intended: a resumed `sluice run`
// continues the same curves.
//
// Thread safety: plain functions; one writer per file (one `sluice run` per experiment).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "localcluster/cli/progress_row.h"

namespace sluice::cli {

// Appends one line per row to `path`, creating it and its directories. Internal naming the file
// when it cannot be written.
Status AppendProgress(const std::string& path, const std::vector<ProgressRow>& rows);

struct ProgressLog {
  std::vector<ProgressRow> rows;  // In file order.
  size_t skipped = 0;  // Lines that are not a ProgressRow (a torn last line of a killed run).
};

// Parses JSONL text; blank lines are ignored, malformed ones counted in `skipped`.
ProgressLog ParseProgressLog(const std::string& text);

// Reads and parses the file; NotFound naming it when it does not exist.
Result<ProgressLog> ReadProgressLog(const std::string& path);

}  // namespace sluice::cli
