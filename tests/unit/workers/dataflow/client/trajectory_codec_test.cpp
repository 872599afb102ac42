// Wire encoding of submitted trajectory groups and served batches.
#include "workers/dataflow/client/trajectory_codec.h"

#include <gtest/gtest.h>

#include "common/json/json_depth.h"
#include "common/wire/encoder.h"
#include "common/wire/frame.h"

namespace sluice::dataflow {
namespace {

Sample MakeSample(int n, const std::string& policy, double reward) {
  Sample s;
  s.prompt_id = "arith-7";
  s.policy = policy;
  for (int i = 0; i < n; ++i) {
    s.tokens.push_back(100 + i);
    s.loss_mask.push_back(i >= 2 ? 1 : 0);
    s.behaviour_logprobs.push_back(i >= 2 ? -0.25f * static_cast<float>(i) : 0.0f);
    s.versions.push_back(i >= 2 ? 3 : kNoVersion);
  }
  s.reward = reward;
  s.finish_reason = "stop";
  s.turn_starts = {2};
  s.generation_seconds = 0.5;
  return s;
}

TEST(TrajectoryCodecTest, GroupRoundTrips) {
  TrajectoryGroup g;
  g.task_id = "task-1";
  g.attempt = 2;
  g.lease_id = "lease-9";
  g.worker_id = "rollout-us-0";
  g.prompt_id = "arith-7";
  g.samples = {MakeSample(5, "p", 1.0), MakeSample(3, "p", 0.0)};
  Sample multi = MakeSample(4, "", 0.0);
  multi.policies = {"solver", "verifier"};
  multi.policy_rewards = {1.0, -1.0};
  multi.token_owner = {kNoOwner, kNoOwner, 0, 1};
  g.samples.push_back(multi);
  std::string body;
  ASSERT_TRUE(EncodeTrajectoryGroup(g, &body).ok());
  Result<TrajectoryGroup> back = DecodeTrajectoryGroup(body);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->task_id, "task-1");
  EXPECT_EQ(back->attempt, 2u);
  EXPECT_EQ(back->worker_id, "rollout-us-0");
  ASSERT_EQ(back->samples.size(), 3u);
  EXPECT_EQ(back->samples[0].tokens, g.samples[0].tokens);
  EXPECT_EQ(back->samples[0].behaviour_logprobs, g.samples[0].behaviour_logprobs);
  EXPECT_EQ(back->samples[0].versions, g.samples[0].versions);
  EXPECT_EQ(back->samples[0].task_id, "task-1");
  EXPECT_EQ(back->samples[1].reward, 0.0);
  EXPECT_EQ(back->samples[2].policies, multi.policies);
  EXPECT_EQ(back->samples[2].token_owner, multi.token_owner);
  EXPECT_EQ(back->samples[2].policy_rewards, multi.policy_rewards);
  EXPECT_EQ(back->samples[0].turn_starts, std::vector<uint32_t>{2});
  EXPECT_DOUBLE_EQ(back->samples[0].generation_seconds, 0.5);
}

TEST(TrajectoryCodecTest, GroupRejectsDamageAndInconsistency) {
  TrajectoryGroup g;
  g.task_id = "t";
  g.samples = {MakeSample(4, "p", 1.0)};
  std::string body;
  ASSERT_TRUE(EncodeTrajectoryGroup(g, &body).ok());
  std::string flipped = body;
  flipped[30] ^= 0x40;
  EXPECT_EQ(DecodeTrajectoryGroup(flipped).status().code(), StatusCode::kCorruption);
  EXPECT_FALSE(DecodeTrajectoryGroup(body.substr(0, body.size() - 3)).ok());
  EXPECT_FALSE(DecodeTrajectoryGroup(body + body).ok());  // One frame only.

  TrajectoryGroup bad = g;
  bad.samples[0].loss_mask.pop_back();  // Not parallel to tokens.
  std::string bad_body;
  ASSERT_TRUE(EncodeTrajectoryGroup(bad, &bad_body).ok());
  Status s = DecodeTrajectoryGroup(bad_body).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.field(), "samples[0].loss_mask");

  TrajectoryGroup turns = g;
  turns.samples[0].turn_starts = {9};
  std::string turns_body;
  ASSERT_TRUE(EncodeTrajectoryGroup(turns, &turns_body).ok());
  EXPECT_EQ(DecodeTrajectoryGroup(turns_body).status().field(), "samples[0].turn_starts");

  TrajectoryGroup empty = g;
  empty.samples.clear();
  std::string empty_body;
  ASSERT_TRUE(EncodeTrajectoryGroup(empty, &empty_body).ok());
  EXPECT_EQ(DecodeTrajectoryGroup(empty_body).status().field(), "samples");

  // A frame of another type is refused by type.
  std::string other;
  ASSERT_TRUE(wire::AppendFrame(kBatchFrame, "x", &other).ok());
  EXPECT_EQ(DecodeTrajectoryGroup(other).status().field(), "frame.type");
}

// The payload of a single frame (the bytes between header and trailer).
std::string PayloadOf(const std::string& frame) {
  wire::FrameReaderOptions options;
  options.max_payload_bytes = wire::kMaxFramePayloadBytes;
  wire::FrameReader reader(frame, options);
  Result<wire::Frame> f = reader.Next();
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return f.ok() ? std::string(f->payload) : std::string();
}

TEST(TrajectoryCodecTest, ToolCallsFollowTheSamplesOnlyWhenCounted) {
  TrajectoryGroup g;
  g.task_id = "t";
  g.samples = {MakeSample(4, "p", 1.0), MakeSample(3, "p", 0.0), MakeSample(3, "p", 0.0)};
  std::string plain;
  ASSERT_TRUE(EncodeTrajectoryGroup(g, &plain).ok());
  Result<TrajectoryGroup> back = DecodeTrajectoryGroup(plain);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  for (const Sample& s : back->samples) EXPECT_FALSE(s.tool_calls.has_value());

  // Counted: one trailing u32 array (a 4-byte count and 4 bytes per sample); a sample without a
  // count stays without one.
  TrajectoryGroup counted = g;
  counted.samples[0].tool_calls = 2;
  counted.samples[1].tool_calls = 0;
  std::string body;
  ASSERT_TRUE(EncodeTrajectoryGroup(counted, &body).ok());
  EXPECT_EQ(body.size(), plain.size() + 4 + 3 * 4);
  EXPECT_EQ(PayloadOf(body).substr(0, PayloadOf(plain).size()), PayloadOf(plain));
  back = DecodeTrajectoryGroup(body);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->samples[0].tool_calls, 2u);
  EXPECT_EQ(back->samples[1].tool_calls, 0u);
  EXPECT_FALSE(back->samples[2].tool_calls.has_value());

  // A count array of the wrong length, or bytes after it, are refused naming the field.
  std::string short_counts = PayloadOf(plain);
  wire::Encoder e(&short_counts);
  e.PutU32Array(std::vector<uint32_t>{1});
  std::string frame;
  ASSERT_TRUE(wire::AppendFrame(kTrajectoryGroupFrame, short_counts, &frame).ok());
  Status s = DecodeTrajectoryGroup(frame).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.field(), "tool_calls");
  std::string extra = PayloadOf(body) + "x";
  frame.clear();
  ASSERT_TRUE(wire::AppendFrame(kTrajectoryGroupFrame, extra, &frame).ok());
  EXPECT_FALSE(DecodeTrajectoryGroup(frame).ok());
}

TEST(TrajectoryCodecTest, BatchPacksWithoutPaddingAndRoundTrips) {
  Batch b;
  b.batch_id = "b-1";
  b.policy = "p";
  b.policy_version = 7;
  b.samples = {MakeSample(5, "p", 1.0), MakeSample(2, "p", 0.0), MakeSample(3, "p", 0.5)};
  b.samples[0].group_mean = 0.5;
  b.samples[0].group_std = 0.7;
  b.samples[0].advantage = 0.71;
  b.samples[2].loss_weight = 0.5;
  b.samples[1].task_id = "task-2";
  b.group_index = {0, 0, 1};
  b.replayed = {0, 0, 1};
  b.stats = {{"buffered", 12}};
  std::string body;
  ASSERT_TRUE(EncodeBatch(b, &body).ok());
  // Packed: the body grows by exactly the per-token bytes (4 + 1 + 4 + 8) of a longer sample,
  // never by padding other samples to the longest.
  Batch longer = b;
  longer.samples[1] = MakeSample(3, "p", 0.0);
  longer.samples[1].task_id = "task-2";
  std::string longer_body;
  ASSERT_TRUE(EncodeBatch(longer, &longer_body).ok());
  EXPECT_EQ(longer_body.size(), body.size() + 17u);
  Result<Batch> back = DecodeBatch(body);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->batch_id, "b-1");
  EXPECT_EQ(back->policy_version, 7);
  ASSERT_EQ(back->samples.size(), 3u);
  EXPECT_EQ(back->samples[1].tokens, b.samples[1].tokens);
  EXPECT_EQ(back->samples[2].loss_mask, b.samples[2].loss_mask);
  EXPECT_EQ(back->samples[0].advantage, 0.71);
  EXPECT_FALSE(back->samples[1].advantage.has_value());
  EXPECT_EQ(back->samples[0].group_std, 0.7);
  EXPECT_EQ(back->samples[2].loss_weight, 0.5);
  EXPECT_EQ(back->samples[1].task_id, "task-2");
  EXPECT_EQ(back->group_index, b.group_index);
  EXPECT_EQ(back->replayed, b.replayed);
  EXPECT_EQ(back->stats["buffered"], 12);

  Batch mismatched = b;
  mismatched.group_index.pop_back();
  std::string out;
  EXPECT_FALSE(EncodeBatch(mismatched, &out).ok());
  EXPECT_FALSE(DecodeBatch(body.substr(0, 50)).ok());
}

TEST(TrajectoryCodecTest, BatchStatsNestedTooDeeplyAreRejected) {
  Batch b;
  b.batch_id = "batch-1";
  b.policy = "actor";
  b.samples = {MakeSample(3, "actor", 1.0)};
  b.group_index = {0};
  b.replayed = {0};
  b.stats = nlohmann::json::parse(std::string(kMaxJsonDepth + 1, '[') +
                                  std::string(kMaxJsonDepth + 1, ']'));
  std::string body;
  ASSERT_TRUE(EncodeBatch(b, &body).ok());
  const Result<Batch> back = DecodeBatch(body);
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.status().field(), "stats");
  EXPECT_NE(back.status().message().find("deeper than"), std::string::npos);
  // At the limit it decodes.
  b.stats =
      nlohmann::json::parse(std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']'));
  std::string at_limit;
  const Status encoded = EncodeBatch(b, &at_limit);
  ASSERT_TRUE(encoded.ok()) << encoded.ToString();
  const Result<Batch> decoded = DecodeBatch(at_limit);
  EXPECT_TRUE(decoded.ok()) << decoded.status().ToString();
}

// The batch frame as docs/dataflow.md lays it out, written the plain way (concatenated arrays,
// wire::FinishFrame), to check BatchFrameWriter's piecewise encoding against.
std::string ReferenceBatchFrame(const Batch& b) {
  std::string out;
  const size_t start = wire::BeginFrame(&out);
  wire::Encoder e(&out);
  e.PutString(b.batch_id);
  e.PutString(b.policy);
  e.PutI64(b.policy_version);
  e.PutVarint(b.samples.size());
  std::vector<uint64_t> offsets{0};
  std::vector<int32_t> tokens;
  std::vector<uint8_t> mask;
  std::vector<float> logprobs;
  std::vector<int64_t> versions;
  std::vector<double> reward, mean, stddev, advantage, weight;
  std::vector<uint8_t> has_advantage;
  for (const Sample& s : b.samples) {
    offsets.push_back(offsets.back() + s.tokens.size());
    tokens.insert(tokens.end(), s.tokens.begin(), s.tokens.end());
    mask.insert(mask.end(), s.loss_mask.begin(), s.loss_mask.end());
    logprobs.insert(logprobs.end(), s.behaviour_logprobs.begin(), s.behaviour_logprobs.end());
    versions.insert(versions.end(), s.versions.begin(), s.versions.end());
    reward.push_back(s.reward);
    mean.push_back(s.group_mean.value_or(0.0));
    stddev.push_back(s.group_std.value_or(1.0));
    has_advantage.push_back(s.advantage.has_value() ? 1 : 0);
    advantage.push_back(s.advantage.value_or(0.0));
    weight.push_back(s.loss_weight);
  }
  e.PutU64Array(offsets);
  e.PutI32Array(tokens);
  e.PutU8Array(mask);
  e.PutF32Array(logprobs);
  e.PutI64Array(versions);
  for (const auto* v : {&reward, &mean, &stddev}) e.PutF64Array(*v);
  e.PutU8Array(has_advantage);
  e.PutF64Array(advantage);
  e.PutF64Array(weight);
  e.PutU32Array(b.group_index);
  e.PutU8Array(b.replayed);
  for (const Sample& s : b.samples) {
    e.PutString(s.prompt_id);
    e.PutString(s.task_id);
    e.PutString(s.finish_reason);
    e.PutU32Array(s.turn_starts);
  }
  e.PutString(b.stats.dump());
  EXPECT_TRUE(e.status().ok());
  EXPECT_TRUE(wire::FinishFrame(kBatchFrame, start, &out).ok());
  return out;
}

Batch MixedBatch() {
  Batch b;
  b.batch_id = "batch-12";
  b.policy = "actor";
  b.policy_version = 3;
  b.samples = {MakeSample(40, "actor", 1.0), MakeSample(0, "actor", 0.0),
               MakeSample(1, "actor", 0.5), MakeSample(700, "actor", -1.0)};
  b.samples[0].advantage = 0.5;
  b.samples[0].group_mean = 0.25;
  b.samples[3].loss_weight = 0.125;
  b.samples[3].task_id = "task-9";
  b.samples[3].turn_starts = {2, 300};
  b.group_index = {0, 0, 1, 1};
  b.replayed = {0, 0, 1, 1};
  b.stats = {{"fresh_groups", 1}, {"serves", 1}};
  return b;
}

TEST(TrajectoryCodecTest, BatchFrameWriterGivesTheReferenceBytesInAnyChunking) {
  const Batch b = MixedBatch();
  const std::string want = ReferenceBatchFrame(b);
  std::string whole;
  ASSERT_TRUE(EncodeBatch(b, &whole).ok());
  EXPECT_TRUE(whole == want);
  std::string via_view = "prefix";  // Appends.
  ASSERT_TRUE(EncodeBatchView(ViewOfBatch(b), &via_view).ok());
  EXPECT_TRUE(via_view == "prefix" + want);
  for (size_t chunk : {size_t{1}, size_t{3}, size_t{19}, size_t{64}, size_t{4096}}) {
    Result<BatchFrameWriter> w = BatchFrameWriter::Create(ViewOfBatch(b));
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    EXPECT_EQ(w->size(), want.size());
    std::string got;
    while (!w->done()) {
      const uint64_t before = w->written();
      w->Next(chunk, &got);
      ASSERT_EQ(w->written() - before, std::min<uint64_t>(chunk, want.size() - before));
      ASSERT_EQ(got.size(), w->written());
    }
    w->Next(chunk, &got);  // Past the end: nothing.
    EXPECT_TRUE(got == want) << "chunk " << chunk;
  }
  Result<Batch> back = DecodeBatch(want);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->samples[3].tokens, b.samples[3].tokens);
}

TEST(TrajectoryCodecTest, BatchFrameWriterHoldsItsOwnerAndMayMove) {
  auto owned = std::make_shared<Batch>(MixedBatch());
  const std::string want = ReferenceBatchFrame(*owned);
  Result<BatchFrameWriter> w = BatchFrameWriter::Create(ViewOfBatch(*owned), owned);
  ASSERT_TRUE(w.ok());
  std::weak_ptr<Batch> alive = owned;
  owned.reset();
  ASSERT_FALSE(alive.expired()) << "the writer keeps the samples it reads alive";
  std::string got;
  w->Next(100, &got);
  BatchFrameWriter moved = std::move(*w);          // The small fields it owns move with it.
  moved.Next(want.size() - got.size() - 4, &got);  // All but the trailer CRC.
  EXPECT_TRUE(alive.expired()) << "let go of once nothing borrowed is left to read";
  moved.Next(want.size(), &got);
  EXPECT_TRUE(got == want);
}

TEST(TrajectoryCodecTest, BatchFrameWriterRejectsWhatEncodeBatchRejects) {
  Batch b = MixedBatch();
  b.replayed.pop_back();
  EXPECT_EQ(BatchFrameWriter::Create(ViewOfBatch(b)).status().code(), StatusCode::kInvalidArgument);
  std::string out = "kept";
  EXPECT_FALSE(EncodeBatchView(ViewOfBatch(b), &out).ok());
  EXPECT_EQ(out, "kept");
  const Batch empty;
  std::string frame;
  ASSERT_TRUE(EncodeBatch(empty, &frame).ok());
  EXPECT_TRUE(frame == ReferenceBatchFrame(empty));
}

}  // namespace
}  // namespace sluice::dataflow
