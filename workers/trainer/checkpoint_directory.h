// The checkpoint directory's layout and bookkeeping (no libtorch):
//
//   <dir>/step-00000040/        a complete checkpoint of the state after training step 40
//   <dir>/.step-00000050.tmp/   one being written (or left by a crash: never read, removed)
//
// A checkpoint is written into its temporary directory, fsynced, and renamed into place, so a
// `step-*` directory is complete by construction: a crash at any point leaves either the previous
// newest checkpoint or the new one, never a half-written one that a restart would load.
//
// Thread safety: functions touch the filesystem; one writer per directory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace sluice::trainer {

// "step-00000040" (at least 8 digits).
std::string CheckpointName(int64_t step);
// The step of a complete checkpoint's name; nullopt for anything else (temporaries included).
std::optional<int64_t> ParseCheckpointName(const std::string& name);

// Steps of the complete checkpoints in `dir`, ascending; empty when `dir` does not exist.
Result<std::vector<int64_t>> ListCheckpoints(const std::string& dir);

// Creates `dir`/.step-N.tmp (emptied first if a crash left it) and returns its path.
Result<std::string> BeginCheckpoint(const std::string& dir, int64_t step);
// fsyncs the files in the temporary directory, renames it to `dir`/step-N (replacing an existing
// checkpoint of that step), fsyncs `dir`, then deletes all but the newest `keep` checkpoints and
// any leftover temporaries. keep >= 1.
Status CommitCheckpoint(const std::string& dir, int64_t step, int keep);

}  // namespace sluice::trainer
