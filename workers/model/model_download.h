// Model download: a Policy's spec.model.source.uri, the http(s) URL of a Hugging Face model
// directory, fetched into a local cache directory so the workers then load it exactly as a
// `path` source (DecoderModel::LoadHf, the tokenizer loader, the trainer's export sidecars).
//
// What is fetched (ModelFilesToFetch), each file from URI + "/" + its name: config.json
// (required); model.safetensors.index.json when the server has it and then every shard its
// weight_map names (required), else model.safetensors (required); and, when present, the
// tokenizer and generation files (kOptionalModelFiles) plus the caller's extra files (a Policy's
// spec.tokenizer.path). Nothing else of the directory is read, so nothing else is fetched. A 404
// on an optional file skips it; on a required one it is InvalidArgument naming the URL and the
// field spec.model.source.uri. Redirects (301, 302, 303, 307, 308: a hub handing out a CDN URL)
// are followed, at most kMaxModelRedirects per file.
//
// The cache entry `dir` (ModelCacheDir: <root>/<hash of the URI>) is either absent or complete:
// files are downloaded into the sibling `.<name>.partial` (each through `<file>.part`, renamed
// when whole and fsynced), a `.sluice-download.json` marker naming the URI is added, and the
// directory is renamed onto `dir`. A later call finds `dir` with its marker and makes no request.
// A crash leaves only `.partial`, which the next call resumes: finished files are kept and a
// broken one continues with `Range: bytes=<length>-` (a server ignoring Range sends it whole
// again). An exclusive flock on the sibling `.<name>.lock` makes concurrent callers on one node
// (trainer ranks and replicas sharing a cache) download once: the others wait for it, then
// reuse the result. Files are not verified beyond their lengths (Content-Length, Content-Range);
// the loaders check their structure.
//
// Thread safety: the functions are thread-safe; concurrent downloads of one `dir` serialize on
// its lock. Sizes are in bytes.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/http/client.h"
#include "common/http/hosts_file.h"
#include "common/process/cancellation.h"
#include "common/status.h"

namespace sluice::model {

// The field every uri error names (the Policy's; callers prefix their own path).
inline constexpr std::string_view kModelUriField = "spec.model.source.uri";

// Fetched when the server has them: the tokenizer files the workers read (tokenizer.json;
// tokenizer_config.json names the special tokens) and the ones the trainer's exports carry
// along so an exported version loads in transformers and vLLM (weights::HfSidecarFiles). The
// slow tokenizers' vocab.json, merges.txt, vocab.txt and tokenizer.model are left out:
// tokenizer.json holds the same vocabulary and is what the workers need.
inline constexpr std::string_view kOptionalModelFiles[] = {
    "tokenizer.json",    "tokenizer_config.json",  "special_tokens_map.json",
    "added_tokens.json", "generation_config.json", "chat_template.jinja",
    "chat_template.json"};

// Redirects followed for one file before giving up.
inline constexpr int kMaxModelRedirects = 5;

// One file of a model directory: its path relative to the directory ("config.json",
// "tokenizer/tokenizer.json") and whether a 404 for it is an error.
struct ModelFile {
  std::string name;
  bool required = false;

  friend bool operator==(const ModelFile&, const ModelFile&) = default;
};

// Every file a download fetches, in order: config.json; then `index_json` (the text of
// model.safetensors.index.json, nullopt when the server has none) and its shards in name order,
// or model.safetensors; then kOptionalModelFiles and `extra_files` (relative paths), each once.
// Errors: Corruption (field "weight_map" or "weight_map.<tensor>") for an index that is not a JSON
// object with a weight_map of plain file names; InvalidArgument naming an extra file that is not
// a relative path inside the directory.
Result<std::vector<ModelFile>> ModelFilesToFetch(const std::optional<std::string>& index_json,
                                                 const std::vector<std::string>& extra_files = {});

// OK for an http:// or https:// URL of a directory (no user information, query or fragment);
// otherwise InvalidArgument naming kModelUriField.
Status CheckModelUri(std::string_view uri);

// $TMPDIR/sluice-models (/tmp when TMPDIR is unset or empty): the default cache root, shared by
// the workers of a node so one download serves them all.
std::string DefaultModelCacheRoot();

// The cache entry of `uri` under `root`: root + "/" + the first 32 hex digits of the SHA-256 of
// the URI without trailing slashes (so ".../m" and ".../m/" share an entry). Pure.
std::string ModelCacheDir(std::string_view root, std::string_view uri);

struct ModelDownloadOptions {
  // More optional files, relative to the directory (spec.tokenizer.path).
  std::vector<std::string> extra_files;
  std::shared_ptr<http::HostsFileResolver> resolver;  // Null: the system resolver only.
  http::ClientTlsOptions tls;                         // Default: the system's CAs.
  std::chrono::milliseconds connect_timeout{10000};
  // A transfer silent this long breaks off (and is resumed).
  std::chrono::milliseconds read_timeout{60000};
  // Requests for one file's bytes, counting resumptions after a broken transfer (redirects and
  // the client's own retries of a request that got no response are extra).
  int max_attempts = 4;
  CancellationToken cancel;  // Stops waiting for the lock and any transfer.
  // Called after each file this call downloads, with its size. May be empty.
  std::function<void(const std::string& name, uint64_t bytes)> on_file;
};

// What a download did, for logs.
struct ModelDownload {
  std::string directory;  // `dir` as given.
  bool reused = false;    // The entry was complete already: no request was made.
  int files = 0;          // Files this call downloaded (not counting those resumed from disk).
  uint64_t bytes = 0;     // Body bytes received by this call.
};

// Makes `dir` a complete download of `uri` (see the header comment) and returns what it did.
// Errors: CheckModelUri's; InvalidArgument naming kModelUriField and the URL for a required file
// the server does not have (404); the server's error for other answers, with the URL;
// Unavailable or DeadlineExceeded when every attempt at a file broke off; Corruption for a bad
// index; Conflict when `dir` exists but is not a download of `uri`; Cancelled; Internal for file
// system errors.
Result<ModelDownload> DownloadModelDirectory(const std::string& uri, const std::string& dir,
                                             const ModelDownloadOptions& options = {});

}  // namespace sluice::model
