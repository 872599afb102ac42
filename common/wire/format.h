// Constants of the Sluice binary wire format (version 1): frame header layout and size limits.
//
// A frame is a 20-byte header, the payload, then a 4-byte trailer CRC. All integers are
// little-endian. docs/wire-format.md is the full specification; these constants and that
// document must change together. Sizes and offsets are in bytes.
//
// Thread safety: constants only.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sluice::wire {

// "SLW1" read as a little-endian u32: the bytes 'S' 'L' 'W' '1' in that order on the wire.
inline constexpr uint32_t kMagic = 0x31574C53u;

// The newest frame version this code writes and reads. Bumped only for changes that an older
// reader cannot skip over safely; compatible additions go inside payloads (see the doc).
inline constexpr uint16_t kFormatVersion = 1;

// Frame header, version 1. Magic and version stay at offsets 0 and 4 in every future version, so
// any reader can tell "not ours" from "ours but too new" before parsing the rest.
inline constexpr size_t kMagicOffset = 0;           // u32, kMagic.
inline constexpr size_t kVersionOffset = 4;         // u16, kFormatVersion.
inline constexpr size_t kTypeOffset = 6;            // u16, message kind, chosen by the caller.
inline constexpr size_t kFlagsOffset = 8;           // u16, no flags defined: must be 0.
inline constexpr size_t kReservedOffset = 10;       // u16, must be 0.
inline constexpr size_t kPayloadLengthOffset = 12;  // u32, payload bytes that follow the header.
inline constexpr size_t kHeaderCrcOffset = 16;      // u32, masked CRC32C of header bytes [0, 16).
inline constexpr size_t kFrameHeaderSize = 20;

// After the payload: u32 masked CRC32C of the header (all 20 bytes) and the payload.
inline constexpr size_t kFrameTrailerSize = 4;
inline constexpr size_t kFrameOverhead = kFrameHeaderSize + kFrameTrailerSize;

// Flag bits understood by this version (none). A reader rejects a frame with any other bit set,
// because a flag may change how the payload must be read.
inline constexpr uint16_t kKnownFlags = 0;

// Hard cap on a frame's payload, for writers and readers alike: 1 GiB. Readers normally take a
// smaller limit suited to their memory budget.
inline constexpr uint32_t kMaxFramePayloadBytes = uint32_t{1} << 30;
// The limit a reader uses when the caller does not choose one: 256 MiB, room for a large batch of
// long trajectories while bounding what one peer can make a reader buffer.
inline constexpr uint32_t kDefaultReaderMaxPayloadBytes = uint32_t{256} << 20;

// Encoded sizes of the length prefixes used by the Encoder and Decoder.
inline constexpr size_t kLengthPrefixSize = 4;  // u32 byte length of strings and bytes.
inline constexpr size_t kCountPrefixSize = 4;   // u32 element count of arrays.
inline constexpr size_t kMaxVarintBytes = 10;   // A u64 in LEB128 takes at most 10 bytes.

}  // namespace sluice::wire
