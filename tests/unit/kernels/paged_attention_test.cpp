#include "workers/kernels/paged_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "tests/unit/kernels/kernel_test_util.h"
#include "tests/unit/kernels/reference.h"
#include "workers/kernels/kv_cache_write.h"

namespace sluice::kernels {
namespace {

using testing::DeviceBuffer;
using testing::RoundAll;
using testing::Upload;
using testing::UploadAs;

struct AttentionCase {
  DType dtype;
  int num_heads;
  int num_kv_heads;
  int head_dim;
  int block_size;
  std::vector<int32_t> context_lens;  // One per sequence.
};

std::string Describe(const AttentionCase& c) {
  std::string lens;
  for (int32_t len : c.context_lens) lens += std::to_string(len) + " ";
  return std::string(DTypeName(c.dtype)) + " heads " + std::to_string(c.num_heads) + "/" +
         std::to_string(c.num_kv_heads) + " head_dim " + std::to_string(c.head_dim) +
         " block_size " + std::to_string(c.block_size) + " contexts " + lens;
}

// The error allowed on an output near `expected`: the rounding to the storage type (at most
// half a unit in the last place, so Ulp * |expected| leaves a factor of two) plus float32
// accumulation, which stays near 1e-6 for outputs that are convex combinations of values in
// [-1, 1], even over 32k tokens.
double AttentionTolerance(DType dtype, double expected) {
  return testing::Ulp(dtype) * std::abs(expected) + 5e-5;
}

// Random inputs, sequences scattered over a shuffled set of physical blocks (with spare blocks
// and unused table entries set to -1, which must never be read), the kernel against the
// reference.
void RunCase(const AttentionCase& c, uint32_t seed) {
  SCOPED_TRACE(Describe(c));
  std::mt19937 rng(seed);
  const int batch = static_cast<int>(c.context_lens.size());
  const int max_context = *std::max_element(c.context_lens.begin(), c.context_lens.end());
  const int max_blocks_per_seq = (max_context + c.block_size - 1) / c.block_size + 1;
  int used_blocks = 0;
  for (int32_t len : c.context_lens) used_blocks += (len + c.block_size - 1) / c.block_size;
  const int num_blocks = used_blocks + 3;

  std::vector<int32_t> physical(num_blocks);
  std::iota(physical.begin(), physical.end(), 0);
  std::shuffle(physical.begin(), physical.end(), rng);
  std::vector<int32_t> tables(static_cast<size_t>(batch) * max_blocks_per_seq, -1);
  int next = 0;
  for (int b = 0; b < batch; ++b) {
    const int blocks = (c.context_lens[b] + c.block_size - 1) / c.block_size;
    for (int i = 0; i < blocks; ++i)
      tables[static_cast<size_t>(b) * max_blocks_per_seq + i] = physical[next++];
  }

  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::uniform_real_distribution<float> wide(-3.0f, 3.0f);  // Peakier softmax than unit q.
  const size_t q_size = static_cast<size_t>(batch) * c.num_heads * c.head_dim;
  const size_t cache_size =
      static_cast<size_t>(num_blocks) * c.block_size * c.num_kv_heads * c.head_dim;
  std::vector<float> q(q_size), k(cache_size), v(cache_size);
  for (float& x : q) x = wide(rng);
  for (float& x : k) x = unit(rng);
  for (float& x : v) x = unit(rng);
  q = RoundAll(c.dtype, q);
  k = RoundAll(c.dtype, k);
  v = RoundAll(c.dtype, v);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));

  const std::vector<float> expected = testing::ReferencePagedAttention(
      q, k, v, tables, c.context_lens, batch, c.num_heads, c.num_kv_heads, c.head_dim, c.block_size,
      max_blocks_per_seq, scale);

  DeviceBuffer d_q = UploadAs(c.dtype, q);
  DeviceBuffer d_k = UploadAs(c.dtype, k);
  DeviceBuffer d_v = UploadAs(c.dtype, v);
  DeviceBuffer d_tables = Upload(tables);
  DeviceBuffer d_lens = Upload(c.context_lens);
  DeviceBuffer d_out(q_size * DTypeSize(c.dtype));
  const size_t workspace_bytes = PagedAttentionWorkspaceBytes(batch, c.num_heads, c.head_dim,
                                                              c.block_size, max_blocks_per_seq);
  DeviceBuffer workspace(workspace_bytes);

  PagedAttentionArgs args;
  args.dtype = c.dtype;
  args.q = d_q.get();
  args.k_cache = d_k.get();
  args.v_cache = d_v.get();
  args.block_tables = d_tables.as<int32_t>();
  args.context_lens = d_lens.as<int32_t>();
  args.out = d_out.get();
  args.batch = batch;
  args.num_heads = c.num_heads;
  args.num_kv_heads = c.num_kv_heads;
  args.head_dim = c.head_dim;
  args.block_size = c.block_size;
  args.max_blocks_per_seq = max_blocks_per_seq;
  args.scale = scale;
  args.workspace = workspace.get();
  args.workspace_bytes = workspace_bytes;
  const Status status = PagedAttention(args, nullptr);
  ASSERT_TRUE(status.ok()) << status.ToString();
  testing::Synchronize();
  const std::vector<float> got = testing::DownloadAs(c.dtype, d_out, q_size);

  int failures = 0;
  for (size_t i = 0; i < q_size && failures < 10; ++i) {
    if (!(std::abs(double(got[i]) - expected[i]) <= AttentionTolerance(c.dtype, expected[i]))) {
      ++failures;
      ADD_FAILURE() << "element " << i << " (sequence " << i / (c.num_heads * c.head_dim)
                    << "): got " << got[i] << ", expected " << expected[i];
    }
  }
}

TEST(PagedAttentionTest, MatchesTheReferenceForEveryDTypeAndGqaRatio) {
  SLUICE_SKIP_WITHOUT_GPU();
  // Contexts: one token, a partial first block, exact blocks, a partial last block, and lengths
  // on either side of the partition boundaries (kPagedAttentionPartitionTokens = 128) and
  // spanning several partitions.
  const std::vector<int32_t> lens = {1, 7, 16, 17, 127, 128, 129, 511, 512, 513, 1500};
  uint32_t seed = 1;
  for (DType dtype : testing::kAllDTypes) {
    for (int kv_heads : {8, 4, 1}) {  // GQA ratios 1, 2 and 8 over 8 query heads.
      RunCase({dtype, 8, kv_heads, 128, 16, lens}, seed++);
    }
  }
}

TEST(PagedAttentionTest, SupportsOtherHeadDimsAndBlockSizes) {
  SLUICE_SKIP_WITHOUT_GPU();
  uint32_t seed = 100;
  for (DType dtype : testing::kAllDTypes) {
    RunCase({dtype, 4, 2, 64, 32, {33, 100, 700}}, seed++);
    RunCase({dtype, 4, 1, 256, 8, {5, 1030}}, seed++);
    RunCase({dtype, 6, 3, 80, 16, {64, 3}}, seed++);  // Not a multiple of 32.
    RunCase({dtype, 2, 2, 96, 1, {9, 600}}, seed++);  // One token per block.
  }
}

TEST(PagedAttentionTest, HandlesA32kContext) {
  SLUICE_SKIP_WITHOUT_GPU();
  RunCase({DType::kBFloat16, 8, 1, 128, 16, {32763, 2}}, 7);
  RunCase({DType::kFloat32, 4, 2, 128, 16, {32768}}, 8);
}

TEST(PagedAttentionTest, ZeroContextGivesZeros) {
  SLUICE_SKIP_WITHOUT_GPU();
  RunCase({DType::kFloat16, 2, 1, 64, 16, {0, 20, 0}}, 9);
}

// The two kernels agree on the cache layout: tokens scattered by WriteKvCache are the ones
// PagedAttention attends to.
TEST(PagedAttentionTest, AttendsToTokensWrittenByWriteKvCache) {
  SLUICE_SKIP_WITHOUT_GPU();
  constexpr DType kDType = DType::kFloat16;
  constexpr int kHeads = 4, kKvHeads = 2, kHeadDim = 64, kBlockSize = 16, kMaxBlocks = 4;
  const std::vector<int32_t> lens = {20, 40};
  const std::vector<int32_t> tables = {5, 2, -1, -1, 0, 7, 3, -1};
  constexpr int kNumBlocks = 8;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  const int row = kKvHeads * kHeadDim;
  const size_t cache_size = static_cast<size_t>(kNumBlocks) * kBlockSize * row;
  std::vector<float> k_cache(cache_size, 0.0f), v_cache(cache_size, 0.0f);
  std::vector<float> new_k, new_v;
  std::vector<int64_t> slots;
  for (int b = 0; b < 2; ++b) {
    for (int t = 0; t < lens[b]; ++t) {
      const int64_t slot =
          int64_t{tables[b * kMaxBlocks + t / kBlockSize]} * kBlockSize + t % kBlockSize;
      slots.push_back(slot);
      for (int i = 0; i < row; ++i) {
        new_k.push_back(testing::RoundTo(kDType, unit(rng)));
        new_v.push_back(testing::RoundTo(kDType, unit(rng)));
        k_cache[slot * row + i] = new_k.back();
        v_cache[slot * row + i] = new_v.back();
      }
    }
  }
  std::vector<float> q(2 * kHeads * kHeadDim);
  for (float& x : q) x = testing::RoundTo(kDType, 3.0f * unit(rng));
  const float scale = 0.125f;
  const std::vector<float> expected =
      testing::ReferencePagedAttention(q, k_cache, v_cache, tables, lens, 2, kHeads, kKvHeads,
                                       kHeadDim, kBlockSize, kMaxBlocks, scale);

  DeviceBuffer d_k_cache = UploadAs(kDType, std::vector<float>(cache_size, 0.0f));
  DeviceBuffer d_v_cache = UploadAs(kDType, std::vector<float>(cache_size, 0.0f));
  DeviceBuffer d_new_k = UploadAs(kDType, new_k), d_new_v = UploadAs(kDType, new_v);
  DeviceBuffer d_slots = Upload(slots);
  WriteKvCacheArgs write;
  write.dtype = kDType;
  write.k = d_new_k.get();
  write.v = d_new_v.get();
  write.slot_mapping = d_slots.as<int64_t>();
  write.k_cache = d_k_cache.get();
  write.v_cache = d_v_cache.get();
  write.num_tokens = static_cast<int>(slots.size());
  write.num_kv_heads = kKvHeads;
  write.head_dim = kHeadDim;
  const Status written = WriteKvCache(write, nullptr);
  ASSERT_TRUE(written.ok()) << written.ToString();

  DeviceBuffer d_q = UploadAs(kDType, q), d_tables = Upload(tables), d_lens = Upload(lens);
  DeviceBuffer d_out(q.size() * DTypeSize(kDType));
  const size_t workspace_bytes =
      PagedAttentionWorkspaceBytes(2, kHeads, kHeadDim, kBlockSize, kMaxBlocks);
  DeviceBuffer workspace(workspace_bytes);
  PagedAttentionArgs args;
  args.dtype = kDType;
  args.q = d_q.get();
  args.k_cache = d_k_cache.get();
  args.v_cache = d_v_cache.get();
  args.block_tables = d_tables.as<int32_t>();
  args.context_lens = d_lens.as<int32_t>();
  args.out = d_out.get();
  args.batch = 2;
  args.num_heads = kHeads;
  args.num_kv_heads = kKvHeads;
  args.head_dim = kHeadDim;
  args.block_size = kBlockSize;
  args.max_blocks_per_seq = kMaxBlocks;
  args.scale = scale;
  args.workspace = workspace.get();
  args.workspace_bytes = workspace_bytes;
  const Status attended = PagedAttention(args, nullptr);
  ASSERT_TRUE(attended.ok()) << attended.ToString();
  testing::Synchronize();
  const std::vector<float> got = testing::DownloadAs(kDType, d_out, q.size());
  for (size_t i = 0; i < q.size(); ++i) {
    ASSERT_NEAR(got[i], expected[i], AttentionTolerance(kDType, expected[i])) << "element " << i;
  }
}

TEST(PagedAttentionTest, WorkspaceSizeCountsPartitions) {
  static_assert(kPagedAttentionPartitionTokens == 128);
  // 100 blocks of 16 tokens = 1600 tokens = 13 partitions of 128 (the last one partial).
  EXPECT_EQ(PagedAttentionWorkspaceBytes(2, 8, 128, 16, 100), 2u * 8 * 13 * (128 + 2) * 4);
  // 8 blocks of 16 = 128 tokens: exactly one partition.
  EXPECT_EQ(PagedAttentionWorkspaceBytes(1, 1, 64, 16, 8), 1u * 1 * 1 * (64 + 2) * 4);
  EXPECT_EQ(PagedAttentionWorkspaceBytes(0, 8, 128, 16, 100), 0u);
}

// Argument checks run before anything touches the device, so these run everywhere.
TEST(PagedAttentionTest, RejectsBadArguments) {
  int dummy = 0;
  PagedAttentionArgs good;
  good.q = good.k_cache = good.v_cache = good.out = &dummy;
  good.block_tables = good.context_lens = &dummy;
  good.batch = 2;
  good.num_heads = 8;
  good.num_kv_heads = 2;
  good.head_dim = 128;
  good.block_size = 16;
  good.max_blocks_per_seq = 4;
  good.scale = 0.088f;
  good.workspace = &dummy;
  good.workspace_bytes = PagedAttentionWorkspaceBytes(2, 8, 128, 16, 4);

  auto field_of = [](const PagedAttentionArgs& args) {
    const Status status = PagedAttention(args, nullptr);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
    return status.field();
  };
  PagedAttentionArgs a = good;
  a.head_dim = 300;
  EXPECT_EQ(field_of(a), "head_dim");
  a = good;
  a.num_kv_heads = 3;
  EXPECT_EQ(field_of(a), "num_kv_heads");
  a = good;
  a.workspace_bytes -= 1;
  EXPECT_EQ(field_of(a), "workspace");
  a = good;
  a.q = nullptr;
  EXPECT_EQ(field_of(a), "q");
  a = good;
  a.block_size = 0;
  EXPECT_EQ(field_of(a), "block_size");
  a = good;
  a.scale = NAN;
  EXPECT_EQ(field_of(a), "scale");
}

}  // namespace
}  // namespace sluice::kernels
