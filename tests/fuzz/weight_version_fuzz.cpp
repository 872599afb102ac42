// libFuzzer target for what a rollout worker parses from a trainer's or relay's weight routes
// (workers/weights/): the delta chain of GET /v1/weights/{v}/delta (ApplyDelta, weight_delta.h),
// the full safetensors image of GET /v1/weights/{v} (WeightSnapshot::Parse, weight_snapshot.h),
// and the header values around them (CheckDigestSyntax for X-Sluice-Weights-Digest,
// ParseVersionNumber and ParseRangeHeader, which a relay applies to its peers' requests).
//
// The first byte selects the route (its low 4 bits, modulo 5: '0'..'4' are routes 0..4), the rest
// is its input:
//   0  [u32 LE n][n bytes: the base image][the delta chain as raw bytes]
//   1  [u32 LE n][n bytes: the base image][frames as (u16 LE type, u32 LE length, payload)...],
//      framed with valid CRCs, so the fuzzer reaches the delta checks behind the frame checks
//   2  round trip from a built-in base: [options][frame][u16 LE position][xor][data...]: the data
//      XORed over the base's tensors gives version `to` (and, with option 0x20, a second version
//      after it); their delta chain is encoded, applied, applied again, and applied with one
//      payload byte of one frame changed (and the frame's CRCs made valid again)
//   3  a full image
//   4  a header value
//
// Nothing may crash. Checked: an applied chain yields an image whose digest is the one reported,
// with the base's tensors at the base's relative offsets, at a version not older than the base,
// and leaves the base intact; a single delta applies again to its own result (idempotent);
// EncodeDelta's stats count exactly the changed elements, and the chain rebuilds the exact
// image; a changed chain either fails or still yields the exact final image; a parsed image
// indexes its tensors inside the image, sorted by name, re-parses with its digest, refuses another
// digest, and rebuilds (Build) to the same tensors; CheckDigestSyntax accepts DigestOf's output;
// accepted version numbers and byte ranges are in range.
//
// Fuzz it with `scripts/fuzz.sh weight_version [seconds]` (tests/fuzz/CMakeLists.txt).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "common/wire/format.h"
#include "common/wire/frame.h"
#include "tests/fuzz/fuzz_require.h"
#include "workers/model/safetensors.h"
#include "workers/weights/weight_delta.h"
#include "workers/weights/weight_digest.h"
#include "workers/weights/weight_routes.h"
#include "workers/weights/weight_snapshot.h"

namespace {

using sluice::StatusCode;
using sluice::model::DType;
using sluice::model::TensorView;
using sluice::weights::WeightSnapshot;

constexpr size_t kMaxInputBytes = 64 << 10;

using sluice::fuzz::Require;

uint32_t LoadLe32(std::string_view s, size_t at) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) v |= uint32_t{static_cast<uint8_t>(s[at + i])} << (8 * i);
  return v;
}

// A small published version: three tensors of three element sizes.
const WeightSnapshot& BuiltinBase() {
  static const WeightSnapshot base = [] {
    std::vector<float> w = {0.5f, -1.0f, 2.0f, 0.0f, -0.0f, 3.25f};
    std::vector<uint16_t> b = {0x3f80, 0xbf80, 0x0000, 0x7fc0};  // bf16 1, -1, 0, NaN.
    std::vector<int64_t> ids = {7, -9};
    auto bytes = [](const auto& v) { return std::as_bytes(std::span(v.data(), v.size())); };
    const std::vector<TensorView> views = {{"model.bias", DType::kBF16, {4}, bytes(b)},
                                           {"model.ids", DType::kI64, {2}, bytes(ids)},
                                           {"model.weight", DType::kF32, {2, 3}, bytes(w)}};
    auto built = WeightSnapshot::Build(views, 1);
    Require(built.ok(), "the built-in base builds");
    return std::move(built).value();
  }();
  return base;
}

// The same tensors (names, dtypes, shapes) and, with same_layout, at the same offsets from the
// start of the data section.
void CheckSameTensors(const WeightSnapshot& a, const WeightSnapshot& b, bool same_layout,
                      const char* what) {
  Require(a.tensors().size() == b.tensors().size(), what);
  for (size_t i = 0; i < a.tensors().size(); ++i) {
    const auto& x = a.tensors()[i];
    const auto& y = b.tensors()[i];
    Require(x.name == y.name && x.dtype == y.dtype && x.shape == y.shape && x.length == y.length,
            what);
    if (same_layout) Require(x.offset - a.data_start() == y.offset - b.data_start(), what);
  }
}

void CheckVerified(const WeightSnapshot& s) {
  Require(s.digest() == sluice::weights::DigestOf(s.image()), "the digest is the image's");
}

// How many frames begin a delta in `chain` (nullopt when its frames do not all read).
std::optional<size_t> CountBegins(std::string_view chain) {
  sluice::wire::FrameReader reader(chain);
  size_t begins = 0;
  while (!reader.AtEnd()) {
    auto frame = reader.Next();
    if (!frame.ok()) return std::nullopt;
    begins += frame->type == sluice::weights::kWeightDeltaBeginFrame ? 1 : 0;
  }
  return begins;
}

void ApplyAndCheck(const WeightSnapshot& base, std::string_view chain) {
  auto result = sluice::weights::ApplyDelta(base, chain);
  CheckVerified(base);  // The base stays intact whatever the chain holds.
  if (!result.ok()) return;
  CheckVerified(*result);
  CheckSameTensors(base, *result, /*same_layout=*/true,
                   "a delta keeps the base's tensors and layout");
  Require(result->version() >= base.version(), "a chain does not go back in versions");
  if (CountBegins(chain) == 1) {
    auto again = sluice::weights::ApplyDelta(*result, chain);
    Require(again.ok() && again->digest() == result->digest(),
            "a delta applies again to its own result");
  }
}

// Route 0 and 1: a base image from the input, then the chain.
void FuzzChain(std::string_view in, bool framed) {
  if (in.size() < 4) return;
  const uint32_t n = LoadLe32(in, 0);
  if (n > in.size() - 4) return;
  auto base = WeightSnapshot::Parse(std::string(in.substr(4, n)));
  if (!base.ok()) return;
  std::string_view rest = in.substr(4 + n);
  if (!framed) return ApplyAndCheck(*base, rest);
  std::string chain;
  while (rest.size() >= 6) {
    const auto type =
        static_cast<uint16_t>(static_cast<uint8_t>(rest[0]) | (static_cast<uint8_t>(rest[1]) << 8));
    const size_t length = std::min<size_t>(LoadLe32(rest, 2), rest.size() - 6);
    Require(sluice::wire::AppendFrame(type, rest.substr(6, length), &chain).ok(), "frame");
    rest.remove_prefix(6 + length);
  }
  ApplyAndCheck(*base, chain);
}

// The tensors of `from` with `data` XORed over their bytes (in name order, from `skip` on).
WeightSnapshot Xored(const WeightSnapshot& from, std::string_view data, size_t skip,
                     int64_t version) {
  std::vector<std::vector<std::byte>> buffers;
  std::vector<TensorView> views = from.Views();
  buffers.reserve(views.size());
  size_t at = skip;
  for (TensorView& v : views) {
    buffers.emplace_back(v.data.begin(), v.data.end());
    for (std::byte& b : buffers.back()) {
      if (at < data.size()) b ^= static_cast<std::byte>(data[at++]);
    }
    v.data = buffers.back();
  }
  auto built = WeightSnapshot::Build(views, version);
  Require(built.ok(), "a changed version builds");
  return std::move(built).value();
}

uint64_t ChangedElements(const WeightSnapshot& a, const WeightSnapshot& b) {
  uint64_t changed = 0;
  for (size_t i = 0; i < a.tensors().size(); ++i) {
    const auto x = a.TensorBytes(a.tensors()[i]);
    const auto y = b.TensorBytes(b.tensors()[i]);
    const size_t esize = sluice::model::DTypeSize(a.tensors()[i].dtype);
    for (size_t e = 0; e + esize <= x.size(); e += esize) {
      changed += std::memcmp(x.data() + e, y.data() + e, esize) != 0 ? 1 : 0;
    }
  }
  return changed;
}

std::string EncodeChecked(const WeightSnapshot& from, const WeightSnapshot& to,
                          uint64_t max_chunk) {
  sluice::weights::DeltaStats stats;
  sluice::weights::DeltaEncodeOptions options;
  options.max_chunk_elements = max_chunk;
  auto delta = sluice::weights::EncodeDelta(from, to, &stats, options);
  Require(delta.ok(), "a delta between same-shaped versions encodes");
  Require(stats.changed_elements == ChangedElements(from, to), "stats count the changed elements");
  Require(stats.total_elements == from.total_elements(), "stats count every element");
  Require(stats.bytes == delta->size(), "stats count the delta's bytes");
  return std::move(delta).value();
}

// Route 2.
void FuzzRoundTrip(std::string_view in) {
  if (in.size() < 5) return;
  const auto options = static_cast<uint8_t>(in[0]);
  const auto frame_pick = static_cast<uint8_t>(in[1]);
  const uint16_t position =
      static_cast<uint16_t>(static_cast<uint8_t>(in[2]) | (static_cast<uint8_t>(in[3]) << 8));
  const auto flip = static_cast<uint8_t>(in[4]);
  const std::string_view data = in.substr(5);

  const WeightSnapshot& base = BuiltinBase();
  const uint64_t max_chunk = 1 + ((options >> 2) & 7);
  const WeightSnapshot to = Xored(base, data, 0, base.version() + 1 + (options & 3));
  std::string chain = EncodeChecked(base, to, max_chunk);

  auto applied = sluice::weights::ApplyDelta(base, chain);
  Require(applied.ok() && applied->image() == to.image() && applied->version() == to.version() &&
              applied->digest() == to.digest(),
          "a delta rebuilds the exact image");
  auto repeated = sluice::weights::ApplyDelta(to, chain);
  Require(repeated.ok() && repeated->digest() == to.digest(),
          "a delta applied to its target changes nothing");

  const WeightSnapshot* last = &to;
  std::optional<WeightSnapshot> to2;
  if (options & 0x20) {
    to2 = Xored(to, data, data.size() / 2, to.version() + 1);
    chain += EncodeChecked(to, *to2, max_chunk);
    auto both = sluice::weights::ApplyDelta(base, chain);
    Require(both.ok() && both->image() == to2->image(), "a chain of two rebuilds the image");
    last = &*to2;
  }
  if (flip == 0) return;

  // One payload byte of one frame changed, the frames' CRCs valid again.
  std::vector<std::pair<uint16_t, std::string>> frames;
  sluice::wire::FrameReader reader(chain);
  while (!reader.AtEnd()) {
    auto f = reader.Next();
    Require(f.ok(), "an encoded chain reads as frames");
    frames.emplace_back(f->type, std::string(f->payload));
  }
  std::string& payload = frames[frame_pick % frames.size()].second;
  if (payload.empty()) return;
  payload[position % payload.size()] ^= static_cast<char>(flip);
  std::string changed;
  for (const auto& [type, bytes] : frames) {
    Require(sluice::wire::AppendFrame(type, bytes, &changed).ok(), "re-frame");
  }
  auto result = sluice::weights::ApplyDelta(base, changed);
  if (result.ok()) {
    Require(result->image() == last->image(), "a changed chain fails or yields the exact image");
  }
}

// Route 3.
void FuzzImage(std::string_view image) {
  auto parsed = WeightSnapshot::Parse(std::string(image));
  if (!parsed.ok()) return;
  const WeightSnapshot& s = *parsed;
  CheckVerified(s);
  Require(sluice::weights::CheckDigestSyntax(s.digest(), "digest").ok(), "digest syntax");
  Require(s.version() >= 0, "version >= 0");
  Require(s.data_start() <= s.size_bytes(), "data inside the image");
  uint64_t elements = 0;
  bool names_ok = true;
  for (size_t i = 0; i < s.tensors().size(); ++i) {
    const auto& t = s.tensors()[i];
    if (i > 0) Require(s.tensors()[i - 1].name < t.name, "tensors sorted by name");
    Require(t.offset >= s.data_start() && t.offset <= s.size_bytes() &&
                t.length <= s.size_bytes() - t.offset,
            "tensor inside the image");
    Require(t.length % sluice::model::DTypeSize(t.dtype) == 0, "whole elements");
    Require(s.Find(t.name) == &t, "Find finds the tensor");
    Require(s.TensorBytes(t).size() == t.length, "TensorBytes covers the tensor");
    elements += t.NumElements();
    names_ok &= !t.name.empty();
  }
  Require(elements == s.total_elements(), "total_elements");

  Require(WeightSnapshot::Parse(std::string(image), s.digest()).ok(), "parses with its digest");
  std::string other = s.digest();
  other.back() = other.back() == '0' ? '1' : '0';
  auto refused = WeightSnapshot::Parse(std::string(image), other);
  Require(!refused.ok() && refused.status().code() == StatusCode::kCorruption &&
              refused.status().field() == "digest",
          "another digest is refused");

  // The writer refuses empty names, which the format allows.
  if (!names_ok) return;
  auto rebuilt = WeightSnapshot::Build(s.Views(), s.version());
  Require(rebuilt.ok(), "a parsed image rebuilds");
  Require(rebuilt->version() == s.version(), "rebuilt version");
  // The writer lays the data out its own way: offsets may differ.
  CheckSameTensors(s, *rebuilt, /*same_layout=*/false, "rebuilt tensors");
  for (size_t i = 0; i < s.tensors().size(); ++i) {
    const auto x = s.TensorBytes(s.tensors()[i]);
    const auto y = rebuilt->TensorBytes(rebuilt->tensors()[i]);
    Require(x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size()) == 0,
            "rebuilt bytes");
  }
}

// Route 4.
void FuzzHeaderValue(std::string_view value) {
  const bool digest_ok = sluice::weights::CheckDigestSyntax(value, "X-Sluice-Weights-Digest").ok();
  bool expected = value.size() == 71 && value.starts_with("sha256:");
  for (size_t i = 7; expected && i < value.size(); ++i) {
    expected = (value[i] >= '0' && value[i] <= '9') || (value[i] >= 'a' && value[i] <= 'f');
  }
  Require(digest_ok == expected, "CheckDigestSyntax accepts sha256:<64 lowercase hex>");
  Require(sluice::weights::CheckDigestSyntax(sluice::weights::DigestOf(value), "d").ok(),
          "DigestOf's output passes CheckDigestSyntax");

  auto version = sluice::weights::ParseVersionNumber(value, "version");
  if (version.ok()) {
    Require(*version >= 0 && !value.empty(), "a version is non-negative");
    for (char c : value) Require(c >= '0' && c <= '9', "a version is decimal digits");
    auto again = sluice::weights::ParseVersionNumber(std::to_string(*version), "version");
    Require(again.ok() && *again == *version, "a version prints and parses back");
  } else {
    Require(version.status().code() == StatusCode::kInvalidArgument &&
                version.status().field() == "version",
            "a bad version names its field");
  }

  for (uint64_t size :
       {uint64_t{0}, uint64_t{1}, uint64_t{1000}, uint64_t{std::numeric_limits<int64_t>::max()},
        std::numeric_limits<uint64_t>::max()}) {
    auto range = sluice::weights::ParseRangeHeader(value, size);
    if (!range.ok()) {
      Require(range.status().field() == "Range" &&
                  (range.status().code() == StatusCode::kInvalidArgument ||
                   range.status().code() == StatusCode::kUnprocessable),
              "a bad Range is 400 or 416 naming Range");
      continue;
    }
    Require(range->has_value() == !value.empty(), "only an empty Range means the whole body");
    if (!range->has_value()) continue;
    const auto& r = **range;
    Require(r.length >= 1 && r.offset < size && r.length <= size - r.offset,
            "a range lies inside the body");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  if (size == 0 || size > kMaxInputBytes) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(bytes) + 1, size - 1);
  switch ((bytes[0] & 0x0f) % 5) {
    case 0:
      FuzzChain(rest, /*framed=*/false);
      break;
    case 1:
      FuzzChain(rest, /*framed=*/true);
      break;
    case 2:
      FuzzRoundTrip(rest);
      break;
    case 3:
      FuzzImage(rest);
      break;
    default:
      FuzzHeaderValue(rest);
      break;
  }
  return 0;
}
