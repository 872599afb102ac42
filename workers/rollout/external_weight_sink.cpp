#include "workers/rollout/external_weight_sink.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <utility>
#include <vector>

#include "common/file/atomic_file.h"

namespace sluice::rollout {

namespace fs = std::filesystem;

ExternalWeightSink::ExternalWeightSink(OpenAiBackend* backend, std::string volume,
                                       std::string model_dir, int keep)
    : backend_(backend),
      volume_(std::move(volume)),
      model_dir_(std::move(model_dir)),
      keep_(std::max(keep, 1)) {}

std::string ExternalWeightSink::VersionDir(const std::string& policy, int64_t version) const {
  return volume_ + "/" + policy + "/v" + std::to_string(version);
}

Status ExternalWeightSink::ApplyWeights(const std::string& policy,
                                        const weights::WeightSnapshot& snapshot) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string dir = VersionDir(policy, snapshot.version());
  const std::string tmp = dir + ".tmp";
  std::error_code ec;
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec) return Status::Internal("cannot create " + tmp + ": " + ec.message());
  SLUICE_RETURN_IF_ERROR(file::WriteFileAtomic(tmp + "/model.safetensors", snapshot.image()));
  if (!model_dir_.empty()) {
    for (const char* name :
         {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
          "special_tokens_map.json", "vocab.json", "merges.txt"}) {
      const fs::path from = fs::path(model_dir_) / name;
      if (!fs::exists(from, ec)) continue;
      fs::copy_file(from, fs::path(tmp) / name, fs::copy_options::overwrite_existing, ec);
      if (ec) return Status::Internal("cannot copy " + from.string() + ": " + ec.message());
    }
  }
  SLUICE_RETURN_IF_ERROR(file::SyncDirectoryContents(tmp));
  fs::remove_all(dir, ec);
  SLUICE_RETURN_IF_ERROR(file::RenameDurably(tmp, dir));
  SLUICE_RETURN_IF_ERROR(backend_->ReloadWeights(policy, dir, snapshot.version()));

  // Keep the newest `keep_` versions.
  std::vector<int64_t> versions;
  for (const fs::directory_entry& e : fs::directory_iterator(volume_ + "/" + policy, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() < 2 || name[0] != 'v') continue;
    int64_t v = 0;
    auto [end, err] = std::from_chars(name.data() + 1, name.data() + name.size(), v);
    if (err == std::errc() && end == name.data() + name.size()) versions.push_back(v);
  }
  std::sort(versions.begin(), versions.end());
  for (size_t i = 0; i + static_cast<size_t>(keep_) < versions.size(); ++i) {
    fs::remove_all(VersionDir(policy, versions[i]), ec);
  }
  return Status::Ok();
}

}  // namespace sluice::rollout
