// EmbeddedFile: a text file compiled into the binary (see cmake/EmbedFiles.cmake), such as the
// CRDs, so a binary carries the exact schemas it validates against and needs no files at run
// time. The views point at static storage and live for the whole program.
#pragma once

#include <span>
#include <string_view>

namespace sluice {

struct EmbeddedFile {
  std::string_view name;  // The file's base name, e.g. "rolloutpools.yaml".
  std::string_view text;
};

}  // namespace sluice
