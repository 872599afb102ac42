#include "workers/weights/weight_fetcher.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <utility>

#include "common/file/atomic_file.h"
#include "workers/weights/weight_delta.h"
#include "workers/weights/weight_digest.h"
#include "workers/weights/weight_routes.h"

namespace sluice::weights {

namespace {

std::optional<uint64_t> ParseU64(std::string_view s) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// Where the downloaded bytes go: appended in order; Reset starts over from byte 0.
struct Sink {
  std::function<Status(std::string_view)> append;
  std::function<Status()> reset;
};

struct Downloaded {
  std::string digest;  // What the server says the whole image hashes to.
  uint64_t size = 0;   // Whole image size.
};

// Downloads the full image of `version` into `sink`, which already holds `offset` bytes of it
// (hashed into `hash` when one is given), in chunks of options.chunk_bytes (0: one range to the
// end), resuming after breaks. On return the sink holds the whole image.
Result<Downloaded> Download(http::Client& client, int64_t version, uint64_t offset,
                            WeightDigest* hash, Sink& sink, const FetchOptions& options,
                            FetchStats* stats) {
  const std::string path = FullWeightsPath(version);
  const uint64_t chunk_bytes = options.chunk_bytes;
  std::optional<std::string> digest;  // Fixed by the first response; later ones must agree.
  std::optional<uint64_t> size;
  Status last_error = Status::Unavailable("no attempt made");
  // Requests for the current range that did not complete it; reset when a range arrives whole.
  int failures = 0;
  while (failures < std::max(1, options.max_attempts)) {
    if (size && offset == *size) break;
    ++stats->attempts;
    http::Request req;
    req.path = path;
    // With chunks: the rest of the chunk `offset` lies in, [offset, want_end).
    std::optional<uint64_t> want_end;
    if (chunk_bytes > 0) {
      const uint64_t start = offset / chunk_bytes * chunk_bytes;
      want_end = start + std::min(chunk_bytes, UINT64_MAX - start);
      req.headers.emplace("Range",
                          "bytes=" + std::to_string(offset) + "-" + std::to_string(*want_end - 1));
    } else if (offset > 0) {
      req.headers.emplace("Range", "bytes=" + std::to_string(offset) + "-");
    }
    Status head_error;
    std::optional<uint64_t> expected_end;  // Byte offset the body ends at.
    Status write_error;
    auto on_head = [&](const http::Response& r) -> bool {
      if (r.status == 416 && offset > 0) {
        // The partial file already holds every byte (or more: then the digest check fails).
        const std::string cr = r.Header("Content-Range");
        if (cr.starts_with("bytes */")) size = ParseU64(std::string_view(cr).substr(8));
        const std::string d = r.Header(std::string(kWeightsDigestHeader));
        if (CheckDigestSyntax(d, kWeightsDigestHeader).ok()) digest = d;
        return true;
      }
      if (r.status != 200 && r.status != 206) return true;  // The error body is collected.
      const std::string d = r.Header(std::string(kWeightsDigestHeader));
      if (Status s = CheckDigestSyntax(d, kWeightsDigestHeader); !s.ok()) {
        head_error = s;
        return false;
      }
      if (digest && *digest != d) {
        // The version's bytes changed under us (a restarted trainer republished it): what was
        // already received belongs to other weights.
        head_error = Status::Conflict("the digest of version " + std::to_string(version) +
                                      " changed during the download");
        return false;
      }
      digest = d;
      if (r.status == 206) {
        // "bytes a-b/N"
        const std::string cr = r.Header("Content-Range");
        const size_t dash = cr.find('-');
        const size_t slash = cr.find('/');
        std::optional<uint64_t> a, b, n;
        if (cr.starts_with("bytes ") && dash != std::string::npos && slash != std::string::npos &&
            dash < slash) {
          a = ParseU64(std::string_view(cr).substr(6, dash - 6));
          b = ParseU64(std::string_view(cr).substr(dash + 1, slash - dash - 1));
          n = ParseU64(std::string_view(cr).substr(slash + 1));
        }
        // The body must run from `offset` to the end of what was asked for: the chunk's end
        // (clamped to the image) or the image's end.
        const bool valid = a && b && n && *a == offset && *b >= *a && *b < *n &&
                           *b + 1 == (want_end ? std::min(*want_end, *n) : *n) &&
                           (!size || *size == *n);
        if (!valid) {
          head_error = Status::Corruption(
              "unexpected Content-Range \"" + cr + "\" for a request from byte " +
                  std::to_string(offset) + " to " +
                  (want_end ? std::to_string(*want_end - 1) : "the end"),
              "Content-Range");
          return false;
        }
        size = *n;
        expected_end = *b + 1;
      } else {
        std::optional<uint64_t> n = ParseU64(r.Header("Content-Length"));
        if (!n) {
          head_error = Status::Corruption("no Content-Length on the full image", "Content-Length");
          return false;
        }
        size = *n;
        if (offset > 0) {  // The server ignored the Range: start over.
          offset = 0;
          if (hash != nullptr) hash->Reset();
          if (Status s = sink.reset(); !s.ok()) {
            write_error = s;
            return false;
          }
        }
        expected_end = *size;  // The whole image, even when a chunk was asked for.
      }
      return true;
    };
    auto on_data = [&](std::string_view chunk) -> bool {
      if (Status s = sink.append(chunk); !s.ok()) {
        write_error = s;
        return false;
      }
      if (hash != nullptr) hash->Update(chunk);
      offset += chunk.size();
      stats->bytes_transferred += chunk.size();
      return true;
    };
    Result<http::Response> resp = client.Stream(std::move(req), on_head, on_data);
    if (!write_error.ok()) return write_error;
    if (!head_error.ok()) return head_error;
    if (!resp.ok()) {
      last_error = resp.status();
      if (resp.status().code() == StatusCode::kCancelled) return last_error;
      ++failures;
      continue;  // Broke off: resume from `offset`.
    }
    if (resp->status == 416 && size && offset >= *size) break;
    if (resp->status != 200 && resp->status != 206) return resp->ToStatus();
    if (expected_end && offset == *expected_end) {
      failures = 0;  // This range is complete; the loop ends once it was the last one.
      continue;
    }
    last_error = Status::Unavailable("the transfer of version " + std::to_string(version) +
                                     " ended at byte " + std::to_string(offset) + " of " +
                                     std::to_string(expected_end.value_or(0)));
    ++failures;
  }
  if (!size || offset != *size || !digest) {
    return last_error.WithContext("downloading weights version " + std::to_string(version));
  }
  return Downloaded{*digest, *size};
}

Status ErrnoStatus(const std::string& what) {
  return Status::Internal(what + ": " + std::strerror(errno));
}

}  // namespace

Result<FetchStats> FetchFull(http::Client& client, int64_t version, const std::string& dest,
                             const FetchOptions& options) {
  const std::string partial = dest + ".partial";
  const int fd = ::open(partial.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus("open " + partial);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};

  // Hash what an earlier attempt left, so the final digest covers the whole file.
  WeightDigest hash;
  uint64_t offset = 0;
  {
    std::string buf(size_t{1} << 20, '\0');
    while (true) {
      const ssize_t n = ::read(fd, buf.data(), buf.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus("read " + partial);
      }
      if (n == 0) break;
      hash.Update(std::string_view(buf.data(), static_cast<size_t>(n)));
      offset += static_cast<uint64_t>(n);
    }
  }
  Sink sink;
  sink.append = [&](std::string_view bytes) -> Status {
    while (!bytes.empty()) {
      const ssize_t n = ::write(fd, bytes.data(), bytes.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus("write " + partial);
      }
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return Status::Ok();
  };
  sink.reset = [&]() -> Status {
    if (::ftruncate(fd, 0) != 0 || ::lseek(fd, 0, SEEK_SET) != 0) {
      return ErrnoStatus("truncate " + partial);
    }
    return Status::Ok();
  };
  FetchStats stats;
  stats.mode = "full";
  stats.version = version;
  SLUICE_ASSIGN_OR_RETURN(Downloaded got,
                          Download(client, version, offset, &hash, sink, options, &stats));
  const std::string actual = hash.Finish();
  if (actual != got.digest) {
    ::unlink(partial.c_str());
    return Status::Corruption("weights version " + std::to_string(version) + " downloaded to " +
                                  partial + " (" + std::to_string(got.size) +
                                  " bytes) has digest " + actual + ", the server's is " +
                                  got.digest + "; the partial file was deleted",
                              "digest");
  }
  if (::fsync(fd) != 0) return ErrnoStatus("fsync " + partial);
  SLUICE_RETURN_IF_ERROR(file::RenameDurably(partial, dest));
  stats.digest = got.digest;
  return stats;
}

Result<FetchedWeights> FetchUpdate(http::Client& client, const WeightSnapshot& held,
                                   int64_t version, const FetchOptions& options) {
  if (held.version() == version) {
    return FetchedWeights{held, {"delta", version, held.digest(), 0, 0}};
  }
  FetchStats stats;
  stats.version = version;
  const std::string delta_path =
      FullWeightsPath(version) + "/delta?from=" + std::to_string(held.version());
  ++stats.attempts;
  SLUICE_ASSIGN_OR_RETURN(http::Response resp, client.Get(delta_path));
  if (resp.status == 200) {
    stats.mode = "delta";
    stats.bytes_transferred = resp.body.size();
    SLUICE_ASSIGN_OR_RETURN(WeightSnapshot next, ApplyDelta(held, resp.body));
    const std::string header = resp.Header(std::string(kWeightsDigestHeader));
    if (next.version() != version || next.digest() != header) {
      return Status::Corruption("the delta chain produced version " +
                                    std::to_string(next.version()) + " (" + next.digest() +
                                    "), the server announced " + std::to_string(version) + " (" +
                                    header + ")",
                                "digest");
    }
    stats.digest = next.digest();
    return FetchedWeights{std::move(next), std::move(stats)};
  }
  if (resp.status != 409) return resp.ToStatus();

  // 409: the server says the full image is the better download.
  stats.mode = "full";
  std::string image;
  Sink sink;
  sink.append = [&](std::string_view bytes) {
    image.append(bytes);
    return Status::Ok();
  };
  sink.reset = [&] {
    image.clear();
    return Status::Ok();
  };
  // No running hash: Parse hashes the finished image and checks it against the server's digest.
  SLUICE_ASSIGN_OR_RETURN(Downloaded got,
                          Download(client, version, 0, nullptr, sink, options, &stats));
  SLUICE_ASSIGN_OR_RETURN(WeightSnapshot next, WeightSnapshot::Parse(std::move(image), got.digest));
  if (next.version() != version) {
    return Status::Corruption("the image of version " + std::to_string(version) +
                                  " names version " + std::to_string(next.version()),
                              "metadata.sluice.version");
  }
  stats.digest = next.digest();
  return FetchedWeights{std::move(next), std::move(stats)};
}

}  // namespace sluice::weights
