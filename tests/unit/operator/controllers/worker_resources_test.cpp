// Tests of the worker containers' resources: the template's amounts as requests and limits, the
// kind's default requests for an unset cpu or memory.
#include "operator/controllers/worker_resources.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace sluice::controllers {
namespace {

using nlohmann::json;

TEST(WorkerResourcesTest, WhatTheTemplateSetsIsRequestedAndTheLimit) {
  const json all = {
      {"gpus", 2}, {"gpuResourceName", "amd.com/gpu"}, {"cpu", 8}, {"memory", "64Gi"}};
  const json amounts = {{"cpu", "8"}, {"memory", "64Gi"}, {"amd.com/gpu", "2"}};
  EXPECT_EQ(WorkerResources(all, kRolloutDefaultRequests),
            json({{"requests", amounts}, {"limits", amounts}}));
  // The default GPU resource name.
  EXPECT_EQ(WorkerResources({{"gpus", 1}, {"cpu", "500m"}, {"memory", "1Gi"}},
                            kTrainerDefaultRequests)["limits"],
            json({{"cpu", "500m"}, {"memory", "1Gi"}, {"nvidia.com/gpu", "1"}}));
}

TEST(WorkerResourcesTest, NothingSetRequestsTheDefaultsWithoutLimits) {
  EXPECT_EQ(WorkerResources(json::object(), kRolloutDefaultRequests),
            json({{"requests", {{"cpu", "1"}, {"memory", "2Gi"}}}}));
  EXPECT_EQ(WorkerResources(json::object(), kTrainerDefaultRequests),
            json({{"requests", {{"cpu", "2"}, {"memory", "4Gi"}}}}));
  // gpus 0 is a CPU worker: nothing set either. Not an object: as empty.
  EXPECT_EQ(WorkerResources({{"gpus", 0}, {"gpuResourceName", "nvidia.com/gpu"}},
                            kRolloutDefaultRequests),
            json({{"requests", {{"cpu", "1"}, {"memory", "2Gi"}}}}));
  EXPECT_EQ(WorkerResources(json(), kTrainerDefaultRequests),
            json({{"requests", {{"cpu", "2"}, {"memory", "4Gi"}}}}));
}

TEST(WorkerResourcesTest, EachUnsetAmountIsDefaultedOnItsOwn) {
  // cpu set: it is requested and limited; memory is requested at the default, unlimited.
  EXPECT_EQ(
      WorkerResources({{"gpus", 0}, {"cpu", "500m"}}, kRolloutDefaultRequests),
      json({{"requests", {{"cpu", "500m"}, {"memory", "2Gi"}}}, {"limits", {{"cpu", "500m"}}}}));
  EXPECT_EQ(
      WorkerResources({{"memory", "8Gi"}}, kTrainerDefaultRequests),
      json({{"requests", {{"cpu", "2"}, {"memory", "8Gi"}}}, {"limits", {{"memory", "8Gi"}}}}));
  // A GPU worker without cpu and memory: the GPUs are requested and limited, cpu and memory are
  // requested at the defaults.
  EXPECT_EQ(WorkerResources({{"gpus", 4}}, kTrainerDefaultRequests),
            json({{"requests", {{"cpu", "2"}, {"memory", "4Gi"}, {"nvidia.com/gpu", "4"}}},
                  {"limits", {{"nvidia.com/gpu", "4"}}}}));
}

}  // namespace
}  // namespace sluice::controllers
