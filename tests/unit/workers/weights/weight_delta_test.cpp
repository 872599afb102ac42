// WeightSnapshot and weight deltas: bit-exact round trips, chains, idempotence, and damaged or
// hostile delta bytes turning into errors rather than crashes.
#include "workers/weights/weight_delta.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "common/wire/decoder.h"
#include "common/wire/encoder.h"
#include "common/wire/frame.h"
#include "tests/unit/workers/weights/weight_fixtures.h"
#include "workers/weights/weight_digest.h"
#include "workers/weights/weight_snapshot.h"

namespace sluice::weights {
namespace {

using fixtures::Model;
using fixtures::Perturb;
using fixtures::RandomModel;

WeightSnapshot Snap(const Model& m, int64_t version) {
  Result<WeightSnapshot> s = WeightSnapshot::Build(m.Views(), version);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return std::move(s).value();
}

std::string Delta(const WeightSnapshot& a, const WeightSnapshot& b, DeltaStats* stats = nullptr) {
  Result<std::string> d = EncodeDelta(a, b, stats);
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  return d.ok() ? std::move(d).value() : std::string();
}

TEST(WeightSnapshotTest, BuildAndParseAgree) {
  const Model m = RandomModel(1);
  const WeightSnapshot s = Snap(m, 7);
  EXPECT_EQ(s.version(), 7);
  EXPECT_EQ(s.digest(), DigestOf(s.image()));
  EXPECT_EQ(s.digest().size(), 7u + 64u);
  ASSERT_EQ(s.tensors().size(), 4u);
  for (const auto& t : m.tensors) {
    const TensorSlice* slice = s.Find(t.name);
    ASSERT_NE(slice, nullptr) << t.name;
    auto bytes = s.TensorBytes(*slice);
    ASSERT_EQ(bytes.size(), t.data.size());
    EXPECT_EQ(0, std::memcmp(bytes.data(), t.data.data(), bytes.size())) << t.name;
  }
  Result<WeightSnapshot> parsed = WeightSnapshot::Parse(std::string(s.image()), s.digest());
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->version(), 7);
  EXPECT_EQ(parsed->image(), s.image());
}

TEST(WeightSnapshotTest, ParseDetectsWrongDigestAndMissingVersion) {
  const WeightSnapshot s = Snap(RandomModel(2), 1);
  std::string damaged(s.image());
  damaged[damaged.size() - 1] ^= 1;
  Result<WeightSnapshot> r = WeightSnapshot::Parse(damaged, s.digest());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
  EXPECT_EQ(r.status().field(), "digest");

  const Model m = RandomModel(2);
  auto bytes = model::SerializeSafetensors(m.Views(), {{"format", "pt"}});
  ASSERT_TRUE(bytes.ok());
  Result<WeightSnapshot> no_version = WeightSnapshot::Parse(
      std::string(reinterpret_cast<const char*>(bytes->data()), bytes->size()));
  ASSERT_FALSE(no_version.ok());
  EXPECT_EQ(no_version.status().field(), "metadata.sluice.version");
  EXPECT_FALSE(WeightSnapshot::Build(m.Views(), -1).ok());
}

TEST(WeightDeltaTest, RoundTripIsBitExactForF32AndBf16) {
  Model m = RandomModel(3);
  std::mt19937_64 rng(3);
  const WeightSnapshot v1 = Snap(m, 1);
  const uint64_t changed = Perturb(m, 0.01, rng);
  const WeightSnapshot v2 = Snap(m, 2);
  DeltaStats stats;
  const std::string d = Delta(v1, v2, &stats);
  EXPECT_EQ(stats.changed_elements, changed);
  EXPECT_EQ(stats.total_elements, v1.total_elements());
  EXPECT_EQ(stats.bytes, d.size());
  EXPECT_GT(stats.density(), 0.0);
  EXPECT_LT(stats.density(), 0.1);
  EXPECT_LT(d.size(), v2.size_bytes() / 4);

  Result<WeightSnapshot> out = ApplyDelta(v1, d);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->version(), 2);
  EXPECT_EQ(out->digest(), v2.digest());
  EXPECT_TRUE(out->image() == v2.image());
  // The base is left as it was.
  EXPECT_EQ(v1.digest(), DigestOf(v1.image()));
}

TEST(WeightDeltaTest, NanPayloadsAndSignedZerosAreChanges) {
  fixtures::Tensor t{"w", model::DType::kF32, {4}, std::vector<std::byte>(16)};
  fixtures::PutF32Bits(t, 0, 0x00000000);  // +0.0
  fixtures::PutF32Bits(t, 1, 0x7fc00000);  // quiet NaN
  fixtures::PutF32Bits(t, 2, 0x3f800000);  // 1.0, unchanged
  fixtures::PutF32Bits(t, 3, 0xffc00001);  // negative NaN with a payload
  Model m{{t}};
  const WeightSnapshot v1 = Snap(m, 1);
  fixtures::PutF32Bits(m.tensors[0], 0, 0x80000000);  // -0.0 == +0.0 numerically
  fixtures::PutF32Bits(m.tensors[0], 1, 0x7fc00001);  // another NaN
  fixtures::PutF32Bits(m.tensors[0], 3, 0xffc00001);  // same bits: no change
  const WeightSnapshot v2 = Snap(m, 2);
  DeltaStats stats;
  const std::string d = Delta(v1, v2, &stats);
  EXPECT_EQ(stats.changed_elements, 2u);
  EXPECT_EQ(stats.total_elements, 4u);
  Result<WeightSnapshot> out = ApplyDelta(v1, d);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_TRUE(out->image() == v2.image());
}

TEST(WeightDeltaTest, UnchangedWeightsGiveAnEmptyButValidDelta) {
  const Model m = RandomModel(4);
  const WeightSnapshot v1 = Snap(m, 1);
  const WeightSnapshot v2 = Snap(m, 2);
  DeltaStats stats;
  const std::string d = Delta(v1, v2, &stats);
  EXPECT_EQ(stats.changed_elements, 0u);
  Result<WeightSnapshot> out = ApplyDelta(v1, d);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_TRUE(out->image() == v2.image());
}

TEST(WeightDeltaTest, ApplyingTwiceIsHarmless) {
  Model m = RandomModel(5);
  std::mt19937_64 rng(5);
  const WeightSnapshot v1 = Snap(m, 1);
  Perturb(m, 0.01, rng);
  const WeightSnapshot v2 = Snap(m, 2);
  const std::string d = Delta(v1, v2);
  Result<WeightSnapshot> once = ApplyDelta(v1, d);
  ASSERT_TRUE(once.ok()) << once.status().ToString();
  Result<WeightSnapshot> twice = ApplyDelta(*once, d);
  ASSERT_TRUE(twice.ok()) << twice.status().ToString();
  EXPECT_TRUE(twice->image() == v2.image());
}

TEST(WeightDeltaTest, ChainOfThreeReproducesTheNewestVersion) {
  Model m = RandomModel(6);
  std::mt19937_64 rng(6);
  std::vector<WeightSnapshot> v;
  v.push_back(Snap(m, 10));
  for (int64_t version : {11, 12, 13}) {
    Perturb(m, 0.01, rng);
    v.push_back(Snap(m, version));
  }
  const std::string chain = Delta(v[0], v[1]) + Delta(v[1], v[2]) + Delta(v[2], v[3]);
  Result<WeightSnapshot> out = ApplyDelta(v[0], chain);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->version(), 13);
  EXPECT_TRUE(out->image() == v[3].image());

  // A chain that skips a link is refused.
  const std::string gap = Delta(v[0], v[1]) + Delta(v[2], v[3]);
  Result<WeightSnapshot> broken = ApplyDelta(v[0], gap);
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.status().field(), "delta[1].from_version");
  // A chain for another base is refused before anything is applied.
  Result<WeightSnapshot> wrong_base = ApplyDelta(v[2], chain);
  ASSERT_FALSE(wrong_base.ok());
  EXPECT_EQ(wrong_base.status().code(), StatusCode::kInvalidArgument);
}

TEST(WeightDeltaTest, LayoutChangesCannotBeEncoded) {
  const Model m = RandomModel(7);
  const WeightSnapshot v1 = Snap(m, 1);

  Model added = m;
  std::mt19937_64 rng(7);
  added.tensors.push_back(fixtures::RandomTensor("lm_head.weight", model::DType::kF32, {3}, rng));
  Result<std::string> a = EncodeDelta(v1, Snap(added, 2));
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(a.status().message().find("lm_head.weight"), std::string::npos)
      << a.status().ToString();

  Model reshaped = m;
  reshaped.Get("layers.0.mlp.weight").shape = {33, 64};
  Result<std::string> r = EncodeDelta(v1, Snap(reshaped, 2));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("layers.0.mlp.weight"), std::string::npos);

  Model removed = m;
  removed.tensors.pop_back();
  Result<std::string> x = EncodeDelta(v1, Snap(removed, 2));
  ASSERT_FALSE(x.ok());
  EXPECT_NE(x.status().message().find("step"), std::string::npos) << x.status().ToString();

  EXPECT_FALSE(EncodeDelta(v1, v1).ok());  // Not newer.
}

TEST(WeightDeltaTest, MaxBytesStopsAnOversizedDelta) {
  Model m = RandomModel(8);
  std::mt19937_64 rng(8);
  const WeightSnapshot v1 = Snap(m, 1);
  Perturb(m, 1.0, rng);  // Every element.
  const WeightSnapshot v2 = Snap(m, 2);
  DeltaEncodeOptions options;
  options.max_bytes = v2.size_bytes();
  Result<std::string> d = EncodeDelta(v1, v2, nullptr, options);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kTooLarge);
  // Small chunks still round-trip.
  options.max_bytes = 0;
  options.max_chunk_elements = 7;
  Result<std::string> chunked = EncodeDelta(v1, v2, nullptr, options);
  ASSERT_TRUE(chunked.ok());
  Result<WeightSnapshot> out = ApplyDelta(v1, *chunked);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_TRUE(out->image() == v2.image());
}

// A small pair of versions whose delta is short enough to damage at every position.
struct SmallPair {
  WeightSnapshot v1;
  WeightSnapshot v2;
  std::string delta;
};

SmallPair MakeSmallPair() {
  std::mt19937_64 rng(9);
  Model m;
  m.tensors.push_back(fixtures::RandomTensor("a", model::DType::kF32, {16}, rng));
  m.tensors.push_back(fixtures::RandomTensor("b", model::DType::kBF16, {24}, rng));
  WeightSnapshot v1 = Snap(m, 1);
  Perturb(m, 0.1, rng);
  WeightSnapshot v2 = Snap(m, 2);
  std::string d = Delta(v1, v2);
  return {std::move(v1), std::move(v2), std::move(d)};
}

TEST(WeightDeltaTest, EveryTruncationIsAnError) {
  const SmallPair p = MakeSmallPair();
  for (size_t n = 1; n < p.delta.size(); ++n) {
    Result<WeightSnapshot> out = ApplyDelta(p.v1, std::string_view(p.delta).substr(0, n));
    EXPECT_FALSE(out.ok()) << "truncated to " << n << " of " << p.delta.size();
  }
}

TEST(WeightDeltaTest, EveryFlippedByteIsAnError) {
  const SmallPair p = MakeSmallPair();
  for (size_t i = 0; i < p.delta.size(); ++i) {
    std::string damaged = p.delta;
    damaged[i] ^= 0x5a;
    Result<WeightSnapshot> out = ApplyDelta(p.v1, damaged);
    EXPECT_FALSE(out.ok()) << "byte " << i;
  }
}

// Rewrites the delta's first chunk frame with `payload` (valid frame CRCs, hostile contents).
std::string WithFirstChunk(const std::string& delta, const std::string& payload) {
  wire::FrameReader reader(delta);
  std::string out;
  bool replaced = false;
  while (!reader.AtEnd()) {
    Result<wire::Frame> f = reader.Next();
    EXPECT_TRUE(f.ok());
    if (!f.ok()) break;
    const bool chunk = f->type == kWeightDeltaChunkFrame && !replaced;
    EXPECT_TRUE(
        wire::AppendFrame(f->type, chunk ? std::string_view(payload) : f->payload, &out).ok());
    replaced = replaced || chunk;
  }
  EXPECT_TRUE(replaced);
  return out;
}

std::string ChunkPayload(const std::string& tensor, const std::vector<uint64_t>& varints,
                         size_t value_bytes) {
  std::string out;
  wire::Encoder enc(&out);
  enc.PutString(tensor);
  for (uint64_t v : varints) enc.PutVarint(v);
  out.append(value_bytes, '\x11');
  return out;
}

TEST(WeightDeltaTest, HostileChunksAreCorruptionNamingTheField) {
  const SmallPair p = MakeSmallPair();
  struct Case {
    std::string payload;
    std::string field;
  };
  const std::vector<Case> cases = {
      {ChunkPayload("nope", {1, 0}, 4), "delta[0].chunk[0].tensor"},
      {ChunkPayload("a", {0}, 0), "delta[0].chunk[0].count"},
      {ChunkPayload("a", {17, 0}, 64), "delta[0].chunk[0].count"},  // More than 16 elements.
      {ChunkPayload("a", {~uint64_t{0}}, 0), "delta[0].chunk[0].count"},
      {ChunkPayload("a", {2, 3, 0}, 8), "delta[0].chunk[0].indices"},  // Gap 0.
      {ChunkPayload("a", {1, 16}, 4), "delta[0].chunk[0].indices"},    // Index past the end.
      {ChunkPayload("a", {2, 1, ~uint64_t{0}}, 8), "delta[0].chunk[0].indices"},  // Wraps.
      {ChunkPayload("a", {2, 1, 2}, 7), "delta[0].chunk[0].values"},              // One byte short.
      {ChunkPayload("a", {2}, 0) + "\x80\x80", "delta[0].chunk[0].indices"},      // Mid-varint.
  };
  for (const Case& c : cases) {
    Result<WeightSnapshot> out = ApplyDelta(p.v1, WithFirstChunk(p.delta, c.payload));
    ASSERT_FALSE(out.ok()) << c.field;
    EXPECT_EQ(out.status().code(), StatusCode::kCorruption) << out.status().ToString();
    EXPECT_EQ(out.status().field(), c.field) << out.status().ToString();
  }
  // A well-formed chunk with the wrong values passes every count check and fails the digest.
  Result<WeightSnapshot> wrong =
      ApplyDelta(p.v1, WithFirstChunk(p.delta, ChunkPayload("a", {1, 5}, 4)));
  ASSERT_FALSE(wrong.ok());
  EXPECT_FALSE(wrong.status().field().empty());
}

}  // namespace
}  // namespace sluice::weights
