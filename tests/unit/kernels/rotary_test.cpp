#include "workers/kernels/rotary.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "tests/unit/kernels/kernel_test_util.h"
#include "tests/unit/kernels/reference.h"

namespace sluice::kernels {
namespace rotary_test {

using testing::DeviceBuffer;
using testing::RoundAll;
using testing::Upload;
using testing::UploadAs;

// Outputs have magnitude up to sqrt(2) * attention_scale: the final rounding (half an ulp)
// plus float32 sincosf and products (a few 1e-7).
double Tolerance(DType dtype, double expected) {
  return testing::Ulp(dtype) * std::abs(expected) + 2e-6;
}

// Llama's inverse frequencies: base^(-2i / head_dim).
std::vector<float> InverseFrequencies(int head_dim, double base) {
  std::vector<float> inv_freq(head_dim / 2);
  for (int i = 0; i < head_dim / 2; ++i) {
    inv_freq[i] = static_cast<float>(std::pow(base, -2.0 * i / head_dim));
  }
  return inv_freq;
}

// token_stride > num_heads * head_dim leaves a gap after each token's heads that must come back
// untouched.
void RunCase(DType dtype, int num_tokens, int num_heads, int head_dim, int64_t token_stride,
             float attention_scale, uint32_t seed) {
  SCOPED_TRACE(std::string(DTypeName(dtype)) + " heads " + std::to_string(num_heads) +
               " head_dim " + std::to_string(head_dim) + " stride " + std::to_string(token_stride));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> input(-1.0f, 1.0f);
  std::uniform_int_distribution<int64_t> position(0, 40000);
  const int64_t stride = token_stride == 0 ? int64_t{num_heads} * head_dim : token_stride;
  const size_t size = static_cast<size_t>(num_tokens) * stride;
  std::vector<float> x(size);
  for (float& v : x) v = input(rng);
  x = RoundAll(dtype, x);
  std::vector<int64_t> positions(num_tokens);
  for (int64_t& p : positions) p = position(rng);
  positions[0] = 0;  // The identity rotation.
  const std::vector<float> inv_freq = InverseFrequencies(head_dim, 500000.0);

  std::vector<float> expected = x;
  testing::ReferenceRotary(dtype, expected, positions, inv_freq, num_tokens, num_heads, head_dim,
                           stride, attention_scale);

  DeviceBuffer d_x = UploadAs(dtype, x);
  DeviceBuffer d_positions = Upload(positions);
  DeviceBuffer d_inv_freq = Upload(inv_freq);
  RotaryArgs args;
  args.dtype = dtype;
  args.x = d_x.get();
  args.positions = d_positions.as<int64_t>();
  args.inv_freq = d_inv_freq.as<float>();
  args.num_tokens = num_tokens;
  args.num_heads = num_heads;
  args.head_dim = head_dim;
  args.token_stride = token_stride;
  args.attention_scale = attention_scale;
  const Status status = ApplyRotary(args, nullptr);
  ASSERT_TRUE(status.ok()) << status.ToString();
  testing::Synchronize();

  const std::vector<float> got = testing::DownloadAs(dtype, d_x, size);
  int failures = 0;
  for (size_t i = 0; i < size && failures < 10; ++i) {
    if (!(std::abs(double(got[i]) - expected[i]) <= Tolerance(dtype, expected[i]))) {
      ++failures;
      ADD_FAILURE() << "element " << i << ": got " << got[i] << ", expected " << expected[i];
    }
  }
}

TEST(RotaryTest, MatchesTheReference) {
  SLUICE_SKIP_WITHOUT_GPU();
  uint32_t seed = 1;
  for (DType dtype : testing::kAllDTypes) {
    RunCase(dtype, 9, 8, 128, 0, 1.0f, seed++);
    RunCase(dtype, 5, 3, 64, 0, 1.0f, seed++);
    RunCase(dtype, 4, 2, 128, 0, 0.7f, seed++);
    // Two "q" heads inside a fused row of (2 + 2 + 2) heads.
    RunCase(dtype, 6, 2, 128, 6 * 128, 1.0f, seed++);
  }
}

TEST(RotaryTest, RejectsBadArguments) {
  int64_t position = 0;
  float freq = 1.0f;
  int dummy = 0;
  RotaryArgs args;
  args.x = &dummy;
  args.positions = &position;
  args.inv_freq = &freq;
  args.num_tokens = 1;
  args.num_heads = 2;
  args.head_dim = 63;
  EXPECT_EQ(ApplyRotary(args, nullptr).field(), "head_dim");
  args.head_dim = 64;
  args.token_stride = 100;
  EXPECT_EQ(ApplyRotary(args, nullptr).field(), "token_stride");
  args.token_stride = 0;
  args.attention_scale = INFINITY;
  EXPECT_EQ(ApplyRotary(args, nullptr).field(), "attention_scale");
}

}  // namespace rotary_test
}  // namespace sluice::kernels
