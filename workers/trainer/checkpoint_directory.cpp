#include "workers/trainer/checkpoint_directory.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <system_error>

#include "common/file/atomic_file.h"

namespace sluice::trainer {
namespace {

namespace fs = std::filesystem;

constexpr const char kPrefix[] = "step-";

std::string TempName(int64_t step) { return "." + CheckpointName(step) + ".tmp"; }

// "sha256:<hex>" of the file at `path`, read in 1 MiB pieces.
Result<std::string> FileDigest(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Corruption(path.string() + ": cannot be read");
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
    return Status::Internal("SHA-256 is unavailable");
  }
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (in.gcount() > 0) EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) return Status::Corruption(path.string() + ": read failed");
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &len);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "sha256:";
  for (unsigned int i = 0; i < len; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}

Status WriteChecksums(const fs::path& tmp) {
  nlohmann::json files = nlohmann::json::object();
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(tmp, ec)) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || name == kChecksumsFile) continue;
    Result<std::string> digest = FileDigest(e.path());
    if (!digest.ok()) return digest.status();
    files[name] = *digest;
  }
  if (ec) return Status::Internal("listing " + tmp.string() + ": " + ec.message());
  return file::WriteFileAtomic(tmp / kChecksumsFile,
                               nlohmann::json{{"files", files}}.dump() + "\n");
}

}  // namespace

std::string CheckpointName(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s%08lld", kPrefix, static_cast<long long>(step));
  return buf;
}

std::optional<int64_t> ParseCheckpointName(const std::string& name) {
  constexpr size_t kPrefixLen = sizeof(kPrefix) - 1;
  if (name.size() < kPrefixLen + 8 || name.compare(0, kPrefixLen, kPrefix) != 0) {
    return std::nullopt;
  }
  int64_t step = 0;
  for (size_t i = kPrefixLen; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || step > (INT64_MAX - 9) / 10) return std::nullopt;
    step = step * 10 + (name[i] - '0');
  }
  return step;
}

Result<std::vector<int64_t>> ListCheckpoints(const std::string& dir) {
  std::vector<int64_t> steps;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return steps;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_directory()) continue;
    if (std::optional<int64_t> s = ParseCheckpointName(e.path().filename().string())) {
      steps.push_back(*s);
    }
  }
  if (ec) return Status::Internal("listing " + dir + ": " + ec.message());
  std::sort(steps.begin(), steps.end());
  return steps;
}

Result<std::string> BeginCheckpoint(const std::string& dir, int64_t step) {
  std::error_code ec;
  const fs::path tmp = fs::path(dir) / TempName(step);
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec) return Status::Internal("creating " + tmp.string() + ": " + ec.message());
  return tmp.string();
}

Status CommitCheckpoint(const std::string& dir, int64_t step, int keep) {
  std::error_code ec;
  const fs::path tmp = fs::path(dir) / TempName(step);
  const fs::path final_path = fs::path(dir) / CheckpointName(step);
  SLUICE_RETURN_IF_ERROR(WriteChecksums(tmp));
  SLUICE_RETURN_IF_ERROR(file::SyncDirectoryContents(tmp));
  fs::remove_all(final_path, ec);
  SLUICE_RETURN_IF_ERROR(file::RenameDurably(tmp, final_path));

  Result<std::vector<int64_t>> steps = ListCheckpoints(dir);
  if (!steps.ok()) return steps.status();
  const size_t keep_n = static_cast<size_t>(std::max(keep, 1));
  for (size_t i = 0; i + keep_n < steps->size(); ++i) {
    fs::remove_all(fs::path(dir) / CheckpointName((*steps)[i]), ec);
  }
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() > 5 && name[0] == '.' && name.ends_with(".tmp")) fs::remove_all(e.path(), ec);
  }
  return Status::Ok();
}

Status WriteHeldThrough(const std::string& tmp_dir, int64_t held_through) {
  return file::WriteFileAtomic(fs::path(tmp_dir) / kDataflowFile,
                               nlohmann::json{{"held_through", held_through}}.dump() + "\n");
}

Result<int64_t> ReadHeldThrough(const std::string& path) {
  const fs::path file = fs::path(path) / kDataflowFile;
  std::error_code ec;
  if (!fs::exists(file, ec)) return int64_t{0};
  std::ifstream in(file);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.contains("held_through") || !j["held_through"].is_number_integer() ||
      j["held_through"].get<int64_t>() < 0) {
    return Status::Corruption(file.string() + ": held_through is missing or not an integer >= 0");
  }
  return j["held_through"].get<int64_t>();
}

Status VerifyCheckpoint(const std::string& dir, int64_t step) {
  const fs::path root = fs::path(dir) / CheckpointName(step);
  const fs::path sums = root / kChecksumsFile;
  std::error_code ec;
  if (!fs::exists(sums, ec)) return Status::Ok();  // Older than checksums: unverified.
  std::ifstream in(sums);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.contains("files") || !j["files"].is_object()) {
    return Status::Corruption(sums.string() + " is malformed");
  }
  for (const auto& [name, want] : j["files"].items()) {
    if (!want.is_string() || name.find('/') != std::string::npos) {
      return Status::Corruption(sums.string() + ": entry \"" + name + "\" is malformed");
    }
    if (!fs::exists(root / name, ec)) {
      return Status::Corruption((root / name).string() + " is missing");
    }
    Result<std::string> got = FileDigest(root / name);
    if (!got.ok()) return got.status();
    if (*got != want.get<std::string>()) {
      return Status::Corruption((root / name).string() + " does not match its checksum (" + *got +
                                ", want " + want.get<std::string>() + ")");
    }
  }
  return Status::Ok();
}

}  // namespace sluice::trainer
