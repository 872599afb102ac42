// Safetensors container tests: round trips through the writer and reader (single files and
// sharded checkpoints), the writer's byte layout, and malformed files, indexes and writer input.
// The element types and conversions are tested in tensor_dtype_test.cpp.
#include "workers/model/safetensors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"

namespace sluice::model {
namespace safetensors_test {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A directory of this test's own, removed with everything in it.
class TempDir : public ::sluice::test_support::TempDir {
 public:
  TempDir() : ::sluice::test_support::TempDir("sluice_safetensors_test") {}
};

std::vector<std::byte> ToBytes(std::string_view s) {
  std::vector<std::byte> out(s.size());
  std::memcpy(out.data(), s.data(), s.size());
  return out;
}

std::string ToString(std::span<const std::byte> bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

std::vector<std::byte> Encode(const std::vector<float>& values, DType dtype) {
  Result<std::vector<std::byte>> bytes = FromFloat32(values, dtype);
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  return bytes.ok() ? *bytes : std::vector<std::byte>{};
}

// A file image: length prefix, the header text as given, then `data_bytes` bytes of data.
std::vector<std::byte> RawFile(std::string_view header, size_t data_bytes) {
  std::vector<std::byte> out(8 + header.size() + data_bytes, std::byte{0});
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<std::byte>((n >> (8 * i)) & 0xff);
  std::memcpy(out.data() + 8, header.data(), header.size());
  for (size_t i = 0; i < data_bytes; ++i) out[8 + header.size() + i] = std::byte(i & 0xff);
  return out;
}

void WriteFileBytes(const std::string& path, std::span<const std::byte> bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

void WriteText(const std::string& path, std::string_view text) {
  WriteFileBytes(path, std::as_bytes(std::span<const char>(text.data(), text.size())));
}

// Test data: three float tensors, one per required dtype, plus an integer one.
struct Fixture {
  std::vector<float> w_f32 = {1.0f, -2.5f, 3.25f, 0.0f, -0.0f, 1e-3f};
  std::vector<float> w_f16 = {1.0f, -2.0f, 0.5f, 65504.0f};
  std::vector<float> w_bf16 = {1.0f, 3.0f, -0.15625f, 256.0f, 1e30f, -7.0f};
  std::vector<std::byte> b_f32 = Encode(w_f32, DType::kF32);
  std::vector<std::byte> b_f16 = Encode(w_f16, DType::kF16);
  std::vector<std::byte> b_bf16 = Encode(w_bf16, DType::kBF16);
  std::vector<std::byte> b_ids = ToBytes(std::string("\x01\x00\x00\x00\x00\x00\x00\x00", 8));

  std::vector<TensorView> Tensors() const {
    return {
        {"model.layers.0.weight", DType::kF32, {2, 3}, b_f32},
        {"model.embed.weight", DType::kF16, {4}, b_f16},
        {"lm_head.weight", DType::kBF16, {3, 2}, b_bf16},
        {"position_ids", DType::kI64, {1}, b_ids},
    };
  }
};

void ExpectSameTensors(const std::vector<TensorView>& want, const auto& lookup) {
  for (const TensorView& w : want) {
    const TensorView* got = lookup(w.name);
    ASSERT_NE(got, nullptr) << w.name;
    EXPECT_EQ(got->dtype, w.dtype) << w.name;
    EXPECT_EQ(got->shape, w.shape) << w.name;
    ASSERT_EQ(got->data.size(), w.data.size()) << w.name;
    if (!w.data.empty()) {
      EXPECT_EQ(std::memcmp(got->data.data(), w.data.data(), w.data.size()), 0) << w.name;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Round trips.

TEST(SafetensorsRoundTripTest, SingleFileAllFloatDtypesAndMetadata) {
  TempDir dir;
  Fixture f;
  std::vector<TensorView> tensors = f.Tensors();
  std::map<std::string, std::string> metadata = {{"format", "pt"}, {"note", "quote\" \\ é"}};
  ASSERT_TRUE(WriteSafetensors(dir.File("w.safetensors"), tensors, metadata).ok());

  Result<SafetensorsFile> file = SafetensorsFile::Open(dir.File("w.safetensors"));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(file->metadata(), metadata);
  ASSERT_EQ(file->tensors().size(), 4u);
  // Sorted by name.
  EXPECT_EQ(file->tensors()[0].name, "lm_head.weight");
  EXPECT_EQ(file->tensors()[3].name, "position_ids");
  ExpectSameTensors(tensors, [&](std::string_view n) { return file->Find(n); });

  EXPECT_EQ(*ToFloat32(*file->Find("model.layers.0.weight")), f.w_f32);
  EXPECT_EQ(*ToFloat32(*file->Find("model.embed.weight")), f.w_f16);
  std::vector<float> bf16 = *ToFloat32(*file->Find("lm_head.weight"));
  ASSERT_EQ(bf16.size(), 6u);
  EXPECT_EQ(bf16[0], 1.0f);
  EXPECT_EQ(bf16[2], -0.15625f);
  EXPECT_EQ(bf16[4], BFloat16BitsToFloat32(Float32ToBFloat16Bits(1e30f)));
  EXPECT_THAT(*ToFloat32(*file->Find("position_ids")), ElementsAre(1.0f));

  Result<TensorView> missing = file->Get("nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("'nope'"));
  EXPECT_THAT(missing.status().message(), HasSubstr("w.safetensors"));

  // Moving the file keeps its views valid (the map does not move).
  SafetensorsFile moved = std::move(file).value();
  ExpectSameTensors(tensors, [&](std::string_view n) { return moved.Find(n); });
  // No temporary files are left behind.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);
}

TEST(SafetensorsRoundTripTest, ScalarsAndEmptyTensors) {
  TempDir dir;
  std::vector<std::byte> scalar = Encode({42.0f}, DType::kF32);
  std::vector<TensorView> tensors = {
      {"scalar", DType::kF32, {}, scalar},
      {"empty", DType::kBF16, {0, 5}, {}},
      {"empty2", DType::kF16, {3, 0}, {}},
  };
  ASSERT_TRUE(WriteSafetensors(dir.File("s.safetensors"), tensors).ok());
  Result<SafetensorsFile> file = SafetensorsFile::Open(dir.File("s.safetensors"));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_TRUE(file->metadata().empty());
  ExpectSameTensors(tensors, [&](std::string_view n) { return file->Find(n); });
  EXPECT_EQ(file->Find("scalar")->NumElements(), 1);
  EXPECT_EQ(file->Find("empty")->NumElements(), 0);
  EXPECT_THAT(*ToFloat32(*file->Find("scalar")), ElementsAre(42.0f));
  EXPECT_TRUE(ToFloat32(*file->Find("empty"))->empty());
}

TEST(SafetensorsRoundTripTest, NoTensorsAtAll) {
  TempDir dir;
  ASSERT_TRUE(WriteSafetensors(dir.File("e.safetensors"), {}, {{"k", "v"}}).ok());
  Result<SafetensorsFile> file = SafetensorsFile::Open(dir.File("e.safetensors"));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_TRUE(file->tensors().empty());
  EXPECT_EQ(file->metadata().at("k"), "v");
}

TEST(SafetensorsRoundTripTest, ShardedAllFloatDtypes) {
  TempDir dir;
  Fixture f;
  std::vector<TensorView> tensors = f.Tensors();
  // 24 + 8 + 12 + 8 bytes; a 16-byte budget gives four shards in name order:
  // lm_head(12) | model.embed(8) | model.layers(24, alone) | position_ids(8).
  ASSERT_TRUE(WriteSharded(dir.path().string(), tensors, 16, {{"format", "pt"}}).ok());
  for (const char* name : {"model-00001-of-00004.safetensors", "model-00002-of-00004.safetensors",
                           "model-00003-of-00004.safetensors", "model-00004-of-00004.safetensors",
                           "model.safetensors.index.json"}) {
    EXPECT_TRUE(fs::exists(dir.path() / name)) << name;
  }

  Result<ShardedCheckpoint> ckpt = ShardedCheckpoint::Open(dir.path().string());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().ToString();
  EXPECT_EQ(ckpt->size(), 4u);
  EXPECT_EQ(ckpt->files().size(), 4u);
  EXPECT_EQ(ckpt->index_metadata().at("total_size"), "52");
  EXPECT_THAT(ckpt->tensor_names(), ElementsAre("lm_head.weight", "model.embed.weight",
                                                "model.layers.0.weight", "position_ids"));
  ExpectSameTensors(tensors, [&](std::string_view n) { return ckpt->Find(n); });
  for (const auto& file : ckpt->files()) EXPECT_EQ(file->metadata().at("format"), "pt");
  EXPECT_EQ(ckpt->Get("absent").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(*ToFloat32(*ckpt->Get("model.embed.weight")), f.w_f16);

  // Rewriting with a larger budget removes the old shards.
  ASSERT_TRUE(WriteSharded(dir.path().string(), tensors, 1 << 20).ok());
  EXPECT_TRUE(fs::exists(dir.path() / "model-00001-of-00001.safetensors"));
  EXPECT_FALSE(fs::exists(dir.path() / "model-00001-of-00004.safetensors"));
  EXPECT_FALSE(fs::exists(dir.path() / "model-00004-of-00004.safetensors"));
  Result<ShardedCheckpoint> again = ShardedCheckpoint::Open(dir.path().string());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->files().size(), 1u);
  ExpectSameTensors(tensors, [&](std::string_view n) { return again->Find(n); });
}

TEST(SafetensorsRoundTripTest, CheckpointFromSingleFile) {
  TempDir dir;
  Fixture f;
  std::vector<TensorView> tensors = f.Tensors();
  ASSERT_TRUE(WriteSafetensors(dir.File("model.safetensors"), tensors).ok());
  Result<ShardedCheckpoint> ckpt = ShardedCheckpoint::Open(dir.path().string());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().ToString();
  EXPECT_EQ(ckpt->size(), 4u);
  EXPECT_TRUE(ckpt->index_metadata().empty());
  ExpectSameTensors(tensors, [&](std::string_view n) { return ckpt->Find(n); });

  TempDir empty;
  Result<ShardedCheckpoint> none = ShardedCheckpoint::Open(empty.path().string());
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(none.status().message(), HasSubstr("model.safetensors.index.json"));
}

// ---------------------------------------------------------------------------------------------
// Byte layout of what the writer produces, checked by hand.

TEST(SafetensorsLayoutTest, HeaderPrefixJsonAndAlignment) {
  std::vector<std::byte> u8 = ToBytes("abc");
  std::vector<std::byte> f32 = Encode({1.0f, 2.0f}, DType::kF32);
  std::vector<std::byte> f16 = Encode({1.0f}, DType::kF16);
  // Names sort u8 first, but data is ordered by element size so F32 stays 4-aligned.
  std::vector<TensorView> tensors = {
      {"c", DType::kF16, {1}, f16},
      {"a", DType::kU8, {3}, u8},
      {"b", DType::kF32, {2}, f32},
  };
  Result<std::vector<std::byte>> image = SerializeSafetensors(tensors, {{"format", "pt"}});
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  const std::vector<std::byte>& bytes = *image;

  ASSERT_GE(bytes.size(), 8u);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(bytes[i]) << (8 * i);
  EXPECT_EQ((8 + n) % 8, 0u);
  ASSERT_LE(8 + n, bytes.size());
  std::string header = ToString(std::span(bytes).subspan(8, n));
  const std::string json = R"({"__metadata__":{"format":"pt"},)"
                           R"("a":{"dtype":"U8","shape":[3],"data_offsets":[10,13]},)"
                           R"("b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                           R"("c":{"dtype":"F16","shape":[1],"data_offsets":[8,10]}})";
  ASSERT_GE(header.size(), json.size());
  EXPECT_EQ(header.substr(0, json.size()), json);
  EXPECT_EQ(header.substr(json.size()), std::string(header.size() - json.size(), ' '));
  EXPECT_LT(header.size() - json.size(), 8u);
  // Data section: b, c, a.
  std::string data = ToString(std::span(bytes).subspan(8 + n));
  ASSERT_EQ(data.size(), 13u);
  EXPECT_EQ(data.substr(0, 8), ToString(f32));
  EXPECT_EQ(data.substr(8, 2), ToString(f16));
  EXPECT_EQ(data.substr(10, 3), "abc");

  // WriteSafetensors writes exactly these bytes.
  TempDir dir;
  ASSERT_TRUE(WriteSafetensors(dir.File("x.safetensors"), tensors, {{"format", "pt"}}).ok());
  std::ifstream in(dir.File("x.safetensors"), std::ios::binary);
  std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(file, ToString(bytes));

  // And the parser agrees.
  Result<SafetensorsHeader> parsed = ParseSafetensorsHeader(bytes);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->data_start, 8 + n);
  EXPECT_EQ(parsed->data_length, 13u);
  ASSERT_EQ(parsed->tensors.size(), 3u);
  EXPECT_EQ(parsed->tensors[0].name, "a");
  EXPECT_EQ(parsed->tensors[0].begin, 10u);
}

TEST(SafetensorsLayoutTest, ReadsHandWrittenReferenceFile) {
  // As the reference implementation writes it: metadata first, compact JSON, space padding.
  std::string header = R"({"__metadata__":{"format":"pt"},"w":{"dtype":"BF16","shape":[2],)"
                       R"("data_offsets":[0,4]}})";
  while ((8 + header.size()) % 8 != 0) header.push_back(' ');
  std::vector<std::byte> image = RawFile(header, 0);
  for (uint8_t b : {0x80, 0x3f, 0x00, 0xc0}) image.push_back(std::byte{b});  // 1.0, -2.0
  Result<SafetensorsHeader> parsed = ParseSafetensorsHeader(image);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  TempDir dir;
  WriteFileBytes(dir.File("ref.safetensors"), image);
  Result<SafetensorsFile> file = SafetensorsFile::Open(dir.File("ref.safetensors"));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_THAT(*ToFloat32(*file->Find("w")), ElementsAre(1.0f, -2.0f));
}

// ---------------------------------------------------------------------------------------------
// Malformed files.

struct BadCase {
  const char* label;
  std::string header;
  size_t data_bytes;
  std::vector<std::string> expected;  // Substrings of the message.
};

class SafetensorsMalformedTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(SafetensorsMalformedTest, RejectedWithMessage) {
  const BadCase& c = GetParam();
  std::vector<std::byte> image = RawFile(c.header, c.data_bytes);
  Result<SafetensorsHeader> parsed = ParseSafetensorsHeader(image, "bad.safetensors");
  ASSERT_FALSE(parsed.ok()) << c.label;
  EXPECT_EQ(parsed.status().code(), StatusCode::kCorruption);
  EXPECT_THAT(parsed.status().message(), HasSubstr("bad.safetensors"));
  for (const std::string& s : c.expected) EXPECT_THAT(parsed.status().message(), HasSubstr(s));

  // Through a real file too: the path is named and nothing is leaked or crashes.
  TempDir dir;
  WriteFileBytes(dir.File("bad.safetensors"), image);
  Result<SafetensorsFile> file = SafetensorsFile::Open(dir.File("bad.safetensors"));
  ASSERT_FALSE(file.ok());
  EXPECT_THAT(file.status().message(), HasSubstr(dir.File("bad.safetensors")));
}

std::string T(std::string_view name, std::string_view body) {
  return "\"" + std::string(name) + "\":" + std::string(body);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SafetensorsMalformedTest,
    ::testing::Values(
        BadCase{"not_json", "{\"w\":", 0, {"not valid JSON"}},
        BadCase{"garbage", "\x01\x02\x03", 0, {"not valid JSON"}},
        BadCase{"trailing_garbage", "{} x", 0, {"not valid JSON"}},
        BadCase{"array", "[1,2]", 0, {"not a JSON object", "array"}},
        BadCase{"duplicate_key",
                "{" + T("w", R"({"dtype":"U8","shape":[1],"data_offsets":[0,1]})") + "," +
                    T("w", R"({"dtype":"U8","shape":[1],"data_offsets":[0,1]})") + "}",
                1,
                {"duplicate key 'w'"}},
        BadCase{"entry_not_object", "{" + T("w", "3") + "}", 0, {"'w'", "not an object"}},
        BadCase{"unknown_dtype",
                "{" + T("w", R"({"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]})") + "}",
                1,
                {"'w'", "unknown dtype 'F8_E4M3'"}},
        BadCase{"missing_dtype",
                "{" + T("w", R"({"shape":[1],"data_offsets":[0,1]})") + "}",
                1,
                {"'w'", "dtype"}},
        BadCase{"negative_dim",
                "{" + T("w", R"({"dtype":"F32","shape":[-1],"data_offsets":[0,0]})") + "}",
                0,
                {"'w'", "not a non-negative integer: -1"}},
        BadCase{"fractional_dim",
                "{" + T("w", R"({"dtype":"F32","shape":[1.5],"data_offsets":[0,4]})") + "}",
                4,
                {"'w'", "not a non-negative integer: 1.5"}},
        BadCase{"string_dim",
                "{" + T("w", R"({"dtype":"F32","shape":["2"],"data_offsets":[0,8]})") + "}",
                8,
                {"'w'", "not a non-negative integer"}},
        BadCase{"huge_dim",
                "{" +
                    T("w", R"({"dtype":"U8","shape":[99999999999999999999],)"
                           R"("data_offsets":[0,1]})") +
                    "}",
                1,
                {"'w'", "not a non-negative integer"}},
        BadCase{"shape_overflow",
                "{" +
                    T("w", R"({"dtype":"F32","shape":[4611686018427387904,4],)"
                           R"("data_offsets":[0,0]})") +
                    "}",
                0,
                {"'w'", "overflows"}},
        BadCase{"byte_size_overflow",
                "{" +
                    T("w", R"({"dtype":"F64","shape":[2305843009213693952],)"
                           R"("data_offsets":[0,0]})") +
                    "}",
                0,
                {"'w'", "overflows"}},
        BadCase{"shape_not_array",
                "{" + T("w", R"({"dtype":"F32","shape":4,"data_offsets":[0,16]})") + "}",
                16,
                {"'w'", "shape"}},
        BadCase{"offsets_arity",
                "{" + T("w", R"({"dtype":"U8","shape":[1],"data_offsets":[0,1,2]})") + "}",
                1,
                {"'w'", "not a pair"}},
        BadCase{"offsets_negative",
                "{" + T("w", R"({"dtype":"U8","shape":[1],"data_offsets":[-1,0]})") + "}",
                1,
                {"'w'", "not a pair"}},
        BadCase{"begin_after_end",
                "{" + T("w", R"({"dtype":"U8","shape":[0],"data_offsets":[4,2]})") + "}",
                4,
                {"'w'", "[4, 2] begin after end"}},
        BadCase{"end_past_data",
                "{" + T("w", R"({"dtype":"F32","shape":[4],"data_offsets":[0,16]})") + "}",
                12,
                {"'w'", "end past the data section (12 bytes)"}},
        BadCase{"offset_past_data_huge",
                "{" +
                    T("w", R"({"dtype":"U8","shape":[1],)"
                           R"("data_offsets":[18446744073709551614,18446744073709551615]})") +
                    "}",
                1,
                {"'w'", "end past the data section"}},
        BadCase{"wrong_byte_size",
                "{" + T("w", R"({"dtype":"F16","shape":[2,2],"data_offsets":[0,16]})") + "}",
                16,
                {"'w'", "hold 16 bytes", "needs 8"}},
        BadCase{"overlap",
                "{" + T("a", R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})") + "," +
                    T("b", R"({"dtype":"F32","shape":[2],"data_offsets":[4,12]})") + "}",
                12,
                {"'b'", "overlap tensor 'a'"}},
        BadCase{"same_range",
                "{" + T("a", R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})") + "," +
                    T("b", R"({"dtype":"I32","shape":[1],"data_offsets":[0,4]})") + "}",
                4,
                {"overlap tensor"}},
        BadCase{"gap",
                "{" + T("a", R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})") + "," +
                    T("b", R"({"dtype":"F32","shape":[1],"data_offsets":[8,12]})") + "}",
                12,
                {"'b'", "gap of 4"}},
        BadCase{"trailing_bytes",
                "{" + T("a", R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})") + "}",
                8,
                {"cover 4 bytes", "has 8", "trailing"}},
        BadCase{"metadata_not_object", R"({"__metadata__":[1]})", 0, {"__metadata__"}},
        BadCase{"metadata_non_string",
                R"({"__metadata__":{"step":3}})",
                0,
                {"__metadata__", "'step'", "not a string"}}),
    [](const ::testing::TestParamInfo<BadCase>& info) { return std::string(info.param.label); });

TEST(SafetensorsMalformedFileTest, TooShortForLengthPrefix) {
  for (size_t size : {0, 1, 7}) {
    std::vector<std::byte> bytes(size, std::byte{0});
    Result<SafetensorsHeader> parsed = ParseSafetensorsHeader(bytes, "short");
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.status().code(), StatusCode::kCorruption);
    EXPECT_THAT(parsed.status().message(), HasSubstr("too short for the 8-byte header length"));
    EXPECT_EQ(parsed.status().field(), "header.length");

    TempDir dir;
    WriteFileBytes(dir.File("short.safetensors"), bytes);
    Result<SafetensorsFile> file = SafetensorsFile::Open(dir.File("short.safetensors"));
    ASSERT_FALSE(file.ok());
    EXPECT_EQ(file.status().code(), StatusCode::kCorruption);
  }
}

TEST(SafetensorsMalformedFileTest, HeaderLengthPastEndOfFile) {
  std::vector<std::byte> image = RawFile("{}", 0);
  image[0] = std::byte{3};  // Claims 3 bytes, 2 follow.
  Result<SafetensorsHeader> parsed = ParseSafetensorsHeader(image, "f");
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.status().message(), HasSubstr("header length 3 runs past the end"));

  // A length near 2^64 must not wrap around in the bounds check.
  for (int i = 0; i < 8; ++i) image[i] = std::byte{0xff};
  parsed = ParseSafetensorsHeader(image, "f", {.max_header_bytes = ~uint64_t{0}});
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.status().message(), HasSubstr("runs past the end"));
}

TEST(SafetensorsMalformedFileTest, HeaderLengthOverCap) {
  std::vector<std::byte> image = RawFile("{}      ", 0);
  Result<SafetensorsHeader> parsed = ParseSafetensorsHeader(image, "f", {.max_header_bytes = 4});
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.status().message(), HasSubstr("header length 8 exceeds the limit of 4"));
  // The default cap is 100 MiB, checked before the length is compared with the file.
  std::vector<std::byte> big = RawFile("{}", 0);
  uint64_t n = (uint64_t{100} << 20) + 1;
  for (int i = 0; i < 8; ++i) big[i] = static_cast<std::byte>((n >> (8 * i)) & 0xff);
  parsed = ParseSafetensorsHeader(big, "f");
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.status().message(), HasSubstr("exceeds the limit of 104857600"));
}

TEST(SafetensorsMalformedFileTest, GapsAcceptedWhenAllowed) {
  std::string header = "{" + T("a", R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})") + "," +
                       T("b", R"({"dtype":"F32","shape":[1],"data_offsets":[8,12]})") + "}";
  std::vector<std::byte> image = RawFile(header, 16);
  EXPECT_FALSE(ParseSafetensorsHeader(image).ok());
  Result<SafetensorsHeader> parsed = ParseSafetensorsHeader(image, "f", {.allow_gaps = true});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->tensors.size(), 2u);
  // Overlap is still refused.
  header = "{" + T("a", R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})") + "," +
           T("b", R"({"dtype":"F32","shape":[1],"data_offsets":[4,8]})") + "}";
  EXPECT_FALSE(ParseSafetensorsHeader(RawFile(header, 8), "f", {.allow_gaps = true}).ok());
}

TEST(SafetensorsMalformedFileTest, TruncatedFileFromWriter) {
  Fixture f;
  Result<std::vector<std::byte>> image = SerializeSafetensors(f.Tensors());
  ASSERT_TRUE(image.ok());
  // Every proper prefix of a valid file is rejected.
  for (size_t size = 0; size < image->size(); ++size) {
    EXPECT_FALSE(ParseSafetensorsHeader(std::span(*image).first(size)).ok()) << size;
  }
  EXPECT_TRUE(ParseSafetensorsHeader(*image).ok());
}

TEST(SafetensorsMalformedFileTest, DeeplyNestedValuesDoNotOverflowTheStack) {
  const size_t depth = 1'000'000;
  const std::string nest = std::string(depth, '[') + std::string(depth, ']');
  for (const std::string& header :
       {nest, R"({"w":{"dtype":"F32","data_offsets":[0,0],"shape":[)" + nest + "]}}",
        R"({"__metadata__":{"a":)" + nest + "}}"}) {
    Result<SafetensorsHeader> parsed = ParseSafetensorsHeader(RawFile(header, 0), "deep");
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.status().code(), StatusCode::kCorruption);
  }
}

TEST(SafetensorsMalformedFileTest, NotARegularFile) {
  TempDir dir;
  Result<SafetensorsFile> file = SafetensorsFile::Open(dir.path().string());
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kInvalidArgument);
  Result<SafetensorsFile> missing = SafetensorsFile::Open(dir.File("absent.safetensors"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

// ---------------------------------------------------------------------------------------------
// Malformed sharded checkpoints.

class ShardedCheckpointErrorTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(WriteSharded(dir_.path().string(), f_.Tensors(), 16).ok()); }
  Status OpenStatus() { return ShardedCheckpoint::Open(dir_.path().string()).status(); }
  void WriteIndex(std::string_view weight_map) {
    WriteText(dir_.File("model.safetensors.index.json"),
              R"({"metadata":{"total_size":52},"weight_map":)" + std::string(weight_map) + "}");
  }
  // The index as WriteSharded made it: lm_head 1, model.embed 2, model.layers 3, position_ids 4.
  static std::string Map(std::string_view lm_head, std::string_view embed, std::string_view layers,
                         std::string_view ids) {
    return R"({"lm_head.weight":")" + std::string(lm_head) + R"(","model.embed.weight":")" +
           std::string(embed) + R"(","model.layers.0.weight":")" + std::string(layers) +
           R"(","position_ids":")" + std::string(ids) + R"("})";
  }

  TempDir dir_;
  Fixture f_;
};

constexpr const char* kS1 = "model-00001-of-00004.safetensors";
constexpr const char* kS2 = "model-00002-of-00004.safetensors";
constexpr const char* kS3 = "model-00003-of-00004.safetensors";
constexpr const char* kS4 = "model-00004-of-00004.safetensors";

TEST_F(ShardedCheckpointErrorTest, ValidIndexOpens) {
  WriteIndex(Map(kS1, kS2, kS3, kS4));
  EXPECT_TRUE(OpenStatus().ok()) << OpenStatus().ToString();
}

TEST_F(ShardedCheckpointErrorTest, MissingShardFile) {
  fs::remove(dir_.path() / kS3);
  Status s = OpenStatus();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr(kS3));
}

TEST_F(ShardedCheckpointErrorTest, TensorNotInNamedFile) {
  WriteIndex(Map(kS1, kS1, kS3, kS4));
  Status s = OpenStatus();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_THAT(s.message(), HasSubstr("'model.embed.weight'"));
  EXPECT_THAT(s.message(), HasSubstr("does not hold it"));
}

TEST_F(ShardedCheckpointErrorTest, DuplicateAcrossShards) {
  // Shard 2 also gets a copy of lm_head.weight.
  std::vector<TensorView> two = {f_.Tensors()[1], f_.Tensors()[2]};
  ASSERT_TRUE(WriteSafetensors(dir_.File(kS2), two).ok());
  Status s = OpenStatus();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("'lm_head.weight' appears in both"));
}

TEST_F(ShardedCheckpointErrorTest, ShardTensorMissingFromIndex) {
  // Shard 2 gains a tensor the index does not know.
  std::vector<std::byte> extra = Encode({5.0f}, DType::kF32);
  std::vector<TensorView> two = {f_.Tensors()[1], {"extra", DType::kF32, {1}, extra}};
  ASSERT_TRUE(WriteSafetensors(dir_.File(kS2), two).ok());
  Status s = OpenStatus();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("'extra' that the weight_map does not list"));
}

TEST_F(ShardedCheckpointErrorTest, PathOutsideTheDirectory) {
  for (const char* name : {"../model-00001-of-00004.safetensors", "/etc/passwd", "..", ""}) {
    WriteIndex(Map(name, kS2, kS3, kS4));
    Status s = OpenStatus();
    ASSERT_FALSE(s.ok()) << name;
    EXPECT_THAT(s.message(), HasSubstr("not a file name inside the checkpoint directory"));
  }
}

TEST_F(ShardedCheckpointErrorTest, MalformedIndex) {
  WriteText(dir_.File("model.safetensors.index.json"), "{not json");
  EXPECT_THAT(OpenStatus().message(), HasSubstr("not valid JSON"));
  WriteText(dir_.File("model.safetensors.index.json"), R"({"metadata":{}})");
  EXPECT_THAT(OpenStatus().message(), HasSubstr("weight_map"));
  WriteIndex(R"({"lm_head.weight":3})");
  EXPECT_THAT(OpenStatus().message(), HasSubstr("'lm_head.weight'"));
  WriteText(dir_.File("model.safetensors.index.json"),
            R"({"weight_map":{"a":"x.safetensors","a":"y.safetensors"}})");
  EXPECT_THAT(OpenStatus().message(), HasSubstr("duplicate key 'a'"));
}

TEST_F(ShardedCheckpointErrorTest, CorruptShardNamed) {
  WriteText(dir_.File(kS4), std::string_view("\x03\0\0\0\0\0\0\0{}", 10));
  Status s = OpenStatus();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_THAT(s.message(), HasSubstr(kS4));
}

// ---------------------------------------------------------------------------------------------
// Writer input validation.

TEST(SafetensorsWriterTest, RejectsBadInput) {
  std::vector<std::byte> four = Encode({1.0f}, DType::kF32);
  auto error = [](std::vector<TensorView> tensors) {
    return SerializeSafetensors(tensors).status().message();
  };
  EXPECT_THAT(error({{"a", DType::kF32, {1}, four}, {"a", DType::kF32, {1}, four}}),
              HasSubstr("duplicate tensor name 'a'"));
  EXPECT_THAT(error({{"a", DType::kF32, {2}, four}}), HasSubstr("4 bytes of data"));
  EXPECT_THAT(error({{"a", DType::kF32, {-1}, four}}), HasSubstr("negative or overflows"));
  EXPECT_THAT(error({{"__metadata__", DType::kF32, {1}, four}}), HasSubstr("reserved"));
  EXPECT_THAT(error({{"", DType::kF32, {1}, four}}), HasSubstr("empty name"));
  EXPECT_THAT(error({{"bad\xff", DType::kF32, {1}, four}}), HasSubstr("not valid UTF-8"));
  TempDir dir;
  std::vector<TensorView> short_data = {{"a", DType::kF32, {2}, four}};
  EXPECT_FALSE(WriteSafetensors(dir.File("x.safetensors"), short_data).ok());
  EXPECT_FALSE(fs::exists(dir.File("x.safetensors")));
  std::vector<TensorView> twice = {{"a", DType::kF32, {1}, four}, {"a", DType::kF32, {1}, four}};
  EXPECT_FALSE(WriteSharded(dir.path().string(), twice, 8).ok());
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

}  // namespace safetensors_test
}  // namespace sluice::model
