// Tests of the log tail and follow (log_file.h).
#include "localcluster/cli/log_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
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
  std::atomic<bool> stop{false};
  follow.stop = [&] { return stop.load(); };
  std::ostringstream followed;
  std::thread t([&] { ASSERT_TRUE(PrintLog(path, follow, followed).ok()); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  {
    std::ofstream f(path, std::ios::app);
    f << "four\n";
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  stop = true;
  t.join();
  EXPECT_EQ(followed.str(), "three\nfour\n");
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace sluice::cli
