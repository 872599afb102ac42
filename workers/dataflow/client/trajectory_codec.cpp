#include "workers/dataflow/client/trajectory_codec.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <type_traits>

#include "common/crc32c.h"
#include "common/json/json_depth.h"
#include "common/wire/decoder.h"
#include "common/wire/encoder.h"
#include "common/wire/frame.h"

namespace sluice::dataflow {
namespace {

using wire::Decoder;
using wire::Encoder;

// Reads exactly one frame of `type` from `body`.
Result<std::string_view> SingleFrame(std::string_view body, uint16_t type, const char* what) {
  wire::FrameReaderOptions options;
  options.max_payload_bytes = wire::kMaxFramePayloadBytes;
  wire::FrameReader reader(body, options);
  SLUICE_ASSIGN_OR_RETURN(wire::Frame frame, reader.Next());
  if (frame.type != type) {
    return Status::InvalidArgument(std::string("expected a ") + what + " frame (type " +
                                       std::to_string(type) + "), got type " +
                                       std::to_string(frame.type),
                                   "frame.type");
  }
  if (!reader.AtEnd()) {
    return Status::InvalidArgument(std::string("bytes after the ") + what + " frame", "frame");
  }
  return frame.payload;
}

Status CheckCount(uint64_t n, uint64_t max, const std::string& field) {
  if (n > max) {
    return Status::TooLarge(
        field + ": " + std::to_string(n) + " exceeds the limit of " + std::to_string(max), field);
  }
  return Status::Ok();
}

void PutSample(Encoder& e, const Sample& s) {
  e.PutString(s.prompt_id);
  e.PutString(s.policy);
  e.PutI32Array(s.tokens);
  e.PutU8Array(s.loss_mask);
  e.PutF32Array(s.behaviour_logprobs);
  e.PutI64Array(s.versions);
  e.PutI32Array(s.token_owner);
  e.PutVarint(s.policies.size());
  for (const std::string& p : s.policies) e.PutString(p);
  e.PutF64Array(s.policy_rewards);
  e.PutF64(s.reward);
  e.PutString(s.finish_reason);
  e.PutU32Array(s.turn_starts);
  e.PutF64(s.generation_seconds);
  e.PutF64(s.environment_seconds);
  e.PutF64(s.reward_seconds);
}

Status GetSample(Decoder& d, const std::string& f, Sample* s) {
  SLUICE_RETURN_IF_ERROR(d.GetString(f + ".prompt_id", &s->prompt_id));
  SLUICE_RETURN_IF_ERROR(d.GetString(f + ".policy", &s->policy));
  SLUICE_RETURN_IF_ERROR(d.GetI32Array(f + ".tokens", &s->tokens));
  SLUICE_RETURN_IF_ERROR(CheckCount(s->tokens.size(), kMaxTokensPerSample, f + ".tokens"));
  SLUICE_RETURN_IF_ERROR(d.GetU8Array(f + ".loss_mask", &s->loss_mask));
  SLUICE_RETURN_IF_ERROR(d.GetF32Array(f + ".behaviour_logprobs", &s->behaviour_logprobs));
  SLUICE_RETURN_IF_ERROR(d.GetI64Array(f + ".versions", &s->versions));
  SLUICE_RETURN_IF_ERROR(d.GetI32Array(f + ".token_owner", &s->token_owner));
  uint64_t policies = 0;
  SLUICE_RETURN_IF_ERROR(d.GetVarint(f + ".policies", &policies));
  SLUICE_RETURN_IF_ERROR(CheckCount(policies, kMaxPoliciesPerSample, f + ".policies"));
  s->policies.resize(policies);
  for (uint64_t i = 0; i < policies; ++i) {
    SLUICE_RETURN_IF_ERROR(
        d.GetString(f + ".policies[" + std::to_string(i) + "]", &s->policies[i]));
  }
  SLUICE_RETURN_IF_ERROR(d.GetF64Array(f + ".policy_rewards", &s->policy_rewards));
  SLUICE_RETURN_IF_ERROR(d.GetF64(f + ".reward", &s->reward));
  SLUICE_RETURN_IF_ERROR(d.GetString(f + ".finish_reason", &s->finish_reason));
  SLUICE_RETURN_IF_ERROR(d.GetU32Array(f + ".turn_starts", &s->turn_starts));
  SLUICE_RETURN_IF_ERROR(d.GetF64(f + ".generation_seconds", &s->generation_seconds));
  SLUICE_RETURN_IF_ERROR(d.GetF64(f + ".environment_seconds", &s->environment_seconds));
  SLUICE_RETURN_IF_ERROR(d.GetF64(f + ".reward_seconds", &s->reward_seconds));
  for (uint32_t t : s->turn_starts) {
    if (t > s->tokens.size()) {
      return Status::InvalidArgument("turn start " + std::to_string(t) + " is past the end",
                                     f + ".turn_starts");
    }
  }
  if (Status v = ValidateSample(*s); !v.ok()) {
    return Status::InvalidArgument(v.message(), f + "." + v.field());
  }
  return Status::Ok();
}

// The group's optional trailing field (appended after `samples`, as the wire format's rules for
// new fields ask): per sample its tool-call count, kNoToolCalls where the sample has none. Written
// only when some sample has a count, so groups of workflows without tools keep their bytes, and
// frames written before the field existed (the write-ahead log's) read as "no counts".
constexpr uint32_t kNoToolCalls = 0xffffffffu;

void PutToolCalls(Encoder& e, const std::vector<Sample>& samples) {
  if (std::none_of(samples.begin(), samples.end(),
                   [](const Sample& s) { return s.tool_calls.has_value(); })) {
    return;
  }
  std::vector<uint32_t> counts;
  counts.reserve(samples.size());
  // A real count never reaches the marker (it would read back as none).
  for (const Sample& s : samples) counts.push_back(s.tool_calls.value_or(kNoToolCalls));
  e.PutU32Array(counts);
}

Status GetToolCalls(Decoder& d, std::vector<Sample>* samples) {
  if (d.empty()) return Status::Ok();
  std::vector<uint32_t> counts;
  SLUICE_RETURN_IF_ERROR(d.GetU32Array("tool_calls", &counts));
  if (counts.size() != samples->size()) {
    return Status::InvalidArgument("has " + std::to_string(counts.size()) + " entries for " +
                                       std::to_string(samples->size()) + " samples",
                                   "tool_calls");
  }
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] != kNoToolCalls) (*samples)[i].tool_calls = counts[i];
  }
  return Status::Ok();
}

void StoreLe16(char* p, uint16_t v) {
  p[0] = static_cast<char>(v & 0xffu);
  p[1] = static_cast<char>(v >> 8);
}
void StoreLe32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xffu);
}

}  // namespace

Status EncodeTrajectoryGroup(const TrajectoryGroup& group, std::string* out) {
  const size_t start = wire::BeginFrame(out);
  Encoder e(out);
  e.PutString(group.task_id);
  e.PutU32(group.attempt);
  e.PutString(group.lease_id);
  e.PutString(group.worker_id);
  e.PutString(group.prompt_id);
  e.PutBool(group.eval);
  e.PutVarint(group.samples.size());
  for (const Sample& s : group.samples) PutSample(e, s);
  PutToolCalls(e, group.samples);
  if (!e.status().ok()) {
    out->resize(start);
    return e.status();
  }
  return wire::FinishFrame(kTrajectoryGroupFrame, start, out);
}

Result<TrajectoryGroup> DecodeTrajectoryGroup(std::string_view body) {
  SLUICE_ASSIGN_OR_RETURN(std::string_view payload,
                          SingleFrame(body, kTrajectoryGroupFrame, "trajectory group"));
  Decoder d(payload);
  TrajectoryGroup g;
  SLUICE_RETURN_IF_ERROR(d.GetString("task_id", &g.task_id));
  SLUICE_RETURN_IF_ERROR(d.GetU32("attempt", &g.attempt));
  SLUICE_RETURN_IF_ERROR(d.GetString("lease_id", &g.lease_id));
  SLUICE_RETURN_IF_ERROR(d.GetString("worker_id", &g.worker_id));
  SLUICE_RETURN_IF_ERROR(d.GetString("prompt_id", &g.prompt_id));
  SLUICE_RETURN_IF_ERROR(d.GetBool("eval", &g.eval));
  uint64_t n = 0;
  SLUICE_RETURN_IF_ERROR(d.GetVarint("samples", &n));
  SLUICE_RETURN_IF_ERROR(CheckCount(n, kMaxSamplesPerGroup, "samples"));
  if (n == 0) return Status::InvalidArgument("a group has at least one sample", "samples");
  if (g.task_id.empty()) return Status::InvalidArgument("must not be empty", "task_id");
  g.samples.resize(n);
  for (uint64_t i = 0; i < n; ++i) {
    SLUICE_RETURN_IF_ERROR(GetSample(d, "samples[" + std::to_string(i) + "]", &g.samples[i]));
    g.samples[i].task_id = g.task_id;
  }
  SLUICE_RETURN_IF_ERROR(GetToolCalls(d, &g.samples));
  if (!d.empty()) {
    return Status::InvalidArgument(std::to_string(d.remaining()) + " unread bytes after the group",
                                   "samples");
  }
  return g;
}

BatchView ViewOfBatch(const Batch& batch) {
  BatchView view;
  view.batch_id = batch.batch_id;
  view.policy = batch.policy;
  view.policy_version = batch.policy_version;
  view.samples.reserve(batch.samples.size());
  for (const Sample& s : batch.samples) view.samples.push_back(&s);
  view.group_index = batch.group_index;
  view.replayed = batch.replayed;
  view.stats = &batch.stats;
  return view;
}

Status EncodeBatch(const Batch& batch, std::string* out) {
  return EncodeBatchView(ViewOfBatch(batch), out);
}

Status EncodeBatchView(const BatchView& batch, std::string* out) {
  SLUICE_ASSIGN_OR_RETURN(BatchFrameWriter writer, BatchFrameWriter::Create(batch));
  out->reserve(out->size() + writer.size());
  writer.Next(writer.size(), out);
  return Status::Ok();
}

Result<BatchFrameWriter> BatchFrameWriter::Create(const BatchView& batch,
                                                  std::shared_ptr<const void> owner) {
  if (batch.group_index.size() != batch.samples.size() ||
      batch.replayed.size() != batch.samples.size()) {
    return Status::InvalidArgument("group_index and replayed must have one entry per sample");
  }
  const size_t n = batch.samples.size();
  std::vector<uint64_t> offsets(n + 1, 0);
  for (size_t i = 0; i < n; ++i) offsets[i + 1] = offsets[i] + batch.samples[i]->tokens.size();
  const uint64_t total = offsets[n];
  if (total > std::numeric_limits<uint32_t>::max()) {
    return Status::TooLarge("a batch holds at most 2^32 - 1 tokens", "tokens");
  }

  BatchFrameWriter w;
  w.owner_ = std::move(owner);
  std::string& o = w.owned_;
  Encoder e(&o);
  size_t run_start = 0;  // Start in owned_ of the bytes not yet covered by a piece.
  size_t frame_bytes = 0;
  auto close_run = [&] {
    if (o.size() > run_start) {
      w.pieces_.push_back({nullptr, run_start, o.size() - run_start});
      frame_bytes += o.size() - run_start;
    }
    run_start = o.size();
  };
  // Packed per-token arrays: one wire array (u32 count, then the elements) of `total` elements,
  // the samples' arrays concatenated. Borrowed, not copied, where the in-memory representation
  // is the wire encoding (little-endian hosts, as Encoder::PutArray relies on).
  auto packed = [&]<typename T>(const std::vector<T>& (*get)(const Sample&)) {
    if constexpr (std::endian::native == std::endian::little) {
      e.PutU32(static_cast<uint32_t>(total));
      close_run();
      for (const Sample* s : batch.samples) {
        const std::vector<T>& v = get(*s);
        if (v.empty()) continue;
        w.pieces_.push_back({reinterpret_cast<const char*>(v.data()), 0, v.size() * sizeof(T)});
        frame_bytes += v.size() * sizeof(T);
      }
    } else {
      std::vector<T> all;
      all.reserve(total);
      for (const Sample* s : batch.samples) all.insert(all.end(), get(*s).begin(), get(*s).end());
      if constexpr (std::is_same_v<T, int32_t>) e.PutI32Array(all);
      if constexpr (std::is_same_v<T, uint8_t>) e.PutU8Array(all);
      if constexpr (std::is_same_v<T, float>) e.PutF32Array(all);
      if constexpr (std::is_same_v<T, int64_t>) e.PutI64Array(all);
    }
  };

  o.append(wire::kFrameHeaderSize, '\0');  // Filled in below, once the size is known.
  e.PutString(batch.batch_id);
  e.PutString(batch.policy);
  e.PutI64(batch.policy_version);
  e.PutVarint(n);
  e.PutU64Array(offsets);
  packed(+[](const Sample& s) -> const std::vector<int32_t>& { return s.tokens; });
  packed(+[](const Sample& s) -> const std::vector<uint8_t>& { return s.loss_mask; });
  packed(+[](const Sample& s) -> const std::vector<float>& { return s.behaviour_logprobs; });
  packed(+[](const Sample& s) -> const std::vector<int64_t>& { return s.versions; });
  // Per-sample values.
  std::vector<double> reward(n), mean(n), stddev(n), advantage(n), weight(n);
  std::vector<uint8_t> has_advantage(n);
  for (size_t i = 0; i < n; ++i) {
    const Sample& s = *batch.samples[i];
    reward[i] = s.reward;
    mean[i] = s.group_mean.value_or(0.0);
    stddev[i] = s.group_std.value_or(1.0);
    has_advantage[i] = s.advantage.has_value() ? 1 : 0;
    advantage[i] = s.advantage.value_or(0.0);
    weight[i] = s.loss_weight;
  }
  e.PutF64Array(reward);
  e.PutF64Array(mean);
  e.PutF64Array(stddev);
  e.PutU8Array(has_advantage);
  e.PutF64Array(advantage);
  e.PutF64Array(weight);
  e.PutU32Array(batch.group_index);
  e.PutU8Array(batch.replayed);
  for (const Sample* s : batch.samples) {
    e.PutString(s->prompt_id);
    e.PutString(s->task_id);
    e.PutString(s->finish_reason);
    e.PutU32Array(s->turn_starts);
  }
  e.PutString(batch.stats != nullptr ? batch.stats->dump() : std::string("{}"));
  if (!e.status().ok()) return e.status();
  close_run();

  // The header, as wire::FinishFrame writes it (the frame is never whole in one buffer here).
  const uint64_t payload = frame_bytes - wire::kFrameHeaderSize;
  if (payload > wire::kMaxFramePayloadBytes) {
    return Status::TooLarge("payload of " + std::to_string(payload) +
                                " bytes is over the frame limit of " +
                                std::to_string(wire::kMaxFramePayloadBytes),
                            "frame.payload_length");
  }
  char* h = o.data();
  StoreLe32(h + wire::kMagicOffset, wire::kMagic);
  StoreLe16(h + wire::kVersionOffset, wire::kFormatVersion);
  StoreLe16(h + wire::kTypeOffset, kBatchFrame);
  StoreLe16(h + wire::kFlagsOffset, 0);
  StoreLe16(h + wire::kReservedOffset, 0);
  StoreLe32(h + wire::kPayloadLengthOffset, static_cast<uint32_t>(payload));
  StoreLe32(h + wire::kHeaderCrcOffset, Crc32cMask(Crc32c(h, wire::kHeaderCrcOffset)));
  w.size_ = frame_bytes + wire::kFrameTrailerSize;
  return w;
}

void BatchFrameWriter::Next(size_t max_bytes, std::string* out) {
  const uint64_t trailer_start = size_ - wire::kFrameTrailerSize;
  while (max_bytes > 0 && written_ < trailer_start) {
    const Piece& p = pieces_[piece_];
    const size_t take = std::min(max_bytes, p.length - piece_offset_);
    const char* from = PieceData(p) + piece_offset_;
    out->append(from, take);
    // Checksummed right after the copy, while the bytes are in cache.
    crc_ = Crc32cExtend(crc_, from, take);
    written_ += take;
    max_bytes -= take;
    piece_offset_ += take;
    if (piece_offset_ == p.length) {
      ++piece_;
      piece_offset_ = 0;
    }
    if (written_ == trailer_start) {
      StoreLe32(trailer_, Crc32cMask(crc_));
      // Nothing borrowed is read any more: let go at once rather than when the caller drops
      // the writer, so the owner's holder (the core's Ack) sees it released.
      owner_.reset();
    }
  }
  if (max_bytes > 0 && written_ < size_) {
    const size_t at = static_cast<size_t>(written_ - trailer_start);
    const size_t take = std::min<size_t>(max_bytes, wire::kFrameTrailerSize - at);
    out->append(trailer_ + at, take);
    written_ += take;
  }
}

Result<Batch> DecodeBatch(std::string_view body) {
  SLUICE_ASSIGN_OR_RETURN(std::string_view payload, SingleFrame(body, kBatchFrame, "batch"));
  Decoder d(payload);
  Batch b;
  SLUICE_RETURN_IF_ERROR(d.GetString("batch_id", &b.batch_id));
  SLUICE_RETURN_IF_ERROR(d.GetString("policy", &b.policy));
  SLUICE_RETURN_IF_ERROR(d.GetI64("policy_version", &b.policy_version));
  uint64_t n = 0;
  SLUICE_RETURN_IF_ERROR(d.GetVarint("samples", &n));
  SLUICE_RETURN_IF_ERROR(CheckCount(n, kMaxSamplesPerBatch, "samples"));
  std::vector<uint64_t> offsets;
  SLUICE_RETURN_IF_ERROR(d.GetU64Array("offsets", &offsets));
  if (offsets.size() != n + 1 || offsets.front() != 0) {
    return Status::InvalidArgument("must have samples + 1 entries starting at 0", "offsets");
  }
  for (size_t i = 0; i < n; ++i) {
    if (offsets[i + 1] < offsets[i]) {
      return Status::InvalidArgument("must not decrease", "offsets");
    }
  }
  std::vector<int32_t> tokens;
  std::vector<uint8_t> mask;
  std::vector<float> logprobs;
  std::vector<int64_t> versions;
  SLUICE_RETURN_IF_ERROR(d.GetI32Array("tokens", &tokens));
  SLUICE_RETURN_IF_ERROR(d.GetU8Array("loss_mask", &mask));
  SLUICE_RETURN_IF_ERROR(d.GetF32Array("behaviour_logprobs", &logprobs));
  SLUICE_RETURN_IF_ERROR(d.GetI64Array("versions", &versions));
  const uint64_t total = offsets[n];
  if (tokens.size() != total || mask.size() != total || logprobs.size() != total ||
      versions.size() != total) {
    return Status::InvalidArgument("packed arrays must have offsets[samples] elements", "tokens");
  }
  std::vector<double> reward, mean, stddev, advantage, weight;
  std::vector<uint8_t> has_advantage;
  SLUICE_RETURN_IF_ERROR(d.GetF64Array("reward", &reward));
  SLUICE_RETURN_IF_ERROR(d.GetF64Array("group_mean", &mean));
  SLUICE_RETURN_IF_ERROR(d.GetF64Array("group_std", &stddev));
  SLUICE_RETURN_IF_ERROR(d.GetU8Array("has_advantage", &has_advantage));
  SLUICE_RETURN_IF_ERROR(d.GetF64Array("advantage", &advantage));
  SLUICE_RETURN_IF_ERROR(d.GetF64Array("loss_weight", &weight));
  SLUICE_RETURN_IF_ERROR(d.GetU32Array("group_index", &b.group_index));
  SLUICE_RETURN_IF_ERROR(d.GetU8Array("replayed", &b.replayed));
  for (const auto* v : {&reward, &mean, &stddev, &advantage, &weight}) {
    if (v->size() != n) return Status::InvalidArgument("must have one entry per sample", "reward");
  }
  if (has_advantage.size() != n || b.group_index.size() != n || b.replayed.size() != n) {
    return Status::InvalidArgument("must have one entry per sample", "group_index");
  }
  b.samples.resize(n);
  for (size_t i = 0; i < n; ++i) {
    Sample& s = b.samples[i];
    const std::string f = "samples[" + std::to_string(i) + "]";
    SLUICE_RETURN_IF_ERROR(d.GetString(f + ".prompt_id", &s.prompt_id));
    SLUICE_RETURN_IF_ERROR(d.GetString(f + ".task_id", &s.task_id));
    SLUICE_RETURN_IF_ERROR(d.GetString(f + ".finish_reason", &s.finish_reason));
    SLUICE_RETURN_IF_ERROR(d.GetU32Array(f + ".turn_starts", &s.turn_starts));
    const auto from = static_cast<std::ptrdiff_t>(offsets[i]);
    const auto to = static_cast<std::ptrdiff_t>(offsets[i + 1]);
    s.tokens.assign(tokens.begin() + from, tokens.begin() + to);
    s.loss_mask.assign(mask.begin() + from, mask.begin() + to);
    s.behaviour_logprobs.assign(logprobs.begin() + from, logprobs.begin() + to);
    s.versions.assign(versions.begin() + from, versions.begin() + to);
    s.policy = b.policy;
    s.reward = reward[i];
    s.group_mean = mean[i];
    s.group_std = stddev[i];
    if (has_advantage[i] != 0) s.advantage = advantage[i];
    s.loss_weight = weight[i];
  }
  std::string stats;
  SLUICE_RETURN_IF_ERROR(d.GetString("stats", &stats));
  if (FirstTooDeepJson(stats)) {
    return Status::InvalidArgument("nests deeper than " + std::to_string(kMaxJsonDepth) + " levels",
                                   "stats");
  }
  b.stats = nlohmann::json::parse(stats, nullptr, false);
  if (b.stats.is_discarded()) return Status::InvalidArgument("not valid JSON", "stats");
  if (!d.empty()) return Status::InvalidArgument("unread bytes after the batch", "stats");
  return b;
}

}  // namespace sluice::dataflow
