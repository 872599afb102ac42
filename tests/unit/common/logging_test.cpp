#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/logging/level.h"
#include "common/logging/logger.h"

namespace sluice::log {
namespace {

using std::chrono::milliseconds;

// Restores the process-wide minimum level after each test.
class LoggingTest : public ::testing::Test {
 protected:
  LoggingTest() : saved_level_(MinLevel()) { SetMinLevel(Level::kDebug); }
  ~LoggingTest() override { SetMinLevel(saved_level_); }

  Logger MakeLogger(std::string component) {
    return Logger(std::move(component), clock_,
                  [this](std::string_view line) { lines_.emplace_back(line); });
  }

  FakeClock clock_;  // 2026-01-01T00:00:00Z.
  std::vector<std::string> lines_;

 private:
  Level saved_level_;
};

TEST_F(LoggingTest, ExactLineFormat) {
  Logger logger = MakeLogger("dataflow");
  clock_.Advance(milliseconds(123));
  logger.Info("lease expired", {{"lease", "abc-1"}, {"age_seconds", 3.5}});
  clock_.Advance(std::chrono::hours(24 * 325 + 10) + milliseconds(877));
  logger.Error("plain");
  ASSERT_EQ(lines_.size(), 2u);
  EXPECT_EQ(lines_[0],
            R"({"time":"2026-01-01T00:00:00.123Z","level":"info","component":"dataflow",)"
            R"("msg":"lease expired","lease":"abc-1","age_seconds":3.5})");
  EXPECT_EQ(lines_[1],
            R"({"time":"2026-11-22T10:00:01.000Z","level":"error","component":"dataflow",)"
            R"("msg":"plain"})");
}

TEST_F(LoggingTest, EveryLevelName) {
  Logger logger = MakeLogger("c");
  logger.Debug("d");
  logger.Info("i");
  logger.Warn("w");
  logger.Error("e");
  logger.Log(Level::kWarn, "l");
  ASSERT_EQ(lines_.size(), 5u);
  const char* expected[] = {"debug", "info", "warn", "error", "warn"};
  for (size_t i = 0; i < lines_.size(); ++i) {
    EXPECT_EQ(nlohmann::json::parse(lines_[i])["level"], expected[i]);
  }
}

TEST_F(LoggingTest, LevelFiltering) {
  Logger logger = MakeLogger("c");
  SetMinLevel(Level::kWarn);
  EXPECT_FALSE(logger.Enabled(Level::kDebug));
  EXPECT_FALSE(logger.Enabled(Level::kInfo));
  EXPECT_TRUE(logger.Enabled(Level::kWarn));
  EXPECT_TRUE(logger.Enabled(Level::kError));
  logger.Debug("no");
  logger.Info("no");
  logger.Warn("yes");
  logger.Error("yes");
  EXPECT_EQ(lines_.size(), 2u);
  SetMinLevel(Level::kError);
  logger.With({{"k", 1}}).Warn("no");
  EXPECT_EQ(lines_.size(), 2u);
  SetMinLevel(Level::kDebug);
  logger.Debug("yes");
  EXPECT_EQ(lines_.size(), 3u);
}

TEST(LogLevelTest, Parse) {
  EXPECT_EQ(*ParseLevel("debug"), Level::kDebug);
  EXPECT_EQ(*ParseLevel("info"), Level::kInfo);
  EXPECT_EQ(*ParseLevel("warn"), Level::kWarn);
  EXPECT_EQ(*ParseLevel("error"), Level::kError);
  EXPECT_EQ(*ParseLevel("INFO"), Level::kInfo);
  EXPECT_EQ(*ParseLevel("Warn"), Level::kWarn);
  for (Level level : {Level::kDebug, Level::kInfo, Level::kWarn, Level::kError}) {
    EXPECT_EQ(*ParseLevel(LevelName(level)), level);
  }
}

TEST(LogLevelTest, ParseErrors) {
  const Status s = ParseLevel("verbose").status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "unknown log level \"verbose\"; allowed: debug, info, warn, error");
  EXPECT_EQ(ParseLevel("").status().message(),
            "unknown log level \"\"; allowed: debug, info, warn, error");
  EXPECT_FALSE(ParseLevel("warning").ok());
  EXPECT_FALSE(ParseLevel(" info").ok());
}

TEST_F(LoggingTest, FieldsOfEachType) {
  Logger logger = MakeLogger("c");
  nlohmann::json nested = {{"b", 2}, {"a", {1, "x", nullptr}}};
  logger.Info("types", {{"str", "s"},
                        {"std_string", std::string("t")},
                        {"int", 42},
                        {"negative", -7},
                        {"int64_min", std::numeric_limits<int64_t>::min()},
                        {"uint64_max", std::numeric_limits<uint64_t>::max()},
                        {"double", 0.1},
                        {"whole_double", 2.0},
                        {"infinite", std::numeric_limits<double>::infinity()},
                        {"bool", true},
                        {"null", nullptr},
                        {"nested", nested},
                        {"array", nlohmann::json::array({1, 2})},
                        {"escaped", "quote \" backslash \\ newline \n tab \t"}});
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_EQ(lines_[0],
            R"({"time":"2026-01-01T00:00:00.000Z","level":"info","component":"c","msg":"types",)"
            R"("str":"s","std_string":"t","int":42,"negative":-7,)"
            R"("int64_min":-9223372036854775808,"uint64_max":18446744073709551615,)"
            R"("double":0.1,"whole_double":2.0,"infinite":null,"bool":true,"null":null,)"
            R"("nested":{"a":[1,"x",null],"b":2},"array":[1,2],)"
            R"("escaped":"quote \" backslash \\ newline \n tab \t"})");
}

TEST_F(LoggingTest, ChildLoggerFields) {
  Logger logger = MakeLogger("policy");
  Logger child = logger.With({{"policy", "p1"}, {"generation", 3}});
  Logger grandchild = child.With({{"worker", "w-0"}});
  child.Info("child", {{"extra", true}});
  grandchild.Warn("grandchild");
  // A call overrides a fixed field's value, keeping its position.
  grandchild.Info("override", {{"policy", "p2"}, {"last", 1}});
  logger.Info("parent unchanged");
  ASSERT_EQ(lines_.size(), 4u);
  const std::string prefix = R"({"time":"2026-01-01T00:00:00.000Z",)";
  EXPECT_EQ(lines_[0], prefix + R"("level":"info","component":"policy","msg":"child",)" +
                           R"("policy":"p1","generation":3,"extra":true})");
  EXPECT_EQ(lines_[1], prefix + R"("level":"warn","component":"policy","msg":"grandchild",)" +
                           R"("policy":"p1","generation":3,"worker":"w-0"})");
  EXPECT_EQ(lines_[2], prefix + R"("level":"info","component":"policy","msg":"override",)" +
                           R"("policy":"p2","generation":3,"worker":"w-0","last":1})");
  EXPECT_EQ(lines_[3], prefix + R"("level":"info","component":"policy","msg":"parent unchanged"})");
  EXPECT_EQ(grandchild.component(), "policy");
}

TEST_F(LoggingTest, FixedKeysAreNotOverwritten) {
  Logger logger = MakeLogger("c").With({{"component", "fake"}});
  logger.Info("real", {{"msg", "fake msg"}, {"time", 0}, {"level", "debug"}});
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_EQ(lines_[0],
            R"({"time":"2026-01-01T00:00:00.000Z","level":"info","component":"c","msg":"real",)"
            R"("fields.component":"fake","fields.msg":"fake msg","fields.time":0,)"
            R"("fields.level":"debug"})");
}

TEST_F(LoggingTest, InvalidUtf8BecomesReplacementCharacter) {
  Logger logger = MakeLogger("c");
  logger.Info(
      "bad \xff byte",
      {{"value", "trunc\xe2\x82"}, {"key\xc0", 1}, {"nested", nlohmann::json::array({"x\xfe"})}});
  ASSERT_EQ(lines_.size(), 1u);
  const nlohmann::json parsed = nlohmann::json::parse(lines_[0]);  // Throws if invalid.
  EXPECT_EQ(parsed["msg"], "bad \xEF\xBF\xBD byte");
  EXPECT_EQ(parsed["value"], "trunc\xEF\xBF\xBD");
  EXPECT_EQ(parsed["key\xEF\xBF\xBD"], 1);
  EXPECT_EQ(parsed["nested"][0], "x\xEF\xBF\xBD");
  // Valid multi-byte text is kept as is, not \u-escaped.
  lines_.clear();
  logger.Info("caf\xc3\xa9 \xe2\x82\xac");
  EXPECT_NE(lines_[0].find("\"msg\":\"caf\xc3\xa9 \xe2\x82\xac\""), std::string::npos);
}

TEST(LogTimestampTest, Rfc3339UtcMilliseconds) {
  using std::chrono::seconds;
  using WallTime = Clock::WallTime;
  EXPECT_EQ(FormatTimestamp(WallTime()), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(FormatTimestamp(WallTime(seconds(1767225600))), "2026-01-01T00:00:00.000Z");
  // Truncated, not rounded: 999.9 ms is still in the same second.
  EXPECT_EQ(FormatTimestamp(WallTime(seconds(1767225600) + std::chrono::microseconds(999999))),
            "2026-01-01T00:00:00.999Z");
  // A leap day.
  EXPECT_EQ(FormatTimestamp(WallTime(seconds(951782400) + seconds(86399) + milliseconds(5))),
            "2000-02-29T23:59:59.005Z");
}

// A sink that writes one character at a time, so interleaving would show if calls overlapped.
TEST_F(LoggingTest, ConcurrentWritersProduceWholeLines) {
  std::string out;
  Logger logger("concurrency", clock_, [&out](std::string_view line) {
    for (char c : line) out.push_back(c);
    out.push_back('\n');
  });
  constexpr int kThreads = 8;
  constexpr int kLines = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Logger mine = logger.With({{"thread", t}});
      for (int i = 0; i < kLines; ++i)
        mine.Info("message", {{"i", i}, {"pad", std::string(200, 'x')}});
    });
  }
  for (auto& thread : threads) thread.join();

  std::istringstream in(out);
  std::string line;
  std::map<int, int> next_per_thread;
  int count = 0;
  while (std::getline(in, line)) {
    const nlohmann::json parsed = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(parsed.is_discarded()) << line;
    const int t = parsed["thread"];
    // Each thread's lines keep their order.
    EXPECT_EQ(parsed["i"], next_per_thread[t]++);
    ++count;
  }
  EXPECT_EQ(count, kThreads * kLines);
}

// The real stderr output, redirected to a file for the test.
TEST_F(LoggingTest, StderrOutputWritesWholeLines) {
  std::string path_template =
      (std::filesystem::temp_directory_path() / "sluice_logging_test_XXXXXX").string();
  char* path = path_template.data();
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  std::fflush(stderr);
  const int saved_stderr = dup(STDERR_FILENO);
  ASSERT_GE(saved_stderr, 0);
  ASSERT_GE(dup2(fd, STDERR_FILENO), 0);
  constexpr int kThreads = 4;
  constexpr int kLines = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      Logger logger("stderr_test");  // Separate loggers share the stderr lock.
      for (int i = 0; i < kLines; ++i) logger.Info("hello", {{"t", t}, {"i", i}});
    });
  }
  for (auto& thread : threads) thread.join();
  dup2(saved_stderr, STDERR_FILENO);
  close(saved_stderr);
  close(fd);

  std::ifstream in(path);
  std::string line;
  int count = 0;
  while (std::getline(in, line)) {
    const nlohmann::json parsed = nlohmann::json::parse(line, nullptr, false);
    ASSERT_FALSE(parsed.is_discarded()) << line;
    EXPECT_EQ(parsed["component"], "stderr_test");
    ++count;
  }
  std::remove(path);
  EXPECT_EQ(count, kThreads * kLines);
}

}  // namespace
}  // namespace sluice::log
