// Reading the repository's files (CRDs, manifests, docs) from tests. ctest runs tests with
// SLUICE_SOURCE_DIR set; a test binary run by hand from the repository root works too.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/read_file.h"

namespace sluice::testing_files {

inline std::filesystem::path SourceDir() {
  const char* dir = std::getenv("SLUICE_SOURCE_DIR");
  return dir ? std::filesystem::path(dir) : std::filesystem::current_path();
}

inline std::string ReadFile(const std::filesystem::path& path) {
  return test_support::ReadFileOrEmpty(path);
}

}  // namespace sluice::testing_files
