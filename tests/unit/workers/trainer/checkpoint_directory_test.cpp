#include "workers/trainer/checkpoint_directory.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

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

TEST(CheckpointDirectoryTest, ChecksumsCatchADamagedCheckpoint) {
  const std::string dir = ::testing::TempDir() + "/ckpt_checksum_test";
  fs::remove_all(dir);
  Result<std::string> tmp = BeginCheckpoint(dir, 10);
  ASSERT_TRUE(tmp.ok()) << tmp.status().ToString();
  std::ofstream(*tmp + "/state.json") << "{\"step\": 10}\n";
  std::ofstream(*tmp + "/weights.pt", std::ios::binary) << std::string(3 << 20, 'w');
  ASSERT_TRUE(CommitCheckpoint(dir, 10, 2).ok());
  const std::string root = dir + "/step-00000010";
  ASSERT_TRUE(fs::exists(root + "/" + kChecksumsFile));
  EXPECT_TRUE(VerifyCheckpoint(dir, 10).ok());

  // A flipped byte, a truncation, a lost file, a damaged list: each named.
  struct Damage {
    const char* what;
    std::function<void()> apply;
    const char* names;
  };
  const std::string weights = std::string(3 << 20, 'w');
  const Damage damages[] = {
      {"flipped byte",
       [&] {
         std::fstream f(root + "/weights.pt", std::ios::in | std::ios::out | std::ios::binary);
         f.seekp(2 << 20);
         f.put('x');
       },
       "weights.pt does not match its checksum"},
      {"truncated", [&] { fs::resize_file(root + "/weights.pt", 1 << 20); },
       "weights.pt does not match"},
      {"missing", [&] { fs::remove(root + "/state.json"); }, "state.json is missing"},
      {"malformed list", [&] { std::ofstream(root + "/" + kChecksumsFile) << "{\"files\": 3"; },
       "checksums.json is malformed"},
  };
  for (const Damage& d : damages) {  // The list's own damage comes last.
    SCOPED_TRACE(d.what);
    d.apply();
    const Status s = VerifyCheckpoint(dir, 10);
    EXPECT_EQ(s.code(), StatusCode::kCorruption) << s.ToString();
    EXPECT_NE(s.message().find(d.names), std::string::npos) << s.ToString();
    // Put the committed files back; they verify again.
    std::ofstream(root + "/weights.pt", std::ios::binary) << weights;
    std::ofstream(root + "/state.json") << "{\"step\": 10}\n";
    if (std::string(d.what) != "malformed list") {
      EXPECT_TRUE(VerifyCheckpoint(dir, 10).ok());
    }
  }
  // An unlisted file is not checked; a checkpoint from before checksums passes unverified.
  fs::remove_all(dir);
  tmp = BeginCheckpoint(dir, 20);
  ASSERT_TRUE(tmp.ok());
  std::ofstream(*tmp + "/state.json") << "{}\n";
  ASSERT_TRUE(CommitCheckpoint(dir, 20, 2).ok());
  std::ofstream(dir + "/step-00000020/notes.txt") << "added later\n";
  EXPECT_TRUE(VerifyCheckpoint(dir, 20).ok());
  fs::remove(dir + "/step-00000020/" + std::string(kChecksumsFile));
  std::ofstream(dir + "/step-00000020/state.json") << "anything\n";
  EXPECT_TRUE(VerifyCheckpoint(dir, 20).ok());
}

TEST(CheckpointDirectoryTest, HeldThroughRoundTripsAndIsChecksummed) {
  const std::string dir = ::testing::TempDir() + "/ckpt_held_test";
  fs::remove_all(dir);
  Result<std::string> tmp = BeginCheckpoint(dir, 30);
  ASSERT_TRUE(tmp.ok());
  ASSERT_TRUE(WriteHeldThrough(*tmp, 27).ok());
  ASSERT_TRUE(CommitCheckpoint(dir, 30, 2).ok());
  const std::string root = dir + "/step-00000030";
  EXPECT_EQ(ReadHeldThrough(root).value(), 27);
  std::ofstream(root + "/" + kDataflowFile) << R"({"held_through": 28})"
                                            << "\n";
  EXPECT_EQ(VerifyCheckpoint(dir, 30).code(), StatusCode::kCorruption);
  for (const char* bad : {R"({"held_through": -1})", R"({"held_through": "27"})", "{", "{}"}) {
    std::ofstream(root + "/" + kDataflowFile) << bad;
    EXPECT_EQ(ReadHeldThrough(root).status().code(), StatusCode::kCorruption) << bad;
  }
  fs::remove(root + "/" + kDataflowFile);
  EXPECT_EQ(ReadHeldThrough(root).value(), 0) << "a checkpoint from before held acknowledgements";
}

}  // namespace
}  // namespace sluice::trainer
