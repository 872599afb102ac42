// Reading the repository's files (CRDs, manifests, docs) from tests. ctest runs tests with
// SLUICE_SOURCE_DIR set; a test binary run by hand from the repository root works too.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace sluice::testing_files {

inline std::filesystem::path SourceDir() {
  const char* dir = std::getenv("SLUICE_SOURCE_DIR");
  return dir ? std::filesystem::path(dir) : std::filesystem::current_path();
}

inline std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace sluice::testing_files
