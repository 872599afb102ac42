#include "workers/rollout/engine/kv_cache_budget.h"

#include <cmath>
#include <fstream>
#include <sstream>

namespace sluice::engine {

Result<int64_t> KvCacheBlocks(const KvCacheBudget& budget, int64_t block_size,
                              int64_t bytes_per_block, int64_t available_bytes) {
  if (block_size <= 0) {
    return Status::InvalidArgument("must be positive, got " + std::to_string(block_size),
                                   "block_size");
  }
  if (bytes_per_block <= 0) {
    return Status::InvalidArgument("a KV block must take some bytes", "bytes_per_block");
  }
  if (budget.tokens < 0) {
    return Status::InvalidArgument("must not be negative, got " + std::to_string(budget.tokens),
                                   "kv_cache_tokens");
  }
  if (!(budget.memory_fraction >= 0 && budget.memory_fraction <= 1)) {
    return Status::InvalidArgument(
        "must be in [0, 1], got " + std::to_string(budget.memory_fraction),
        "kv_cache_memory_fraction");
  }
  int64_t blocks = 0;
  std::string field;
  if (budget.tokens > 0) {
    blocks = (budget.tokens + block_size - 1) / block_size;
    field = "kv_cache_tokens";
  } else if (budget.memory_fraction > 0) {
    if (available_bytes <= 0) {
      return Status::InvalidArgument("the available memory is unknown; set a token or byte budget",
                                     "kv_cache_memory_fraction");
    }
    blocks = static_cast<int64_t>(
        std::floor(budget.memory_fraction * static_cast<double>(available_bytes) /
                   static_cast<double>(bytes_per_block)));
    field = "kv_cache_memory_fraction";
  } else {
    if (budget.bytes < 0) {
      return Status::InvalidArgument("must not be negative, got " + std::to_string(budget.bytes),
                                     "kv_cache_bytes");
    }
    blocks = budget.bytes / bytes_per_block;
    field = "kv_cache_bytes";
  }
  if (blocks < 1) {
    return Status::InvalidArgument("the budget holds no KV block of " + std::to_string(block_size) +
                                       " tokens (" + std::to_string(bytes_per_block) + " bytes)",
                                   field);
  }
  return blocks;
}

int64_t AvailableHostMemoryBytes() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream fields(line.substr(13));
    int64_t kib = 0;
    if (fields >> kib) return kib * 1024;
  }
  return 0;
}

}  // namespace sluice::engine
