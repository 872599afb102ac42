// Runs tests/parity/hf_reference.py, the transformers / tokenizers side of the parity tests, and
// reads the JSON it writes.
//
// The interpreter is Debian's /usr/bin/python3 with PYTHONPATH set to the pinned packages of
// scripts/python-requirements.txt: $SLUICE_PYTHON_DEPS when set, else the .deps/python folder
// that scripts/install-python-deps.sh fills (`make test` runs it). A missing folder, or one whose
// stamp is not the sha256 of scripts/python-requirements.txt as it is now (checked for the
// default folder only), is a test failure that says how to install it, never a skip: CI installs
// the packages, so a parity test that did not run would hide a regression.
//
// Thread safety: none needed (tests call these from the test thread). Paths are absolute.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/shell.h"

namespace sluice::parity {

// The folder holding the pinned Python packages.
inline std::filesystem::path PythonDepsDir() {
  if (const char* dir = std::getenv("SLUICE_PYTHON_DEPS"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  return SLUICE_PYTHON_DEPS_DEFAULT;
}

// A fresh directory under the system temp dir, removed when the object dies.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "sluice-parity-XXXXXX").string();
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  // Empty when mkdtemp failed.
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

struct ReferenceRun {
  bool ok = false;
  std::string output;  // stdout and stderr together, or why it could not start.
};

using test_support::ShellQuote;

// hf_reference.py with `args` (each passed as one argument).
inline ReferenceRun RunReference(const std::vector<std::string>& args) {
  ReferenceRun run;
  const std::filesystem::path deps = PythonDepsDir();
  if (!std::filesystem::is_directory(deps / "transformers")) {
    run.output = "the pinned Python packages are not in " + deps.string() +
                 ": run `bash scripts/install-python-deps.sh` (make test does)";
    return run;
  }
  // Installed from the requirements as they are now (the script's stamp), not an older set.
  if (!std::getenv("SLUICE_PYTHON_DEPS")) {
    std::ifstream stamp(deps / ".sluice-requirements.sha256");
    std::string installed;
    stamp >> installed;
    // As the script computes it: the pins without the comment lines.
    FILE* sum = ::popen(
        ("grep -v '^#' " + ShellQuote(SLUICE_REQUIREMENTS_FILE) + " | sha256sum").c_str(), "r");
    char buf[65] = {};
    const bool read = sum != nullptr && std::fread(buf, 1, 64, sum) == 64;
    if (sum != nullptr) ::pclose(sum);
    if (!read || installed != std::string(buf, 64)) {
      run.output = deps.string() + " was installed from another " SLUICE_REQUIREMENTS_FILE
                                   ": run `bash scripts/install-python-deps.sh` (make test does)";
      return run;
    }
  }
  std::string command = "PYTHONPATH=" + ShellQuote(deps.string()) + " /usr/bin/python3 " +
                        ShellQuote(SLUICE_PARITY_SCRIPT);
  for (const std::string& arg : args) command += " " + ShellQuote(arg);
  command += " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) {
    run.output = "popen failed for: " + command;
    return run;
  }
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) run.output.append(buf, n);
  const int status = ::pclose(pipe);
  run.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return run;
}

// The JSON in `path`; a discarded value (is_discarded()) when it is missing or malformed.
inline nlohmann::json ReadJsonFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str(), nullptr, false);
}

inline bool WriteJsonFile(const std::filesystem::path& path, const nlohmann::json& value) {
  std::ofstream out(path);
  out << value.dump();
  return static_cast<bool>(out);
}

}  // namespace sluice::parity
