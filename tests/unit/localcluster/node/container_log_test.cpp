// Tests of the CRI log format helpers, ParseLogOptions, ReadLog and FollowLog.
#include "localcluster/node/container_log.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>

namespace sluice::node {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::system_clock;

// 2024-05-01T12:00:00Z.
const system_clock::time_point kT0 =
    std::chrono::sys_days(std::chrono::year(2024) / std::chrono::May / std::chrono::day(1)) +
    std::chrono::hours(12);

class ContainerLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sluice_container_log_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    file_ = dir_ / "c.log";
  }
  void TearDown() override { fs::remove_all(dir_); }

  void Append(system_clock::time_point t, const std::string& stream, bool partial,
              const std::string& content) {
    std::ofstream(file_, std::ios::app) << FormatCriRecord(t, stream, partial, content);
  }

  std::string Read(const LogOptions& options, system_clock::time_point now = kT0 + seconds(100)) {
    Result<std::string> r = ReadLog(file_, options, now);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : std::string("<error>");
  }

  fs::path dir_;
  fs::path file_;
};

TEST(CriTimestampTest, FormatsNineDigitsUtc) {
  EXPECT_EQ(FormatCriTimestamp(kT0), "2024-05-01T12:00:00.000000000Z");
  EXPECT_EQ(FormatCriTimestamp(kT0 + std::chrono::microseconds(123456)),
            "2024-05-01T12:00:00.123456000Z");
  EXPECT_EQ(FormatCriTimestamp(system_clock::time_point{}), "1970-01-01T00:00:00.000000000Z");
}

TEST(CriTimestampTest, ParsesRfc3339Variants) {
  EXPECT_EQ(ParseCriTimestamp("2024-05-01T12:00:00.000000000Z"), kT0);
  EXPECT_EQ(ParseCriTimestamp("2024-05-01T12:00:00Z"), kT0);
  EXPECT_EQ(ParseCriTimestamp("2024-05-01T12:00:00.5Z"), kT0 + milliseconds(500));
  EXPECT_EQ(ParseCriTimestamp("2024-05-01T14:30:00+02:30"), kT0);
  EXPECT_EQ(ParseCriTimestamp("2024-05-01T10:00:00-02:00"), kT0);
  const auto now = std::chrono::time_point_cast<std::chrono::microseconds>(system_clock::now());
  EXPECT_EQ(ParseCriTimestamp(FormatCriTimestamp(now)), now);
  EXPECT_FALSE(ParseCriTimestamp("2024-05-01 12:00:00Z"));
  EXPECT_FALSE(ParseCriTimestamp("2024-05-01T12:00:00"));
  EXPECT_FALSE(ParseCriTimestamp("2024-13-01T12:00:00Z"));
  EXPECT_FALSE(ParseCriTimestamp("2024-05-01T12:00:00.Z"));
  EXPECT_FALSE(ParseCriTimestamp(""));
}

TEST(CriRecordTest, RoundTrips) {
  const std::string line = FormatCriRecord(kT0, "stderr", true, "a b  c");
  EXPECT_EQ(line, "2024-05-01T12:00:00.000000000Z stderr P a b  c\n");
  std::optional<LogRecord> r = ParseCriRecord(line);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->time, kT0);
  EXPECT_EQ(r->stream, "stderr");
  EXPECT_TRUE(r->partial);
  EXPECT_EQ(r->content, "a b  c");
  std::optional<LogRecord> empty = ParseCriRecord(FormatCriRecord(kT0, "stdout", false, ""));
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->content, "");
  EXPECT_FALSE(empty->partial);
  EXPECT_FALSE(ParseCriRecord("garbage"));
  EXPECT_FALSE(ParseCriRecord("2024-05-01T12:00:00Z stdout X hi"));
  EXPECT_FALSE(ParseCriRecord("2024-05-01T12:00:00Z other F hi"));
}

TEST(ParseLogOptionsTest, ParsesEveryParameter) {
  Result<LogOptions> o = ParseLogOptions({{"tailLines", "5"},
                                          {"timestamps", "true"},
                                          {"sinceSeconds", "60"},
                                          {"limitBytes", "100"},
                                          {"follow", "1"},
                                          {"previous", "false"},
                                          {"sinceTime", "2024-05-01T12:00:00Z"},
                                          {"container", "main"}});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->tail_lines, 5);
  EXPECT_TRUE(o->timestamps);
  EXPECT_EQ(o->since_seconds, 60);
  EXPECT_EQ(o->limit_bytes, 100);
  EXPECT_TRUE(o->follow);
  EXPECT_FALSE(o->previous);
  EXPECT_EQ(o->since_time, kT0);

  Result<LogOptions> none = ParseLogOptions({});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->tail_lines);
  EXPECT_FALSE(none->timestamps);
  EXPECT_FALSE(none->since_seconds);
  EXPECT_FALSE(none->limit_bytes);
}

TEST(ParseLogOptionsTest, RejectsBadValuesNamingTheParameter) {
  for (const auto& [name, value] :
       std::vector<std::pair<std::string, std::string>>{{"tailLines", "abc"},
                                                        {"tailLines", "-1"},
                                                        {"tailLines", "5x"},
                                                        {"sinceSeconds", "0"},
                                                        {"sinceSeconds", ""},
                                                        {"limitBytes", "0"},
                                                        {"limitBytes", "99999999999999999999999"},
                                                        {"timestamps", "maybe"},
                                                        {"sinceTime", "yesterday"}}) {
    Result<LogOptions> o = ParseLogOptions({{name, value}});
    ASSERT_FALSE(o.ok()) << name << "=" << value;
    EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(o.status().field(), name);
    EXPECT_NE(o.status().message().find(name), std::string::npos) << o.status().message();
  }
}

TEST_F(ContainerLogTest, ReadsContentsOfBothStreams) {
  Append(kT0, "stdout", false, "one");
  Append(kT0 + seconds(1), "stderr", false, "two");
  Append(kT0 + seconds(2), "stdout", false, "");
  Append(kT0 + seconds(3), "stdout", false, "four");
  EXPECT_EQ(Read({}), "one\ntwo\n\nfour\n");
}

TEST_F(ContainerLogTest, EmptyFileIsEmptyLog) {
  std::ofstream(file_).flush();
  EXPECT_EQ(Read({}), "");
}

TEST_F(ContainerLogTest, MissingFileIsNotFound) {
  EXPECT_EQ(ReadLog(dir_ / "nope.log", {}, kT0).status().code(), StatusCode::kNotFound);
}

TEST_F(ContainerLogTest, TailCountsWholeLines) {
  Append(kT0, "stdout", false, "a");
  Append(kT0, "stdout", true, "b1");
  Append(kT0, "stdout", false, "b2");
  Append(kT0, "stdout", false, "c");
  LogOptions o;
  o.tail_lines = 2;
  EXPECT_EQ(Read(o), "b1b2\nc\n");
  o.tail_lines = 0;
  EXPECT_EQ(Read(o), "");
  o.tail_lines = 10;
  EXPECT_EQ(Read(o), "a\nb1b2\nc\n");
}

TEST_F(ContainerLogTest, PartialRecordsAreJoined) {
  Append(kT0, "stdout", true, "ab");
  Append(kT0 + seconds(1), "stdout", true, "cd");
  Append(kT0 + seconds(2), "stdout", false, "ef");
  Append(kT0 + seconds(3), "stdout", true, "tail-without-newline");
  EXPECT_EQ(Read({}), "abcdef\ntail-without-newline");
  LogOptions o;
  o.timestamps = true;
  EXPECT_EQ(Read(o),
            "2024-05-01T12:00:00.000000000Z abcdef\n"
            "2024-05-01T12:00:03.000000000Z tail-without-newline");
}

TEST_F(ContainerLogTest, TimestampsArePrefixed) {
  Append(kT0 + milliseconds(1500), "stdout", false, "hello");
  LogOptions o;
  o.timestamps = true;
  EXPECT_EQ(Read(o), "2024-05-01T12:00:01.500000000Z hello\n");
}

TEST_F(ContainerLogTest, SinceDropsOlderLines) {
  Append(kT0, "stdout", false, "old");
  Append(kT0 + seconds(50), "stdout", false, "middle");
  Append(kT0 + seconds(90), "stdout", false, "new");
  LogOptions o;
  o.since_seconds = 20;
  EXPECT_EQ(Read(o, kT0 + seconds(100)), "new\n");
  o.since_seconds = 50;
  EXPECT_EQ(Read(o, kT0 + seconds(100)), "middle\nnew\n");
  LogOptions t;
  t.since_time = kT0 + seconds(1);
  EXPECT_EQ(Read(t), "middle\nnew\n");
  o.tail_lines = 1;
  EXPECT_EQ(Read(o, kT0 + seconds(100)), "new\n");
}

TEST_F(ContainerLogTest, LimitBytesTruncates) {
  Append(kT0, "stdout", false, "hello");
  Append(kT0, "stdout", false, "world");
  LogOptions o;
  o.limit_bytes = 8;
  EXPECT_EQ(Read(o), "hello\nwo");
  o.limit_bytes = 1000;
  EXPECT_EQ(Read(o), "hello\nworld\n");
}

TEST_F(ContainerLogTest, SkipsMalformedAndUnterminatedLines) {
  Append(kT0, "stdout", false, "good");
  std::ofstream(file_, std::ios::app) << "not a record\n2024-05-01T12:00:00Z stdout F half";
  EXPECT_EQ(Read({}), "good\n");
}

TEST_F(ContainerLogTest, FormatLogLine) {
  EXPECT_EQ(FormatLogLine({kT0, "x", true}, false), "x\n");
  EXPECT_EQ(FormatLogLine({kT0, "x", false}, false), "x");
  EXPECT_EQ(FormatLogLine({kT0, "x", true}, true), "2024-05-01T12:00:00.000000000Z x\n");
}

// Collects FollowLog's output on a thread.
class Follower {
 public:
  Follower(const fs::path& file, LogOptions options, system_clock::time_point now)
      : thread_([this, file, options, now] {
          status_ = FollowLog(
              file, options, now, cancel_.Token(), [this] { return ended_.load(); },
              [this](std::string_view s) {
                std::lock_guard<std::mutex> lock(mu_);
                out_ += s;
                return true;
              },
              milliseconds(10));
          done_ = true;
        }) {}
  ~Follower() {
    cancel_.Cancel();
    thread_.join();
  }

  std::string out() {
    std::lock_guard<std::mutex> lock(mu_);
    return out_;
  }
  // Waits (generously) for the output to be `want`.
  bool WaitFor(const std::string& want) {
    const auto deadline = std::chrono::steady_clock::now() + seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      if (out() == want) return true;
      std::this_thread::sleep_for(milliseconds(5));
    }
    return false;
  }
  bool WaitDone() {
    const auto deadline = std::chrono::steady_clock::now() + seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      if (done_) return true;
      std::this_thread::sleep_for(milliseconds(5));
    }
    return false;
  }
  void End() { ended_ = true; }
  void Cancel() { cancel_.Cancel(); }
  Status status() { return status_; }

 private:
  CancellationSource cancel_;
  std::atomic<bool> ended_{false};
  std::atomic<bool> done_{false};
  std::mutex mu_;
  std::string out_;
  Status status_;
  std::thread thread_;
};

TEST_F(ContainerLogTest, FollowSeesAppendedLines) {
  Append(kT0, "stdout", false, "one");
  Append(kT0, "stdout", false, "two");
  LogOptions o;
  o.tail_lines = 1;
  Follower f(file_, o, kT0 + seconds(1));
  ASSERT_TRUE(f.WaitFor("two\n")) << f.out();
  Append(kT0 + seconds(1), "stdout", false, "three");
  ASSERT_TRUE(f.WaitFor("two\nthree\n")) << f.out();
  Append(kT0 + seconds(2), "stdout", true, "fo");
  Append(kT0 + seconds(2), "stdout", false, "ur");
  ASSERT_TRUE(f.WaitFor("two\nthree\nfour\n")) << f.out();
  Append(kT0 + seconds(3), "stderr", true, "last");
  f.End();
  ASSERT_TRUE(f.WaitDone());
  EXPECT_TRUE(f.status().ok());
  EXPECT_EQ(f.out(), "two\nthree\nfour\nlast");
}

TEST_F(ContainerLogTest, FollowStopsOnCancel) {
  Append(kT0, "stdout", false, "one");
  Follower f(file_, {}, kT0);
  ASSERT_TRUE(f.WaitFor("one\n"));
  f.Cancel();
  ASSERT_TRUE(f.WaitDone());
  EXPECT_TRUE(f.status().ok());
}

TEST_F(ContainerLogTest, FollowStopsAtLimitBytes) {
  Append(kT0, "stdout", false, "abc");
  LogOptions o;
  o.limit_bytes = 6;
  Follower f(file_, o, kT0);
  ASSERT_TRUE(f.WaitFor("abc\n"));
  Append(kT0, "stdout", false, "defgh");
  ASSERT_TRUE(f.WaitDone());
  EXPECT_EQ(f.out(), "abc\nde");
}

TEST_F(ContainerLogTest, FollowOfMissingFileIsNotFound) {
  EXPECT_EQ(
      FollowLog(dir_ / "nope", {}, kT0, {}, nullptr, [](std::string_view) { return true; }).code(),
      StatusCode::kNotFound);
}

TEST_F(ContainerLogTest, FollowStopsWhenTheWriterGoesAway) {
  Append(kT0, "stdout", false, "one");
  int calls = 0;
  Status s = FollowLog(
      file_, {}, kT0, {}, nullptr,
      [&](std::string_view) {
        ++calls;
        return false;
      },
      milliseconds(10));
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace sluice::node
