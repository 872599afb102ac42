#include "workers/weights/weight_snapshot.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <utility>

#include "workers/weights/weight_digest.h"

namespace sluice::weights {

namespace {

std::span<const std::byte> SnapshotBytes(std::string_view s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

}  // namespace

Result<WeightSnapshot> WeightSnapshot::Build(std::span<const model::TensorView> tensors,
                                             int64_t version) {
  if (version < 0) {
    return Status::InvalidArgument("version must be >= 0, got " + std::to_string(version),
                                   "version");
  }
  const std::map<std::string, std::string> metadata = {
      {"format", "pt"}, {std::string(kVersionMetadataKey), std::to_string(version)}};
  SLUICE_ASSIGN_OR_RETURN(std::vector<std::byte> bytes,
                          model::SerializeSafetensors(tensors, metadata));
  WeightSnapshot s;
  s.image_ = std::make_shared<const std::string>(reinterpret_cast<const char*>(bytes.data()),
                                                 bytes.size());
  bytes = {};  // Release the serializer's copy before hashing: peak memory is two images.
  s.digest_ = DigestOf(*s.image_);
  SLUICE_RETURN_IF_ERROR(s.Index("version " + std::to_string(version)));
  return s;
}

Result<WeightSnapshot> WeightSnapshot::Parse(std::string image, std::string_view expected_digest) {
  WeightSnapshot s;
  s.image_ = std::make_shared<const std::string>(std::move(image));
  s.digest_ = DigestOf(*s.image_);
  if (!expected_digest.empty() && s.digest_ != expected_digest) {
    return Status::Corruption("weights image of " + std::to_string(s.image_->size()) +
                                  " bytes has digest " + s.digest_ + ", expected " +
                                  std::string(expected_digest),
                              "digest");
  }
  SLUICE_RETURN_IF_ERROR(s.Index("weights image"));
  return s;
}

Status WeightSnapshot::Index(std::string_view label) {
  SLUICE_ASSIGN_OR_RETURN(model::SafetensorsHeader header,
                          model::ParseSafetensorsHeader(SnapshotBytes(*image_), label));
  auto it = header.metadata.find(std::string(kVersionMetadataKey));
  const std::string field = "metadata." + std::string(kVersionMetadataKey);
  if (it == header.metadata.end()) {
    return Status::Corruption(std::string(label) + ": no \"sluice.version\" in the metadata",
                              field);
  }
  const std::string& text = it->second;
  int64_t v = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0) {
    return Status::Corruption(
        std::string(label) + ": \"sluice.version\" is not a non-negative integer: \"" + text + "\"",
        field);
  }
  version_ = v;
  data_start_ = header.data_start;
  tensors_.clear();
  tensors_.reserve(header.tensors.size());
  for (model::TensorEntry& e : header.tensors) {
    tensors_.push_back({std::move(e.name), e.dtype, std::move(e.shape), header.data_start + e.begin,
                        e.end - e.begin});
  }
  return Status::Ok();
}

uint64_t WeightSnapshot::total_elements() const {
  uint64_t n = 0;
  for (const TensorSlice& t : tensors_) n += t.NumElements();
  return n;
}

const TensorSlice* WeightSnapshot::Find(std::string_view name) const {
  auto it = std::lower_bound(tensors_.begin(), tensors_.end(), name,
                             [](const TensorSlice& t, std::string_view n) { return t.name < n; });
  return it != tensors_.end() && it->name == name ? &*it : nullptr;
}

std::span<const std::byte> WeightSnapshot::TensorBytes(const TensorSlice& slice) const {
  return SnapshotBytes(*image_).subspan(slice.offset, slice.length);
}

std::vector<model::TensorView> WeightSnapshot::Views() const {
  std::vector<model::TensorView> out;
  out.reserve(tensors_.size());
  for (const TensorSlice& t : tensors_) out.push_back({t.name, t.dtype, t.shape, TensorBytes(t)});
  return out;
}

}  // namespace sluice::weights
