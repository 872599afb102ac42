#include "workers/rollout/engine/kv_block_manager.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace sluice::engine {
namespace {

std::vector<int32_t> Tokens(int32_t n, int32_t first = 100) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

TEST(KvBlockManagerTest, ReserveAllocatesBlocksToCoverTheTokens) {
  KvBlockManager m(8, 4, false);
  ASSERT_EQ(*m.AllocatePrefix(1, Tokens(10)), 0);
  EXPECT_TRUE(m.BlockTable(1).empty());
  std::vector<BlockCopy> copies;
  EXPECT_EQ(m.BlocksNeeded(1, 0, 10), 3);
  ASSERT_TRUE(m.Reserve(1, 0, 10, copies).ok());
  EXPECT_EQ(m.BlockTable(1).size(), 3u);
  EXPECT_TRUE(copies.empty());
  EXPECT_EQ(m.NumFreeBlocks(), 5);
  // Growing within the last block needs nothing; crossing into the next needs one block.
  EXPECT_EQ(m.BlocksNeeded(1, 10, 12), 0);
  EXPECT_EQ(m.BlocksNeeded(1, 10, 13), 1);
  ASSERT_TRUE(m.Reserve(1, 10, 13, copies).ok());
  EXPECT_EQ(m.BlockTable(1).size(), 4u);
  m.Free(1);
  EXPECT_EQ(m.NumFreeBlocks(), 8);
  EXPECT_FALSE(m.Has(1));
}

TEST(KvBlockManagerTest, AllocatePrefixRejectsAKnownSequence) {
  KvBlockManager m(4, 4, true);
  ASSERT_TRUE(m.AllocatePrefix(1, Tokens(3)).ok());
  EXPECT_EQ(m.AllocatePrefix(1, Tokens(3)).status().code(), StatusCode::kAlreadyExists);
}

TEST(KvBlockManagerTest, NotEnoughBlocksFailsAndChangesNothing) {
  KvBlockManager m(4, 4, false);
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(m.AllocatePrefix(1, Tokens(12)).ok());
  ASSERT_TRUE(m.Reserve(1, 0, 12, copies).ok());
  ASSERT_TRUE(m.AllocatePrefix(2, Tokens(8)).ok());
  ASSERT_TRUE(m.Reserve(2, 0, 2, copies).ok());
  const std::vector<BlockId> before = m.BlockTable(2);
  EXPECT_FALSE(m.CanReserve(2, 2, 8));
  Status s = m.Reserve(2, 2, 8, copies);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(m.BlockTable(2), before);
  EXPECT_EQ(m.NumFreeBlocks(), 0);
  EXPECT_TRUE(copies.empty());
  EXPECT_EQ(m.Reserve(99, 0, 1, copies).code(), StatusCode::kNotFound);
}

TEST(KvBlockManagerTest, ForkSharesBlocksAndWritesCopyOnWrite) {
  KvBlockManager m(8, 4, false);
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(m.AllocatePrefix(1, Tokens(10)).ok());
  ASSERT_TRUE(m.Reserve(1, 0, 10, copies).ok());
  ASSERT_TRUE(m.Fork(1, 2).ok());
  const std::vector<BlockId> shared = m.BlockTable(1);
  EXPECT_EQ(m.BlockTable(2), shared);
  for (BlockId b : shared) EXPECT_EQ(m.allocator().RefCount(b), 2);
  EXPECT_EQ(m.NumFreeBlocks(), 5);

  // The child writes position 10, in the shared partial block 2: it gets its own copy.
  EXPECT_EQ(m.BlocksNeeded(2, 10, 11), 1);
  ASSERT_TRUE(m.Reserve(2, 10, 11, copies).ok());
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].src, shared[2]);
  EXPECT_NE(copies[0].dst, shared[2]);
  EXPECT_EQ(m.BlockTable(2)[0], shared[0]);
  EXPECT_EQ(m.BlockTable(2)[1], shared[1]);
  EXPECT_EQ(m.BlockTable(2)[2], copies[0].dst);
  EXPECT_EQ(m.allocator().RefCount(shared[2]), 1);
  EXPECT_EQ(m.allocator().RefCount(copies[0].dst), 1);
  EXPECT_EQ(m.allocator().RefCount(shared[0]), 2);

  // The parent is now the only holder of its last block: no copy.
  copies.clear();
  ASSERT_TRUE(m.Reserve(1, 10, 11, copies).ok());
  EXPECT_TRUE(copies.empty());
  EXPECT_EQ(m.BlockTable(1), shared);

  // Freeing the parent leaves the child's shared blocks alive.
  m.Free(1);
  EXPECT_EQ(m.allocator().RefCount(shared[0]), 1);
  EXPECT_EQ(m.allocator().RefCount(shared[2]), 0);
  m.Free(2);
  EXPECT_EQ(m.NumFreeBlocks(), 8);
}

TEST(KvBlockManagerTest, CopyOnWriteNeedsAFreeBlock) {
  KvBlockManager m(3, 4, false);
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(m.AllocatePrefix(1, Tokens(10)).ok());
  ASSERT_TRUE(m.Reserve(1, 0, 10, copies).ok());
  ASSERT_TRUE(m.Fork(1, 2).ok());
  EXPECT_EQ(m.Reserve(2, 10, 11, copies).code(), StatusCode::kUnavailable);
  EXPECT_EQ(m.BlockTable(2), m.BlockTable(1));
  EXPECT_TRUE(copies.empty());
  EXPECT_EQ(m.Fork(7, 8).code(), StatusCode::kNotFound);
  EXPECT_EQ(m.Fork(1, 2).code(), StatusCode::kAlreadyExists);
}

TEST(KvBlockManagerTest, PublishedBlocksAreReusedByALaterSequence) {
  KvBlockManager m(8, 4, true);
  std::vector<BlockCopy> copies;
  const std::vector<int32_t> prompt = Tokens(10);
  ASSERT_EQ(*m.AllocatePrefix(1, prompt), 0);
  ASSERT_TRUE(m.Reserve(1, 0, 10, copies).ok());
  m.PublishFullBlocks(1, prompt, 10);  // Blocks 0 and 1 are full; block 2 is partial.
  const std::vector<BlockId> first = m.BlockTable(1);
  EXPECT_TRUE(m.allocator().IsPublished(first[0]));
  EXPECT_TRUE(m.allocator().IsPublished(first[1]));
  EXPECT_FALSE(m.allocator().IsPublished(first[2]));
  m.Free(1);

  // Same prefix, different continuation: both full blocks are reused.
  std::vector<int32_t> longer = prompt;
  longer.push_back(7);
  longer.push_back(8);
  ASSERT_EQ(*m.AllocatePrefix(2, longer), 8);
  EXPECT_EQ(m.BlockTable(2), (std::vector<BlockId>{first[0], first[1]}));
  EXPECT_EQ(m.allocator().RefCount(first[0]), 1);

  // Exactly the cached 8 tokens: one is left to compute, so only the first block is reused.
  ASSERT_EQ(*m.AllocatePrefix(3, Tokens(8)), 4);
  EXPECT_EQ(m.BlockTable(3), std::vector<BlockId>{first[0]});
  EXPECT_EQ(m.allocator().RefCount(first[0]), 2);

  // A different first block shares nothing, even if later blocks are equal.
  std::vector<int32_t> other = prompt;
  other[0] = 1;
  ASSERT_EQ(*m.AllocatePrefix(4, other), 0);
  EXPECT_GE(m.allocator().stats().hits, 3);
}

TEST(KvBlockManagerTest, PublishOnlyCoversComputedFullBlocks) {
  KvBlockManager m(8, 4, true);
  std::vector<BlockCopy> copies;
  const std::vector<int32_t> prompt = Tokens(12);
  ASSERT_TRUE(m.AllocatePrefix(1, prompt).ok());
  ASSERT_TRUE(m.Reserve(1, 0, 12, copies).ok());
  m.PublishFullBlocks(1, prompt, 7);
  EXPECT_TRUE(m.allocator().IsPublished(m.BlockTable(1)[0]));
  EXPECT_FALSE(m.allocator().IsPublished(m.BlockTable(1)[1]));
  m.PublishFullBlocks(1, prompt, 12);
  EXPECT_TRUE(m.allocator().IsPublished(m.BlockTable(1)[1]));
  EXPECT_TRUE(m.allocator().IsPublished(m.BlockTable(1)[2]));
}

TEST(KvBlockManagerTest, DuplicateComputationsChainThroughTheFirstPublisher) {
  KvBlockManager m(12, 4, true);
  std::vector<BlockCopy> copies;
  const std::vector<int32_t> prompt = Tokens(13);
  // Two sequences compute the same prompt side by side (neither could hit the cache).
  for (SeqId s : {1, 2}) {
    ASSERT_EQ(*m.AllocatePrefix(s, prompt), 0);
    ASSERT_TRUE(m.Reserve(s, 0, 13, copies).ok());
  }
  m.PublishFullBlocks(1, prompt, 8);
  m.PublishFullBlocks(2, prompt, 13);  // Its first two blocks duplicate 1's; its third is new.
  m.PublishFullBlocks(1, prompt, 13);  // Its third duplicates 2's.
  EXPECT_FALSE(m.allocator().IsPublished(m.BlockTable(2)[0]));
  EXPECT_TRUE(m.allocator().IsPublished(m.BlockTable(2)[2]));
  EXPECT_FALSE(m.allocator().IsPublished(m.BlockTable(1)[2]));

  ASSERT_EQ(*m.AllocatePrefix(3, Tokens(14)), 12);
  EXPECT_EQ(m.BlockTable(3),
            (std::vector<BlockId>{m.BlockTable(1)[0], m.BlockTable(1)[1], m.BlockTable(2)[2]}));
}

TEST(KvBlockManagerTest, ForkedSequencesPublishTheirSharedPrefixOnce) {
  KvBlockManager m(8, 4, true);
  std::vector<BlockCopy> copies;
  std::vector<int32_t> tokens = Tokens(6);
  ASSERT_TRUE(m.AllocatePrefix(1, tokens).ok());
  ASSERT_TRUE(m.Reserve(1, 0, 6, copies).ok());
  ASSERT_TRUE(m.Fork(1, 2).ok());
  std::vector<int32_t> a = tokens;
  std::vector<int32_t> b = tokens;
  a.insert(a.end(), {1, 2});
  b.insert(b.end(), {3, 4});
  ASSERT_TRUE(m.Reserve(1, 6, 8, copies).ok());
  ASSERT_TRUE(m.Reserve(2, 6, 8, copies).ok());
  ASSERT_EQ(copies.size(), 1u);  // Only the first writer of the shared block 1 copies.
  m.PublishFullBlocks(1, a, 8);
  m.PublishFullBlocks(2, b, 8);
  EXPECT_TRUE(m.allocator().IsPublished(m.BlockTable(1)[0]));
  EXPECT_TRUE(m.allocator().IsPublished(m.BlockTable(1)[1]));
  EXPECT_TRUE(m.allocator().IsPublished(m.BlockTable(2)[1]));
  EXPECT_NE(m.BlockTable(1)[1], m.BlockTable(2)[1]);
  b.push_back(0);
  ASSERT_EQ(*m.AllocatePrefix(3, b), 8);
  EXPECT_EQ(m.BlockTable(3), m.BlockTable(2));
}

}  // namespace
}  // namespace sluice::engine
