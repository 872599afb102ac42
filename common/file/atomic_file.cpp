#include "common/file/atomic_file.h"

#include <unistd.h>

#include <atomic>
#include <cctype>

namespace sluice::file {
namespace {

namespace stdfs = std::filesystem;

constexpr std::string_view kTempMarker = ".tmp-";

// A name no other writer (thread or process) uses at the same time.
std::string TempPathFor(const stdfs::path& path) {
  static std::atomic<uint64_t> counter{0};
  return path.string() + std::string(kTempMarker) + std::to_string(::getpid()) + "-" +
         std::to_string(counter.fetch_add(1, std::memory_order_relaxed));
}

std::string ParentOf(const stdfs::path& path) {
  const stdfs::path parent = path.parent_path();
  return parent.empty() ? "." : parent.string();
}

// Creates, fills, syncs and closes a new temporary file beside `path`; returns its name. On an
// error nothing is left behind.
Result<std::string> WriteTemp(const stdfs::path& path, mode_t mode, const FileFiller& fill,
                              FileSystem& fs) {
  const std::string tmp = TempPathFor(path);
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, fs.CreateFile(tmp, mode));
  Status s = fill(*file);
  if (s.ok()) s = file->Sync();
  const Status closed = file->Close();
  if (s.ok()) s = closed;
  if (!s.ok()) {
    (void)fs.RemoveFile(tmp);
    return s.WithContext("writing " + path.string());
  }
  return tmp;
}

FileFiller AppendAll(std::string_view data) {
  return [data](WritableFile& f) { return f.Append(data); };
}

}  // namespace

Status WriteFileAtomic(const stdfs::path& path, mode_t mode, const FileFiller& fill,
                       FileSystem& fs) {
  SLUICE_ASSIGN_OR_RETURN(const std::string tmp, WriteTemp(path, mode, fill, fs));
  if (Status s = fs.Rename(tmp, path.string()); !s.ok()) {
    (void)fs.RemoveFile(tmp);
    return s;
  }
  return fs.SyncDirectory(ParentOf(path));
}

Status WriteFileAtomic(const stdfs::path& path, std::string_view data, mode_t mode,
                       FileSystem& fs) {
  return WriteFileAtomic(path, mode, AppendAll(data), fs);
}

Result<bool> WriteFileIfAbsent(const stdfs::path& path, std::string_view data, mode_t mode,
                               FileSystem& fs) {
  SLUICE_ASSIGN_OR_RETURN(const std::string tmp, WriteTemp(path, mode, AppendAll(data), fs));
  const Status linked = fs.LinkNoReplace(tmp, path.string());
  // After a link both names hold the content; after the rename fallback tmp is already gone.
  (void)fs.RemoveFile(tmp);
  if (linked.code() == StatusCode::kAlreadyExists) return false;
  SLUICE_RETURN_IF_ERROR(linked);
  SLUICE_RETURN_IF_ERROR(fs.SyncDirectory(ParentOf(path)));
  return true;
}

Status RenameDurably(const stdfs::path& from, const stdfs::path& to, FileSystem& fs) {
  SLUICE_RETURN_IF_ERROR(fs.Rename(from.string(), to.string()));
  const std::string to_dir = ParentOf(to);
  SLUICE_RETURN_IF_ERROR(fs.SyncDirectory(to_dir));
  const std::string from_dir = ParentOf(from);
  return from_dir == to_dir ? Status::Ok() : fs.SyncDirectory(from_dir);
}

Status SyncDirectoryContents(const stdfs::path& dir, FileSystem& fs) {
  std::error_code ec;
  for (stdfs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec)) SLUICE_RETURN_IF_ERROR(fs.SyncFile(it->path().string()));
  }
  if (ec) return Status::Internal("cannot list " + dir.string() + ": " + ec.message());
  return fs.SyncDirectory(dir.string());
}

bool IsAtomicWriteTemp(std::string_view filename) {
  const size_t at = filename.rfind(kTempMarker);
  if (at == std::string_view::npos || at == 0) return false;
  const std::string_view tail = filename.substr(at + kTempMarker.size());
  const size_t dash = tail.find('-');
  if (dash == 0 || dash == std::string_view::npos || dash + 1 == tail.size()) return false;
  for (size_t i = 0; i < tail.size(); ++i) {
    if (i != dash && !std::isdigit(static_cast<unsigned char>(tail[i]))) return false;
  }
  return true;
}

}  // namespace sluice::file
