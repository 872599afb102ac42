// Reading a whole file into memory: the one reader for the files Sluice loads at once (weight
// images, write-ahead log segments, configuration, tokens).
//
// Thread safety: a stateless function.
#pragma once

#include <string>

#include "common/status.h"

namespace sluice::file {

// The bytes of the file at `path` (absolute or relative to the working directory), read to its
// end (a file that grows while being read is read as far as it then goes; files the kernel
// reports as empty, such as /proc's, are read all the same). Errors: NotFound when it does not
// exist; Internal otherwise; both name the path and the system's reason.
Result<std::string> ReadWholeFile(const std::string& path);

}  // namespace sluice::file
