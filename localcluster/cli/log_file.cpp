#include "localcluster/cli/log_file.h"

#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

namespace sluice::cli {
namespace {

constexpr uint64_t kTailWindow = 1 << 20;

// Copies the file from `offset` to `out`; returns the new offset.
uint64_t CopyFrom(const std::string& path, uint64_t offset, std::ostream& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return offset;
  in.seekg(static_cast<std::streamoff>(offset));
  std::vector<char> buf(64 * 1024);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const std::streamsize n = in.gcount();
    if (n <= 0) break;
    out.write(buf.data(), n);
    offset += static_cast<uint64_t>(n);
  }
  return offset;
}

std::optional<uint64_t> FileSize(const std::string& path) {
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) return std::nullopt;
  return size;
}

}  // namespace

std::string LastLines(std::string_view text, size_t n) {
  if (n == 0 || text.empty()) return "";
  size_t end = text.size();
  if (text.back() == '\n') --end;  // The final newline ends the last line, not a new one.
  size_t start = end;
  size_t lines = 0;
  while (start > 0) {
    if (text[start - 1] == '\n') {
      if (++lines == n) break;
    }
    --start;
  }
  return std::string(text.substr(start));
}

Result<std::string> ReadLastLines(const std::string& path, size_t n) {
  const std::optional<uint64_t> size = FileSize(path);
  if (!size) return Status::NotFound(path + " does not exist");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot read " + path);
  const uint64_t start = *size > kTailWindow ? *size - kTailWindow : 0;
  in.seekg(static_cast<std::streamoff>(start));
  std::string text(static_cast<size_t>(*size - start), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  return LastLines(text, n);
}

Status PrintLog(const std::string& path, const PrintLogOptions& options, std::ostream& out) {
  uint64_t offset = 0;
  std::optional<uint64_t> size = FileSize(path);
  if (!size && !options.follow) return Status::NotFound(path + " does not exist");
  if (size) {
    if (options.tail) {
      Result<std::string> tail = ReadLastLines(path, *options.tail);
      if (tail.ok()) out << *tail;
      offset = *size;
    } else {
      offset = CopyFrom(path, 0, out);
    }
  }
  out.flush();
  if (!options.follow) return Status::Ok();
  while (!(options.stop && options.stop())) {
    std::this_thread::sleep_for(options.poll_interval);
    size = FileSize(path);
    if (!size) continue;
    if (*size < offset) offset = 0;  // Truncated or replaced: start over.
    if (*size > offset) {
      offset = CopyFrom(path, offset, out);
      out.flush();
    }
  }
  return Status::Ok();
}

}  // namespace sluice::cli
