// Tests of EnsureAccessToken and the secret-file helpers beneath it.
#include "localcluster/apiserver/access_token.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "localcluster/apiserver/secret_file.h"
#include "tests/unit/localcluster/apiserver/local_tls_server.h"

namespace sluice::apiserver {
namespace {

namespace fs = std::filesystem;
using testutil::ReadAll;
using testutil::ScratchDir;

mode_t Mode(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

size_t Entries(const fs::path& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

TEST(AccessToken, GeneratesA256BitHexTokenOnceAndKeepsIt) {
  ScratchDir tmp;
  const std::string path = tmp.File("token");
  Result<std::string> token = EnsureAccessToken(path);
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  EXPECT_EQ(token->size(), 64u);
  EXPECT_EQ(token->find_first_not_of("0123456789abcdef"), std::string::npos) << *token;
  EXPECT_EQ(ReadAll(path), *token + "\n");
  EXPECT_EQ(Mode(path), 0600u);
  EXPECT_EQ(Entries(tmp.path()), 1u) << "no temporary file is left behind";

  Result<std::string> again = EnsureAccessToken(path);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *token);

  ScratchDir other;
  EXPECT_NE(*EnsureAccessToken(other.File("token")), *token);
}

TEST(AccessToken, ReadsAnExistingTokenTrimmed) {
  ScratchDir tmp;
  const std::string path = tmp.File("token");
  { std::ofstream(path) << "  my-token\r\n\n"; }
  Result<std::string> token = EnsureAccessToken(path);
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  EXPECT_EQ(*token, "my-token");
  EXPECT_EQ(ReadAll(path), "  my-token\r\n\n") << "an existing file is not rewritten";
}

TEST(AccessToken, AnEmptyOrUnreadableFileIsAnError) {
  ScratchDir tmp;
  const std::string path = tmp.File("token");
  { std::ofstream(path) << " \n\t"; }
  Result<std::string> token = EnsureAccessToken(path);
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(token.status().message().find(path), std::string::npos);
  EXPECT_NE(token.status().message().find("empty"), std::string::npos);

  token = EnsureAccessToken(tmp.File("missing-dir/token"));
  ASSERT_FALSE(token.ok());
  EXPECT_NE(token.status().message().find("missing-dir/token"), std::string::npos)
      << token.status().ToString();

  token = EnsureAccessToken(tmp.path().string());  // A directory.
  ASSERT_FALSE(token.ok());
}

TEST(AccessToken, ConcurrentFirstStartsAgreeOnOneToken) {
  ScratchDir tmp;
  const std::string path = tmp.File("token");
  constexpr int kThreads = 8;
  std::vector<std::string> got(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      Result<std::string> t = EnsureAccessToken(path);
      got[i] = t.ok() ? *t : "error: " + t.status().ToString();
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(std::set<std::string>(got.begin(), got.end()).size(), 1u) << got[0];
  EXPECT_EQ(ReadAll(path), got[0] + "\n");
  EXPECT_EQ(Entries(tmp.path()), 1u);
}

// The writes are common/file/atomic_file.h's (tests/unit/common/atomic_file_test.cpp).
TEST(SecretFile, ReadSmallFileNamesAMissingFile) {
  ScratchDir tmp;
  EXPECT_EQ(ReadSmallFile(tmp.File("missing"), "thing").status().code(), StatusCode::kNotFound);
  EXPECT_NE(ReadSmallFile(tmp.File("missing"), "thing").status().message().find("thing "),
            std::string::npos);
}

}  // namespace
}  // namespace sluice::apiserver
