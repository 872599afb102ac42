#include "localcluster/cli/pid_file.h"

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>

#include "common/ascii.h"
#include "common/file/atomic_file.h"
#include "common/file/read_file.h"

namespace sluice::cli {
namespace {

std::string_view PathBasename(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::optional<std::string> ReadWholeFile(const std::string& path) {
  Result<std::string> text = file::ReadWholeFile(path);
  if (!text.ok()) return std::nullopt;
  return std::move(*text);
}

}  // namespace

std::optional<pid_t> ParsePid(std::string_view text) {
  text = StripAsciiSpace(text);
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value <= 0 || value > 0x3fffffff) {
    return std::nullopt;
  }
  return static_cast<pid_t>(value);
}

bool IsProgram(const ProcessInfo& process, std::string_view binary_name) {
  std::string_view exe = process.exe;
  constexpr std::string_view kDeleted = " (deleted)";
  if (exe.size() > kDeleted.size() && exe.substr(exe.size() - kDeleted.size()) == kDeleted) {
    exe.remove_suffix(kDeleted.size());
  }
  if (!exe.empty() && PathBasename(exe) == binary_name) return true;
  return !process.argv.empty() && PathBasename(process.argv[0]) == binary_name;
}

PidFileState JudgePidFile(const std::optional<std::string>& text, const ProcessLookup& lookup,
                          std::string_view binary_name) {
  PidFileState state;
  if (!text) return state;
  const std::optional<pid_t> pid = ParsePid(*text);
  if (!pid) {
    state.verdict = PidVerdict::kMalformed;
    return state;
  }
  state.pid = *pid;
  const std::optional<ProcessInfo> process = lookup(*pid);
  if (!process || process->zombie) {
    state.verdict = PidVerdict::kNotRunning;
  } else if (!IsProgram(*process, binary_name)) {
    state.verdict = PidVerdict::kOtherProgram;
  } else {
    state.verdict = PidVerdict::kRunning;
    state.argv = process->argv;
  }
  return state;
}

std::optional<ProcessInfo> ReadProcessInfo(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid);
  std::optional<std::string> stat = ReadWholeFile(dir + "/stat");
  if (!stat) return std::nullopt;
  ProcessInfo info;
  // "pid (comm) S ...": the state follows the last ')' (comm may hold parentheses).
  const size_t paren = stat->rfind(')');
  if (paren != std::string::npos && paren + 2 < stat->size()) {
    info.zombie = (*stat)[paren + 2] == 'Z' || (*stat)[paren + 2] == 'X';
  }
  char buf[4096];
  const ssize_t n = readlink((dir + "/exe").c_str(), buf, sizeof(buf));
  if (n > 0) info.exe.assign(buf, static_cast<size_t>(n));
  if (std::optional<std::string> cmdline = ReadWholeFile(dir + "/cmdline")) {
    size_t start = 0;
    while (start < cmdline->size()) {
      size_t end = cmdline->find('\0', start);
      if (end == std::string::npos) end = cmdline->size();
      info.argv.push_back(cmdline->substr(start, end - start));
      start = end + 1;
    }
  }
  return info;
}

bool ProcessAlive(pid_t pid) {
  std::optional<ProcessInfo> info = ReadProcessInfo(pid);
  return info && !info->zombie;
}

PidFileState InspectPidFile(const std::string& path, std::string_view binary_name) {
  return JudgePidFile(ReadWholeFile(path), ReadProcessInfo, binary_name);
}

Status WritePidFile(const std::string& path, pid_t pid) {
  return file::WriteFileAtomic(path, std::to_string(pid) + "\n", 0644);
}

void RemovePidFile(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove(path, ec);
}

}  // namespace sluice::cli
