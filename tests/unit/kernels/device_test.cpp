#include "workers/kernels/device.h"

#include <gtest/gtest.h>

namespace sluice::kernels {
namespace {

TEST(CudaDeviceTest, CountIsNeverNegativeAndListMatchesIt) {
  const int count = VisibleDeviceCount();
  EXPECT_GE(count, 0);
  Result<std::vector<DeviceInfo>> devices = ListDevices();
  ASSERT_TRUE(devices.ok()) << devices.status().ToString();
  EXPECT_EQ(static_cast<int>(devices->size()), count);
  for (const DeviceInfo& d : *devices) {
    EXPECT_FALSE(d.name.empty());
    EXPECT_GE(d.compute_major, 7);
    EXPECT_GT(d.total_memory_bytes, 0u);
  }
}

TEST(CudaDeviceTest, SaxpyMatchesTheCpu) {
  if (VisibleDeviceCount() == 0) GTEST_SKIP() << "no CUDA device is visible";
  std::vector<float> x(10007), y(10007);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<float>(i) * 0.5f;
    y[i] = 3.0f - static_cast<float>(i);
  }
  Result<std::vector<float>> out = Saxpy(2.0f, x, y);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  for (size_t i = 0; i < x.size(); ++i) ASSERT_FLOAT_EQ((*out)[i], 2.0f * x[i] + y[i]) << i;
}

TEST(CudaDeviceTest, SaxpyRejectsMismatchedLengthsOrNoDevice) {
  Result<std::vector<float>> out = Saxpy(1.0f, {1, 2}, {1});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().field(), "y");
  if (VisibleDeviceCount() == 0) {
    EXPECT_EQ(Saxpy(1.0f, {1}, {1}).status().code(), StatusCode::kUnavailable);
  }
}

}  // namespace
}  // namespace sluice::kernels
