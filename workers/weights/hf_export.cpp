#include "workers/weights/hf_export.h"

#include <fcntl.h>
#include <stdio.h>  // renameat2, RENAME_NOREPLACE (glibc, _GNU_SOURCE).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <system_error>
#include <utility>

#include "workers/model/safetensors.h"
#include "workers/weights/weight_digest.h"

namespace sluice::weights {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::string_view kConfigFile = "config.json";
constexpr std::string_view kModelFile = "model.safetensors";
constexpr std::string_view kEmbedTensor = "model.embed_tokens.weight";
constexpr std::string_view kLmHeadTensor = "lm_head.weight";

std::span<const std::byte> AsBytes(std::string_view s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

std::string ErrnoText() { return std::strerror(errno); }

Status FsyncPath(const fs::path& path, bool directory) {
  const int fd = ::open(path.c_str(), (directory ? O_DIRECTORY : 0) | O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Internal("opening " + path.string() + " for fsync: " + ErrnoText());
  const int rc = ::fsync(fd);
  const std::string why = rc != 0 ? ErrnoText() : "";
  ::close(fd);
  if (rc != 0) return Status::Internal("fsync of " + path.string() + ": " + why);
  return Status::Ok();
}

// Creates `path` (which must not exist), writes `bytes` and fsyncs it.
Status WriteFileSynced(const fs::path& path, std::string_view bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return Status::Internal("creating " + path.string() + ": " + ErrnoText());
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = ErrnoText();
      ::close(fd);
      return Status::Internal("writing " + path.string() + ": " + why);
    }
    done += static_cast<size_t>(n);
  }
  const int rc = ::fsync(fd);
  const std::string why = rc != 0 ? ErrnoText() : "";
  if (::close(fd) != 0 || rc != 0) {
    return Status::Internal("fsync of " + path.string() + ": " + (why.empty() ? ErrnoText() : why));
  }
  return Status::Ok();
}

// The one float dtype every tensor has.
Result<model::DType> SnapshotDtype(const WeightSnapshot& snapshot) {
  if (snapshot.tensors().empty()) {
    return Status::InvalidArgument("the weights hold no tensors", "tensors");
  }
  const TensorSlice& first = snapshot.tensors().front();
  if (HfDtypeName(first.dtype).empty()) {
    return Status::InvalidArgument("dtype " + std::string(model::DTypeName(first.dtype)) +
                                       " is not one of F32, F16, BF16 (an HF torch_dtype)",
                                   "tensors." + first.name + ".dtype");
  }
  for (const TensorSlice& t : snapshot.tensors()) {
    if (t.dtype != first.dtype) {
      return Status::InvalidArgument("dtype " + std::string(model::DTypeName(t.dtype)) +
                                         " differs from " +
                                         std::string(model::DTypeName(first.dtype)) + " of " +
                                         first.name + "; config.json has one torch_dtype",
                                     "tensors." + t.name + ".dtype");
    }
  }
  return first.dtype;
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// The checks that catch weights exported with another model's config: the embedding's and the
// lm_head's shapes, and the lm_head present exactly when it is not tied.
Status CheckAgainstConfig(const WeightSnapshot& snapshot, const model::ModelConfig& config) {
  const std::vector<int64_t> want = {config.vocab_size, config.hidden_size};
  const TensorSlice* embed = snapshot.Find(kEmbedTensor);
  const std::string embed_field = "tensors." + std::string(kEmbedTensor);
  if (embed == nullptr) {
    return Status::InvalidArgument("the weights have no " + std::string(kEmbedTensor), embed_field);
  }
  if (embed->shape != want) {
    return Status::InvalidArgument("shape " + ShapeText(embed->shape) + " is not [vocab_size, " +
                                       "hidden_size] = " + ShapeText(want) + " of the config",
                                   embed_field + ".shape");
  }
  const TensorSlice* head = snapshot.Find(kLmHeadTensor);
  const std::string head_field = "tensors." + std::string(kLmHeadTensor);
  if (config.tie_word_embeddings && head != nullptr) {
    return Status::InvalidArgument(
        "the config ties the lm_head to the embedding, but the weights have a separate one",
        head_field);
  }
  if (!config.tie_word_embeddings) {
    if (head == nullptr) {
      return Status::InvalidArgument("the config does not tie word embeddings, and the weights " +
                                         std::string("have no ") + std::string(kLmHeadTensor),
                                     head_field);
    }
    if (head->shape != want) {
      return Status::InvalidArgument(
          "shape " + ShapeText(head->shape) + " is not " + ShapeText(want) + " of the config",
          head_field + ".shape");
    }
  }
  return Status::Ok();
}

// Every extra file exists, and their names neither repeat nor shadow the export's own files.
Status CheckExtraFiles(const std::vector<std::string>& files) {
  std::set<std::string> names = {std::string(kConfigFile), std::string(kModelFile),
                                 std::string(kHfExportRecordFile),
                                 std::string(model::ShardedCheckpoint::kIndexFileName)};
  for (const std::string& f : files) {
    std::error_code ec;
    if (!fs::is_regular_file(f, ec)) {
      return Status::NotFound("extra file " + f + " does not exist (or is not a regular file)");
    }
    const std::string name = fs::path(f).filename().string();
    if (!names.insert(name).second) {
      return Status::InvalidArgument(
          "extra file " + f + ": the export already has a file named " + name, "extra_files");
    }
  }
  return Status::Ok();
}

uint64_t DirectoryBytes(const fs::path& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    std::error_code size_ec;
    if (e.is_regular_file(size_ec)) {
      const uintmax_t n = e.file_size(size_ec);
      if (!size_ec) total += n;
    }
  }
  return total;
}

// `dir` exists: the export it holds when that is this snapshot's, AlreadyExists otherwise.
Result<HfExport> ExistingExport(const fs::path& dir, const WeightSnapshot& snapshot) {
  const std::string base = dir.string() + " already exists";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return Status::AlreadyExists(base + " and is not a directory");
  }
  std::ifstream in(dir / kHfExportRecordFile);
  if (!in) {
    return Status::AlreadyExists(base + " and is not a Sluice export (no " +
                                 std::string(kHfExportRecordFile) + ")");
  }
  const json record = json::parse(in, nullptr, /*allow_exceptions=*/false);
  const bool same = record.is_object() && record.contains("version") &&
                    record["version"].is_number_integer() &&
                    record["version"].get<int64_t>() == snapshot.version() &&
                    record.value("digest", "") == snapshot.digest();
  if (!same) {
    return Status::AlreadyExists(
        base + " and holds another export (" + std::string(kHfExportRecordFile) + ": " +
        (record.is_discarded() ? "unreadable" : record.dump()) + "), not version " +
        std::to_string(snapshot.version()) + " " + snapshot.digest());
  }
  HfExport out;
  out.path = dir.string();
  out.version = snapshot.version();
  out.digest = snapshot.digest();
  out.bytes = DirectoryBytes(dir);
  out.created = false;
  return out;
}

// model.safetensors rewritten with "format": "pt", which transformers requires; nullopt when the
// image already has it and is written as it is (no copy of a possibly many-GiB image).
Result<std::optional<std::string>> RewrittenModelFile(const WeightSnapshot& snapshot) {
  SLUICE_ASSIGN_OR_RETURN(
      model::SafetensorsHeader header,
      model::ParseSafetensorsHeader(AsBytes(snapshot.image()),
                                    "weights version " + std::to_string(snapshot.version())));
  auto format = header.metadata.find("format");
  if (format != header.metadata.end() && format->second == "pt") {
    return std::optional<std::string>();
  }
  std::map<std::string, std::string> metadata = std::move(header.metadata);
  metadata["format"] = "pt";
  const std::vector<model::TensorView> views = snapshot.Views();
  SLUICE_ASSIGN_OR_RETURN(std::vector<std::byte> bytes,
                          model::SerializeSafetensors(views, metadata));
  return std::optional<std::string>(
      std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

// Renames `from` to `to` unless `to` exists. False (and OK) when it does.
Result<bool> RenameNoReplace(const fs::path& from, const fs::path& to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) {
    return true;
  }
  if (errno == EEXIST || errno == ENOTEMPTY) return false;
  if (errno != EINVAL && errno != ENOSYS) {
    return Status::Internal("renaming " + from.string() + " to " + to.string() + ": " +
                            ErrnoText());
  }
  // A filesystem without RENAME_NOREPLACE: check, then rename (rename(2) would replace an empty
  // directory created in between; nothing else).
  std::error_code ec;
  if (fs::exists(to, ec)) return false;
  fs::rename(from, to, ec);
  if (ec) {
    return Status::Internal("renaming " + from.string() + " to " + to.string() + ": " +
                            ec.message());
  }
  return true;
}

// Removes the temporary directory unless released.
class TempDirGuard {
 public:
  explicit TempDirGuard(fs::path path) : path_(std::move(path)) {}
  ~TempDirGuard() {
    if (!path_.empty()) {
      std::error_code ec;
      fs::remove_all(path_, ec);
    }
  }
  TempDirGuard(const TempDirGuard&) = delete;
  TempDirGuard& operator=(const TempDirGuard&) = delete;
  void Release() { path_.clear(); }

 private:
  fs::path path_;
};

// Writes the export's files into the (empty) directory `tmp`.
Status WriteExportFiles(const fs::path& tmp, const WeightSnapshot& snapshot,
                        const model::ModelConfig& config, model::DType dtype,
                        const HfExportOptions& options) {
  {  // The scope unmaps the written file before the directory is fsynced.
    SLUICE_ASSIGN_OR_RETURN(std::optional<std::string> rewritten, RewrittenModelFile(snapshot));
    const std::string model_digest = rewritten ? DigestOf(*rewritten) : snapshot.digest();
    SLUICE_RETURN_IF_ERROR(
        WriteFileSynced(tmp / kModelFile, rewritten ? *rewritten : snapshot.image()));
    rewritten.reset();
    // What an HF loader will do with it: open and check every tensor against the file.
    SLUICE_ASSIGN_OR_RETURN(model::SafetensorsFile written,
                            model::SafetensorsFile::Open((tmp / kModelFile).string()));
    if (written.tensors().size() != snapshot.tensors().size()) {
      return Status::Internal((tmp / kModelFile).string() + " has " +
                              std::to_string(written.tensors().size()) + " tensors, the weights " +
                              std::to_string(snapshot.tensors().size()));
    }
    json record = {{"version", snapshot.version()},
                   {"digest", snapshot.digest()},
                   {"modelDigest", model_digest}};
    if (!options.policy.empty()) record["policy"] = options.policy;
    model::ModelConfig c = config;
    c.torch_dtype = std::string(HfDtypeName(dtype));
    SLUICE_RETURN_IF_ERROR(WriteFileSynced(tmp / kConfigFile, model::ToHfConfig(c).dump(2) + "\n"));
    for (const std::string& f : options.extra_files) {
      const fs::path to = tmp / fs::path(f).filename();
      std::error_code ec;
      fs::copy_file(f, to, fs::copy_options::none, ec);
      if (ec) return Status::Internal("copying " + f + " to " + to.string() + ": " + ec.message());
      SLUICE_RETURN_IF_ERROR(FsyncPath(to, false));
    }
    // Last, so a directory with a record has everything else (it is renamed whole anyway).
    SLUICE_RETURN_IF_ERROR(WriteFileSynced(tmp / kHfExportRecordFile, record.dump(2) + "\n"));
  }
  return FsyncPath(tmp, true);
}

}  // namespace

std::string_view HfDtypeName(model::DType dtype) {
  switch (dtype) {
    case model::DType::kF32:
      return "float32";
    case model::DType::kF16:
      return "float16";
    case model::DType::kBF16:
      return "bfloat16";
    default:
      return {};
  }
}

std::string HfExportName(std::string_view policy, int64_t version) {
  return std::string(policy) + "-v" + std::to_string(version);
}

Result<std::vector<std::string>> HfSidecarFiles(const std::string& model_dir) {
  static const std::set<std::string, std::less<>> kNames = {"tokenizer.model",
                                                            "special_tokens_map.json",
                                                            "added_tokens.json",
                                                            "vocab.json",
                                                            "vocab.txt",
                                                            "merges.txt",
                                                            "generation_config.json",
                                                            "chat_template.jinja",
                                                            "chat_template.json"};
  std::error_code ec;
  if (!fs::is_directory(model_dir, ec)) {
    return Status::NotFound("model directory " + model_dir + " does not exist");
  }
  std::vector<std::string> out;
  for (const fs::directory_entry& e : fs::directory_iterator(model_dir, ec)) {
    const std::string name = e.path().filename().string();
    const bool tokenizer_json = name.starts_with("tokenizer") && name.ends_with(".json");
    std::error_code type_ec;
    if ((tokenizer_json || kNames.count(name) > 0) && e.is_regular_file(type_ec)) {
      out.push_back(e.path().string());
    }
  }
  if (ec) return Status::Internal("listing " + model_dir + ": " + ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

Result<HfExport> ExportHfDirectory(const WeightSnapshot& snapshot, const model::ModelConfig& config,
                                   const HfExportOptions& options, const std::string& dir) {
  fs::path target(dir);
  if (!target.has_filename()) target = target.parent_path();  // "a/b/" names "a/b".
  if (target.empty() || target.filename() == "." || target.filename() == "..") {
    return Status::InvalidArgument("export directory \"" + dir + "\" does not name a directory",
                                   "dir");
  }
  std::error_code ec;
  if (fs::exists(fs::symlink_status(target, ec))) return ExistingExport(target, snapshot);

  SLUICE_RETURN_IF_ERROR(model::ValidateModelConfig(config).WithContext("config"));
  SLUICE_ASSIGN_OR_RETURN(model::DType dtype, SnapshotDtype(snapshot));
  SLUICE_RETURN_IF_ERROR(CheckAgainstConfig(snapshot, config));
  SLUICE_RETURN_IF_ERROR(CheckExtraFiles(options.extra_files));

  const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  fs::create_directories(parent, ec);
  if (ec) return Status::Internal("creating " + parent.string() + ": " + ec.message());
  static std::atomic<uint64_t> counter{0};
  const fs::path tmp = parent / ("." + target.filename().string() + ".tmp-" +
                                 std::to_string(::getpid()) + "-" + std::to_string(counter++));
  fs::remove_all(tmp, ec);  // Only a crashed process with our pid could have left it.
  if (!fs::create_directory(tmp, ec) || ec) {
    return Status::Internal("creating " + tmp.string() + ": " + (ec ? ec.message() : "it exists"));
  }
  TempDirGuard guard(tmp);
  SLUICE_RETURN_IF_ERROR(WriteExportFiles(tmp, snapshot, config, dtype, options));
  const uint64_t bytes = DirectoryBytes(tmp);
  SLUICE_ASSIGN_OR_RETURN(bool renamed, RenameNoReplace(tmp, target));
  if (!renamed) return ExistingExport(target, snapshot);  // Someone else got there first.
  guard.Release();
  SLUICE_RETURN_IF_ERROR(FsyncPath(parent, true));

  HfExport out;
  out.path = target.string();
  out.version = snapshot.version();
  out.digest = snapshot.digest();
  out.bytes = bytes;
  out.created = true;
  return out;
}

}  // namespace sluice::weights
