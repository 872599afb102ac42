#include "workers/rollout/engine/kv_block_allocator.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <unordered_set>
#include <vector>

namespace sluice::engine {
namespace {

std::vector<int32_t> Block(int32_t first, int32_t size = 4) {
  std::vector<int32_t> tokens;
  for (int32_t i = 0; i < size; ++i) tokens.push_back(first + i);
  return tokens;
}

// Publishes `block` as a first block holding `tokens`; returns its hash.
uint64_t PublishFirst(KvBlockAllocator& a, BlockId block, const std::vector<int32_t>& tokens) {
  const uint64_t hash = KvBlockAllocator::HashBlock(0, tokens);
  EXPECT_EQ(a.Publish(block, hash, 0, tokens), block);
  return hash;
}

TEST(KvBlockAllocatorTest, HandsOutEveryBlockOnceThenRunsOut) {
  KvBlockAllocator a(5, 4, true);
  std::set<BlockId> got;
  for (int i = 0; i < 5; ++i) {
    std::optional<BlockId> b = a.Allocate();
    ASSERT_TRUE(b.has_value());
    EXPECT_GE(*b, 0);
    EXPECT_LT(*b, 5);
    EXPECT_EQ(a.RefCount(*b), 1);
    got.insert(*b);
  }
  EXPECT_EQ(got.size(), 5u);
  EXPECT_EQ(a.Allocate(), std::nullopt);
  EXPECT_EQ(a.NumFreeBlocks(), 0);
  EXPECT_EQ(a.NumUsedBlocks(), 5);
  a.Release(3);
  EXPECT_EQ(a.NumFreeBlocks(), 1);
  EXPECT_EQ(a.Allocate(), 3);
}

TEST(KvBlockAllocatorTest, ReferenceCountsKeepSharedBlocksInUse) {
  KvBlockAllocator a(2, 4, true);
  BlockId b = *a.Allocate();
  a.Retain(b);
  a.Retain(b);
  EXPECT_EQ(a.RefCount(b), 3);
  a.Release(b);
  a.Release(b);
  EXPECT_EQ(a.RefCount(b), 1);
  EXPECT_EQ(a.NumFreeBlocks(), 1);
  a.Release(b);
  EXPECT_EQ(a.RefCount(b), 0);
  EXPECT_EQ(a.NumFreeBlocks(), 2);
  EXPECT_EQ(a.NumCachedFreeBlocks(), 0);  // Never published: plain free.
}

TEST(KvBlockAllocatorTest, LookupRevivesACachedFreeBlock) {
  KvBlockAllocator a(3, 4, true);
  BlockId b = *a.Allocate();
  const std::vector<int32_t> tokens = Block(10);
  const uint64_t hash = PublishFirst(a, b, tokens);
  EXPECT_TRUE(a.IsPublished(b));
  a.Release(b);
  EXPECT_EQ(a.NumFreeBlocks(), 3);
  EXPECT_EQ(a.NumCachedFreeBlocks(), 1);

  EXPECT_EQ(a.Lookup(hash, 0, tokens), b);
  EXPECT_EQ(a.RefCount(b), 1);
  EXPECT_EQ(a.NumCachedFreeBlocks(), 0);
  EXPECT_EQ(a.NumFreeBlocks(), 2);
  // A second lookup while in use shares it.
  EXPECT_EQ(a.Lookup(hash, 0, tokens), b);
  EXPECT_EQ(a.RefCount(b), 2);
  EXPECT_EQ(a.stats().hits, 2);
  EXPECT_EQ(a.Lookup(hash + 1, 0, tokens), std::nullopt);
  EXPECT_EQ(a.stats().misses, 1);
}

TEST(KvBlockAllocatorTest, PlainFreeBlocksAreUsedBeforeEvictingCachedOnes) {
  KvBlockAllocator a(2, 4, true);
  BlockId cached = *a.Allocate();
  BlockId plain = *a.Allocate();
  const uint64_t hash = PublishFirst(a, cached, Block(1));
  a.Release(cached);
  a.Release(plain);
  EXPECT_EQ(a.Allocate(), plain);
  EXPECT_TRUE(a.IsPublished(cached));
  EXPECT_EQ(a.stats().evictions, 0);
  // Now only the cached block is left: allocating it evicts its content.
  EXPECT_EQ(a.Allocate(), cached);
  EXPECT_FALSE(a.IsPublished(cached));
  EXPECT_EQ(a.stats().evictions, 1);
  EXPECT_EQ(a.Lookup(hash, 0, Block(1)), std::nullopt);
}

TEST(KvBlockAllocatorTest, EvictsLeastRecentlyReleasedFirst) {
  KvBlockAllocator a(3, 4, true);
  BlockId b0 = *a.Allocate();
  BlockId b1 = *a.Allocate();
  BlockId b2 = *a.Allocate();
  const uint64_t h0 = PublishFirst(a, b0, Block(0));
  const uint64_t h1 = PublishFirst(a, b1, Block(100));
  const uint64_t h2 = PublishFirst(a, b2, Block(200));
  a.Release(b1);
  a.Release(b0);
  a.Release(b2);
  // Reviving b1 and releasing it again makes it the most recent.
  ASSERT_EQ(a.Lookup(h1, 0, Block(100)), b1);
  a.Release(b1);

  EXPECT_EQ(a.Allocate(), b0);
  EXPECT_EQ(a.Allocate(), b2);
  EXPECT_EQ(a.Lookup(h1, 0, Block(100)), b1);  // Survived.
  EXPECT_EQ(a.Lookup(h0, 0, Block(0)), std::nullopt);
  EXPECT_EQ(a.Lookup(h2, 0, Block(200)), std::nullopt);
  EXPECT_EQ(a.stats().evictions, 2);
  EXPECT_EQ(a.Allocate(), std::nullopt);  // b1 is in use again.
}

TEST(KvBlockAllocatorTest, AHashCollisionNeverReturnsTheWrongBlock) {
  KvBlockAllocator a(4, 4, true);
  BlockId x = *a.Allocate();
  BlockId y = *a.Allocate();
  const uint64_t forced = 42;  // Both contents published under one hash.
  EXPECT_EQ(a.Publish(x, forced, 0, Block(1)), x);
  EXPECT_EQ(a.Publish(y, forced, 0, Block(50)), y);
  EXPECT_EQ(a.Lookup(forced, 0, Block(1)), x);
  EXPECT_EQ(a.Lookup(forced, 0, Block(50)), y);
  EXPECT_EQ(a.Lookup(forced, 0, Block(7)), std::nullopt);
  // Same tokens, different prefix: no match either.
  EXPECT_EQ(a.Lookup(forced, a.Serial(y), Block(1)), std::nullopt);
}

TEST(KvBlockAllocatorTest, ChildOfAnEvictedParentIsNeverMatched) {
  KvBlockAllocator a(3, 4, true);
  BlockId parent = *a.Allocate();
  BlockId child = *a.Allocate();
  const uint64_t hp = PublishFirst(a, parent, Block(0));
  const uint64_t parent_serial = a.Serial(parent);
  const uint64_t hc = KvBlockAllocator::HashBlock(hp, Block(4));
  ASSERT_EQ(a.Publish(child, hc, parent_serial, Block(4)), child);
  a.Release(parent);
  // Evict the parent (child stays in use), then publish the same first block elsewhere.
  ASSERT_EQ(a.Allocate(), 2);
  ASSERT_EQ(a.Allocate(), parent);
  BlockId again = parent;
  a.Release(2);
  EXPECT_EQ(a.Publish(again, hp, 0, Block(0)), again);
  EXPECT_NE(a.Serial(again), parent_serial);
  // The old child names the evicted publication: not a match for the new parent.
  EXPECT_EQ(a.Lookup(hc, a.Serial(again), Block(4)), std::nullopt);
  // A new child publication under the same hash coexists with the orphan.
  BlockId fresh = *a.Allocate();
  EXPECT_EQ(a.Publish(fresh, hc, a.Serial(again), Block(4)), fresh);
  EXPECT_EQ(a.Lookup(hc, a.Serial(again), Block(4)), fresh);
}

TEST(KvBlockAllocatorTest, PublishingKnownContentReturnsTheExistingBlock) {
  KvBlockAllocator a(3, 4, true);
  BlockId first = *a.Allocate();
  BlockId second = *a.Allocate();
  const uint64_t hash = PublishFirst(a, first, Block(9));
  EXPECT_EQ(a.Publish(second, hash, 0, Block(9)), first);
  EXPECT_FALSE(a.IsPublished(second));
  a.Release(second);
  EXPECT_EQ(a.NumCachedFreeBlocks(), 0);
}

TEST(KvBlockAllocatorTest, ClearPrefixCacheForgetsEveryPublication) {
  KvBlockAllocator a(3, 4, true);
  BlockId held = *a.Allocate();
  BlockId released = *a.Allocate();
  const uint64_t h1 = PublishFirst(a, held, Block(1));
  const uint64_t h2 = PublishFirst(a, released, Block(2));
  a.Release(released);
  ASSERT_EQ(a.NumCachedFreeBlocks(), 1);
  a.ClearPrefixCache();
  EXPECT_FALSE(a.IsPublished(held));
  EXPECT_FALSE(a.IsPublished(released));
  EXPECT_EQ(a.NumCachedFreeBlocks(), 0);
  EXPECT_EQ(a.NumFreeBlocks(), 2);
  EXPECT_EQ(a.RefCount(held), 1);
  EXPECT_EQ(a.Lookup(h1, 0, Block(1)), std::nullopt);
  EXPECT_EQ(a.Lookup(h2, 0, Block(2)), std::nullopt);
  a.Release(held);
  EXPECT_EQ(a.NumCachedFreeBlocks(), 0);  // No longer published: plain free.
  EXPECT_EQ(a.stats().evictions, 0);
}

TEST(KvBlockAllocatorTest, DisabledPrefixCacheNeverPublishes) {
  KvBlockAllocator a(2, 4, false);
  BlockId b = *a.Allocate();
  const uint64_t hash = KvBlockAllocator::HashBlock(0, Block(3));
  EXPECT_EQ(a.Publish(b, hash, 0, Block(3)), std::nullopt);
  a.Release(b);
  EXPECT_EQ(a.NumCachedFreeBlocks(), 0);
  EXPECT_EQ(a.Lookup(hash, 0, Block(3)), std::nullopt);
  EXPECT_EQ(a.stats().misses, 0);
}

TEST(KvBlockAllocatorTest, HashDependsOnEveryTokenTheOrderAndTheParent) {
  const std::vector<int32_t> t = {1, 2, 3, 4};
  const uint64_t h = KvBlockAllocator::HashBlock(0, t);
  EXPECT_EQ(h, KvBlockAllocator::HashBlock(0, t));
  EXPECT_NE(h, KvBlockAllocator::HashBlock(1, t));
  EXPECT_NE(h, KvBlockAllocator::HashBlock(0, std::vector<int32_t>{1, 2, 4, 3}));
  EXPECT_NE(h, KvBlockAllocator::HashBlock(0, std::vector<int32_t>{1, 2, 3, 5}));
  EXPECT_NE(h, KvBlockAllocator::HashBlock(0, std::vector<int32_t>{1, 2, 3}));
  EXPECT_NE(KvBlockAllocator::HashBlock(0, std::vector<int32_t>{-1}),
            KvBlockAllocator::HashBlock(0, std::vector<int32_t>{0}));

  // No collisions among many near-identical blocks (one token differs by one).
  std::unordered_set<uint64_t> seen;
  std::mt19937 rng(7);
  std::vector<int32_t> tokens(16);
  for (int32_t& x : tokens) x = static_cast<int32_t>(rng() % 50000);
  for (int i = 0; i < 200000; ++i) {
    tokens[static_cast<size_t>(i) % 16] += 1;
    seen.insert(KvBlockAllocator::HashBlock(static_cast<uint64_t>(i % 3), tokens));
  }
  EXPECT_EQ(seen.size(), 200000u);
}

}  // namespace
}  // namespace sluice::engine
