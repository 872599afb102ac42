#include "workers/trainer/checkpoint_directory.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace sluice::trainer {
namespace {

namespace fs = std::filesystem;

TEST(CheckpointDirectoryTest, NamesRoundTrip) {
  EXPECT_EQ(CheckpointName(40), "step-00000040");
  EXPECT_EQ(CheckpointName(123456789), "step-123456789");
  EXPECT_EQ(ParseCheckpointName("step-00000040"), 40);
  EXPECT_EQ(ParseCheckpointName("step-123456789"), 123456789);
  EXPECT_EQ(ParseCheckpointName(".step-00000040.tmp"), std::nullopt);
  EXPECT_EQ(ParseCheckpointName("step-0040"), std::nullopt);
  EXPECT_EQ(ParseCheckpointName("step-0000004x"), std::nullopt);
}

TEST(CheckpointDirectoryTest, CommitPublishesAtomicallyAndKeepsTheNewest) {
  const std::string dir = ::testing::TempDir() + "/ckpt_dir_test";
  fs::remove_all(dir);
  Result<std::vector<int64_t>> none = ListCheckpoints(dir);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  for (int64_t step : {10, 20, 30, 40}) {
    Result<std::string> tmp = BeginCheckpoint(dir, step);
    ASSERT_TRUE(tmp.ok()) << tmp.status().ToString();
    std::ofstream(*tmp + "/state.json") << "{\"step\": " << step << "}\n";
    // Not visible until committed.
    EXPECT_EQ(ListCheckpoints(dir)->size(),
              static_cast<size_t>(std::min<int64_t>(step / 10 - 1, 2)));
    ASSERT_TRUE(CommitCheckpoint(dir, step, 2).ok());
  }
  EXPECT_EQ(*ListCheckpoints(dir), (std::vector<int64_t>{30, 40}));
  EXPECT_TRUE(fs::exists(dir + "/step-00000040/state.json"));
  // A crash mid-write leaves a temporary that is never listed and is cleaned at the next commit.
  ASSERT_TRUE(BeginCheckpoint(dir, 50).ok());
  EXPECT_EQ(*ListCheckpoints(dir), (std::vector<int64_t>{30, 40}));
  ASSERT_TRUE(BeginCheckpoint(dir, 60).ok());
  ASSERT_TRUE(CommitCheckpoint(dir, 60, 2).ok());
  EXPECT_EQ(*ListCheckpoints(dir), (std::vector<int64_t>{40, 60}));
  EXPECT_FALSE(fs::exists(dir + "/.step-00000050.tmp"));
}

}  // namespace
}  // namespace sluice::trainer
