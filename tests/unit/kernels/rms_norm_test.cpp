#include "workers/kernels/rms_norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "tests/unit/kernels/kernel_test_util.h"
#include "tests/unit/kernels/reference.h"

namespace sluice::kernels {
namespace {

using testing::DeviceBuffer;
using testing::RoundAll;
using testing::UploadAs;

// The kernel's float32 sum of squares and rsqrtf differ from the reference's double ones in the
// last bits, which can move a rounding of x * inv_rms by one unit of the storage type, and then
// the product with the weight by one more: within three units in the last place, relative.
double RmsNormTolerance(DType dtype, double expected) {
  const double relative = dtype == DType::kFloat32 ? 1e-5 : 3 * testing::Ulp(dtype);
  return relative * std::abs(expected) + 1e-6;
}

void RunCase(DType dtype, int num_tokens, int hidden, bool fused, bool in_place, uint32_t seed) {
  SCOPED_TRACE(std::string(DTypeName(dtype)) + " hidden " + std::to_string(hidden) +
               (fused ? " fused" : "") + (in_place ? " in place" : ""));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> input(-2.0f, 2.0f);
  std::uniform_real_distribution<float> gain(0.5f, 1.5f);
  const size_t size = static_cast<size_t>(num_tokens) * hidden;
  std::vector<float> x(size), residual(size), weight(hidden);
  for (float& v : x) v = input(rng);
  for (float& v : residual) v = input(rng);
  for (float& v : weight) v = gain(rng);
  x = RoundAll(dtype, x);
  residual = RoundAll(dtype, residual);
  weight = RoundAll(dtype, weight);
  const float eps = 1e-6f;

  std::vector<float> expected_residual = residual;
  const std::vector<float> expected = testing::ReferenceRmsNorm(
      dtype, x, fused ? &expected_residual : nullptr, weight, num_tokens, hidden, eps);

  DeviceBuffer d_x = UploadAs(dtype, x);
  DeviceBuffer d_residual = UploadAs(dtype, residual);
  DeviceBuffer d_weight = UploadAs(dtype, weight);
  DeviceBuffer d_out(size * DTypeSize(dtype));
  RmsNormArgs args;
  args.dtype = dtype;
  args.x = d_x.get();
  args.residual = fused ? d_residual.get() : nullptr;
  args.weight = d_weight.get();
  args.out = in_place ? d_x.get() : d_out.get();
  args.num_tokens = num_tokens;
  args.hidden = hidden;
  args.eps = eps;
  const Status status = RmsNorm(args, nullptr);
  ASSERT_TRUE(status.ok()) << status.ToString();
  testing::Synchronize();

  const std::vector<float> got = testing::DownloadAs(dtype, in_place ? d_x : d_out, size);
  int failures = 0;
  for (size_t i = 0; i < size && failures < 10; ++i) {
    if (!(std::abs(double(got[i]) - expected[i]) <= RmsNormTolerance(dtype, expected[i]))) {
      ++failures;
      ADD_FAILURE() << "element " << i << ": got " << got[i] << ", expected " << expected[i];
    }
  }
  if (fused) {
    // The residual add is fully specified (a float32 add rounded to the storage type): exact.
    EXPECT_TRUE(testing::DownloadAs(dtype, d_residual, size) == expected_residual);
  }
}

TEST(RmsNormTest, MatchesTheReference) {
  SLUICE_SKIP_WITHOUT_GPU();
  uint32_t seed = 1;
  for (DType dtype : testing::kAllDTypes) {
    for (int hidden : {64, 4096, 5000}) {
      RunCase(dtype, 7, hidden, /*fused=*/false, /*in_place=*/false, seed++);
      RunCase(dtype, 7, hidden, /*fused=*/true, /*in_place=*/false, seed++);
    }
    RunCase(dtype, 3, 2048, /*fused=*/false, /*in_place=*/true, seed++);
    RunCase(dtype, 3, 2048, /*fused=*/true, /*in_place=*/true, seed++);
  }
}

TEST(RmsNormTest, RejectsBadArguments) {
  int dummy = 0;
  RmsNormArgs args;
  args.x = args.weight = args.out = &dummy;
  args.num_tokens = 1;
  args.hidden = 8;
  args.eps = -1.0f;
  EXPECT_EQ(RmsNorm(args, nullptr).field(), "eps");
  args.eps = 1e-6f;
  args.hidden = 0;
  EXPECT_EQ(RmsNorm(args, nullptr).field(), "hidden");
  args.hidden = 8;
  args.residual = &dummy;  // The same buffer as out.
  EXPECT_EQ(RmsNorm(args, nullptr).field(), "residual");
}

}  // namespace
}  // namespace sluice::kernels
