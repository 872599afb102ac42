// CRC32C (Castagnoli): the checksum of Sluice's wire frames and on-disk records.
//
// Reflected polynomial 0x82F63B78, initial value and final XOR 0xFFFFFFFF, as used by iSCSI,
// ext4, LevelDB and RocksDB, so values can be checked with any standard implementation. On x86-64
// CPUs with SSE4.2 the crc32 instruction is used (chosen once at run time, no build flag needed);
// elsewhere a slicing-by-8 table. Both paths give identical results.
//
// Thread safety: pure functions; safe from any thread. Lengths are in bytes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sluice {

// The CRC32C of n bytes at data. data may be null when n is 0.
uint32_t Crc32c(const void* data, size_t n);

// The CRC32C of A followed by B, given crc = Crc32c(A) and B = the n bytes at data. Lets a
// checksum be computed over pieces without concatenating them. Crc32cExtend(0, d, n) ==
// Crc32c(d, n).
uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t n);

// A CRC stored next to the data it covers is itself data when a larger record containing both is
// checksummed again, and the CRC of a string that embeds its own CRC is weak. Masking (rotate
// right by 15 bits, add a constant) makes the stored value unlike the raw CRC. Same scheme as
// LevelDB, so masked values interoperate.
uint32_t Crc32cMask(uint32_t crc);
uint32_t Crc32cUnmask(uint32_t masked_crc);

namespace crc32c_internal {
// Exposed for tests and benchmarks, which compare the two paths.
uint32_t ExtendSoftware(uint32_t crc, const void* data, size_t n);
// True when this CPU has the SSE4.2 crc32 instruction and ExtendHardware may be called.
bool HardwareAvailable();
// Precondition: HardwareAvailable().
uint32_t ExtendHardware(uint32_t crc, const void* data, size_t n);
}  // namespace crc32c_internal

}  // namespace sluice
