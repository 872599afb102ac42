// `promtool check metrics` on an exposition text, for the metric tests (the registry's own
// output in metrics_test.cpp, the operator's series in its tests).
//
//   PromtoolCheck check = RunPromtoolCheckMetrics(metrics::ExposeText(registry));
//   ASSERT_TRUE(check.available) << "promtool not on PATH";
//   EXPECT_TRUE(check.passed) << check.output;
//
// Thread safety: each call uses its own temporary file.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

namespace sluice::test_support {

struct PromtoolCheck {
  bool available = false;  // promtool is on PATH (CI installs it).
  bool passed = false;     // Exit status 0 and nothing printed (no lint complaint either).
  std::string output;      // What promtool printed, or why it could not run.
};

inline PromtoolCheck RunPromtoolCheckMetrics(const std::string& exposition) {
  PromtoolCheck check;
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) return check;
  check.available = true;
  std::string path =
      (std::filesystem::temp_directory_path() / "sluice_promtool_check_XXXXXX").string();
  const int fd = mkstemp(path.data());
  if (fd < 0) {
    check.output = std::string("mkstemp: ") + std::strerror(errno);
    return check;
  }
  close(fd);
  {
    std::ofstream out(path, std::ios::binary);
    out << exposition;
    if (!out.good()) {
      check.output = "cannot write " + path;
      std::remove(path.c_str());
      return check;
    }
  }
  const std::string command = "promtool check metrics < '" + path + "' 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    check.output = "popen failed";
    std::remove(path.c_str());
    return check;
  }
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) check.output.append(buf, n);
  const int status = pclose(pipe);
  std::remove(path.c_str());
  check.passed = WIFEXITED(status) && WEXITSTATUS(status) == 0 && check.output.empty();
  return check;
}

}  // namespace sluice::test_support
