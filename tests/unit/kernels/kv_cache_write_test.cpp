#include "workers/kernels/kv_cache_write.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "tests/unit/kernels/kernel_test_util.h"

namespace sluice::kernels {
namespace {

using testing::DeviceBuffer;
using testing::Download;
using testing::Upload;

// Random bytes in, the exact same bytes out at each token's slot, every other cache row
// untouched, and tokens with slot -1 skipped.
void RunCase(DType dtype, int num_tokens, int num_kv_heads, int head_dim, int block_size,
             int num_blocks, uint32_t seed) {
  SCOPED_TRACE(std::string(DTypeName(dtype)) + " head_dim " + std::to_string(head_dim));
  std::mt19937 rng(seed);
  const size_t row_bytes = static_cast<size_t>(num_kv_heads) * head_dim * DTypeSize(dtype);
  const size_t slots = static_cast<size_t>(num_blocks) * block_size;
  auto random_bytes = [&](size_t n) {
    std::vector<uint8_t> bytes(n);
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
    return bytes;
  };
  const std::vector<uint8_t> k = random_bytes(num_tokens * row_bytes);
  const std::vector<uint8_t> v = random_bytes(num_tokens * row_bytes);
  const std::vector<uint8_t> k_cache = random_bytes(slots * row_bytes);
  const std::vector<uint8_t> v_cache = random_bytes(slots * row_bytes);
  std::vector<int64_t> all(slots);
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), rng);
  std::vector<int64_t> slot_mapping(all.begin(), all.begin() + num_tokens);
  slot_mapping[num_tokens / 2] = -1;  // Padding.

  std::vector<uint8_t> expected_k = k_cache, expected_v = v_cache;
  for (int t = 0; t < num_tokens; ++t) {
    if (slot_mapping[t] < 0) continue;
    std::memcpy(&expected_k[slot_mapping[t] * row_bytes], &k[t * row_bytes], row_bytes);
    std::memcpy(&expected_v[slot_mapping[t] * row_bytes], &v[t * row_bytes], row_bytes);
  }

  DeviceBuffer d_k = Upload(k), d_v = Upload(v), d_slots = Upload(slot_mapping);
  DeviceBuffer d_k_cache = Upload(k_cache), d_v_cache = Upload(v_cache);
  WriteKvCacheArgs args;
  args.dtype = dtype;
  args.k = d_k.get();
  args.v = d_v.get();
  args.slot_mapping = d_slots.as<int64_t>();
  args.k_cache = d_k_cache.get();
  args.v_cache = d_v_cache.get();
  args.num_tokens = num_tokens;
  args.num_kv_heads = num_kv_heads;
  args.head_dim = head_dim;
  const Status status = WriteKvCache(args, nullptr);
  ASSERT_TRUE(status.ok()) << status.ToString();
  testing::Synchronize();
  EXPECT_TRUE(Download<uint8_t>(d_k_cache, k_cache.size()) == expected_k);
  EXPECT_TRUE(Download<uint8_t>(d_v_cache, v_cache.size()) == expected_v);
}

TEST(WriteKvCacheTest, ScattersTokensToTheirSlots) {
  SLUICE_SKIP_WITHOUT_GPU();
  uint32_t seed = 1;
  for (DType dtype : testing::kAllDTypes) {
    RunCase(dtype, 37, 4, 64, 16, 20, seed++);
    RunCase(dtype, 5, 8, 128, 16, 3, seed++);
    RunCase(dtype, 300, 2, 80, 32, 12, seed++);
  }
}

TEST(WriteKvCacheTest, RejectsBadArguments) {
  int dummy = 0;
  WriteKvCacheArgs args;
  args.k = args.v = args.k_cache = args.v_cache = &dummy;
  args.num_tokens = 1;
  args.num_kv_heads = 1;
  args.head_dim = 0;
  EXPECT_EQ(WriteKvCache(args, nullptr).field(), "head_dim");
  args.head_dim = 64;
  EXPECT_EQ(WriteKvCache(args, nullptr).field(), "slot_mapping");
  args.num_tokens = 0;  // Nothing to do: OK without touching any pointer.
  EXPECT_TRUE(WriteKvCache(args, nullptr).ok());
}

}  // namespace
}  // namespace sluice::kernels
