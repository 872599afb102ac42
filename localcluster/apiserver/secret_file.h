// Secret files: reading and atomically writing the small files the local API server keeps in
// its state directory (keys, certificates, the access token, kubeconfigs).
//
// A write goes to a temporary file in the same directory, created with the final mode (so a
// secret is never readable by others, not even briefly), is flushed to disk, and is then renamed
// over the target: readers see the old content or the new, never a partial file, and a crash
// leaves at most a stray "<name>.tmp-XXXXXX" beside it.
//
// Thread safety: stateless functions; concurrent writers of one path each leave a whole file
// (the last rename wins), except WriteFileIfAbsent, where exactly one writer wins.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <string_view>

#include "common/status.h"

namespace sluice::apiserver {

// Replaces `path` with `data`, mode `mode` (e.g. 0600), atomically.
Status WriteFileAtomic(const std::filesystem::path& path, std::string_view data, mode_t mode);

// Creates `path` holding `data` (mode `mode`) only if it does not exist yet, atomically: returns
// true when this call created it, false when the file already existed (it is left untouched).
Result<bool> WriteFileIfAbsent(const std::filesystem::path& path, std::string_view data,
                               mode_t mode);

// The whole content of `path`; NotFound when it does not exist. `what` names the file in errors
// ("CA certificate").
Result<std::string> ReadSmallFile(const std::filesystem::path& path, std::string_view what);

}  // namespace sluice::apiserver
