// WeightSnapshot: one published version of a policy's weights, immutable once built.
//
// It owns the complete safetensors file image exactly as GET /v1/weights/{version} serves it
// (model/safetensors.h layout; metadata {"format": "pt", "sluice.version": "<version>"}), the
// image's digest (weight_digest.h) and, per tensor, where its bytes lie in the image. The trainer
// builds one from its parameters with Build; a rollout worker rebuilds one from downloaded bytes
// with Parse, which checks the digest when it is given.
//
// Ownership: the image is held by a shared_ptr so HTTP responses can keep streaming it after the
// store drops the version; tensor spans returned by TensorBytes/Views point into it and live as
// long as the snapshot (or a copy of it: copies share the image). Memory: one image, i.e. the
// sum of the tensor bytes plus the JSON header. Thread safety: immutable, so any number of
// threads may read one snapshot. Sizes and offsets are in bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "workers/model/safetensors.h"

namespace sluice::weights {

// The safetensors metadata key carrying the version number, in decimal.
inline constexpr std::string_view kVersionMetadataKey = "sluice.version";

// Where one tensor lies in a snapshot's image.
struct TensorSlice {
  std::string name;
  model::DType dtype = model::DType::kF32;
  std::vector<int64_t> shape;
  uint64_t offset = 0;  // From the start of the image (not of the data section).
  uint64_t length = 0;  // product(shape) * DTypeSize(dtype).

  uint64_t NumElements() const { return length / model::DTypeSize(dtype); }
};

class WeightSnapshot {
 public:
  // Serializes `tensors` (copied; the views need only live during the call) as version
  // `version` (>= 0). Errors: those of SerializeSafetensors (InvalidArgument naming the tensor),
  // InvalidArgument for a negative version.
  static Result<WeightSnapshot> Build(std::span<const model::TensorView> tensors, int64_t version);

  // Adopts a downloaded image. When `expected_digest` is non-empty the image's digest must equal
  // it (Corruption, field "digest", otherwise). The header must parse (Corruption from
  // ParseSafetensorsHeader) and carry "sluice.version" as a non-negative decimal (Corruption,
  // field "metadata.sluice.version").
  static Result<WeightSnapshot> Parse(std::string image, std::string_view expected_digest = {});

  int64_t version() const { return version_; }
  // The whole safetensors file image.
  std::string_view image() const { return *image_; }
  // The image as a shared pointer, for a reader that must outlive this snapshot (a response).
  const std::shared_ptr<const std::string>& shared_image() const { return image_; }
  uint64_t size_bytes() const { return image_->size(); }
  // "sha256:<hex>" of image().
  const std::string& digest() const { return digest_; }
  // Byte offset in the image where the data section (the tensors) starts.
  uint64_t data_start() const { return data_start_; }
  // Sorted by name.
  const std::vector<TensorSlice>& tensors() const { return tensors_; }
  // Sum of NumElements over the tensors.
  uint64_t total_elements() const;

  // nullptr when absent.
  const TensorSlice* Find(std::string_view name) const;
  std::span<const std::byte> TensorBytes(const TensorSlice& slice) const;
  // Views of every tensor, in name order, pointing into the image.
  std::vector<model::TensorView> Views() const;

 private:
  WeightSnapshot() = default;
  // Fills tensors_, data_start_ and version_ from the image's header.
  Status Index(std::string_view label);

  int64_t version_ = 0;
  std::shared_ptr<const std::string> image_;
  std::string digest_;
  uint64_t data_start_ = 0;
  std::vector<TensorSlice> tensors_;
};

}  // namespace sluice::weights
