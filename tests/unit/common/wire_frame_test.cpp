// Tests of wire frames (common/wire/frame.h): the header and trailer layout, the frame writers,
// multi-frame streams, and the reader's handling of truncation, bit flips, oversize lengths, bad
// magic, versions and flags.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/check.h"
#include "common/crc32c.h"
#include "common/status.h"
#include "common/wire/encoder.h"
#include "common/wire/format.h"
#include "common/wire/frame.h"
#include "tests/unit/common/wire_test_support.h"

namespace sluice::wire {
namespace {

using testing_support::Bytes;
using testing_support::EncodeSample;
using testing_support::HugeRegion;
using testing_support::Lim;

// A frame header with the given fields and a correct header CRC.
std::string Header(uint16_t version, uint16_t type, uint16_t flags, uint16_t reserved,
                   uint32_t payload_length) {
  std::string h;
  Encoder e(&h);
  e.PutU32(kMagic);
  e.PutU16(version);
  e.PutU16(type);
  e.PutU16(flags);
  e.PutU16(reserved);
  e.PutU32(payload_length);
  e.PutU32(Crc32cMask(Crc32c(h.data(), h.size())));
  return h;
}

// A whole frame with arbitrary header fields and correct CRCs.
std::string CustomFrame(uint16_t version, uint16_t flags, uint16_t reserved,
                        std::string_view payload) {
  std::string f = Header(version, 7, flags, reserved, static_cast<uint32_t>(payload.size()));
  f.append(payload);
  Encoder e(&f);
  e.PutU32(Crc32cMask(Crc32c(f.data(), f.size())));
  return f;
}

std::string MustEncode(uint16_t type, std::string_view payload) {
  Result<std::string> r = EncodeFrame(type, payload);
  SLUICE_CHECK(r.ok());
  return std::move(r).value();
}

TEST(WireFrameTest, LayoutMatchesSpec) {
  const std::string f = MustEncode(0x0102, "hi");
  ASSERT_EQ(f.size(), kFrameOverhead + 2);
  EXPECT_EQ(f.substr(0, 4), "SLW1");
  EXPECT_EQ(f.substr(4, 12), Bytes({1, 0, 2, 1, 0, 0, 0, 0, 2, 0, 0, 0}));
  EXPECT_EQ(f.substr(0, 20), Header(1, 0x0102, 0, 0, 2));
  EXPECT_EQ(f.substr(20, 2), "hi");
  std::string trailer;
  Encoder(&trailer).PutU32(Crc32cMask(Crc32c(f.data(), 22)));
  EXPECT_EQ(f.substr(22), trailer);
}

TEST(WireFrameTest, SingleAndEmptyFrames) {
  for (const std::string& payload : {std::string(), std::string("payload"), EncodeSample()}) {
    const std::string f = MustEncode(42, payload);
    FrameReader r(f);
    ASSERT_FALSE(r.AtEnd());
    Result<Frame> frame = r.Next();
    ASSERT_TRUE(frame.ok()) << frame.status().ToString();
    EXPECT_EQ(frame->type, 42);
    EXPECT_EQ(frame->payload, payload);
    EXPECT_TRUE(r.AtEnd());
    EXPECT_EQ(r.Next().status().code(), StatusCode::kNotFound);
  }
  FrameReader empty("");
  EXPECT_TRUE(empty.AtEnd());
}

TEST(WireFrameTest, BeginFinishFrameMatchesEncodeFrame) {
  std::string out = "prefix";
  const size_t start = BeginFrame(&out);
  EXPECT_EQ(start, 6u);
  Encoder e(&out);
  e.PutString("trajectory");
  const float values[] = {1.0f, 2.0f};
  e.PutF32Array(values);
  ASSERT_TRUE(e.status().ok());
  ASSERT_TRUE(FinishFrame(9, start, &out).ok());

  std::string payload;
  Encoder p(&payload);
  p.PutString("trajectory");
  p.PutF32Array(values);
  EXPECT_EQ(out, "prefix" + MustEncode(9, payload));

  std::string appended = "prefix";
  ASSERT_TRUE(AppendFrame(9, payload, &appended).ok());
  EXPECT_EQ(appended, out);
}

TEST(WireFrameTest, WritersRejectPayloadsOverTheHardCap) {
  static_assert(sizeof(size_t) >= 8, "Sluice builds for 64-bit targets");
  HugeRegion region(size_t{kMaxFramePayloadBytes} + 1);
  ASSERT_TRUE(region.ok()) << "could not reserve 1 GiB of address space (ulimit -v?)";
  std::string out = "keep";
  Status s = AppendFrame(1, region.view(), &out);
  EXPECT_EQ(s.code(), StatusCode::kTooLarge);
  EXPECT_EQ(s.field(), "frame.payload_length");
  EXPECT_EQ(out, "keep");
  EXPECT_EQ(EncodeFrame(1, region.view()).status().code(), StatusCode::kTooLarge);
}

std::vector<std::pair<uint16_t, std::string>> SampleFrames() {
  std::mt19937 rng(99);
  std::vector<std::pair<uint16_t, std::string>> frames;
  frames.emplace_back(1, "");
  frames.emplace_back(2, EncodeSample());
  frames.emplace_back(0xffff, "x");
  std::string big(70000, '\0');
  for (char& c : big) c = static_cast<char>(rng());
  frames.emplace_back(3, big);
  frames.emplace_back(0, "last");
  return frames;
}

TEST(WireFrameTest, MultiFrameStreamRoundTrip) {
  const auto frames = SampleFrames();
  std::string stream;
  for (const auto& [type, payload] : frames) ASSERT_TRUE(AppendFrame(type, payload, &stream).ok());

  FrameReader r(stream);
  for (const auto& [type, payload] : frames) {
    ASSERT_FALSE(r.AtEnd());
    Result<Frame> f = r.Next();
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    EXPECT_EQ(f->type, type);
    EXPECT_EQ(f->payload, payload);
  }
  EXPECT_TRUE(r.AtEnd());
  EXPECT_EQ(r.offset(), stream.size());

  // The same bytes through the stream reader, in chunks of 1 byte, then of random sizes.
  std::mt19937 rng(5);
  for (int pass = 0; pass < 2; ++pass) {
    FrameStreamReader sr;
    size_t next = 0;
    size_t pos = 0;
    while (pos < stream.size()) {
      const size_t chunk = pass == 0 ? 1 : 1 + rng() % 5000;
      const size_t n = std::min(chunk, stream.size() - pos);
      sr.Append(std::string_view(stream).substr(pos, n));
      pos += n;
      while (true) {
        Result<std::optional<Frame>> f = sr.Next();
        ASSERT_TRUE(f.ok()) << f.status().ToString();
        if (!f->has_value()) {
          EXPECT_GT(sr.BytesWanted(), 0u);
          break;
        }
        ASSERT_LT(next, frames.size());
        EXPECT_EQ((*f)->type, frames[next].first);
        EXPECT_EQ((*f)->payload, frames[next].second);
        ++next;
      }
    }
    EXPECT_EQ(next, frames.size());
    EXPECT_EQ(sr.buffered(), 0u);
    EXPECT_TRUE(sr.Finish().ok());
  }
}

TEST(WireFrameTest, StreamReaderSaysHowManyBytesItWants) {
  const std::string f = MustEncode(1, std::string(100, 'p'));
  FrameStreamReader sr;
  EXPECT_EQ(sr.BytesWanted(), kFrameHeaderSize);
  sr.Append(std::string_view(f).substr(0, 5));
  ASSERT_FALSE(sr.Next()->has_value());
  EXPECT_EQ(sr.BytesWanted(), kFrameHeaderSize - 5);
  sr.Append(std::string_view(f).substr(5, 20));
  ASSERT_FALSE(sr.Next()->has_value());
  EXPECT_EQ(sr.BytesWanted(), f.size() - 25);
  sr.Append(std::string_view(f).substr(25));
  EXPECT_EQ(sr.BytesWanted(), 0u);
  ASSERT_TRUE(sr.Next()->has_value());
}

// Every prefix of a frame, and of a two-frame stream, is reported as truncated (never read past,
// never mistaken for a clean end) except the empty prefix and the frame boundaries.
TEST(WireFrameTest, TruncationAtEveryOffset) {
  const std::string one = MustEncode(5, EncodeSample());
  const std::string two = one + MustEncode(6, "second frame payload");
  for (const std::string* input : {&one, &two}) {
    for (size_t n = 0; n < input->size(); ++n) {
      const std::string prefix = input->substr(0, n);  // Exact-size copy for ASan.
      FrameReader r(prefix);
      size_t frames = 0;
      Status error;
      while (!r.AtEnd()) {
        Result<Frame> f = r.Next();
        if (!f.ok()) {
          error = f.status();
          break;
        }
        ++frames;
      }
      if (n == 0 || n == one.size()) {
        EXPECT_TRUE(error.ok()) << n << ": " << error.ToString();
        EXPECT_EQ(frames, n == 0 ? 0u : 1u);
        continue;
      }
      EXPECT_EQ(frames, n > one.size() ? 1u : 0u) << n;
      EXPECT_EQ(error.code(), StatusCode::kCorruption) << n << ": " << error.ToString();
      EXPECT_EQ(error.field(), "frame") << n;
      EXPECT_EQ(error.message().rfind("truncated frame", 0), 0u) << error.message();
      EXPECT_TRUE(r.truncated());
      EXPECT_EQ(r.offset(), n > one.size() ? one.size() : 0u);

      // The stream reader waits for more instead, and Finish reports the truncation.
      FrameStreamReader sr;
      sr.Append(prefix);
      size_t stream_frames = 0;
      while (true) {
        Result<std::optional<Frame>> f = sr.Next();
        ASSERT_TRUE(f.ok()) << n << ": " << f.status().ToString();
        if (!f->has_value()) break;
        ++stream_frames;
      }
      EXPECT_EQ(stream_frames, frames);
      EXPECT_GT(sr.BytesWanted(), 0u);
      Status fin = sr.Finish();
      EXPECT_EQ(fin.code(), StatusCode::kCorruption) << n;
      EXPECT_EQ(fin.message().rfind("truncated frame", 0), 0u) << fin.message();
    }
  }
}

// Any single-bit flip is caught: in magic or version by the header checks, elsewhere by the header
// CRC or the frame CRC. The stream reader reports it too, rather than waiting for more bytes.
TEST(WireFrameTest, EverySingleBitFlipIsCaught) {
  const std::string good = MustEncode(3, "bit flips must not pass: " + EncodeSample());
  for (size_t byte = 0; byte < good.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = good;
      bad[byte] = static_cast<char>(bad[byte] ^ (1 << bit));
      FrameReader r(bad);
      Result<Frame> f = r.Next();
      ASSERT_FALSE(f.ok()) << "byte " << byte << " bit " << bit;
      const std::string field = f.status().field();
      SCOPED_TRACE("byte " + std::to_string(byte) + " bit " + std::to_string(bit));
      if (byte < 4) {
        EXPECT_EQ(field, "frame.magic");
      } else if (byte < 6) {
        EXPECT_EQ(field, "frame.version");
      } else if (byte < kFrameHeaderSize) {
        EXPECT_EQ(field, "frame.header_crc");
      } else {
        EXPECT_EQ(field, "frame.crc");  // Payload or trailer.
      }
      FrameStreamReader sr;
      sr.Append(bad);
      EXPECT_FALSE(sr.Next().ok()) << "byte " << byte << " bit " << bit;
    }
  }
}

TEST(WireFrameTest, OversizeLengthRejectedFromTheHeaderAlone) {
  FrameReaderOptions options;
  options.max_payload_bytes = 1024;
  const std::string f = MustEncode(1, std::string(1025, 'x'));
  const std::string header_only = f.substr(0, kFrameHeaderSize);

  FrameReader r(header_only, options);
  Result<Frame> got = r.Next();
  EXPECT_EQ(got.status().code(), StatusCode::kTooLarge);
  EXPECT_EQ(got.status().field(), "frame.payload_length");
  EXPECT_NE(got.status().message().find("1025"), std::string::npos);
  EXPECT_NE(got.status().message().find("1024"), std::string::npos);
  EXPECT_FALSE(r.truncated());

  FrameStreamReader sr(options);
  sr.Append(header_only);
  EXPECT_EQ(sr.Next().status().code(), StatusCode::kTooLarge);
  sr.Append(f.substr(kFrameHeaderSize));  // Dropped: the stream is dead.
  EXPECT_EQ(sr.buffered(), header_only.size());
  EXPECT_EQ(sr.Finish().code(), StatusCode::kTooLarge);

  // A payload exactly at the limit is fine.
  const std::string limit_frame = MustEncode(1, std::string(1024, 'x'));
  FrameReader at_limit(limit_frame, options);
  EXPECT_TRUE(at_limit.Next().ok());

  // 0xFFFFFFFF with the default limit, and with a limit above the hard cap (clamped to it).
  const std::string huge = Header(1, 1, 0, 0, 0xffffffffu);
  EXPECT_EQ(FrameReader(huge).Next().status().code(), StatusCode::kTooLarge);
  FrameReaderOptions unlimited;
  unlimited.max_payload_bytes = Lim<uint32_t>::max();
  EXPECT_EQ(FrameReader(huge, unlimited).Next().status().code(), StatusCode::kTooLarge);
  const std::string over_cap = Header(1, 1, 0, 0, kMaxFramePayloadBytes + 1);
  EXPECT_EQ(FrameReader(over_cap, unlimited).Next().status().code(), StatusCode::kTooLarge);
  // At the cap with a raised limit: accepted as a header, then truncated.
  const std::string at_cap_header = Header(1, 1, 0, 0, kMaxFramePayloadBytes);
  FrameReader at_cap(at_cap_header, unlimited);
  EXPECT_FALSE(at_cap.Next().ok());
  EXPECT_TRUE(at_cap.truncated());
}

TEST(WireFrameTest, BadMagic) {
  std::string f = MustEncode(1, "x");
  f[0] = 'X';
  Result<Frame> got = FrameReader(f).Next();
  EXPECT_EQ(got.status().code(), StatusCode::kCorruption);
  EXPECT_EQ(got.status().field(), "frame.magic");

  // Garbage is refused from its first bytes, e.g. an HTTP request sent to a frame port.
  FrameStreamReader sr;
  sr.Append("GE");
  Result<std::optional<Frame>> s = sr.Next();
  EXPECT_EQ(s.status().code(), StatusCode::kCorruption);
  EXPECT_EQ(s.status().field(), "frame.magic");
  EXPECT_EQ(FrameReader("S").Next().status().field(), "frame");  // A valid prefix: truncated.
}

TEST(WireFrameTest, UnsupportedVersion) {
  const std::string newer = CustomFrame(kFormatVersion + 1, 0, 0, "from the future");
  Result<Frame> got = FrameReader(newer).Next();
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(got.status().field(), "frame.version");
  EXPECT_NE(got.status().message().find("version 2"), std::string::npos) << got.status().message();
  EXPECT_NE(got.status().message().find("(1)"), std::string::npos) << got.status().message();

  // Known from the first 6 bytes, before the rest of a header whose layout may have changed.
  FrameStreamReader sr;
  sr.Append(newer.substr(0, 6));
  EXPECT_EQ(sr.Next().status().field(), "frame.version");

  const std::string zero = CustomFrame(0, 0, 0, "");
  EXPECT_EQ(FrameReader(zero).Next().status().field(), "frame.version");
  const std::string far = CustomFrame(0xffff, 0, 0, "");
  EXPECT_NE(FrameReader(far).Next().status().message().find("65535"), std::string::npos);
}

TEST(WireFrameTest, UnknownFlagsAndReservedBitsRejected) {
  const std::string with_flags = CustomFrame(1, 0x0001, 0, "x");
  Result<Frame> flags = FrameReader(with_flags).Next();
  EXPECT_EQ(flags.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(flags.status().field(), "frame.flags");
  const std::string with_reserved = CustomFrame(1, 0, 0x8000, "x");
  Result<Frame> reserved = FrameReader(with_reserved).Next();
  EXPECT_EQ(reserved.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(reserved.status().field(), "frame.reserved");
  const std::string plain = CustomFrame(1, 0, 0, "x");
  EXPECT_TRUE(FrameReader(plain).Next().ok());
}

TEST(WireFrameTest, ErrorsAreSticky) {
  std::string stream = MustEncode(1, "a") + MustEncode(2, "b") + MustEncode(3, "c");
  stream[MustEncode(1, "a").size() + kFrameHeaderSize] ^= 1;  // Damage the second payload.
  FrameReader r(stream);
  ASSERT_TRUE(r.Next().ok());
  const size_t bad_at = r.offset();
  Status first = r.Next().status();
  EXPECT_EQ(first.field(), "frame.crc");
  EXPECT_NE(first.message().find("offset " + std::to_string(bad_at)), std::string::npos);
  EXPECT_EQ(r.Next().status(), first);
  EXPECT_FALSE(r.AtEnd());
  EXPECT_EQ(r.offset(), bad_at);
  EXPECT_FALSE(r.truncated());

  FrameStreamReader sr;
  sr.Append(stream);
  ASSERT_TRUE(sr.Next().ok());
  EXPECT_FALSE(sr.Next().ok());
  EXPECT_FALSE(sr.Next().ok());
  EXPECT_FALSE(sr.Finish().ok());
}

TEST(WireFrameTest, ScanFrameReportsWhatItNeeds) {
  const std::string f = MustEncode(4, "abc");
  Result<FrameScan> s = ScanFrame(std::string_view(f).substr(0, 3));
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->complete);
  EXPECT_EQ(s->bytes_needed, kFrameHeaderSize);
  s = ScanFrame(std::string_view(f).substr(0, kFrameHeaderSize));
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->complete);
  EXPECT_EQ(s->bytes_needed, f.size());
  const std::string with_more = f + "trailing bytes of the next frame";
  s = ScanFrame(with_more);
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->complete);
  EXPECT_EQ(s->frame_size, f.size());
  EXPECT_EQ(s->frame.type, 4);
  EXPECT_EQ(s->frame.payload, "abc");
}

}  // namespace
}  // namespace sluice::wire
