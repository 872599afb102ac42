// Tests of the log tail and follow (log_file.h).
#include "localcluster/cli/log_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace sluice::cli {
namespace {

TEST(LogFileTest, LastLines) {
  EXPECT_EQ(LastLines("a\nb\nc\n", 2), "b\nc\n");
  EXPECT_EQ(LastLines("a\nb\nc", 2), "b\nc");
  EXPECT_EQ(LastLines("a\nb\nc\n", 10), "a\nb\nc\n");
  EXPECT_EQ(LastLines("a\nb\nc\n", 0), "");
  EXPECT_EQ(LastLines("", 3), "");
  EXPECT_EQ(LastLines("\n\n", 1), "\n");
}

TEST(LogFileTest, PrintTailAndFollow) {
  const std::string path =
      ::testing::TempDir() + "/sluice_log_test_" + std::to_string(getpid()) + ".log";
  std::filesystem::remove(path);
  std::ostringstream missing;
  EXPECT_EQ(PrintLog(path, {}, missing).code(), StatusCode::kNotFound);
  EXPECT_EQ(ReadLastLines(path, 3).status().code(), StatusCode::kNotFound);
  {
    std::ofstream f(path);
    f << "one\ntwo\nthree\n";
  }
  std::ostringstream all;
  ASSERT_TRUE(PrintLog(path, {}, all).ok());
  EXPECT_EQ(all.str(), "one\ntwo\nthree\n");
  EXPECT_EQ(*ReadLastLines(path, 1), "three\n");

  PrintLogOptions follow;
  follow.tail = 1;
  follow.follow = true;
  follow.poll_interval = std::chrono::milliseconds(10);
  std::ostringstream followed;
  // `stop` is asked on the follower's thread after the tail and after each poll's output, so it
  // may read `followed`: it counts the polls and notes when "four" is out.
  std::atomic<int> polls{0};
  std::atomic<bool> printed_four{false};
  std::atomic<bool> stop{false};
  follow.stop = [&] {
    if (followed.str().find("four\n") != std::string::npos) printed_four = true;
    ++polls;
    return stop.load();
  };
  std::thread t([&] { ASSERT_TRUE(PrintLog(path, follow, followed).ok()); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  const auto wait_until = [&](const auto& done) {
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  };
  wait_until([&] { return polls.load() >= 1; });  // The tail is out; the line comes after it.
  {
    std::ofstream f(path, std::ios::app);
    f << "four\n";
  }
  wait_until([&] { return printed_four.load(); });
  const int seen = polls.load();
  wait_until([&] { return polls.load() >= seen + 2; });  // A whole poll after it adds nothing.
  stop = true;
  t.join();
  EXPECT_EQ(followed.str(), "three\nfour\n");
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace sluice::cli
