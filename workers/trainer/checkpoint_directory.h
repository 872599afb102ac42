// The checkpoint directory's layout and bookkeeping (no libtorch):
//
//   <dir>/step-00000040/        a complete checkpoint of the state after training step 40
//   <dir>/.step-00000050.tmp/   one being written (or left by a crash: never read, removed)
//
// A checkpoint is written into its temporary directory, fsynced, and renamed into place, so a
// `step-*` directory is complete by construction: a crash at any point leaves either the previous
// newest checkpoint or the new one, never a half-written one that a restart would load.
//
// Every checkpoint carries checksums.json, {"files": {"<name>": "sha256:<hex>", ...}}, the SHA-256
// of each of its files, written by CommitCheckpoint before the rename; VerifyCheckpoint checks
// them, so a restart can tell a checkpoint the disk damaged later and fall back to an older one.
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
// The file in every committed checkpoint that lists its other files' digests.
inline constexpr char kChecksumsFile[] = "checksums.json";

// Writes checksums.json into the temporary directory, fsyncs its files, renames it to `dir`/step-N
// (replacing an existing checkpoint of that step), fsyncs `dir`, then deletes all but the newest
// `keep` checkpoints and any leftover temporaries. keep >= 1.
Status CommitCheckpoint(const std::string& dir, int64_t step, int keep);

// The dataflow's side of a checkpoint, dataflow.json {"held_through": n}: the newest hold number
// (workers/dataflow/dataflow_core.h, "Held acknowledgements") among the batches the checkpoint's
// weights trained on. A resume hands it to the dataflow, which serves every later batch again.
inline constexpr char kDataflowFile[] = "dataflow.json";
// Writes dataflow.json into a checkpoint's temporary directory (before CommitCheckpoint, so its
// checksum is listed).
Status WriteHeldThrough(const std::string& tmp_dir, int64_t held_through);
// The held_through of the checkpoint at `path` (a step-N directory); 0 when it has no
// dataflow.json (written before held acknowledgements), Corruption when it is malformed.
Result<int64_t> ReadHeldThrough(const std::string& path);

// Checks `dir`/step-N against its checksums.json: Corruption naming the file when checksums.json
// is unreadable or malformed, or a file it lists is missing or differs. Files it does not list
// are not checked. A checkpoint without checksums.json (written before checkpoints carried one)
// passes unverified.
Status VerifyCheckpoint(const std::string& dir, int64_t step);

}  // namespace sluice::trainer
