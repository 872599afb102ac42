// libFuzzer target for the safetensors header parser (workers/model/safetensors.h).
//
// Each input is a whole file image. The parser must never crash, read out of bounds or hang; when
// it accepts an image, every tensor it reports must lie inside the image and decode, and writing
// the tensors back out must give an image that parses to the same tensors.
//
// Fuzz it with `scripts/fuzz.sh safetensors_header [seconds]` (tests/fuzz/CMakeLists.txt).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "tests/fuzz/fuzz_require.h"
#include "workers/model/safetensors.h"

namespace {

using sluice::model::SafetensorsHeader;
using sluice::model::SafetensorsParseOptions;
using sluice::model::TensorView;

using sluice::fuzz::Require;

void CheckAccepted(std::span<const std::byte> image, const SafetensorsHeader& header) {
  Require(header.data_start == 8 + header.header_length, "data_start");
  Require(header.data_start + header.data_length == image.size(), "data_length");
  std::span<const std::byte> data = image.subspan(header.data_start);
  std::vector<TensorView> views;
  bool names_ok = true;
  for (const auto& t : header.tensors) {
    Require(t.begin <= t.end && t.end <= data.size(), "tensor inside the data section");
    views.push_back({t.name, t.dtype, t.shape, data.subspan(t.begin, t.end - t.begin)});
    Require(views.back().NumElements() >= 0, "element count");
    // Decoding big tensors is slow and proves nothing more.
    if (t.end - t.begin <= 4096) Require(ToFloat32(views.back()).ok(), "ToFloat32");
    names_ok &= !t.name.empty();
  }
  auto again = sluice::model::SerializeSafetensors(views, header.metadata);
  if (!again.ok()) {
    // The writer refuses empty names, which the format (and so the parser) allows.
    Require(!names_ok, "an accepted file re-serializes");
    return;
  }
  auto reparsed = sluice::model::ParseSafetensorsHeader(*again);
  Require(reparsed.ok(), "a written file parses");
  Require(reparsed->metadata == header.metadata, "metadata round trip");
  Require(reparsed->tensors.size() == header.tensors.size(), "tensor count round trip");
  std::span<const std::byte> data2 =
      std::span<const std::byte>(*again).subspan(reparsed->data_start);
  for (size_t i = 0; i < header.tensors.size(); ++i) {
    const auto& a = header.tensors[i];
    const auto& b = reparsed->tensors[i];
    Require(a.name == b.name && a.dtype == b.dtype && a.shape == b.shape, "entry round trip");
    Require(a.end - a.begin == b.end - b.begin, "size round trip");
    Require(a.end == a.begin ||
                std::memcmp(data.data() + a.begin, data2.data() + b.begin, a.end - a.begin) == 0,
            "bytes round trip");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  std::span<const std::byte> image(reinterpret_cast<const std::byte*>(bytes), size);
  for (bool allow_gaps : {false, true}) {
    SafetensorsParseOptions options;
    options.max_header_bytes = uint64_t{1} << 20;
    options.allow_gaps = allow_gaps;
    auto header = sluice::model::ParseSafetensorsHeader(image, "fuzz", options);
    if (header.ok()) CheckAccepted(image, *header);
  }
  return 0;
}
