// spec.weightSync as the trainer and the rollout workers read it: which versions carry a delta,
// and the transfer chunk size.
#include "workers/weights/weight_sync.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace sluice::weights {
namespace {

api::PolicySpecWeightSync Sync(std::string mode, std::optional<int64_t> full_every) {
  api::PolicySpecWeightSync s;
  s.mode = std::move(mode);
  s.full_sync_every_versions = full_every;
  return s;
}

TEST(WeightSyncTest, EncodeDeltaFor) {
  struct Case {
    std::string mode;
    std::optional<int64_t> full_every;
    int64_t version;
    bool want;
  };
  const Case cases[] = {
      // mode full: never a delta, whatever the version.
      {"full", std::nullopt, 0, false},
      {"full", std::nullopt, 1, false},
      {"full", std::nullopt, 7, false},
      // mode delta without fullSyncEveryVersions: always (the store still drops a delta that
      // does not pay).
      {"delta", std::nullopt, 0, true},
      {"delta", std::nullopt, 1, true},
      {"delta", std::nullopt, 1000, true},
      // Every third version is a full sync.
      {"delta", 3, 1, true},
      {"delta", 3, 2, true},
      {"delta", 3, 3, false},
      {"delta", 3, 4, true},
      {"delta", 3, 6, false},
      {"delta", 3, 0, false},
      {"delta", 3, 300000, false},
      {"delta", 3, 299999, true},
      // N = 1: every version is full, like mode full.
      {"delta", 1, 1, false},
      {"delta", 1, 2, false},
      // Below the CRD's minimum: treated as unset.
      {"delta", 0, 4, true},
      {"delta", -2, 4, true},
      // Only meaningful with delta (the CRD rejects it otherwise); full stays full.
      {"full", 2, 3, false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(EncodeDeltaFor(Sync(c.mode, c.full_every), c.version), c.want)
        << "mode " << c.mode << ", fullSyncEveryVersions "
        << (c.full_every ? std::to_string(*c.full_every) : "unset") << ", version " << c.version;
  }
}

TEST(WeightSyncTest, DefaultsAreFullSyncs) {
  // The CRD's defaults (mode full) publish no deltas.
  const api::PolicySpecWeightSync defaults;
  EXPECT_FALSE(EncodeDeltaFor(defaults, 1));
  EXPECT_FALSE(EncodeDeltaFor(defaults, 2));
  EXPECT_EQ(TransferChunkBytes(defaults), uint64_t{64} << 20);
}

TEST(WeightSyncTest, TransferChunkBytes) {
  api::PolicySpecWeightSync s;
  const std::pair<int64_t, uint64_t> cases[] = {
      {1, uint64_t{1} << 20}, {64, uint64_t{64} << 20}, {1024, uint64_t{1} << 30}, {0, 0}, {-1, 0},
  };
  for (const auto& [mib, bytes] : cases) {
    s.chunk_size_mi_b = mib;
    EXPECT_EQ(TransferChunkBytes(s), bytes) << mib << " MiB";
  }
}

}  // namespace
}  // namespace sluice::weights
