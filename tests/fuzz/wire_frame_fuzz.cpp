// libFuzzer target for the Sluice wire format: framing (common/wire/frame.h), the value decoder
// (common/wire/decoder.h) and the dataflow's two bulk messages built on them
// (workers/dataflow/client/trajectory_codec.h: trajectory groups and training batches).
//
// The first byte picks what the rest of the input is, so that mutations reach past the CRCs:
//   0  a byte stream of frames. FrameReader and a FrameStreamReader fed in pseudo-random chunks
//      must return the same frames and end the same way (clean end, truncation, or the same error
//      code and field); every frame re-encoded with AppendFrame is byte-for-byte the input frame;
//      errors are sticky. Frames of the dataflow's types are decoded as below.
//   1  the payload of a trajectory group frame (wrapped in a frame here, CRCs and all);
//   2  the payload of a batch frame. For both: what decodes re-encodes and decodes to the same
//      values (floats bit for bit), and encoding is stable after one round trip; a batch written
//      by BatchFrameWriter in pseudo-random pieces is exactly EncodeBatch's bytes.
//   3  a program for the value Decoder: a count n, n operation bytes, then the data. Each value
//      read re-encodes (Encoder) to exactly the bytes it was read from, except varints, which
//      re-encode minimally and decode to the same value; a failed read consumes nothing and
//      leaves its output untouched.
//
// Fuzz it with `scripts/fuzz.sh wire_frame [seconds]` (tests/fuzz/CMakeLists.txt).
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/crc32c.h"
#include "common/json/json_depth.h"
#include "common/splitmix64.h"
#include "common/status.h"
#include "common/wire/decoder.h"
#include "common/wire/encoder.h"
#include "common/wire/frame.h"
#include "tests/fuzz/fuzz_require.h"
#include "workers/dataflow/client/sample.h"
#include "workers/dataflow/client/trajectory_codec.h"

namespace {

using sluice::Result;
using sluice::Status;
using sluice::StatusCode;
using sluice::dataflow::Batch;
using sluice::dataflow::BatchFrameWriter;
using sluice::dataflow::Sample;
using sluice::dataflow::TrajectoryGroup;
using sluice::wire::Decoder;
using sluice::wire::Encoder;
using sluice::wire::Frame;

constexpr size_t kMaxInputBytes = 64 * 1024;

using sluice::fuzz::Require;

// Pseudo-random piece sizes, the same for the same input on every machine.
class Pieces {
 public:
  explicit Pieces(uint64_t seed) : state_(seed) {}
  // 1 to 64 bytes mostly, now and then up to 4 KiB.
  size_t Next() {
    state_ = sluice::SplitMix64(state_);
    const size_t limit = (state_ & 0xf) == 0 ? 4096 : 64;
    return 1 + static_cast<size_t>((state_ >> 8) % limit);
  }

 private:
  uint64_t state_;
};

bool SameBits(double a, double b) {
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}
bool SameBits(const std::optional<double>& a, const std::optional<double>& b) {
  return a.has_value() == b.has_value() && (!a || SameBits(*a, *b));
}
template <typename T>
bool SameBits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// ---------------------------------------------------------------------------------------------
// Trajectory groups and batches.

// The fields a trajectory group frame carries for each sample (task_id is the group's).
bool SameGroupSample(const Sample& a, const Sample& b) {
  return a.task_id == b.task_id && a.prompt_id == b.prompt_id && a.policy == b.policy &&
         a.tokens == b.tokens && a.loss_mask == b.loss_mask &&
         SameBits(a.behaviour_logprobs, b.behaviour_logprobs) && a.versions == b.versions &&
         a.token_owner == b.token_owner && a.policies == b.policies &&
         SameBits(a.policy_rewards, b.policy_rewards) && SameBits(a.reward, b.reward) &&
         a.finish_reason == b.finish_reason && a.turn_starts == b.turn_starts &&
         SameBits(a.generation_seconds, b.generation_seconds) &&
         SameBits(a.environment_seconds, b.environment_seconds) &&
         SameBits(a.reward_seconds, b.reward_seconds) && a.tool_calls == b.tool_calls;
}

bool SameGroup(const TrajectoryGroup& a, const TrajectoryGroup& b) {
  if (a.task_id != b.task_id || a.attempt != b.attempt || a.lease_id != b.lease_id ||
      a.worker_id != b.worker_id || a.prompt_id != b.prompt_id || a.eval != b.eval ||
      a.samples.size() != b.samples.size()) {
    return false;
  }
  for (size_t i = 0; i < a.samples.size(); ++i) {
    if (!SameGroupSample(a.samples[i], b.samples[i])) return false;
  }
  return true;
}

// The fields a batch frame carries for each sample.
bool SameBatchSample(const Sample& a, const Sample& b) {
  return a.prompt_id == b.prompt_id && a.task_id == b.task_id &&
         a.finish_reason == b.finish_reason && a.turn_starts == b.turn_starts &&
         a.tokens == b.tokens && a.loss_mask == b.loss_mask &&
         SameBits(a.behaviour_logprobs, b.behaviour_logprobs) && a.versions == b.versions &&
         a.policy == b.policy && SameBits(a.reward, b.reward) &&
         SameBits(a.group_mean, b.group_mean) && SameBits(a.group_std, b.group_std) &&
         SameBits(a.advantage, b.advantage) && SameBits(a.loss_weight, b.loss_weight);
}

void CheckGroupBody(std::string_view body) {
  Result<TrajectoryGroup> group = sluice::dataflow::DecodeTrajectoryGroup(body);
  if (!group.ok()) {
    const StatusCode code = group.status().code();
    Require(code == StatusCode::kInvalidArgument || code == StatusCode::kCorruption ||
                code == StatusCode::kTooLarge || code == StatusCode::kNotFound,
            "group decode error code");
    return;
  }
  Require(!group->task_id.empty(), "a group has a task id");
  Require(!group->samples.empty() && group->samples.size() <= sluice::dataflow::kMaxSamplesPerGroup,
          "a group has 1 to kMaxSamplesPerGroup samples");
  for (const Sample& s : group->samples) {
    Require(sluice::dataflow::ValidateSample(s).ok(), "decoded samples are valid");
    Require(s.task_id == group->task_id, "samples carry the group's task id");
    for (uint32_t t : s.turn_starts) Require(t <= s.tokens.size(), "turn starts inside tokens");
  }
  std::string again;
  Require(sluice::dataflow::EncodeTrajectoryGroup(*group, &again).ok(), "a decoded group encodes");
  // Varints re-encode minimally and an all-absent tool_calls field is left out: never longer.
  Require(again.size() <= body.size(), "re-encoded group is no longer");
  Result<TrajectoryGroup> back = sluice::dataflow::DecodeTrajectoryGroup(again);
  Require(back.ok(), "a re-encoded group decodes");
  Require(SameGroup(*group, *back), "group round trip");
  std::string third;
  Require(sluice::dataflow::EncodeTrajectoryGroup(*back, &third).ok(), "group encodes again");
  Require(third == again, "group encoding is stable");
}

void CheckBatchBody(std::string_view body, uint64_t seed) {
  Result<Batch> batch = sluice::dataflow::DecodeBatch(body);
  if (!batch.ok()) {
    const StatusCode code = batch.status().code();
    Require(code == StatusCode::kInvalidArgument || code == StatusCode::kCorruption ||
                code == StatusCode::kTooLarge || code == StatusCode::kNotFound,
            "batch decode error code");
    return;
  }
  const size_t n = batch->samples.size();
  Require(batch->group_index.size() == n && batch->replayed.size() == n, "per-sample arrays");
  for (const Sample& s : batch->samples) {
    const size_t t = s.tokens.size();
    Require(s.loss_mask.size() == t && s.behaviour_logprobs.size() == t && s.versions.size() == t,
            "per-token arrays are parallel");
    Require(s.policy == batch->policy, "samples carry the batch's policy");
    Require(s.group_mean.has_value() && s.group_std.has_value(), "group stats are stamped");
  }
  // DecodeBatch does not bound the nesting of the stats document, and writing it back (dump)
  // recurses once per level: a deep one could overflow the stack here, so it is not re-encoded.
  if (sluice::JsonValueDepth(batch->stats) > sluice::kMaxJsonDepth) return;

  std::string again;
  Require(sluice::dataflow::EncodeBatch(*batch, &again).ok(), "a decoded batch encodes");
  Result<Batch> back = sluice::dataflow::DecodeBatch(again);
  Require(back.ok(), "a re-encoded batch decodes");
  Require(back->batch_id == batch->batch_id && back->policy == batch->policy &&
              back->policy_version == batch->policy_version &&
              back->group_index == batch->group_index && back->replayed == batch->replayed &&
              back->samples.size() == n,
          "batch fields round trip");
  for (size_t i = 0; i < n; ++i) {
    Require(SameBatchSample(batch->samples[i], back->samples[i]), "batch sample round trip");
  }
  Require(back->stats.dump() == batch->stats.dump(), "batch stats round trip");
  std::string third;
  Require(sluice::dataflow::EncodeBatch(*back, &third).ok(), "batch encodes again");
  Require(third == again, "batch encoding is stable");

  // The streaming writer, in pieces: exactly the same bytes.
  Result<BatchFrameWriter> writer = BatchFrameWriter::Create(ViewOfBatch(*batch));
  Require(writer.ok(), "BatchFrameWriter accepts what EncodeBatch accepted");
  Require(writer->size() == again.size(), "BatchFrameWriter size");
  std::string pieces;
  Pieces sizes(seed);
  while (!writer->done()) {
    const uint64_t before = writer->written();
    writer->Next(sizes.Next(), &pieces);
    Require(writer->written() > before && writer->written() == pieces.size(),
            "BatchFrameWriter progresses");
  }
  Require(pieces == again, "BatchFrameWriter writes EncodeBatch's bytes");
}

// ---------------------------------------------------------------------------------------------
// Frames.

struct ReadFrame {
  uint16_t type;
  std::string payload;
  bool operator==(const ReadFrame&) const = default;
};

void FuzzFrames(std::string_view input, uint64_t seed) {
  sluice::wire::FrameReaderOptions options;
  // Now and then a small payload limit, to reach TooLarge.
  if ((seed & 3) == 0) options.max_payload_bytes = static_cast<uint32_t>((seed >> 2) % 4096);

  // The whole buffer at once.
  sluice::wire::FrameReader reader(input, options);
  std::vector<ReadFrame> frames;
  Status end;
  while (!reader.AtEnd()) {
    const size_t start = reader.offset();
    Result<Frame> frame = reader.Next();
    if (!frame.ok()) {
      end = frame.status();
      Require(reader.offset() == start, "offset stays at the bad frame");
      Require(!reader.AtEnd(), "an error is not the clean end");
      Require(reader.truncated() == (end.field() == "frame"), "truncated() names the torn tail");
      Result<Frame> again = reader.Next();
      Require(!again.ok() && again.status() == end, "reader errors are sticky");
      break;
    }
    Require(frame->payload.size() <= options.max_payload_bytes, "payload within the limit");
    std::string encoded;
    Require(sluice::wire::AppendFrame(frame->type, frame->payload, &encoded).ok(),
            "a read frame encodes");
    Require(reader.offset() == start + encoded.size(), "frame size");
    Require(input.substr(start, encoded.size()) == encoded, "a frame re-encodes to its bytes");
    if (frame->type == sluice::dataflow::kTrajectoryGroupFrame) CheckGroupBody(encoded);
    if (frame->type == sluice::dataflow::kBatchFrame) CheckBatchBody(encoded, seed);
    frames.push_back({frame->type, std::string(frame->payload)});
  }
  if (end.ok()) {
    Result<Frame> past = reader.Next();
    Require(!past.ok() && past.status().code() == StatusCode::kNotFound, "NotFound at the end");
  }

  // The same bytes arriving in pieces.
  sluice::wire::FrameStreamReader stream(options);
  Pieces sizes(seed);
  size_t fed = 0;
  size_t next = 0;
  Status stream_error;
  while (stream_error.ok()) {
    if (fed < input.size()) {
      const size_t n = std::min(sizes.Next(), input.size() - fed);
      stream.Append(input.substr(fed, n));
      fed += n;
    }
    while (true) {
      Result<std::optional<Frame>> frame = stream.Next();
      if (!frame.ok()) {
        stream_error = frame.status();
        break;
      }
      if (!frame->has_value()) {
        Require(stream.BytesWanted() > 0, "a waiting stream wants bytes");
        break;
      }
      Require(next < frames.size(), "the stream returns no extra frame");
      Require(frames[next] == ReadFrame{(*frame)->type, std::string((*frame)->payload)},
              "the stream returns the same frames");
      ++next;
    }
    if (fed == input.size()) break;
  }
  Require(next == frames.size(), "the stream returns every frame");
  if (end.ok()) {
    Require(stream_error.ok() && stream.buffered() == 0 && stream.Finish().ok(),
            "a clean end is clean for the stream");
  } else if (reader.truncated()) {
    Require(stream_error.ok(), "a torn tail is not an error until Finish");
    const Status finish = stream.Finish();
    Require(finish.code() == StatusCode::kCorruption && finish.field() == "frame",
            "Finish reports the torn tail");
  } else {
    Require(!stream_error.ok(), "the stream fails where the reader failed");
    Require(stream_error.code() == end.code() && stream_error.field() == end.field(),
            "the stream fails the same way");
    Require(stream.Finish() == stream_error, "Finish repeats the stream's error");
  }
}

// ---------------------------------------------------------------------------------------------
// Decoder programs.

constexpr std::string_view kField = "fuzz.value";

void RequireDecodeError(const Status& s) {
  Require(s.code() == StatusCode::kCorruption, "decode errors are Corruption");
  Require(s.field() == kField, "decode errors name the field");
}

template <typename T>
using Get = Status (Decoder::*)(std::string_view, T*);
template <typename T>
using Put = void (Encoder::*)(T);

// What *out holds before a read, which a failed read must leave: a bit pattern no short input
// decodes to by chance (a bool must hold a valid bool).
template <typename T>
T Sentinel() {
  if constexpr (std::is_same_v<T, bool>) {
    return true;
  } else {
    T value;
    std::memset(&value, 0x5a, sizeof(value));
    return value;
  }
}

// A fixed-width value: read, and on success re-encode into *piece.
template <typename T>
bool Fixed(Decoder& d, Get<T> get, Put<T> put, std::string* piece) {
  T value = Sentinel<T>();
  const T sentinel = value;
  Status s = (d.*get)(kField, &value);
  if (!s.ok()) {
    RequireDecodeError(s);
    Require(std::memcmp(&value, &sentinel, sizeof(T)) == 0, "a failed read leaves *out");
    return false;
  }
  Encoder e(piece);
  (e.*put)(value);
  Require(e.status().ok(), "encode");
  return true;
}

template <typename T>
bool Array(Decoder& d, Get<std::vector<T>> get, Put<std::span<const T>> put, std::string* piece) {
  std::vector<T> values(1);
  std::memset(values.data(), 0x5a, sizeof(T));
  const std::vector<T> sentinel = values;
  Status s = (d.*get)(kField, &values);
  if (!s.ok()) {
    RequireDecodeError(s);
    Require(SameBits(values, sentinel), "a failed array read leaves *out");
    return false;
  }
  Encoder e(piece);
  (e.*put)(values);
  Require(e.status().ok(), "encode");
  return true;
}

enum Op : uint8_t {
  kU8,
  kU16,
  kU32,
  kU64,
  kI32,
  kI64,
  kF32,
  kF64,
  kBool,
  kVarint,
  kSignedVarint,
  kString,
  kStringView,
  kU8Array,
  kU16Array,
  kU32Array,
  kU64Array,
  kI32Array,
  kI64Array,
  kF32Array,
  kF64Array,
  kRaw,
  kSkip,
  kOpCount,
};

// LEB128 has one minimal form: one byte, or a last byte that is not zero.
bool MinimalVarint(std::string_view bytes) { return bytes.size() == 1 || bytes.back() != 0; }

void FuzzDecoder(std::string_view input) {
  if (input.empty()) return;
  const size_t num_ops = std::min<size_t>(static_cast<uint8_t>(input[0]), input.size() - 1);
  const std::string_view ops = input.substr(1, num_ops);
  const std::string_view data = input.substr(1 + num_ops);
  Decoder d(data);
  for (char op_byte : ops) {
    const auto byte = static_cast<uint8_t>(op_byte);
    const auto op = static_cast<Op>(byte % kOpCount);
    const size_t before = d.position();
    std::string piece;
    bool ok = false;
    bool canonical = true;  // Re-encoding gives the very bytes read.
    switch (op) {
      case kU8:
        ok = Fixed<uint8_t>(d, &Decoder::GetU8, &Encoder::PutU8, &piece);
        break;
      case kU16:
        ok = Fixed<uint16_t>(d, &Decoder::GetU16, &Encoder::PutU16, &piece);
        break;
      case kU32:
        ok = Fixed<uint32_t>(d, &Decoder::GetU32, &Encoder::PutU32, &piece);
        break;
      case kU64:
        ok = Fixed<uint64_t>(d, &Decoder::GetU64, &Encoder::PutU64, &piece);
        break;
      case kI32:
        ok = Fixed<int32_t>(d, &Decoder::GetI32, &Encoder::PutI32, &piece);
        break;
      case kI64:
        ok = Fixed<int64_t>(d, &Decoder::GetI64, &Encoder::PutI64, &piece);
        break;
      case kF32:
        ok = Fixed<float>(d, &Decoder::GetF32, &Encoder::PutF32, &piece);
        break;
      case kF64:
        ok = Fixed<double>(d, &Decoder::GetF64, &Encoder::PutF64, &piece);
        break;
      case kBool:
        ok = Fixed<bool>(d, &Decoder::GetBool, &Encoder::PutBool, &piece);
        break;
      case kVarint: {
        uint64_t v = 0x5a5a5a5a5a5a5a5aULL;
        Status s = d.GetVarint(kField, &v);
        if (!s.ok()) {
          RequireDecodeError(s);
          Require(v == 0x5a5a5a5a5a5a5a5aULL, "a failed varint read leaves *out");
          break;
        }
        Encoder e(&piece);
        e.PutVarint(v);
        Decoder again(piece);
        uint64_t w = 0;
        Require(again.GetVarint(kField, &w).ok() && w == v && again.empty(), "varint round trip");
        ok = true;
        canonical = false;
        break;
      }
      case kSignedVarint: {
        int64_t v = 0x5a5a5a5a5a5a5a5aLL;
        Status s = d.GetSignedVarint(kField, &v);
        if (!s.ok()) {
          RequireDecodeError(s);
          Require(v == 0x5a5a5a5a5a5a5a5aLL, "a failed varint read leaves *out");
          break;
        }
        Encoder e(&piece);
        e.PutSignedVarint(v);
        Decoder again(piece);
        int64_t w = 0;
        Require(again.GetSignedVarint(kField, &w).ok() && w == v && again.empty(),
                "signed varint round trip");
        ok = true;
        canonical = false;
        break;
      }
      case kString: {
        std::string v = "sentinel";
        Status s = d.GetString(kField, &v);
        if (!s.ok()) {
          RequireDecodeError(s);
          Require(v == "sentinel", "a failed string read leaves *out");
          break;
        }
        Encoder e(&piece);
        e.PutString(v);
        ok = true;
        break;
      }
      case kStringView: {
        std::string_view v = "sentinel";
        Status s = d.GetStringView(kField, &v);
        if (!s.ok()) {
          RequireDecodeError(s);
          Require(v == "sentinel", "a failed string read leaves *out");
          break;
        }
        Require(v.data() >= data.data() && v.data() + v.size() <= data.data() + data.size(),
                "a string view lies inside the input");
        Encoder e(&piece);
        e.PutString(v);
        ok = true;
        break;
      }
      case kU8Array:
        ok = Array<uint8_t>(d, &Decoder::GetU8Array, &Encoder::PutU8Array, &piece);
        break;
      case kU16Array:
        ok = Array<uint16_t>(d, &Decoder::GetU16Array, &Encoder::PutU16Array, &piece);
        break;
      case kU32Array:
        ok = Array<uint32_t>(d, &Decoder::GetU32Array, &Encoder::PutU32Array, &piece);
        break;
      case kU64Array:
        ok = Array<uint64_t>(d, &Decoder::GetU64Array, &Encoder::PutU64Array, &piece);
        break;
      case kI32Array:
        ok = Array<int32_t>(d, &Decoder::GetI32Array, &Encoder::PutI32Array, &piece);
        break;
      case kI64Array:
        ok = Array<int64_t>(d, &Decoder::GetI64Array, &Encoder::PutI64Array, &piece);
        break;
      case kF32Array:
        ok = Array<float>(d, &Decoder::GetF32Array, &Encoder::PutF32Array, &piece);
        break;
      case kF64Array:
        ok = Array<double>(d, &Decoder::GetF64Array, &Encoder::PutF64Array, &piece);
        break;
      case kRaw:
      case kSkip: {
        const size_t n = static_cast<size_t>(byte >> 5) * 3;
        std::string_view v = "sentinel";
        Status s = op == kRaw ? d.GetRaw(kField, n, &v) : d.Skip(kField, n);
        if (!s.ok()) {
          RequireDecodeError(s);
          Require(v == "sentinel", "a failed raw read leaves *out");
          break;
        }
        if (op == kSkip) v = data.substr(before, n);
        Require(v.size() == n, "raw size");
        Encoder e(&piece);
        e.PutRaw(v);
        ok = true;
        break;
      }
      case kOpCount:
        break;
    }
    if (!ok) {
      Require(d.position() == before, "a failed read consumes nothing");
      continue;
    }
    const std::string_view consumed = data.substr(before, d.position() - before);
    if (canonical || MinimalVarint(consumed)) {
      Require(piece == consumed, "a value re-encodes to the bytes it was read from");
    } else {
      Require(piece.size() < consumed.size(), "a non-minimal varint re-encodes shorter");
    }
  }
  Require(d.position() + d.remaining() == data.size(), "position and remaining add up");
  Require(d.empty() == (d.remaining() == 0), "empty");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  if (size == 0 || size > kMaxInputBytes) return 0;
  const std::string_view input(reinterpret_cast<const char*>(bytes), size);
  const std::string_view rest = input.substr(1);
  const uint64_t seed = sluice::Crc32c(bytes, size) ^ (uint64_t{size} << 32);
  switch (static_cast<uint8_t>(input[0]) % 4) {
    case 0:
      FuzzFrames(rest, seed);
      break;
    case 1: {
      Result<std::string> body =
          sluice::wire::EncodeFrame(sluice::dataflow::kTrajectoryGroupFrame, rest);
      Require(body.ok(), "a small payload frames");
      CheckGroupBody(*body);
      break;
    }
    case 2: {
      Result<std::string> body = sluice::wire::EncodeFrame(sluice::dataflow::kBatchFrame, rest);
      Require(body.ok(), "a small payload frames");
      CheckBatchBody(*body, seed);
      break;
    }
    default:
      FuzzDecoder(rest);
      break;
  }
  return 0;
}
