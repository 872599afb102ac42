// Tests of the pid-file liveness decision (pid_file.h): only a live, non-zombie process of the
// component's own program counts as running; everything else is stale.
#include "localcluster/cli/pid_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>

namespace sluice::cli {
namespace {

ProcessLookup Table(std::map<pid_t, ProcessInfo> table) {
  return [table](pid_t pid) -> std::optional<ProcessInfo> {
    auto it = table.find(pid);
    if (it == table.end()) return std::nullopt;
    return it->second;
  };
}

TEST(PidFileTest, ParsePid) {
  EXPECT_EQ(ParsePid("123\n"), std::optional<pid_t>(123));
  EXPECT_EQ(ParsePid("  42  "), std::optional<pid_t>(42));
  EXPECT_FALSE(ParsePid(""));
  EXPECT_FALSE(ParsePid("0"));
  EXPECT_FALSE(ParsePid("-5"));
  EXPECT_FALSE(ParsePid("12a"));
  EXPECT_FALSE(ParsePid("99999999999"));
}

TEST(PidFileTest, IsProgramByExeOrArgv0) {
  EXPECT_TRUE(IsProgram({"/work/build/bin/sluice-apiserver", {}, false}, "sluice-apiserver"));
  EXPECT_TRUE(
      IsProgram({"/work/build/bin/sluice-apiserver (deleted)", {}, false}, "sluice-apiserver"));
  EXPECT_TRUE(IsProgram({"", {"/x/sluice-node", "--port", "1"}, false}, "sluice-node"));
  EXPECT_FALSE(IsProgram({"/usr/bin/bash", {"bash"}, false}, "sluice-node"));
  EXPECT_FALSE(IsProgram({"/x/sluice-node-old", {}, false}, "sluice-node"));
  EXPECT_FALSE(IsProgram({"", {}, false}, "sluice-node"));
}

TEST(PidFileTest, Decisions) {
  const ProcessLookup lookup = Table({
      {100, {"/b/sluice-apiserver", {"/b/sluice-apiserver", "--port", "6443"}, false}},
      {200, {"/usr/bin/vim", {"vim"}, false}},
      {300, {"", {}, true}},  // A zombie.
  });
  EXPECT_EQ(JudgePidFile(std::nullopt, lookup, "sluice-apiserver").verdict, PidVerdict::kNoPidFile);
  EXPECT_EQ(JudgePidFile("garbage", lookup, "sluice-apiserver").verdict, PidVerdict::kMalformed);
  PidFileState s = JudgePidFile("100\n", lookup, "sluice-apiserver");
  EXPECT_EQ(s.verdict, PidVerdict::kRunning);
  EXPECT_TRUE(s.running());
  EXPECT_FALSE(s.stale());
  EXPECT_EQ(s.pid, 100);
  EXPECT_EQ(s.argv.size(), 3u);
  s = JudgePidFile("200", lookup, "sluice-apiserver");
  EXPECT_EQ(s.verdict, PidVerdict::kOtherProgram);
  EXPECT_TRUE(s.stale());
  EXPECT_EQ(JudgePidFile("300", lookup, "sluice-apiserver").verdict, PidVerdict::kNotRunning);
  EXPECT_EQ(JudgePidFile("400", lookup, "sluice-apiserver").verdict, PidVerdict::kNotRunning);
  EXPECT_FALSE(JudgePidFile(std::nullopt, lookup, "x").stale());
}

TEST(PidFileTest, RealProcessAndFiles) {
  std::optional<ProcessInfo> self = ReadProcessInfo(getpid());
  ASSERT_TRUE(self);
  EXPECT_FALSE(self->zombie);
  EXPECT_FALSE(self->exe.empty());
  EXPECT_TRUE(ProcessAlive(getpid()));
  const std::string self_name = std::filesystem::path(self->exe).filename().string();

  const std::string dir = ::testing::TempDir() + "/sluice_pid_test_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/x.pid";
  EXPECT_EQ(InspectPidFile(path, self_name).verdict, PidVerdict::kNoPidFile);
  ASSERT_TRUE(WritePidFile(path, getpid()).ok());
  EXPECT_EQ(InspectPidFile(path, self_name).verdict, PidVerdict::kRunning);
  EXPECT_EQ(InspectPidFile(path, "sluice-apiserver").verdict, PidVerdict::kOtherProgram);
  RemovePidFile(path);
  RemovePidFile(path);  // Missing is fine.
  EXPECT_FALSE(std::filesystem::exists(path));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sluice::cli
