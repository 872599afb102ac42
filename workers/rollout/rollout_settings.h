// RolloutSettings: the hosted policies of a rollout replica, from rollout.json, the worker config
// the operator writes into the pool's ConfigMap (mounted at /etc/sluice/config/rollout.json;
// flag --policy-config):
//
//   {"pool": <RolloutPool>, "policies": [<Policy>, ...]}
//
// Each Policy object is defaulted and validated against the CRD, so errors name the field
// ("policies[1].spec.model.source"). Every name in --policies must have its Policy there.
//
// Thread safety: values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "workers/model/policy_model.h"

namespace sluice::rollout {

struct HostedPolicy {
  std::string name;
  model::ModelSource model;    // builtin URI or HF directory (with the URL of a uri source).
  std::string tokenizer;       // "char" or "model" (tokenizer.json of the model).
  std::string tokenizer_file;  // For "model": the tokenizer.json path.
  // The ChatTemplate name (chat_template.h): "plain" for the built-in models' char tokenizer;
  // "chatml" or "llama3" for a model tokenizer (chatTemplate auto picks by the tokenizer's
  // markers; chatml forces ChatML).
  std::string chat_template;
  std::string dtype;          // spec.model.dtype.
  int64_t keep_versions = 2;  // spec.weightSync.keepVersions.
  // spec.weightSync.chunkSizeMiB in bytes: the most one Range request of a full-image download
  // asks for (weights/weight_fetcher.h FetchOptions::chunk_bytes).
  uint64_t chunk_bytes = uint64_t{64} << 20;
};

struct RolloutSettings {
  std::string pool;                    // The RolloutPool's name (empty when the config has none).
  std::vector<HostedPolicy> policies;  // In --policies order.
};

// Parses rollout.json text for the policies named in `hosted`. chat_template "auto" with a model
// tokenizer is left as "auto" here (the loader decides once the tokenizer is read). A uri model's
// directory is its cache entry under `model_cache_root` (model::ResolveModelSource; empty:
// $TMPDIR/sluice-models), downloaded later by model::FetchModelSource.
Result<RolloutSettings> ParseRolloutConfig(std::string_view text,
                                           const std::vector<std::string>& hosted,
                                           std::string_view model_cache_root = {});
// Reads and parses the file; errors carry the path.
Result<RolloutSettings> LoadRolloutConfigFile(const std::string& path,
                                              const std::vector<std::string>& hosted,
                                              std::string_view model_cache_root = {});

}  // namespace sluice::rollout
