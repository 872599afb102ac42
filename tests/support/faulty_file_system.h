// Test helper: a FileSystem (common/file/file_system.h) over the real one that records every
// operation and fails the ones a test chooses, to show what a full disk, a failed fsync or a
// crash between two steps leaves behind.
//
//   FaultyFileSystem fs;
//   fs.FailFrom(3);            // operation 3 (0-based) and every later one fail: a "crash"
//   fs.FailOnly(3);            // only operation 3 fails
//   fs.ops()                   // e.g. {"create a.tmp-1-0", "append a.tmp-1-0", ...}
//
// Operations are counted across the file system and its files, in the order they are called.
// Paths in ops() are file names (no directory) so tables of expectations stay short.
//
// Thread safety: none; one test thread uses it.
#pragma once

#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "common/file/file_system.h"

namespace sluice::test_support {

class FaultyFileSystem final : public file::FileSystem {
 public:
  void FailFrom(size_t op) {
    fail_from_ = op;
    fail_only_ = kNever;
  }
  void FailOnly(size_t op) {
    fail_only_ = op;
    fail_from_ = kNever;
  }
  const std::vector<std::string>& ops() const { return ops_; }

  Result<std::unique_ptr<file::WritableFile>> CreateFile(const std::string& path,
                                                         mode_t mode) override {
    SLUICE_RETURN_IF_ERROR(Record("create", path));
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<file::WritableFile> real,
                            file::DefaultFileSystem().CreateFile(path, mode));
    return std::unique_ptr<file::WritableFile>(std::make_unique<File>(this, path, std::move(real)));
  }
  Status Rename(const std::string& from, const std::string& to) override {
    SLUICE_RETURN_IF_ERROR(Record("rename", from, to));
    return file::DefaultFileSystem().Rename(from, to);
  }
  Status LinkNoReplace(const std::string& from, const std::string& to) override {
    SLUICE_RETURN_IF_ERROR(Record("link", from, to));
    return file::DefaultFileSystem().LinkNoReplace(from, to);
  }
  Status SyncFile(const std::string& path) override {
    SLUICE_RETURN_IF_ERROR(Record("syncfile", path));
    return file::DefaultFileSystem().SyncFile(path);
  }
  Status SyncDirectory(const std::string& dir) override {
    SLUICE_RETURN_IF_ERROR(Record("syncdir", dir));
    return file::DefaultFileSystem().SyncDirectory(dir);
  }
  Status RemoveFile(const std::string& path) override {
    // Cleanup after a fault is what the tests check, so removal itself never fails.
    ops_.push_back("remove " + Name(path));
    return file::DefaultFileSystem().RemoveFile(path);
  }

 private:
  static constexpr size_t kNever = std::numeric_limits<size_t>::max();

  class File final : public file::WritableFile {
   public:
    File(FaultyFileSystem* fs, std::string path, std::unique_ptr<file::WritableFile> real)
        : fs_(fs), path_(std::move(path)), real_(std::move(real)) {}
    Status Append(std::string_view data) override {
      SLUICE_RETURN_IF_ERROR(fs_->Record("append", path_));
      return real_->Append(data);
    }
    Status Sync() override {
      SLUICE_RETURN_IF_ERROR(fs_->Record("sync", path_));
      return real_->Sync();
    }
    Status Close() override {
      // The descriptor is closed even when the close "fails", as close(2) does.
      const Status injected = fs_->Record("close", path_);
      const Status real = real_->Close();
      return injected.ok() ? real : injected;
    }

   private:
    FaultyFileSystem* fs_;
    std::string path_;
    std::unique_ptr<file::WritableFile> real_;
  };

  static std::string Name(const std::string& path) {
    return std::filesystem::path(path).filename().string();
  }

  Status Record(const std::string& op, const std::string& path, const std::string& to = {}) {
    const size_t index = ops_.size();
    ops_.push_back(op + " " + Name(path) + (to.empty() ? "" : " " + Name(to)));
    if (index >= fail_from_ || index == fail_only_) {
      return Status::Internal("injected failure of " + ops_.back());
    }
    return Status::Ok();
  }

  size_t fail_from_ = kNever;
  size_t fail_only_ = kNever;
  std::vector<std::string> ops_;
};

}  // namespace sluice::test_support
