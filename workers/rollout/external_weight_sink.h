// ExternalWeightSink: how fetched weights reach an external engine (a vLLM or SGLang sidecar):
// the snapshot is written as an HF model directory on a volume the sidecar also mounts, then the
// server is told to reload from it (OpenAiBackend::ReloadWeights).
//
// Layout: <volume>/<policy>/v<version>/ holding model.safetensors (the snapshot's image, byte for
// byte) plus the Policy model directory's config.json, generation_config.json and tokenizer files
// when they exist, so the directory loads on its own. Written to a ".tmp" sibling first, then
// renamed. After a successful reload, version directories older than the last `keep` are removed.
//
// Thread safety: ApplyWeights may be called from several threads (serialized internally).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "workers/rollout/external/openai_backend.h"
#include "workers/rollout/weight_updater.h"

namespace sluice::rollout {

class ExternalWeightSink final : public WeightSink {
 public:
  // `backend` is borrowed and must outlive the sink. `model_dir` is the Policy's model directory
  // (config and tokenizer files are copied from it; may be empty).
  ExternalWeightSink(OpenAiBackend* backend, std::string volume, std::string model_dir,
                     int keep = 2);

  Status ApplyWeights(const std::string& policy, const weights::WeightSnapshot& snapshot) override;

  // The directory a version is written to.
  std::string VersionDir(const std::string& policy, int64_t version) const;

 private:
  OpenAiBackend* backend_;
  const std::string volume_;
  const std::string model_dir_;
  const int keep_;
  std::mutex mu_;
};

}  // namespace sluice::rollout
