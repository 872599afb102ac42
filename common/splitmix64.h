// splitmix64 (Steele, Lea and Flood): a tiny, portable 64-bit mixer. Used where a seed must mean
// the same numbers on every machine (dataset shuffles, sampling draws, per-sample seeds) and as a
// hash finaliser. Not cryptographic.
#pragma once

#include <cstdint>

namespace sluice {

// The finaliser alone: a bijection on 64-bit values with good avalanche.
constexpr uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// One step of the splitmix64 generator from state `x` (the golden-ratio increment, then Mix64).
constexpr uint64_t SplitMix64(uint64_t x) { return Mix64(x + 0x9e3779b97f4a7c15ULL); }

}  // namespace sluice
