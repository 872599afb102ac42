// Atomic, durable file writes: the one way Sluice replaces a file that a reader or a restart
// must find whole (WAL snapshots, checkpoints, safetensors, config.json, pid files, secrets).
//
// A write goes to a temporary file beside the target ("<name>.tmp-<pid>-<n>"), created with the
// final mode, filled, synced and closed; it is then renamed over the target and the directory
// is synced. Readers see the old content or the new, never a partial file; after a crash the
// target holds one or the other, and at most a stray temporary file is left beside it
// (IsAtomicWriteTemp recognises it, for the cleanups that run at start). On any error the
// temporary file is removed and the target is untouched.
//
// Every function takes the FileSystem to use (DefaultFileSystem() unless a test injects faults).
//
// Thread safety: stateless functions. Concurrent writers of one path each leave a whole file
// (the last rename wins), except WriteFileIfAbsent, where exactly one writer wins.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "common/file/file_system.h"
#include "common/status.h"

namespace sluice::file {

// Fills the temporary file (Append only; the caller syncs and closes it).
using FileFiller = std::function<Status(WritableFile&)>;

// Replaces `path` with what `fill` appends, with mode `mode`.
Status WriteFileAtomic(const std::filesystem::path& path, mode_t mode, const FileFiller& fill,
                       FileSystem& fs = DefaultFileSystem());

// Replaces `path` with `data`, with mode `mode`.
Status WriteFileAtomic(const std::filesystem::path& path, std::string_view data, mode_t mode = 0644,
                       FileSystem& fs = DefaultFileSystem());

// Creates `path` holding `data` (mode `mode`) only if it does not exist yet: true when this
// call created it, false when it already existed (it is left untouched).
Result<bool> WriteFileIfAbsent(const std::filesystem::path& path, std::string_view data,
                               mode_t mode, FileSystem& fs = DefaultFileSystem());

// Renames the file or directory `from` to `to` (replacing a file or an empty directory) and
// syncs the directories of both names, so the rename survives a crash. Used to publish a
// directory written under a temporary name (a checkpoint, a weight version).
Status RenameDurably(const std::filesystem::path& from, const std::filesystem::path& to,
                     FileSystem& fs = DefaultFileSystem());

// Syncs every regular file directly inside `dir`, then `dir` itself: a directory of finished
// files, before RenameDurably publishes it.
Status SyncDirectoryContents(const std::filesystem::path& dir,
                             FileSystem& fs = DefaultFileSystem());

// Whether `filename` (no directory) is a temporary file left by an interrupted atomic write.
bool IsAtomicWriteTemp(std::string_view filename);

}  // namespace sluice::file
