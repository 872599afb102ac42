// Test helper: the whole content of a file as bytes, or "" when it cannot be read (tests compare
// it with what they expect, so a missing file shows up as a mismatch).
//
// Thread safety: a stateless function.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace sluice::test_support {

inline std::string ReadFileOrEmpty(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace sluice::test_support
