#include "workers/model/model_download.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "common/file/atomic_file.h"
#include "common/file/read_file.h"
#include "common/http/url.h"
#include "common/json/json_depth.h"
#include "workers/model/safetensors.h"

namespace sluice::model {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::string_view kConfigFile = "config.json";
constexpr std::string_view kIndexFile = ShardedCheckpoint::kIndexFileName;
constexpr std::string_view kSingleFile = ShardedCheckpoint::kSingleFileName;
// Inside a finished entry: {"uri": <URI without trailing slashes>, "files": [<name>...]}.
constexpr std::string_view kMarkerFile = ".sluice-download.json";
constexpr uint64_t kMaxIndexBytes = uint64_t{64} << 20;  // The safetensors reader's cap.

std::string TrimSlashes(std::string_view text) {
  while (!text.empty() && text.back() == '/') text.remove_suffix(1);
  return std::string(text);
}

bool IsPlainName(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && name != kMarkerFile &&
         name.find_first_of(std::string_view("/\0", 2)) == std::string_view::npos;
}

// A relative path whose every segment is a plain name: it stays inside the directory.
bool IsInsidePath(std::string_view path) {
  if (path.empty() || path.front() == '/') return false;
  for (size_t start = 0;;) {
    const size_t slash = path.find('/', start);
    if (!IsPlainName(path.substr(start, slash - start))) return false;
    if (slash == std::string_view::npos) return true;
    start = slash + 1;
  }
}

std::optional<uint64_t> ParseUint(std::string_view text) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

// "bytes a-b/N" or "bytes a-b/*".
struct ContentRange {
  uint64_t first = 0;
  uint64_t last = 0;
  std::optional<uint64_t> total;
};
std::optional<ContentRange> ParseContentRange(std::string_view v) {
  if (!v.starts_with("bytes ")) return std::nullopt;
  v.remove_prefix(6);
  const size_t dash = v.find('-');
  const size_t slash = v.find('/');
  if (dash == std::string_view::npos || slash == std::string_view::npos || slash < dash) {
    return std::nullopt;
  }
  std::optional<uint64_t> a = ParseUint(v.substr(0, dash));
  std::optional<uint64_t> b = ParseUint(v.substr(dash + 1, slash - dash - 1));
  if (!a || !b || *b < *a) return std::nullopt;
  ContentRange r{*a, *b, std::nullopt};
  if (v.substr(slash + 1) != "*") {
    r.total = ParseUint(v.substr(slash + 1));
    if (!r.total || *r.total <= *b) return std::nullopt;
  }
  return r;
}

// Percent-encodes each segment of a relative path, keeping the slashes.
std::string EncodePath(std::string_view path) {
  std::string out;
  for (size_t start = 0;;) {
    const size_t slash = path.find('/', start);
    out += http::PercentEncode(path.substr(start, slash - start));
    if (slash == std::string_view::npos) return out;
    out += '/';
    start = slash + 1;
  }
}

Status ErrnoStatus(const std::string& what) {
  return Status::Internal(what + ": " + std::strerror(errno));
}

struct UniqueFd {
  int fd = -1;
  UniqueFd() = default;
  explicit UniqueFd(int f) : fd(f) {}
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { Close(); }
  void Close() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

Status WriteAll(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus("write " + path);
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

// Waits (cancellably) for the exclusive flock of `path`; closing `out` releases it.
Status LockExclusive(const fs::path& path, const CancellationToken& cancel, UniqueFd& out) {
  out.fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (out.fd < 0) return ErrnoStatus("open " + path.string());
  while (::flock(out.fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) return ErrnoStatus("flock " + path.string());
    if (cancel.WaitFor(std::chrono::milliseconds(200))) {
      return Status::Cancelled("waiting for " + path.string());
    }
  }
  return Status::Ok();
}

// Whether `dir` is a finished download of `uri` (its marker names it).
bool IsDownloadOf(const fs::path& dir, const std::string& uri) {
  std::ifstream in(dir / kMarkerFile);
  if (!in) return false;
  const json marker = json::parse(in, nullptr, /*allow_exceptions=*/false);
  return marker.is_object() && marker.value("uri", std::string()) == uri;
}

bool IsRedirect(int status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

// Where a request goes: "scheme://host:port" and the path (with any query).
struct Target {
  std::string origin;
  std::string path;
  std::string Url() const { return origin + path; }
};

// The target a Location header names, relative to `from` when it is not absolute.
Result<Target> Redirect(const Target& from, std::string loc) {
  if (loc.empty()) return Status::Unavailable(from.Url() + " redirected without a Location");
  if (loc.starts_with("//")) loc = from.origin.substr(0, from.origin.find("://")) + ":" + loc;
  Target to{from.origin, ""};
  const size_t sep = loc.find("://");
  if (sep != std::string::npos && sep < loc.find_first_of("/?#")) {
    const size_t path_at = loc.find_first_of("/?#", sep + 3);
    Result<http::Url> url = http::ParseBaseUrl(loc.substr(0, path_at));
    if (!url.ok()) {
      return Status::InvalidArgument(
          from.Url() + " redirected to \"" + loc + "\": " + url.status().message(),
          std::string(kModelUriField));
    }
    to.origin = url->scheme + "://" + url->HostPort();
    to.path = path_at == std::string::npos ? "/" : loc.substr(path_at);
    if (to.path.front() != '/') to.path.insert(0, "/");
  } else if (loc.front() == '/') {
    to.path = loc;
  } else {  // Relative to the directory of the current path.
    const std::string base = from.path.substr(0, from.path.find_first_of("?#"));
    to.path = base.substr(0, base.rfind('/') + 1) + loc;
  }
  to.path = to.path.substr(0, to.path.find('#'));
  return to;
}

// Downloads single files, one client per origin (the model's server and any it redirects to).
class Fetcher {
 public:
  Fetcher(const ModelDownloadOptions& options, ModelDownload* stats)
      : options_(options), stats_(stats) {}

  // GET `target` into `dest` through "<dest>.part" (see the header comment); the size, or
  // nullopt for a 404 (nothing is left behind then).
  Result<std::optional<uint64_t>> Fetch(Target target, const fs::path& dest);

 private:
  Result<http::Client*> ClientFor(const std::string& origin) {
    auto it = clients_.find(origin);
    if (it != clients_.end()) return it->second.get();
    http::ClientOptions o;
    o.base_url = origin;
    o.connect_timeout = options_.connect_timeout;
    o.read_timeout = options_.read_timeout;
    o.resolver = options_.resolver;
    o.tls = options_.tls;
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<http::Client> client, http::Client::Create(o));
    return clients_.emplace(origin, std::move(client)).first->second.get();
  }

  const ModelDownloadOptions& options_;
  ModelDownload* stats_;
  std::map<std::string, std::unique_ptr<http::Client>> clients_;
};

Result<std::optional<uint64_t>> Fetcher::Fetch(Target target, const fs::path& dest) {
  const std::string asked = target.Url();
  const std::string part = dest.string() + ".part";
  UniqueFd fd(::open(part.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
  if (fd.fd < 0) return ErrnoStatus("open " + part);
  const off_t end = ::lseek(fd.fd, 0, SEEK_END);
  if (end < 0) return ErrnoStatus("seek " + part);
  uint64_t offset = static_cast<uint64_t>(end);  // Left by an interrupted call: resume.
  auto restart = [&]() -> Status {
    if (::ftruncate(fd.fd, 0) != 0 || ::lseek(fd.fd, 0, SEEK_SET) != 0) {
      return ErrnoStatus("truncate " + part);
    }
    offset = 0;
    return Status::Ok();
  };
  int failures = 0;
  int redirects = 0;
  Status last_error = Status::Unavailable("GET " + asked + ": not attempted");
  while (failures < options_.max_attempts) {
    if (options_.cancel.IsCancelled()) return Status::Cancelled("GET " + asked + ": cancelled");
    SLUICE_ASSIGN_OR_RETURN(http::Client * client, ClientFor(target.origin));
    http::Request req;
    req.path = target.path;
    req.cancel = options_.cancel;
    // Lengths and ranges then count the file's own bytes (and cpp-httplib's server would gzip
    // config.json for a client that accepts it).
    req.headers.emplace("Accept-Encoding", "identity");
    if (offset > 0) req.headers.emplace("Range", "bytes=" + std::to_string(offset) + "-");
    std::optional<uint64_t> expected_end;  // Where this response's body ends in the file.
    std::optional<uint64_t> total;         // The file's size, when the server says.
    Status head_error;
    Status file_error;
    auto on_head = [&](const http::Response& r) {
      const std::string encoding = r.Header("Content-Encoding");
      const bool identity = encoding.empty() || encoding == "identity";
      if (r.status == 200) {
        if (offset > 0) file_error = restart();  // The server ignored Range: all of it again.
        if (!file_error.ok()) return false;
        if (identity) total = expected_end = ParseUint(r.Header("Content-Length"));
      } else if (r.status == 206) {
        const std::string header = r.Header("Content-Range");
        std::optional<ContentRange> range = ParseContentRange(header);
        if (!range || range->first != offset) {
          head_error = Status::Unavailable("GET " + target.Url() + ": asked for bytes from " +
                                           std::to_string(offset) + ", got Content-Range \"" +
                                           header + "\"");
          return false;
        }
        expected_end = range->last + 1;
        total = range->total.value_or(range->last + 1);
      }
      return true;
    };
    auto on_data = [&](std::string_view chunk) {
      file_error = WriteAll(fd.fd, chunk, part);
      if (!file_error.ok()) return false;
      offset += chunk.size();
      stats_->bytes += chunk.size();
      return true;
    };
    Result<http::Response> resp = client->Stream(std::move(req), on_head, on_data);
    if (!file_error.ok()) return file_error;
    if (!head_error.ok()) {
      last_error = head_error;
      ++failures;
      SLUICE_RETURN_IF_ERROR(restart());
      continue;
    }
    if (!resp.ok()) {
      if (resp.status().code() == StatusCode::kCancelled) return resp.status();
      last_error = resp.status();  // Broke off: resume from `offset`.
      ++failures;
      continue;
    }
    if (IsRedirect(resp->status)) {
      if (++redirects > kMaxModelRedirects) {
        return Status::Unavailable("GET " + asked + ": more than " +
                                   std::to_string(kMaxModelRedirects) + " redirects");
      }
      SLUICE_ASSIGN_OR_RETURN(target, Redirect(target, resp->Header("Location")));
      continue;
    }
    if (resp->status == 404) {
      fd.Close();
      std::error_code ec;
      fs::remove(part, ec);
      return std::optional<uint64_t>();
    }
    if (resp->status == 416 && offset > 0) {  // The piece on disk is not a prefix of the file.
      last_error = Status::Unavailable("GET " + target.Url() + ": 416 for bytes from " +
                                       std::to_string(offset));
      ++failures;
      SLUICE_RETURN_IF_ERROR(restart());
      continue;
    }
    if (resp->status != 200 && resp->status != 206) {
      return resp->ToStatus().WithContext("GET " + target.Url());
    }
    if (expected_end && offset != *expected_end) {
      last_error =
          Status::Unavailable("GET " + target.Url() + ": the transfer ended at byte " +
                              std::to_string(offset) + " of " + std::to_string(*expected_end));
      ++failures;
      continue;
    }
    if (total && offset < *total) {  // A server that answers a range in pieces: ask for more.
      failures = 0;
      continue;
    }
    if (::fsync(fd.fd) != 0) return ErrnoStatus("fsync " + part);
    fd.Close();
    std::error_code ec;
    fs::rename(part, dest, ec);
    if (ec) return Status::Internal("renaming " + part + ": " + ec.message());
    return std::optional<uint64_t>(offset);
  }
  return last_error;
}

Result<std::string> ReadIndex(const fs::path& path) {
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  if (ec) return Status::Internal("cannot stat " + path.string() + ": " + ec.message());
  if (size > kMaxIndexBytes) {
    return Status::Corruption(std::string(kIndexFile) + " is " + std::to_string(size) +
                              " bytes, over the limit of " + std::to_string(kMaxIndexBytes));
  }
  return file::ReadWholeFile(path.string());
}

}  // namespace

Result<std::vector<ModelFile>> ModelFilesToFetch(const std::optional<std::string>& index_json,
                                                 const std::vector<std::string>& extra_files) {
  std::vector<ModelFile> out;
  std::set<std::string, std::less<>> seen;
  auto add = [&](std::string_view name, bool required) {
    if (seen.emplace(name).second) out.push_back({std::string(name), required});
  };
  add(kConfigFile, true);
  if (index_json) {
    const json index = FirstTooDeepJson(*index_json)
                           ? json(nullptr)
                           : json::parse(*index_json, nullptr, /*allow_exceptions=*/false);
    if (index.is_discarded() || !index.is_object()) {
      return Status::Corruption(std::string(kIndexFile) + " is not a JSON object");
    }
    auto map = index.find("weight_map");
    if (map == index.end() || !map->is_object()) {
      return Status::Corruption(std::string(kIndexFile) + " has no \"weight_map\" object",
                                "weight_map");
    }
    std::set<std::string> shards;
    for (const auto& [tensor, file] : map->items()) {
      if (!file.is_string() || !IsPlainName(file.get_ref<const std::string&>())) {
        return Status::Corruption(std::string(kIndexFile) + ": tensor \"" + tensor + "\" maps to " +
                                      file.dump() + ", not a file name inside the model directory",
                                  "weight_map." + tensor);
      }
      shards.insert(file.get<std::string>());
    }
    add(kIndexFile, true);
    for (const std::string& shard : shards) add(shard, true);
  } else {
    add(kSingleFile, true);
  }
  for (std::string_view name : kOptionalModelFiles) add(name, false);
  for (const std::string& name : extra_files) {
    if (!IsInsidePath(name)) {
      return Status::InvalidArgument("\"" + name +
                                     "\" is not a relative path inside the model directory");
    }
    add(name, false);
  }
  return out;
}

Status CheckModelUri(std::string_view uri) {
  const std::string field(kModelUriField);
  if (!uri.starts_with("http://") && !uri.starts_with("https://")) {
    return Status::InvalidArgument(
        "must be an http:// or https:// URL of a Hugging Face model directory, got \"" +
            std::string(uri) + "\"",
        field);
  }
  Result<http::Url> url = http::ParseBaseUrl(uri);
  if (!url.ok()) return Status::InvalidArgument(url.status().message(), field);
  return Status::Ok();
}

std::string DefaultModelCacheRoot() {
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/sluice-models";
}

std::string ModelCacheDir(std::string_view root, std::string_view uri) {
  const std::string key = TrimSlashes(uri);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int md_len = 0;
  SLUICE_CHECK(EVP_Digest(key.data(), key.size(), md, &md_len, EVP_sha256(), nullptr) == 1);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < 16 && i < md_len; ++i) {
    hex.push_back(kHex[md[i] >> 4]);
    hex.push_back(kHex[md[i] & 15]);
  }
  return TrimSlashes(root) + "/" + hex;
}

Result<ModelDownload> DownloadModelDirectory(const std::string& uri, const std::string& dir,
                                             const ModelDownloadOptions& options) {
  SLUICE_RETURN_IF_ERROR(CheckModelUri(uri));
  const std::string base = TrimSlashes(uri);
  ModelDownload out;
  out.directory = dir;
  fs::path target(dir);
  if (!target.has_filename()) target = target.parent_path();  // "a/b/" names "a/b".
  if (target.empty() || target.filename() == "." || target.filename() == "..") {
    return Status::InvalidArgument("\"" + dir + "\" does not name a directory", "dir");
  }
  if (IsDownloadOf(target, base)) {
    out.reused = true;
    return out;
  }
  const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const std::string name = target.filename().string();
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) return Status::Internal("creating " + parent.string() + ": " + ec.message());
  const fs::path lock_path = parent / ("." + name + ".lock");
  UniqueFd lock;
  SLUICE_RETURN_IF_ERROR(LockExclusive(lock_path, options.cancel, lock));
  if (IsDownloadOf(target, base)) {  // Another process finished it while this one waited.
    out.reused = true;
    return out;
  }
  if (fs::exists(fs::symlink_status(target, ec))) {
    return Status::Conflict(target.string() + " exists but is not a download of " + base +
                            " (it has no " + std::string(kMarkerFile) + " naming it); remove it");
  }
  const fs::path partial = parent / ("." + name + ".partial");
  std::set<fs::path> dirs = {partial};
  fs::create_directories(partial, ec);
  if (ec) return Status::Internal("creating " + partial.string() + ": " + ec.message());

  SLUICE_ASSIGN_OR_RETURN(http::Url url, http::ParseBaseUrl(base));
  const std::string origin = url.scheme + "://" + url.HostPort();
  Fetcher fetcher(options, &out);
  std::vector<std::string> present;
  // Whether the server has `file`; a file already in `partial` was finished by an earlier call.
  auto fetch = [&](const ModelFile& file) -> Result<bool> {
    const fs::path dest = partial / file.name;
    if (fs::exists(dest, ec)) {
      present.push_back(file.name);
      return true;
    }
    if (dest.parent_path() != partial) {
      fs::create_directories(dest.parent_path(), ec);
      if (ec) return Status::Internal("creating " + dest.parent_path().string());
      for (fs::path d = dest.parent_path(); d.native().size() > partial.native().size();
           d = d.parent_path()) {
        dirs.insert(d);
      }
    }
    Target t{origin, url.path + "/" + EncodePath(file.name)};
    SLUICE_ASSIGN_OR_RETURN(std::optional<uint64_t> got, fetcher.Fetch(t, dest));
    if (!got && file.required) {
      return Status::InvalidArgument(base + "/" + file.name + " answered 404 Not Found: a model " +
                                         "directory needs " + file.name,
                                     std::string(kModelUriField));
    }
    if (!got) return false;
    ++out.files;
    present.push_back(file.name);
    if (options.on_file) options.on_file(file.name, *got);
    return true;
  };
  // config.json and the index decide the rest.
  SLUICE_RETURN_IF_ERROR(fetch({std::string(kConfigFile), true}).status());
  SLUICE_ASSIGN_OR_RETURN(bool has_index, fetch({std::string(kIndexFile), false}));
  std::optional<std::string> index;
  if (has_index) {
    SLUICE_ASSIGN_OR_RETURN(index, ReadIndex(partial / kIndexFile));
  }
  Result<std::vector<ModelFile>> files = ModelFilesToFetch(index, options.extra_files);
  if (!files.ok()) return files.status().WithContext(base);
  for (const ModelFile& file : *files) {
    if (file.name == kConfigFile || file.name == kIndexFile) continue;
    SLUICE_RETURN_IF_ERROR(fetch(file).status());
  }

  const fs::path marker = partial / kMarkerFile;
  SLUICE_RETURN_IF_ERROR(
      file::WriteFileAtomic(marker, json{{"uri", base}, {"files", present}}.dump(2) + "\n"));
  for (const fs::path& d : dirs) {
    SLUICE_RETURN_IF_ERROR(file::DefaultFileSystem().SyncDirectory(d.string()));
  }
  SLUICE_RETURN_IF_ERROR(file::RenameDurably(partial, target));
  fs::remove(lock_path, ec);  // Later callers find the entry before they look for the lock.
  return out;
}

}  // namespace sluice::model
