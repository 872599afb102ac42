#include "common/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SLUICE_CRC32C_X86 1
#include <nmmintrin.h>
#endif

namespace sluice {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78u;  // Castagnoli, bit-reversed.
constexpr uint32_t kMaskDelta = 0xa282ead8u;

// kTables[0] is the classic byte-at-a-time table. kTables[k][b] is the CRC contribution of byte b
// followed by k zero bytes, which lets slicing-by-8 fold 8 input bytes with 8 independent
// lookups instead of 8 dependent ones.
using Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Tables MakeTables() {
  Tables t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) ? kPolynomial : 0u);
    t[0][i] = crc;
  }
  for (size_t k = 1; k < 8; ++k) {
    for (size_t i = 0; i < 256; ++i) {
      const uint32_t prev = t[k - 1][i];
      t[k][i] = (prev >> 8) ^ t[0][prev & 0xffu];
    }
  }
  return t;
}

constexpr Tables kTables = MakeTables();

// Explicit byte assembly keeps the software path correct on big-endian hosts too.
inline uint32_t LoadLe32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

#if defined(SLUICE_CRC32C_X86)
__attribute__((target("sse4.2"))) uint32_t ExtendSse42(uint32_t crc, const uint8_t* p, size_t n) {
  uint64_t l = crc ^ 0xffffffffu;
  // Bring p to 8-byte alignment so the wide loads never straddle cache lines.
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7u) != 0) {
    l = _mm_crc32_u8(static_cast<uint32_t>(l), *p++);
    --n;
  }
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, sizeof(word));  // x86 is little-endian, as crc32 expects.
    l = _mm_crc32_u64(l, word);
    p += 8;
    n -= 8;
  }
  while (n > 0) {
    l = _mm_crc32_u8(static_cast<uint32_t>(l), *p++);
    --n;
  }
  return static_cast<uint32_t>(l) ^ 0xffffffffu;
}
#endif

using ExtendFn = uint32_t (*)(uint32_t, const void*, size_t);

ExtendFn ChooseExtend() {
  if (crc32c_internal::HardwareAvailable()) return &crc32c_internal::ExtendHardware;
  return &crc32c_internal::ExtendSoftware;
}

}  // namespace

namespace crc32c_internal {

uint32_t ExtendSoftware(uint32_t crc, const void* data, size_t n) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  uint32_t l = crc ^ 0xffffffffu;
  while (n >= 8) {
    const uint32_t lo = l ^ LoadLe32(p);
    const uint32_t hi = LoadLe32(p + 4);
    l = kTables[7][lo & 0xffu] ^ kTables[6][(lo >> 8) & 0xffu] ^ kTables[5][(lo >> 16) & 0xffu] ^
        kTables[4][lo >> 24] ^ kTables[3][hi & 0xffu] ^ kTables[2][(hi >> 8) & 0xffu] ^
        kTables[1][(hi >> 16) & 0xffu] ^ kTables[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n > 0) {
    l = (l >> 8) ^ kTables[0][(l ^ *p++) & 0xffu];
    --n;
  }
  return l ^ 0xffffffffu;
}

bool HardwareAvailable() {
#if defined(SLUICE_CRC32C_X86)
  static const bool available = __builtin_cpu_supports("sse4.2");
  return available;
#else
  return false;
#endif
}

uint32_t ExtendHardware(uint32_t crc, const void* data, size_t n) {
#if defined(SLUICE_CRC32C_X86)
  return ExtendSse42(crc, static_cast<const uint8_t*>(data), n);
#else
  return ExtendSoftware(crc, data, n);
#endif
}

}  // namespace crc32c_internal

uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t n) {
  static const ExtendFn extend = ChooseExtend();
  return extend(crc, data, n);
}

uint32_t Crc32c(const void* data, size_t n) { return Crc32cExtend(0, data, n); }

uint32_t Crc32cMask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kMaskDelta; }

uint32_t Crc32cUnmask(uint32_t masked_crc) {
  const uint32_t rot = masked_crc - kMaskDelta;
  return (rot >> 17) | (rot << 15);
}

}  // namespace sluice
