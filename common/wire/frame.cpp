#include "common/wire/frame.h"

#include <algorithm>
#include <cstdio>

#include "common/crc32c.h"
#include "common/wire/decoder.h"

namespace sluice::wire {
namespace {

// In-place little-endian stores: FinishFrame fills a header reserved earlier, so it cannot use
// the appending Encoder.
void StoreLe16(char* p, uint16_t v) {
  p[0] = static_cast<char>(v & 0xffu);
  p[1] = static_cast<char>(v >> 8);
}
void StoreLe32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xffu);
}

std::string Hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", v);
  return buf;
}

uint32_t EffectiveLimit(const FrameReaderOptions& options) {
  return std::min(options.max_payload_bytes, kMaxFramePayloadBytes);
}

// Checks the first min(4, size) bytes against the magic, so garbage is refused at once rather
// than after waiting for a whole header.
Status CheckMagicPrefix(std::string_view bytes) {
  const size_t n = std::min<size_t>(bytes.size(), 4);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t want = static_cast<uint8_t>(kMagic >> (8 * i));
    if (static_cast<uint8_t>(bytes[i]) != want) {
      std::string got;
      for (size_t j = 0; j < n; ++j) {
        char b[4];
        std::snprintf(b, sizeof(b), "%02x", static_cast<uint8_t>(bytes[j]));
        got += b;
      }
      return Status::Corruption("bad magic: bytes " + got + ", want 534c5731 (\"SLW1\")",
                                "frame.magic");
    }
  }
  return Status::Ok();
}

Status CheckVersion(uint16_t version) {
  if (version == kFormatVersion) return Status::Ok();
  const std::string supported = std::to_string(kFormatVersion);
  if (version > kFormatVersion) {
    return Status::InvalidArgument("frame version " + std::to_string(version) +
                                       " is newer than the newest this reader supports (" +
                                       supported + ")",
                                   "frame.version");
  }
  return Status::InvalidArgument("frame version " + std::to_string(version) +
                                     " is not a valid version (this reader supports " + supported +
                                     ")",
                                 "frame.version");
}

// "truncated frame at offset 40: input ends after 7 bytes, the header alone needs 20".
std::string TruncatedMessage(std::string_view where, size_t have, size_t need) {
  std::string msg = "truncated frame";
  msg += where;
  msg += ": input ends after " + std::to_string(have) + " bytes, ";
  if (need <= kFrameHeaderSize) {
    msg += "the header alone needs " + std::to_string(kFrameHeaderSize);
  } else {
    msg += "the frame needs " + std::to_string(need);
  }
  return msg;
}

}  // namespace

size_t BeginFrame(std::string* out) {
  const size_t start = out->size();
  out->append(kFrameHeaderSize, '\0');
  return start;
}

Status FinishFrame(uint16_t type, size_t frame_start, std::string* out) {
  SLUICE_CHECK(frame_start <= out->size() && out->size() - frame_start >= kFrameHeaderSize);
  const size_t payload_size = out->size() - frame_start - kFrameHeaderSize;
  if (payload_size > kMaxFramePayloadBytes) {
    out->resize(frame_start);
    return Status::TooLarge("payload of " + std::to_string(payload_size) +
                                " bytes is over the frame limit of " +
                                std::to_string(kMaxFramePayloadBytes),
                            "frame.payload_length");
  }
  char* h = out->data() + frame_start;
  StoreLe32(h + kMagicOffset, kMagic);
  StoreLe16(h + kVersionOffset, kFormatVersion);
  StoreLe16(h + kTypeOffset, type);
  StoreLe16(h + kFlagsOffset, 0);
  StoreLe16(h + kReservedOffset, 0);
  StoreLe32(h + kPayloadLengthOffset, static_cast<uint32_t>(payload_size));
  StoreLe32(h + kHeaderCrcOffset, Crc32cMask(Crc32c(h, kHeaderCrcOffset)));
  const uint32_t crc = Crc32cMask(Crc32c(h, kFrameHeaderSize + payload_size));
  char trailer[kFrameTrailerSize];
  StoreLe32(trailer, crc);
  out->append(trailer, kFrameTrailerSize);
  return Status::Ok();
}

Status AppendFrame(uint16_t type, std::string_view payload, std::string* out) {
  if (payload.size() > kMaxFramePayloadBytes) {
    // Checked here too so an oversized payload is never copied.
    return Status::TooLarge("payload of " + std::to_string(payload.size()) +
                                " bytes is over the frame limit of " +
                                std::to_string(kMaxFramePayloadBytes),
                            "frame.payload_length");
  }
  out->reserve(out->size() + kFrameOverhead + payload.size());
  const size_t start = BeginFrame(out);
  out->append(payload.data(), payload.size());
  return FinishFrame(type, start, out);
}

Result<std::string> EncodeFrame(uint16_t type, std::string_view payload) {
  std::string out;
  SLUICE_RETURN_IF_ERROR(AppendFrame(type, payload, &out));
  return out;
}

Result<FrameScan> ScanFrame(std::string_view bytes, const FrameReaderOptions& options) {
  FrameScan scan;
  SLUICE_RETURN_IF_ERROR(CheckMagicPrefix(bytes));
  // Version next, before the header CRC: a newer version may lay out the rest of its header
  // differently, and its reader deserves "too new", not "corrupt".
  if (bytes.size() >= kVersionOffset + 2) {
    uint16_t version = 0;
    Decoder d(bytes.substr(kVersionOffset, 2));
    SLUICE_RETURN_IF_ERROR(d.GetU16("frame.version", &version));
    SLUICE_RETURN_IF_ERROR(CheckVersion(version));
  }
  if (bytes.size() < kFrameHeaderSize) {
    scan.bytes_needed = kFrameHeaderSize;
    return scan;
  }

  Decoder h(bytes.substr(0, kFrameHeaderSize));
  uint32_t magic = 0, payload_length = 0, header_crc = 0;
  uint16_t version = 0, type = 0, flags = 0, reserved = 0;
  SLUICE_RETURN_IF_ERROR(h.GetU32("frame.magic", &magic));
  SLUICE_RETURN_IF_ERROR(h.GetU16("frame.version", &version));
  SLUICE_RETURN_IF_ERROR(h.GetU16("frame.type", &type));
  SLUICE_RETURN_IF_ERROR(h.GetU16("frame.flags", &flags));
  SLUICE_RETURN_IF_ERROR(h.GetU16("frame.reserved", &reserved));
  SLUICE_RETURN_IF_ERROR(h.GetU32("frame.payload_length", &payload_length));
  SLUICE_RETURN_IF_ERROR(h.GetU32("frame.header_crc", &header_crc));

  const uint32_t want_header_crc = Crc32cMask(Crc32c(bytes.data(), kHeaderCrcOffset));
  if (header_crc != want_header_crc) {
    return Status::Corruption(
        "header CRC mismatch: stored " + Hex(header_crc) + ", computed " + Hex(want_header_crc),
        "frame.header_crc");
  }
  // Past the header CRC, odd values were written on purpose by a newer writer, not damaged.
  if ((flags & ~kKnownFlags) != 0) {
    return Status::InvalidArgument(
        "unsupported flags " + Hex(flags) + " (this reader knows " + Hex(kKnownFlags) + ")",
        "frame.flags");
  }
  if (reserved != 0) {
    return Status::InvalidArgument("reserved field is " + Hex(reserved) + ", must be 0",
                                   "frame.reserved");
  }
  const uint32_t limit = EffectiveLimit(options);
  if (payload_length > limit) {
    return Status::TooLarge("payload length " + std::to_string(payload_length) +
                                " is over this reader's limit of " + std::to_string(limit) +
                                " bytes",
                            "frame.payload_length");
  }

  const size_t frame_size = kFrameOverhead + size_t{payload_length};
  if (bytes.size() < frame_size) {
    scan.bytes_needed = frame_size;
    return scan;
  }
  Decoder t(bytes.substr(kFrameHeaderSize + payload_length, kFrameTrailerSize));
  uint32_t stored_crc = 0;
  SLUICE_RETURN_IF_ERROR(t.GetU32("frame.crc", &stored_crc));
  const uint32_t want_crc = Crc32cMask(Crc32c(bytes.data(), kFrameHeaderSize + payload_length));
  if (stored_crc != want_crc) {
    return Status::Corruption(
        "frame CRC mismatch: stored " + Hex(stored_crc) + ", computed " + Hex(want_crc),
        "frame.crc");
  }
  scan.complete = true;
  scan.frame.type = type;
  scan.frame.payload = bytes.substr(kFrameHeaderSize, payload_length);
  scan.frame_size = frame_size;
  return scan;
}

FrameReader::FrameReader(std::string_view input, FrameReaderOptions options)
    : input_(input), options_(options) {}

Result<Frame> FrameReader::Next() {
  if (!status_.ok()) return status_;
  if (offset_ == input_.size()) return Status::NotFound("end of input");
  const std::string_view rest = input_.substr(offset_);
  Result<FrameScan> scan = ScanFrame(rest, options_);
  if (!scan.ok()) {
    status_ = scan.status().WithContext("frame at offset " + std::to_string(offset_));
    return status_;
  }
  if (!scan->complete) {
    truncated_ = true;
    status_ = Status::Corruption(
        TruncatedMessage(" at offset " + std::to_string(offset_), rest.size(), scan->bytes_needed),
        "frame");
    return status_;
  }
  offset_ += scan->frame_size;
  return scan->frame;
}

void FrameStreamReader::Append(std::string_view bytes) {
  if (!status_.ok()) return;  // The stream is dead; keep no more of it.
  // Dropping returned frames here, not in Next, keeps the payload views Next hands out valid
  // until the caller appends again.
  if (consumed_ > 0) {
    buffer_.erase(0, consumed_);
    consumed_ = 0;
  }
  buffer_.append(bytes.data(), bytes.size());
}

Result<std::optional<Frame>> FrameStreamReader::Next() {
  if (!status_.ok()) return status_;
  const std::string_view rest = std::string_view(buffer_).substr(consumed_);
  if (rest.empty()) {
    bytes_needed_ = 0;
    return std::optional<Frame>();
  }
  Result<FrameScan> scan = ScanFrame(rest, options_);
  if (!scan.ok()) {
    status_ = scan.status();
    return status_;
  }
  if (!scan->complete) {
    bytes_needed_ = scan->bytes_needed;
    return std::optional<Frame>();
  }
  bytes_needed_ = 0;
  consumed_ += scan->frame_size;
  return std::optional<Frame>(scan->frame);
}

size_t FrameStreamReader::BytesWanted() const {
  const size_t have = buffered();
  if (have == 0) return kFrameHeaderSize;
  return bytes_needed_ > have ? bytes_needed_ - have : 0;
}

Status FrameStreamReader::Finish() const {
  if (!status_.ok()) return status_;
  // Scans rather than trusting bytes_needed_, which is stale if Append came after the last Next.
  std::string_view rest = std::string_view(buffer_).substr(consumed_);
  while (!rest.empty()) {
    SLUICE_ASSIGN_OR_RETURN(FrameScan scan, ScanFrame(rest, options_));
    if (!scan.complete) {
      return Status::Corruption(
          TruncatedMessage(" at end of stream", rest.size(), scan.bytes_needed), "frame");
    }
    rest.remove_prefix(scan.frame_size);  // An unread whole frame is not a truncation.
  }
  return Status::Ok();
}

}  // namespace sluice::wire
