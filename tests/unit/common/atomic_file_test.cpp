#include "common/file/atomic_file.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <thread>
#include <vector>

#include "tests/support/faulty_file_system.h"
#include "tests/support/read_file.h"

namespace sluice::file {
namespace {

namespace fs = std::filesystem;
using test_support::FaultyFileSystem;
constexpr auto Read = test_support::ReadFileOrEmpty;

std::vector<std::string> Names(const fs::path& dir) {
  std::vector<std::string> out;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Replaces temporary names ("a.txt.tmp-123-4") with "<tmp>" so expectations stay fixed.
std::vector<std::string> Normalised(const std::vector<std::string>& ops) {
  std::vector<std::string> out;
  for (const std::string& op : ops) {
    std::istringstream words(op);
    std::string word, line;
    while (words >> word) {
      line += (line.empty() ? "" : " ") + (IsAtomicWriteTemp(word) ? std::string("<tmp>") : word);
    }
    out.push_back(line);
  }
  return out;
}

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "sluice-atomic-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
};

TEST_F(AtomicFileTest, WritesAndReplacesWithTheModeLeavingNothingElse) {
  const fs::path path = dir_ / "a.txt";
  ASSERT_TRUE(WriteFileAtomic(path, "first", 0600).ok());
  EXPECT_EQ(Read(path), "first");
  ASSERT_TRUE(WriteFileAtomic(path, "second, longer", 0644).ok());
  EXPECT_EQ(Read(path), "second, longer");
  EXPECT_EQ(fs::status(path).permissions(), fs::perms::owner_read | fs::perms::owner_write |
                                                fs::perms::group_read | fs::perms::others_read);
  EXPECT_EQ(Names(dir_), std::vector<std::string>{"a.txt"});
}

TEST_F(AtomicFileTest, TheModeIsNotReducedByTheUmask) {
  const mode_t old = ::umask(077);
  const Status s = WriteFileAtomic(dir_ / "shared", "x", 0644);
  ::umask(old);
  ASSERT_TRUE(s.ok()) << s.ToString();
  struct stat st {};
  ASSERT_EQ(::stat((dir_ / "shared").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
}

TEST_F(AtomicFileTest, SyncsTheFileBeforeTheRenameAndTheDirectoryAfter) {
  FaultyFileSystem faulty;
  ASSERT_TRUE(WriteFileAtomic(
                  dir_ / "a.txt", 0644,
                  [](WritableFile& f) {
                    SLUICE_RETURN_IF_ERROR(f.Append("one "));
                    return f.Append("two");
                  },
                  faulty)
                  .ok());
  EXPECT_EQ(Read(dir_ / "a.txt"), "one two");
  const std::string dir = dir_.filename().string();
  EXPECT_EQ(Normalised(faulty.ops()),
            (std::vector<std::string>{"create <tmp>", "append <tmp>", "append <tmp>", "sync <tmp>",
                                      "close <tmp>", "rename <tmp> a.txt", "syncdir " + dir}));
}

// A failure (or a crash: every later operation failing too) at any step leaves the old content
// or the new one whole, never a temporary file, and is reported.
TEST_F(AtomicFileTest, AFailureAtAnyStepLeavesTheOldOrTheNewContentAndNoTemporaryFile) {
  const fs::path path = dir_ / "state";
  constexpr size_t kOps = 6;  // create, append, sync, close, rename, syncdir
  constexpr size_t kRename = 4;
  for (bool crash : {false, true}) {
    for (size_t k = 0; k < kOps; ++k) {
      SCOPED_TRACE((crash ? "crash at operation " : "failure of operation ") + std::to_string(k));
      ASSERT_TRUE(WriteFileAtomic(path, "old").ok());
      FaultyFileSystem faulty;
      crash ? faulty.FailFrom(k) : faulty.FailOnly(k);
      const Status s = WriteFileAtomic(path, "new", 0644, faulty);
      EXPECT_FALSE(s.ok());
      EXPECT_NE(s.message().find("injected failure"), std::string::npos) << s.ToString();
      EXPECT_EQ(Read(path), k <= kRename ? "old" : "new");
      EXPECT_EQ(Names(dir_), std::vector<std::string>{"state"});
    }
  }
}

TEST_F(AtomicFileTest, AFillerErrorIsReturnedAndTheTargetIsUntouched) {
  ASSERT_TRUE(WriteFileAtomic(dir_ / "a", "old").ok());
  const Status s = WriteFileAtomic(dir_ / "a", 0644, [](WritableFile& f) {
    SLUICE_RETURN_IF_ERROR(f.Append("partial"));
    return Status::Corruption("the source ended early");
  });
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_NE(s.message().find("the source ended early"), std::string::npos);
  EXPECT_NE(s.message().find((dir_ / "a").string()), std::string::npos) << s.ToString();
  EXPECT_EQ(Read(dir_ / "a"), "old");
  EXPECT_EQ(Names(dir_), std::vector<std::string>{"a"});
}

TEST_F(AtomicFileTest, AMissingDirectoryIsReportedWithThePath) {
  const Status s = WriteFileAtomic(dir_ / "no" / "such" / "file", "x");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("no/such/file"), std::string::npos) << s.ToString();
}

TEST_F(AtomicFileTest, WriteFileIfAbsentCreatesOnceAndNeverReplaces) {
  const fs::path path = dir_ / "key";
  Result<bool> first = WriteFileIfAbsent(path, "mine", 0600);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(*first);
  Result<bool> second = WriteFileIfAbsent(path, "theirs", 0600);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_FALSE(*second);
  EXPECT_EQ(Read(path), "mine");
  EXPECT_EQ(Names(dir_), std::vector<std::string>{"key"});
}

TEST_F(AtomicFileTest, ExactlyOneOfManyConcurrentWriteFileIfAbsentWins) {
  const fs::path path = dir_ / "race";
  std::vector<int> won(8, -1);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < won.size(); ++i) {
    threads.emplace_back([&, i] {
      Result<bool> r = WriteFileIfAbsent(path, "writer " + std::to_string(i), 0644);
      won[i] = r.ok() ? static_cast<int>(*r) : -1;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(std::count(won.begin(), won.end(), 1), 1);
  EXPECT_EQ(std::count(won.begin(), won.end(), 0), static_cast<long>(won.size()) - 1);
  const size_t winner = static_cast<size_t>(std::find(won.begin(), won.end(), 1) - won.begin());
  EXPECT_EQ(Read(path), "writer " + std::to_string(winner));
  EXPECT_EQ(Names(dir_), std::vector<std::string>{"race"});
}

TEST_F(AtomicFileTest, WriteFileIfAbsentFailingToLinkLeavesNothing) {
  FaultyFileSystem faulty;
  faulty.FailOnly(4);  // create, append, sync, close, link
  Result<bool> r = WriteFileIfAbsent(dir_ / "key", "x", 0600, faulty);
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(Names(dir_).empty());
}

TEST_F(AtomicFileTest, RenameDurablyPublishesADirectoryAndSyncsBothParents) {
  fs::create_directories(dir_ / "staging" / "v3");
  fs::create_directories(dir_ / "live");
  ASSERT_TRUE(WriteFileAtomic(dir_ / "staging" / "v3" / "model", "w").ok());
  FaultyFileSystem faulty;
  ASSERT_TRUE(RenameDurably(dir_ / "staging" / "v3", dir_ / "live" / "v3", faulty).ok());
  EXPECT_EQ(Read(dir_ / "live" / "v3" / "model"), "w");
  EXPECT_EQ(faulty.ops(),
            (std::vector<std::string>{"rename v3 v3", "syncdir live", "syncdir staging"}));
  // Within one directory, that directory is synced once.
  FaultyFileSystem same;
  ASSERT_TRUE(RenameDurably(dir_ / "live" / "v3", dir_ / "live" / "v4", same).ok());
  EXPECT_EQ(same.ops(), (std::vector<std::string>{"rename v3 v4", "syncdir live"}));
}

TEST_F(AtomicFileTest, SyncDirectoryContentsSyncsEachFileThenTheDirectory) {
  fs::create_directories(dir_ / "ckpt" / "nested");
  ASSERT_TRUE(WriteFileAtomic(dir_ / "ckpt" / "a", "1").ok());
  ASSERT_TRUE(WriteFileAtomic(dir_ / "ckpt" / "b", "2").ok());
  FaultyFileSystem faulty;
  ASSERT_TRUE(SyncDirectoryContents(dir_ / "ckpt", faulty).ok());
  std::vector<std::string> ops = faulty.ops();
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops.back(), "syncdir ckpt");
  std::sort(ops.begin(), ops.end() - 1);
  EXPECT_EQ(ops[0], "syncfile a");
  EXPECT_EQ(ops[1], "syncfile b");
  FaultyFileSystem failing;
  failing.FailOnly(1);
  EXPECT_FALSE(SyncDirectoryContents(dir_ / "ckpt", failing).ok());
}

TEST(IsAtomicWriteTempTest, RecognisesOnlyTheTemporaryNames) {
  struct Case {
    const char* name;
    bool temp;
  };
  for (const Case& c : std::vector<Case>{{"a.txt.tmp-123-0", true},
                                         {"snapshot-00000042.snap.tmp-9-17", true},
                                         {"a.txt", false},
                                         {"a.txt.tmp", false},
                                         {"a.txt.tmp-", false},
                                         {"a.txt.tmp-123", false},
                                         {"a.txt.tmp-123-", false},
                                         {"a.txt.tmp--1", false},
                                         {"a.txt.tmp-12x-3", false},
                                         {".tmp-1-2", false}}) {
    EXPECT_EQ(IsAtomicWriteTemp(c.name), c.temp) << c.name;
  }
}

}  // namespace
}  // namespace sluice::file
