#include "workers/weights/weight_delta.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "common/wire/decoder.h"
#include "common/wire/encoder.h"
#include "common/wire/frame.h"
#include "workers/model/safetensors.h"

namespace sluice::weights {

namespace {

std::string Field(size_t delta, std::string_view rest) {
  return "delta[" + std::to_string(delta) + "]." + std::string(rest);
}

// Both snapshots must describe the same tensors laid out identically, because a delta addresses
// elements by (tensor, index) and the receiver patches its own copy of the data section.
Status CheckSameLayout(const WeightSnapshot& from, const WeightSnapshot& to) {
  const auto& a = from.tensors();
  const auto& b = to.tensors();
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    if (i >= a.size() || i >= b.size() || a[i].name != b[i].name) {
      const std::string& name = i >= a.size()   ? b[i].name
                                : i >= b.size() ? a[i].name
                                                : std::min(a[i].name, b[i].name);
      const bool added = from.Find(name) == nullptr;
      return Status::InvalidArgument(
          "tensor \"" + name + "\" is " +
              (added ? "new in version " + std::to_string(to.version())
                     : "missing from version " + std::to_string(to.version())) +
              "; a delta cannot add or remove tensors",
          "tensors." + name);
    }
    if (a[i].dtype != b[i].dtype || a[i].shape != b[i].shape) {
      return Status::InvalidArgument(
          "tensor \"" + a[i].name + "\" changed dtype or shape between versions " +
              std::to_string(from.version()) + " and " + std::to_string(to.version()),
          "tensors." + a[i].name);
    }
  }
  // Offsets only after every name, dtype and shape matched: a new tensor shifts the offsets of
  // others, and the error should name the tensor that was added, not one that moved.
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].offset - from.data_start() != b[i].offset - to.data_start()) {
      return Status::InvalidArgument(
          "tensor \"" + a[i].name + "\" lies at a different data offset in the two versions",
          "tensors." + a[i].name);
    }
  }
  return Status::Ok();
}

// Appends one chunk frame: `count` indices from `indices`, values taken from `to_data`.
Status AppendChunk(const std::string& name, std::span<const uint64_t> indices,
                   const std::byte* to_data, size_t element_size, std::string* out) {
  const size_t start = wire::BeginFrame(out);
  wire::Encoder enc(out);
  enc.PutString(name);
  enc.PutVarint(indices.size());
  uint64_t prev = 0;
  for (size_t k = 0; k < indices.size(); ++k) {
    enc.PutVarint(k == 0 ? indices[k] : indices[k] - prev);
    prev = indices[k];
  }
  const size_t values_at = out->size();
  out->resize(values_at + indices.size() * element_size);
  char* dst = out->data() + values_at;
  for (uint64_t idx : indices) {
    std::memcpy(dst, to_data + idx * element_size, element_size);
    dst += element_size;
  }
  SLUICE_RETURN_IF_ERROR(enc.status());
  return wire::FinishFrame(kWeightDeltaChunkFrame, start, out);
}

struct BeginFields {
  int64_t from_version = 0;
  int64_t to_version = 0;
  std::string from_digest;
  std::string to_digest;
  std::string_view to_header;
};

Status DecodeBegin(std::string_view payload, size_t index, BeginFields* out) {
  wire::Decoder d(payload);
  SLUICE_RETURN_IF_ERROR(d.GetI64(Field(index, "from_version"), &out->from_version));
  SLUICE_RETURN_IF_ERROR(d.GetI64(Field(index, "to_version"), &out->to_version));
  SLUICE_RETURN_IF_ERROR(d.GetString(Field(index, "from_digest"), &out->from_digest));
  SLUICE_RETURN_IF_ERROR(d.GetString(Field(index, "to_digest"), &out->to_digest));
  SLUICE_RETURN_IF_ERROR(d.GetStringView(Field(index, "to_header"), &out->to_header));
  if (out->to_version <= out->from_version || out->from_version < 0) {
    return Status::Corruption("versions " + std::to_string(out->from_version) + " -> " +
                                  std::to_string(out->to_version) + " do not go forward",
                              Field(index, "to_version"));
  }
  return Status::Ok();
}

// Where a tensor lies relative to the data section, as the receiver's base image lays it out.
struct Layout {
  uint64_t data_start = 0;
  std::vector<TensorSlice> tensors;  // Offsets relative to data_start; sorted by name.

  const TensorSlice* Find(std::string_view name) const {
    auto it = std::lower_bound(tensors.begin(), tensors.end(), name,
                               [](const TensorSlice& t, std::string_view n) { return t.name < n; });
    return it != tensors.end() && it->name == name ? &*it : nullptr;
  }
};

// Replaces the header of *image (which is laid out as `layout`) with `to_header`, checking that
// the new header describes the same tensors at the same data offsets and names `to_version`.
Status ReplaceHeader(std::string_view to_header, int64_t to_version, size_t index, Layout* layout,
                     std::string* image) {
  const std::string field = Field(index, "to_header");
  if (to_header.size() < 8) {
    return Status::Corruption("header of " + std::to_string(to_header.size()) + " bytes", field);
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(to_header[i]);
  if (n != to_header.size() - 8) {
    return Status::Corruption("header length prefix " + std::to_string(n) + " does not match its " +
                                  std::to_string(to_header.size() - 8) + " JSON bytes",
                              field);
  }
  image->replace(0, layout->data_start, to_header);
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(image->data()),
                                         image->size());
  Result<model::SafetensorsHeader> parsed = model::ParseSafetensorsHeader(bytes, "delta header");
  if (!parsed.ok()) return Status::Corruption(parsed.status().ToString(), field);
  const model::SafetensorsHeader& h = *parsed;
  bool same = h.tensors.size() == layout->tensors.size();
  for (size_t i = 0; same && i < h.tensors.size(); ++i) {
    const TensorSlice& t = layout->tensors[i];
    const model::TensorEntry& e = h.tensors[i];
    same = e.name == t.name && e.dtype == t.dtype && e.shape == t.shape && e.begin == t.offset &&
           e.end - e.begin == t.length;
  }
  if (!same) {
    return Status::Corruption("the new header does not describe the base's tensors and layout",
                              field);
  }
  auto v = h.metadata.find(std::string(kVersionMetadataKey));
  if (v == h.metadata.end() || v->second != std::to_string(to_version)) {
    return Status::Corruption("the new header does not name version " + std::to_string(to_version),
                              field);
  }
  layout->data_start = h.data_start;
  return Status::Ok();
}

// Applies one chunk frame to the data section of *image.
Status ApplyChunk(std::string_view payload, size_t index, size_t chunk, const Layout& layout,
                  std::vector<uint64_t>* scratch, uint64_t* changed, std::string* image) {
  const std::string prefix = "chunk[" + std::to_string(chunk) + "].";
  wire::Decoder d(payload);
  std::string_view name;
  SLUICE_RETURN_IF_ERROR(d.GetStringView(Field(index, prefix + "tensor"), &name));
  const TensorSlice* t = layout.Find(name);
  if (t == nullptr) {
    return Status::Corruption("no tensor \"" + std::string(name) + "\" in the base",
                              Field(index, prefix + "tensor"));
  }
  const std::string count_field = Field(index, prefix + "count");
  uint64_t count = 0;
  SLUICE_RETURN_IF_ERROR(d.GetVarint(count_field, &count));
  const uint64_t numel = t->NumElements();
  // Each index takes at least one byte, so a count above the bytes left is a lie; checking it
  // before reserving keeps a hostile count from allocating.
  if (count == 0 || count > numel || count > d.remaining()) {
    return Status::Corruption("count " + std::to_string(count) + " for tensor \"" + t->name +
                                  "\" of " + std::to_string(numel) + " elements with " +
                                  std::to_string(d.remaining()) + " bytes left",
                              count_field);
  }
  const std::string index_field = Field(index, prefix + "indices");
  scratch->resize(count);
  uint64_t prev = 0;
  for (uint64_t k = 0; k < count; ++k) {
    uint64_t v = 0;
    SLUICE_RETURN_IF_ERROR(d.GetVarint(index_field, &v));
    if (k > 0 && v == 0) {
      return Status::Corruption("gap 0 at entry " + std::to_string(k) + ": indices must increase",
                                index_field);
    }
    const uint64_t idx = k == 0 ? v : prev + v;
    if (idx >= numel || (k > 0 && idx < prev)) {  // idx < prev: the addition wrapped.
      return Status::Corruption("index out of range for tensor \"" + t->name + "\" of " +
                                    std::to_string(numel) + " elements at entry " +
                                    std::to_string(k),
                                index_field);
    }
    (*scratch)[k] = prev = idx;
  }
  const size_t esize = model::DTypeSize(t->dtype);
  std::string_view values;
  const std::string values_field = Field(index, prefix + "values");
  if (count > d.remaining() / esize) {
    return Status::Corruption("needs " + std::to_string(count) + " values of " +
                                  std::to_string(esize) + " bytes, " +
                                  std::to_string(d.remaining()) + " bytes left",
                              values_field);
  }
  SLUICE_RETURN_IF_ERROR(d.GetRaw(values_field, count * esize, &values));
  char* base = image->data() + layout.data_start + t->offset;
  for (uint64_t k = 0; k < count; ++k) {
    std::memcpy(base + (*scratch)[k] * esize, values.data() + k * esize, esize);
  }
  *changed += count;
  return Status::Ok();
}

}  // namespace

Result<std::string> EncodeDelta(const WeightSnapshot& from, const WeightSnapshot& to,
                                DeltaStats* stats, const DeltaEncodeOptions& options) {
  if (to.version() <= from.version()) {
    return Status::InvalidArgument("a delta goes from an older version to a newer one, not " +
                                       std::to_string(from.version()) + " -> " +
                                       std::to_string(to.version()),
                                   "version");
  }
  SLUICE_RETURN_IF_ERROR(CheckSameLayout(from, to));
  const uint64_t max_chunk = std::max<uint64_t>(1, options.max_chunk_elements);
  auto over_budget = [&](const std::string& out) {
    return options.max_bytes != 0 && out.size() > options.max_bytes;
  };
  auto too_large = [&] {
    return Status::TooLarge("the delta " + std::to_string(from.version()) + " -> " +
                                std::to_string(to.version()) + " exceeds " +
                                std::to_string(options.max_bytes) + " bytes",
                            "delta");
  };

  std::string out;
  {
    const size_t start = wire::BeginFrame(&out);
    wire::Encoder enc(&out);
    enc.PutI64(from.version());
    enc.PutI64(to.version());
    enc.PutString(from.digest());
    enc.PutString(to.digest());
    enc.PutString(to.image().substr(0, to.data_start()));
    SLUICE_RETURN_IF_ERROR(enc.status());
    SLUICE_RETURN_IF_ERROR(wire::FinishFrame(kWeightDeltaBeginFrame, start, &out));
  }

  uint64_t changed = 0;
  uint64_t total = 0;
  uint32_t chunks = 0;
  std::vector<uint64_t> indices;
  for (size_t i = 0; i < from.tensors().size(); ++i) {
    const TensorSlice& a = from.tensors()[i];
    const TensorSlice& b = to.tensors()[i];
    const size_t esize = model::DTypeSize(a.dtype);
    const uint64_t numel = a.NumElements();
    total += numel;
    const std::byte* pa = from.TensorBytes(a).data();
    const std::byte* pb = to.TensorBytes(b).data();
    // Most of a tensor is usually unchanged: skip equal blocks with one memcmp each and look at
    // single elements only inside blocks that differ.
    constexpr uint64_t kBlockElements = 256;
    auto flush = [&]() -> Status {
      if (indices.empty()) return Status::Ok();
      SLUICE_RETURN_IF_ERROR(AppendChunk(a.name, indices, pb, esize, &out));
      ++chunks;
      changed += indices.size();
      indices.clear();
      return over_budget(out) ? too_large() : Status::Ok();
    };
    for (uint64_t block = 0; block < numel; block += kBlockElements) {
      const uint64_t n = std::min(kBlockElements, numel - block);
      if (std::memcmp(pa + block * esize, pb + block * esize, n * esize) == 0) continue;
      for (uint64_t e = block; e < block + n; ++e) {
        if (std::memcmp(pa + e * esize, pb + e * esize, esize) == 0) continue;
        indices.push_back(e);
        if (indices.size() >= max_chunk) SLUICE_RETURN_IF_ERROR(flush());
      }
    }
    SLUICE_RETURN_IF_ERROR(flush());
  }

  {
    const size_t start = wire::BeginFrame(&out);
    wire::Encoder enc(&out);
    enc.PutU32(chunks);
    enc.PutU64(changed);
    enc.PutU64(total);
    SLUICE_RETURN_IF_ERROR(enc.status());
    SLUICE_RETURN_IF_ERROR(wire::FinishFrame(kWeightDeltaEndFrame, start, &out));
  }
  if (over_budget(out)) return too_large();
  if (stats != nullptr) *stats = {changed, total, out.size()};
  return out;
}

Result<WeightSnapshot> ApplyDelta(const WeightSnapshot& base, std::string_view chain) {
  if (chain.empty()) return base;
  // One private copy of the base image, patched in place delta after delta; `base` stays intact
  // whatever the chain holds.
  std::string image(base.image());
  Layout layout;
  layout.data_start = base.data_start();
  for (const TensorSlice& t : base.tensors()) {
    layout.tensors.push_back(t);
    layout.tensors.back().offset -= base.data_start();
  }
  int64_t version = base.version();
  std::string digest = base.digest();
  std::vector<uint64_t> scratch;
  wire::FrameReader reader(chain);
  for (size_t index = 0; !reader.AtEnd(); ++index) {
    Result<wire::Frame> first = reader.Next();
    if (!first.ok()) {
      return first.status().WithContext("delta " + std::to_string(index) + " at byte " +
                                        std::to_string(reader.offset()));
    }
    if (first->type != kWeightDeltaBeginFrame) {
      return Status::Corruption(
          "frame type " + std::to_string(first->type) + " where a delta's begin frame belongs",
          Field(index, "begin"));
    }
    BeginFields begin;
    SLUICE_RETURN_IF_ERROR(DecodeBegin(first->payload, index, &begin));
    const bool repeat = index == 0 && version == begin.to_version && digest == begin.to_digest;
    if (!repeat && (version != begin.from_version || digest != begin.from_digest)) {
      const std::string message = "delta " + std::to_string(index) + " goes from version " +
                                  std::to_string(begin.from_version) + " (" + begin.from_digest +
                                  "), but the weights it applies to are version " +
                                  std::to_string(version) + " (" + digest + ")";
      if (index == 0) return Status::InvalidArgument(message, Field(index, "from_version"));
      return Status::Corruption(message, Field(index, "from_version"));
    }
    SLUICE_RETURN_IF_ERROR(
        ReplaceHeader(begin.to_header, begin.to_version, index, &layout, &image));

    uint64_t changed = 0;
    uint32_t chunks = 0;
    std::string_view end_payload;
    while (true) {
      Result<wire::Frame> f = reader.Next();
      if (!f.ok()) {
        if (f.status().code() == StatusCode::kNotFound) {
          return Status::Corruption(
              "the chain ends inside delta " + std::to_string(index) + " (no end frame)",
              Field(index, "end"));
        }
        return f.status().WithContext("delta " + std::to_string(index) + " at byte " +
                                      std::to_string(reader.offset()));
      }
      if (f->type == kWeightDeltaEndFrame) {
        end_payload = f->payload;
        break;
      }
      if (f->type != kWeightDeltaChunkFrame) {
        return Status::Corruption(
            "frame type " + std::to_string(f->type) + " where a chunk or end frame belongs",
            Field(index, "chunk[" + std::to_string(chunks) + "]"));
      }
      SLUICE_RETURN_IF_ERROR(
          ApplyChunk(f->payload, index, chunks, layout, &scratch, &changed, &image));
      ++chunks;
    }
    wire::Decoder d(end_payload);
    uint32_t want_chunks = 0;
    uint64_t want_changed = 0;
    uint64_t want_total = 0;
    SLUICE_RETURN_IF_ERROR(d.GetU32(Field(index, "end.chunks"), &want_chunks));
    SLUICE_RETURN_IF_ERROR(d.GetU64(Field(index, "end.changed_elements"), &want_changed));
    SLUICE_RETURN_IF_ERROR(d.GetU64(Field(index, "end.total_elements"), &want_total));
    if (want_chunks != chunks || want_changed != changed) {
      return Status::Corruption("the end frame counts " + std::to_string(want_chunks) +
                                    " chunks and " + std::to_string(want_changed) +
                                    " elements, the delta held " + std::to_string(chunks) +
                                    " and " + std::to_string(changed),
                                Field(index, "end"));
    }
    version = begin.to_version;
    digest = std::move(begin.to_digest);
  }
  SLUICE_ASSIGN_OR_RETURN(WeightSnapshot result, WeightSnapshot::Parse(std::move(image), digest));
  if (result.version() != version) {
    return Status::Corruption("the result names version " + std::to_string(result.version()) +
                                  ", the chain ends at " + std::to_string(version),
                              "version");
  }
  return result;
}

}  // namespace sluice::weights
