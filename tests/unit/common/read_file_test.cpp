// file::ReadWholeFile: whole files of any size, files the kernel reports as empty, and errors
// that say what is wrong.
#include "common/file/read_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace sluice::file {
namespace read_file_test {

namespace fs = std::filesystem;

class ReadWholeFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("sluice-read-file-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& data) {
    const fs::path path = dir_ / name;
    std::ofstream(path, std::ios::binary) << data;
    return path.string();
  }
  fs::path dir_;
};

TEST_F(ReadWholeFileTest, ReadsEveryByte) {
  std::string big(3u << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7 + i / 4099);
  for (const std::string& data : {std::string(), std::string("x"), std::string("a\0b", 3), big}) {
    Result<std::string> read = ReadWholeFile(Write("f", data));
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    EXPECT_EQ(*read, data);
  }
}

TEST_F(ReadWholeFileTest, ReadsAFileTheKernelSaysIsEmpty) {
  Result<std::string> read = ReadWholeFile("/proc/self/status");  // st_size 0.
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_NE(read->find("Pid:"), std::string::npos);
}

TEST_F(ReadWholeFileTest, AMissingFileIsNotFoundAndNamesThePath) {
  const std::string path = (dir_ / "absent.json").string();
  Result<std::string> read = ReadWholeFile(path);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::kNotFound);
  EXPECT_NE(read.status().message().find(path), std::string::npos);
  EXPECT_NE(read.status().message().find("No such file"), std::string::npos);
}

TEST_F(ReadWholeFileTest, ADirectoryIsAnErrorNotEmptyContent) {
  Result<std::string> read = ReadWholeFile(dir_.string());
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::kInternal);
  EXPECT_NE(read.status().message().find("Is a directory"), std::string::npos);
}

}  // namespace read_file_test
}  // namespace sluice::file
