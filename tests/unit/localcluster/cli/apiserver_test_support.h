// What the CLI tests that start the real sluice-apiserver share: finding the built binaries (a
// free port comes from tests/support/free_port.h).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "localcluster/cli/install_paths.h"

namespace sluice::cli::testing_support {

// The directory holding sluice-apiserver: $SLUICE_BIN_DIR, <test exe>/../bin,
// $SLUICE_SOURCE_DIR/build/bin or ./build/bin; "" when none does (the test skips).
inline std::string FindBinDir() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("SLUICE_BIN_DIR")) candidates.push_back(env);
  if (Result<std::string> self = SelfExecutableDir(); self.ok()) {
    candidates.push_back(*self + "/../bin");
  }
  if (const char* src = std::getenv("SLUICE_SOURCE_DIR")) {
    candidates.push_back(std::string(src) + "/build/bin");
  }
  candidates.push_back(CurrentDirectory() + "/build/bin");
  for (const std::string& dir : candidates) {
    if (IsExecutableFile(dir + "/sluice-apiserver")) {
      return std::filesystem::weakly_canonical(dir).string();
    }
  }
  return "";
}

}  // namespace sluice::cli::testing_support
