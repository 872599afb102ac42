// KV cache sizing: precedence of the token, memory-fraction and byte budgets, rounding, and
// errors naming the setting.
#include "workers/rollout/engine/kv_cache_budget.h"

#include <gtest/gtest.h>

namespace sluice::engine {
namespace {

TEST(KvCacheBudgetTest, TokensWinThenFractionThenBytes) {
  KvCacheBudget b;
  b.tokens = 100;
  b.memory_fraction = 0.5;
  b.bytes = 1 << 20;
  EXPECT_EQ(KvCacheBlocks(b, 16, 1000, 1 << 30).value(), 7);  // ceil(100 / 16).
  b.tokens = 0;
  EXPECT_EQ(KvCacheBlocks(b, 16, 1000, 10'000).value(), 5);  // floor(0.5 * 10000 / 1000).
  b.memory_fraction = 0;
  EXPECT_EQ(KvCacheBlocks(b, 16, 1000, 0).value(), (1 << 20) / 1000);
}

TEST(KvCacheBudgetTest, ErrorsNameTheSetting) {
  KvCacheBudget b;
  b.tokens = -1;
  EXPECT_EQ(KvCacheBlocks(b, 16, 1000, 0).status().field(), "kv_cache_tokens");
  b.tokens = 0;
  b.memory_fraction = 1.5;
  EXPECT_EQ(KvCacheBlocks(b, 16, 1000, 0).status().field(), "kv_cache_memory_fraction");
  b.memory_fraction = 0.5;
  EXPECT_EQ(KvCacheBlocks(b, 16, 1000, 0).status().field(), "kv_cache_memory_fraction");
  EXPECT_EQ(KvCacheBlocks(b, 16, 1000, 1500).status().field(), "kv_cache_memory_fraction");
  b.memory_fraction = 0;
  b.bytes = 999;
  Status s = KvCacheBlocks(b, 16, 1000, 0).status();
  EXPECT_EQ(s.field(), "kv_cache_bytes");
  EXPECT_NE(s.message().find("no KV block"), std::string::npos);
  EXPECT_EQ(KvCacheBlocks(KvCacheBudget{}, 0, 1000, 0).status().field(), "block_size");
}

TEST(KvCacheBudgetTest, ReadsTheHostsAvailableMemory) {
  // Every Linux CI machine reports MemAvailable.
  EXPECT_GT(AvailableHostMemoryBytes(), int64_t{1} << 20);
}

}  // namespace
}  // namespace sluice::engine
