// How many KV cache blocks a policy gets: from a token budget, a fraction of the memory available
// when the policy is added, or a byte budget, in that order of precedence. Pure sizing logic;
// AvailableMemoryBytes is the one read of the machine.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace sluice::engine {

struct KvCacheBudget {
  int64_t tokens = 0;           // > 0: room for this many tokens (rounded up to whole blocks).
  double memory_fraction = 0;   // In (0, 1]: this fraction of the available memory.
  int64_t bytes = 256LL << 20;  // Otherwise: this many bytes.
};

// Blocks of `block_size` tokens (`bytes_per_block` bytes each) the budget allows, given
// `available_bytes` of memory (used only by memory_fraction). InvalidArgument naming the field
// for a negative or out-of-range setting, or a budget that holds no block at all.
Result<int64_t> KvCacheBlocks(const KvCacheBudget& budget, int64_t block_size,
                              int64_t bytes_per_block, int64_t available_bytes);

// Bytes of host memory the kernel reports available (MemAvailable in /proc/meminfo); 0 when
// unknown.
int64_t AvailableHostMemoryBytes();

}  // namespace sluice::engine
