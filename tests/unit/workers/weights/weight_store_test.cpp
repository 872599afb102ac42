// WeightStore: publishing, eviction, and how PlanDelta chooses between a delta chain and the
// full image.
#include "workers/weights/weight_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <string>
#include <thread>

#include "tests/unit/workers/weights/weight_fixtures.h"

namespace sluice::weights {
namespace {

using fixtures::Model;
using fixtures::Perturb;
using fixtures::RandomModel;

std::string Concat(const DeltaPlan& plan) {
  std::string out;
  for (const auto& d : plan.deltas) out += *d;
  return out;
}

TEST(WeightStoreTest, KeepsTheLastKVersions) {
  WeightStore store(3);
  EXPECT_FALSE(store.Latest().has_value());
  Model m = RandomModel(1);
  std::mt19937_64 rng(1);
  for (int64_t v = 1; v <= 5; ++v) {
    Perturb(m, 0.01, rng);
    ASSERT_TRUE(store.Publish(m.Views(), v).ok());
  }
  EXPECT_EQ(store.Latest(), 5);
  std::vector<VersionInfo> versions = store.Versions();
  ASSERT_EQ(versions.size(), 3u);
  EXPECT_EQ(versions[0].version, 3);
  EXPECT_EQ(versions[2].version, 5);
  EXPECT_EQ(versions[0].delta_from, 2);  // The link to an evicted version is still described.
  EXPECT_GT(versions[2].delta_stats.changed_elements, 0u);
  EXPECT_EQ(store.Full(2), nullptr);
  EXPECT_EQ(store.Digest(2).status().code(), StatusCode::kNotFound);
  ASSERT_NE(store.Full(4), nullptr);
  EXPECT_EQ(*store.Digest(4), store.Full(4)->digest());

  uint64_t held = 0;
  for (const VersionInfo& v : versions) held += v.bytes + v.delta_stats.bytes;
  EXPECT_EQ(store.bytes_held(), held);
}

TEST(WeightStoreTest, VersionsMustIncrease) {
  WeightStore store(2);
  const Model m = RandomModel(2);
  ASSERT_TRUE(store.Publish(m.Views(), 4).ok());
  Status same = store.Publish(m.Views(), 4);
  EXPECT_EQ(same.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store.Publish(m.Views(), 3).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(store.Publish(m.Views(), 9).ok());
}

TEST(WeightStoreTest, PlansAChainOfConsecutiveDeltas) {
  WeightStore store(4);
  Model m = RandomModel(3);
  std::mt19937_64 rng(3);
  for (int64_t v = 1; v <= 4; ++v) {
    Perturb(m, 0.01, rng);
    ASSERT_TRUE(store.Publish(m.Views(), v).ok());
  }
  Result<DeltaPlan> plan = store.PlanDelta(1, 4);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_FALSE(plan->use_full) << plan->reason;
  ASSERT_EQ(plan->deltas.size(), 3u);
  EXPECT_EQ(plan->to_digest, store.Full(4)->digest());
  std::string chain = Concat(*plan);
  EXPECT_EQ(plan->bytes, chain.size());
  Result<WeightSnapshot> out = ApplyDelta(*store.Full(1), chain);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_TRUE(out->image() == store.Full(4)->image());

  Result<DeltaPlan> same = store.PlanDelta(4, 4);
  ASSERT_TRUE(same.ok());
  EXPECT_FALSE(same->use_full);
  EXPECT_TRUE(same->deltas.empty());

  EXPECT_EQ(store.PlanDelta(1, 7).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store.PlanDelta(4, 2).status().code(), StatusCode::kInvalidArgument);
}

TEST(WeightStoreTest, FullWhenFromWasEvicted) {
  WeightStore store(2);
  Model m = RandomModel(4);
  std::mt19937_64 rng(4);
  for (int64_t v = 1; v <= 3; ++v) {
    Perturb(m, 0.01, rng);
    ASSERT_TRUE(store.Publish(m.Views(), v).ok());
  }
  Result<DeltaPlan> plan = store.PlanDelta(1, 3);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->use_full);
  EXPECT_NE(plan->reason.find("not held"), std::string::npos) << plan->reason;
  EXPECT_TRUE(plan->deltas.empty());
  EXPECT_FALSE(store.PlanDelta(2, 3)->use_full);
}

TEST(WeightStoreTest, FullWhenEveryElementChanged) {
  WeightStore store(3);
  Model m = RandomModel(5);
  std::mt19937_64 rng(5);
  ASSERT_TRUE(store.Publish(m.Views(), 1).ok());
  Perturb(m, 1.0, rng);
  ASSERT_TRUE(store.Publish(m.Views(), 2).ok());
  // The delta would be larger than the image, so none is kept.
  EXPECT_FALSE(store.Versions().back().delta_from.has_value());
  Result<DeltaPlan> plan = store.PlanDelta(1, 2);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->use_full);
}

TEST(WeightStoreTest, FullWhenTheChainIsLargerThanTheImage) {
  WeightStore store(3);
  Model m = RandomModel(6);
  std::mt19937_64 rng(6);
  ASSERT_TRUE(store.Publish(m.Views(), 1).ok());
  for (int64_t v = 2; v <= 3; ++v) {
    Perturb(m, 0.45, rng);
    ASSERT_TRUE(store.Publish(m.Views(), v).ok());
  }
  // Each delta alone is worth it...
  Result<DeltaPlan> one = store.PlanDelta(2, 3);
  ASSERT_TRUE(one.ok());
  ASSERT_FALSE(one->use_full) << one->reason;
  ASSERT_LT(one->bytes, one->full_bytes);
  // ...two together are not.
  Result<DeltaPlan> two = store.PlanDelta(1, 3);
  ASSERT_TRUE(two.ok());
  EXPECT_TRUE(two->use_full);
  EXPECT_NE(two->reason.find("chain"), std::string::npos) << two->reason;
}

TEST(WeightStoreTest, ALayoutChangeBreaksTheChain) {
  WeightStore store(3);
  Model m = RandomModel(7);
  ASSERT_TRUE(store.Publish(m.Views(), 1).ok());
  std::mt19937_64 rng(7);
  m.tensors.push_back(fixtures::RandomTensor("extra", model::DType::kF32, {2}, rng));
  ASSERT_TRUE(store.Publish(m.Views(), 2).ok());
  Perturb(m, 0.01, rng);
  ASSERT_TRUE(store.Publish(m.Views(), 3).ok());
  EXPECT_TRUE(store.PlanDelta(1, 3)->use_full);
  EXPECT_FALSE(store.PlanDelta(2, 3)->use_full);
}

TEST(WeightStoreTest, PublishingWithoutADeltaCutsTheChain) {
  // Versions published with encode_delta = false (spec.weightSync.mode full, or a version that
  // fullSyncEveryVersions makes a full sync) keep no delta: every worker downloads the image.
  WeightStore store(4);
  Model m = RandomModel(8);
  std::mt19937_64 rng(8);
  ASSERT_TRUE(store.Publish(m.Views(), 1, /*encode_delta=*/false).ok());
  Perturb(m, 0.01, rng);
  ASSERT_TRUE(store.Publish(m.Views(), 2, /*encode_delta=*/false).ok());
  Perturb(m, 0.01, rng);
  ASSERT_TRUE(store.Publish(m.Views(), 3).ok());  // Delta from 2 again.
  Perturb(m, 0.01, rng);
  Result<WeightSnapshot> four = WeightSnapshot::Build(m.Views(), 4);
  ASSERT_TRUE(four.ok());
  ASSERT_TRUE(store.Publish(std::move(*four), /*encode_delta=*/false).ok());

  std::vector<VersionInfo> versions = store.Versions();
  ASSERT_EQ(versions.size(), 4u);
  EXPECT_FALSE(versions[1].delta_from.has_value());
  EXPECT_EQ(versions[2].delta_from, 2);
  EXPECT_FALSE(versions[3].delta_from.has_value());
  EXPECT_EQ(versions[3].delta_stats.bytes, 0u);
  Result<DeltaPlan> plan = store.PlanDelta(1, 2);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->use_full);
  EXPECT_NE(plan->reason.find("no delta into version 2"), std::string::npos) << plan->reason;
  EXPECT_FALSE(store.PlanDelta(2, 3)->use_full);
  EXPECT_TRUE(store.PlanDelta(3, 4)->use_full);
  // Held bytes are the images alone, plus the one delta kept (into 3).
  uint64_t images = 0;
  for (const VersionInfo& v : versions) images += v.bytes;
  EXPECT_EQ(store.bytes_held(), images + versions[2].delta_stats.bytes);
}

TEST(WeightStoreTest, ReadersRunWhilePublishing) {
  WeightStore store(2);
  Model m = RandomModel(8);
  ASSERT_TRUE(store.Publish(m.Views(), 0).ok());
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done.load()) {
      std::optional<int64_t> latest = store.Latest();
      ASSERT_TRUE(latest.has_value());
      auto snap = store.Full(*latest);
      if (snap) {
        EXPECT_EQ(snap->version(), *latest);
      }
      (void)store.Versions();
    }
  });
  std::mt19937_64 rng(8);
  for (int64_t v = 1; v <= 20; ++v) {
    Perturb(m, 0.01, rng);
    ASSERT_TRUE(store.Publish(m.Views(), v).ok());
  }
  done = true;
  reader.join();
  EXPECT_EQ(store.Latest(), 20);
}

}  // namespace
}  // namespace sluice::weights
