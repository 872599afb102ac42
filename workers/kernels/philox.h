// Philox-4x32-10: the counter-based random number generator behind Sample().
//
// Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as 1, 2, 3" (SC 2011), as in
// Random123; the unit tests check Random123's known-answer vectors. Counter-based means a draw is
// a pure function of (key, counter): a sample is reproducible from its row's (seed, offset) alone,
// whatever the batch it ran in, with no generator state to save or ship between workers.
//
// The functions compile for host and device, so the kernels and the CPU references in the tests
// draw bit-identical numbers. No CUDA types appear here.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define SLUICE_HOST_DEVICE __host__ __device__
#else
#define SLUICE_HOST_DEVICE
#endif

namespace sluice::kernels {

struct PhiloxBlock {
  uint32_t v[4];
};

// One Philox-4x32-10 evaluation: ten rounds over the 128-bit counter under the 64-bit key.
SLUICE_HOST_DEVICE inline PhiloxBlock Philox4x32_10(PhiloxBlock counter, uint32_t key0,
                                                    uint32_t key1) {
  constexpr uint32_t kMul0 = 0xD2511F53u;
  constexpr uint32_t kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u;  // Golden ratio.
  constexpr uint32_t kWeyl1 = 0xBB67AE85u;  // sqrt(3) - 1.
  uint32_t* c = counter.v;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kMul0) * c[0];
    const uint64_t p1 = static_cast<uint64_t>(kMul1) * c[2];
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    const uint32_t next[4] = {hi1 ^ c[1] ^ key0, lo1, hi0 ^ c[3] ^ key1, lo0};
    c[0] = next[0];
    c[1] = next[1];
    c[2] = next[2];
    c[3] = next[3];
    key0 += kWeyl0;  // The key bump after the last round is unused, which is harmless.
    key1 += kWeyl1;
  }
  return counter;
}

// The uniform draw u in [0, 1) that Sample() uses for a row with this seed and offset:
// counter = {offset low 32 bits, offset high 32 bits, 0, 0}, key = {seed low, seed high},
// u = (first output word >> 8) * 2^-24, so u is a multiple of 2^-24 and exact as a float.
SLUICE_HOST_DEVICE inline float PhiloxUniform(uint64_t seed, uint64_t offset) {
  const PhiloxBlock counter = {
      {static_cast<uint32_t>(offset), static_cast<uint32_t>(offset >> 32), 0u, 0u}};
  const PhiloxBlock out =
      Philox4x32_10(counter, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  return static_cast<float>(out.v[0] >> 8) * (1.0f / 16777216.0f);
}

}  // namespace sluice::kernels
