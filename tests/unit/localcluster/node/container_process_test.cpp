// Tests of ContainerProcess: exit codes, signals, CRI log lines, environment, exec errors,
// graceful stop and process-group cleanup. Scripts run under /bin/sh.
#include "localcluster/node/container_process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "localcluster/node/container_log.h"

namespace sluice::node {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::steady_clock;

class ContainerProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sluice_container_process_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = fs::canonical(tmpl);
  }
  void TearDown() override { fs::remove_all(dir_); }

  ProcessSpec Script(const std::string& script) const {
    ProcessSpec spec;
    spec.argv = {"/bin/sh", "-c", script};
    spec.env = {{"PATH", "/usr/local/bin:/usr/bin:/bin"}};
    spec.log_file = dir_ / "container.log";
    return spec;
  }

  std::unique_ptr<ContainerProcess> MustStart(const ProcessSpec& spec) {
    Result<std::unique_ptr<ContainerProcess>> p = ContainerProcess::Start(spec);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    if (!p.ok()) return nullptr;
    return std::move(p).value();
  }

  std::vector<LogRecord> Records() const {
    std::vector<LogRecord> out;
    std::ifstream in(dir_ / "container.log");
    std::string line;
    while (std::getline(in, line)) {
      std::optional<LogRecord> r = ParseCriRecord(line);
      EXPECT_TRUE(r.has_value()) << "malformed: " << line;
      if (r) out.push_back(std::move(*r));
    }
    return out;
  }

  std::vector<std::string> Contents(const std::string& stream) const {
    std::vector<std::string> out;
    for (const LogRecord& r : Records()) {
      if (r.stream == stream) out.push_back(r.content);
    }
    return out;
  }

  // Waits (generously) until a stdout line equal to `text` is in the log.
  bool WaitForLine(const std::string& text) const {
    const auto deadline = steady_clock::now() + seconds(20);
    while (steady_clock::now() < deadline) {
      for (const std::string& c : Contents("stdout")) {
        if (c == text) return true;
      }
      std::this_thread::sleep_for(milliseconds(10));
    }
    return false;
  }

  fs::path dir_;
};

// True once `pid` is gone or a zombie (an orphan is reaped by whoever is PID 1, maybe never).
bool ProcessDead(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  if (!in) return true;
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] == 'Z' ||
         stat[paren + 2] == 'X';
}

bool EventuallyDead(pid_t pid) {
  const auto deadline = steady_clock::now() + seconds(10);
  while (steady_clock::now() < deadline) {
    if (ProcessDead(pid)) return true;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return false;
}

TEST_F(ContainerProcessTest, ExitCodeIsKeptAfterReaping) {
  auto p = MustStart(Script("exit 3"));
  ASSERT_TRUE(p);
  EXPECT_GT(p->pid(), 0);
  EXPECT_EQ(p->Wait(), 3);
  EXPECT_EQ(p->TryWait(), std::optional<int>(3));
  EXPECT_EQ(p->Wait(), 3);
  EXPECT_TRUE(p->Stopped());
  EXPECT_TRUE(p->LogsComplete());
  p->Signal(SIGKILL);  // A no-op once reaped.
  EXPECT_EQ(p->TryWait(), std::optional<int>(3));
}

TEST_F(ContainerProcessTest, ExitZero) {
  auto p = MustStart(Script("true"));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->Wait(), 0);
}

TEST_F(ContainerProcessTest, SignalsGive128PlusSignal) {
  auto killed = MustStart(Script("exec /bin/sleep 30"));
  ASSERT_TRUE(killed);
  EXPECT_FALSE(killed->TryWait().has_value());
  EXPECT_FALSE(killed->Stopped());
  killed->Signal(SIGKILL);
  EXPECT_EQ(killed->Wait(), 137);

  auto termed = MustStart(Script("exec /bin/sleep 30"));
  ASSERT_TRUE(termed);
  termed->Signal(SIGTERM);
  EXPECT_EQ(termed->Wait(), 143);
}

TEST_F(ContainerProcessTest, WaitFromManyThreadsAgrees) {
  auto p = MustStart(Script("sleep 0.2; exit 7"));
  ASSERT_TRUE(p);
  std::vector<int> codes(4, -100);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      if (i % 2 == 0) {
        codes[i] = p->Wait();
      } else {
        std::optional<int> c;
        while (!(c = p->TryWait())) std::this_thread::sleep_for(milliseconds(5));
        codes[i] = *c;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int c : codes) EXPECT_EQ(c, 7);
}

TEST_F(ContainerProcessTest, StdoutAndStderrLinesInCriFormat) {
  const auto before = std::chrono::system_clock::now();
  auto p = MustStart(Script("echo out1; echo err1 >&2; echo 'out 2'; echo; echo err2 >&2"));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->Wait(), 0);
  const auto after = std::chrono::system_clock::now();
  EXPECT_EQ(Contents("stdout"), (std::vector<std::string>{"out1", "out 2", ""}));
  EXPECT_EQ(Contents("stderr"), (std::vector<std::string>{"err1", "err2"}));
  for (const LogRecord& r : Records()) {
    EXPECT_FALSE(r.partial);
    EXPECT_GE(r.time, before - seconds(1));
    EXPECT_LE(r.time, after + seconds(1));
  }
  // The raw text: "<timestamp> stdout F out1".
  std::ifstream in(dir_ / "container.log");
  std::string first;
  // The streams are read by separate threads, so stderr's line may come first.
  while (std::getline(in, first) && first.find("stdout") == std::string::npos) {
  }
  const size_t space = first.find(' ');
  ASSERT_NE(space, std::string::npos);
  EXPECT_EQ(first.substr(space), " stdout F out1");
  EXPECT_EQ(first[space - 1], 'Z');
}

TEST_F(ContainerProcessTest, LogFileIsAppendedTo) {
  { std::ofstream(dir_ / "container.log") << FormatCriRecord({}, "stdout", false, "old"); }
  auto p = MustStart(Script("echo new"));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->Wait(), 0);
  EXPECT_EQ(Contents("stdout"), (std::vector<std::string>{"old", "new"}));
}

TEST_F(ContainerProcessTest, UnterminatedOutputIsAPartialRecord) {
  auto p = MustStart(Script("printf abc"));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->Wait(), 0);
  std::vector<LogRecord> records = Records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_TRUE(records[0].partial);
  EXPECT_EQ(records[0].content, "abc");
}

TEST_F(ContainerProcessTest, LongLinesAreSplitAt16KiB) {
  auto p = MustStart(Script("head -c 40000 /dev/zero | tr '\\000' a; echo; echo short"));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->Wait(), 0);
  std::vector<LogRecord> records = Records();
  ASSERT_EQ(records.size(), 4u);
  EXPECT_TRUE(records[0].partial);
  EXPECT_EQ(records[0].content.size(), kMaxLogRecordBytes);
  EXPECT_TRUE(records[1].partial);
  EXPECT_EQ(records[1].content.size(), kMaxLogRecordBytes);
  EXPECT_FALSE(records[2].partial);
  EXPECT_EQ(records[2].content, std::string(40000 - 2 * kMaxLogRecordBytes, 'a'));
  EXPECT_FALSE(records[3].partial);
  EXPECT_EQ(records[3].content, "short");
}

TEST_F(ContainerProcessTest, EnvironmentAndWorkingDirAreHonoured) {
  ::setenv("SLUICE_TEST_PARENT_ONLY", "leaked", 1);
  ProcessSpec spec = Script(
      "echo \"foo=$FOO\"; echo \"parent=${SLUICE_TEST_PARENT_ONLY:-unset}\"; pwd; "
      "echo \"space=$WITH_SPACE\"");
  spec.env.push_back({"FOO", "bar"});
  spec.env.push_back({"WITH_SPACE", "a b=c"});
  fs::create_directory(dir_ / "work");
  spec.working_dir = dir_ / "work";
  auto p = MustStart(spec);
  ::unsetenv("SLUICE_TEST_PARENT_ONLY");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->Wait(), 0);
  EXPECT_EQ(Contents("stdout"),
            (std::vector<std::string>{"foo=bar", "parent=unset", (dir_ / "work").string(),
                                      "space=a b=c"}));
}

TEST_F(ContainerProcessTest, MissingBinaryIsReported) {
  ProcessSpec spec = Script("");
  spec.argv = {"/nonexistent/sluice-binary", "arg"};
  Result<std::unique_ptr<ContainerProcess>> p = ContainerProcess::Start(spec);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kNotFound);
  EXPECT_NE(p.status().message().find("/nonexistent/sluice-binary"), std::string::npos);
  EXPECT_NE(p.status().message().find("No such file or directory"), std::string::npos)
      << p.status().message();
}

TEST_F(ContainerProcessTest, NotExecutableIsReported) {
  const fs::path file = dir_ / "not-executable";
  { std::ofstream(file) << "#!/bin/sh\necho hi\n"; }
  ::chmod(file.c_str(), 0644);
  ProcessSpec spec = Script("");
  spec.argv = {file.string()};
  Result<std::unique_ptr<ContainerProcess>> p = ContainerProcess::Start(spec);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(p.status().message().find(file.string()), std::string::npos);
  EXPECT_NE(p.status().message().find("Permission denied"), std::string::npos)
      << p.status().message();
}

TEST_F(ContainerProcessTest, BadSpecsAreRejected) {
  ProcessSpec relative = Script("");
  relative.argv = {"sh", "-c", "true"};
  EXPECT_EQ(ContainerProcess::Start(relative).status().code(), StatusCode::kInvalidArgument);
  ProcessSpec empty = Script("");
  empty.argv.clear();
  EXPECT_EQ(ContainerProcess::Start(empty).status().code(), StatusCode::kInvalidArgument);
  ProcessSpec bad_dir = Script("true");
  bad_dir.working_dir = dir_ / "missing";
  Result<std::unique_ptr<ContainerProcess>> p = ContainerProcess::Start(bad_dir);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("chdir " + (dir_ / "missing").string()), std::string::npos)
      << p.status().message();
  ProcessSpec bad_log = Script("true");
  bad_log.log_file = dir_ / "missing" / "log";
  EXPECT_FALSE(ContainerProcess::Start(bad_log).ok());
}

TEST_F(ContainerProcessTest, StopGracefullyKillsAfterGraceWhenTermIsIgnored) {
  auto p = MustStart(Script("trap '' TERM; echo ready; while :; do sleep 0.05; done"));
  ASSERT_TRUE(p);
  ASSERT_TRUE(WaitForLine("ready"));
  const auto start = steady_clock::now();
  EXPECT_EQ(p->StopGracefully(milliseconds(300)), 137);
  EXPECT_GE(steady_clock::now() - start, milliseconds(300));
}

TEST_F(ContainerProcessTest, StopGracefullyLetsATrapExitCleanly) {
  auto p =
      MustStart(Script("trap 'echo bye; exit 0' TERM; echo ready; while :; do sleep 0.05; done"));
  ASSERT_TRUE(p);
  ASSERT_TRUE(WaitForLine("ready"));
  // A generous grace: a 0 proves the trap ran (a SIGKILL would give 137).
  EXPECT_EQ(p->StopGracefully(seconds(30)), 0);
  EXPECT_EQ(Contents("stdout"), (std::vector<std::string>{"ready", "bye"}));
}

TEST_F(ContainerProcessTest, StopGracefullyOnAnExitedProcessReturnsItsCode) {
  auto p = MustStart(Script("exit 4"));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->Wait(), 4);
  EXPECT_EQ(p->StopGracefully(seconds(5)), 4);
}

TEST_F(ContainerProcessTest, GroupMembersDieWithTheMainProcess) {
  // The background sleep keeps stdout open; the readers still finish because it is killed.
  auto p = MustStart(Script("/bin/sleep 30 & echo $!; exit 5"));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->Wait(), 5);
  EXPECT_TRUE(p->LogsComplete());
  std::vector<std::string> out = Contents("stdout");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(EventuallyDead(std::stoi(out[0])));
}

TEST_F(ContainerProcessTest, StopGracefullyReachesTheWholeGroup) {
  // Both the shell and its child ignore SIGTERM; the SIGKILL after the grace gets both.
  auto p = MustStart(Script("trap '' TERM; /bin/sleep 30 & echo $!; echo ready; wait"));
  ASSERT_TRUE(p);
  ASSERT_TRUE(WaitForLine("ready"));
  const pid_t child = std::stoi(Contents("stdout")[0]);
  EXPECT_EQ(p->StopGracefully(milliseconds(200)), 137);
  EXPECT_TRUE(EventuallyDead(child));
}

TEST_F(ContainerProcessTest, DestructorKillsARunningProcess) {
  auto p = MustStart(Script("/bin/sleep 30 & echo $!; echo ready; wait"));
  ASSERT_TRUE(p);
  ASSERT_TRUE(WaitForLine("ready"));
  const pid_t main_pid = p->pid();
  const pid_t child = std::stoi(Contents("stdout")[0]);
  p.reset();
  EXPECT_TRUE(ProcessDead(main_pid));
  EXPECT_TRUE(EventuallyDead(child));
}

TEST_F(ContainerProcessTest, WaitForTimesOutWhileRunning) {
  auto p = MustStart(Script("exec /bin/sleep 30"));
  ASSERT_TRUE(p);
  EXPECT_FALSE(p->WaitFor(milliseconds(50)).has_value());
  p->Signal(SIGKILL);
  EXPECT_EQ(p->WaitFor(seconds(30)), std::optional<int>(137));
}

TEST_F(ContainerProcessTest, LinesAppearBeforeTheProcessExits) {
  auto p = MustStart(Script("echo first; echo ready; exec /bin/sleep 30"));
  ASSERT_TRUE(p);
  ASSERT_TRUE(WaitForLine("ready"));
  EXPECT_EQ(Contents("stdout"), (std::vector<std::string>{"first", "ready"}));
  EXPECT_FALSE(p->Stopped());
}

}  // namespace
}  // namespace sluice::node
