// Writing safetensors files (SerializeSafetensors, WriteSafetensors, WriteSharded; declared in
// safetensors.h): checking the tensors, laying out the header and data as the reference
// implementation does, and writing files atomically (temporary file, fsync, rename, fsync of the
// directory). Reading and validating files is in safetensors.cpp.

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "common/file/atomic_file.h"
#include "common/status.h"
#include "workers/model/safetensors.h"
#include "workers/model/safetensors_internal.h"

namespace sluice::model {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using safetensors_internal::ComputeExtent;
using safetensors_internal::Extent;
using safetensors_internal::kLengthPrefixBytes;
using safetensors_internal::kMetadataKey;
using safetensors_internal::QuoteTensorName;
using safetensors_internal::ShapeString;

// The serialized header and the data order of a validated set of tensors.
struct Layout {
  std::string header;         // Padded JSON, without the length prefix.
  std::vector<size_t> order;  // Indices into the tensors, in data order.
  uint64_t data_bytes = 0;
};

Result<std::string> JsonString(std::string_view text) {
  try {
    return json(std::string(text)).dump(-1, ' ', false, json::error_handler_t::strict);
  } catch (const json::exception&) {
    return Status::InvalidArgument("safetensors: " + QuoteTensorName(text) + " is not valid UTF-8");
  }
}

// Checks names, shapes and byte counts; returns the tensors' byte sizes.
Result<std::vector<uint64_t>> ValidateForWrite(std::span<const TensorView> tensors) {
  std::vector<uint64_t> sizes;
  sizes.reserve(tensors.size());
  std::set<std::string_view> names;
  for (const TensorView& t : tensors) {
    if (t.name.empty()) return Status::InvalidArgument("safetensors: a tensor has an empty name");
    if (t.name == kMetadataKey) {
      return Status::InvalidArgument(
          "safetensors: \"__metadata__\" is reserved, not a tensor name");
    }
    if (!names.insert(t.name).second) {
      return Status::InvalidArgument("safetensors: duplicate tensor name " +
                                     QuoteTensorName(t.name));
    }
    std::optional<Extent> extent = ComputeExtent(t.dtype, t.shape);
    if (!extent) {
      return Status::InvalidArgument("safetensors: tensor " + QuoteTensorName(t.name) + ": shape " +
                                     ShapeString(t.shape) + " is negative or overflows");
    }
    if (t.data.size() != extent->bytes) {
      return Status::InvalidArgument(
          "safetensors: tensor " + QuoteTensorName(t.name) + ": " + std::to_string(t.data.size()) +
          " bytes of data but shape " + ShapeString(t.shape) + " of " +
          std::string(DTypeName(t.dtype)) + " needs " + std::to_string(extent->bytes));
    }
    sizes.push_back(extent->bytes);
  }
  return sizes;
}

Result<Layout> PlanLayout(std::span<const TensorView> tensors,
                          const std::map<std::string, std::string>& metadata) {
  SLUICE_ASSIGN_OR_RETURN(std::vector<uint64_t> sizes, ValidateForWrite(tensors));
  Layout layout;
  layout.order.resize(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) layout.order[i] = i;
  // Largest element size first keeps every tensor aligned to its element size.
  std::sort(layout.order.begin(), layout.order.end(), [&](size_t a, size_t b) {
    size_t sa = DTypeSize(tensors[a].dtype);
    size_t sb = DTypeSize(tensors[b].dtype);
    if (sa != sb) return sa > sb;
    return tensors[a].name < tensors[b].name;
  });
  std::vector<uint64_t> begins(tensors.size());
  for (size_t i : layout.order) {
    begins[i] = layout.data_bytes;
    layout.data_bytes += sizes[i];
  }

  std::vector<size_t> by_name(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) by_name[i] = i;
  std::sort(by_name.begin(), by_name.end(),
            [&](size_t a, size_t b) { return tensors[a].name < tensors[b].name; });

  std::string& h = layout.header;
  h.push_back('{');
  bool first = true;
  if (!metadata.empty()) {
    h.append("\"__metadata__\":{");
    bool first_key = true;
    for (const auto& [key, value] : metadata) {
      SLUICE_ASSIGN_OR_RETURN(std::string k, JsonString(key));
      SLUICE_ASSIGN_OR_RETURN(std::string v, JsonString(value));
      if (!first_key) h.push_back(',');
      first_key = false;
      h.append(k).append(":").append(v);
    }
    h.push_back('}');
    first = false;
  }
  for (size_t i : by_name) {
    const TensorView& t = tensors[i];
    SLUICE_ASSIGN_OR_RETURN(std::string name, JsonString(t.name));
    if (!first) h.push_back(',');
    first = false;
    h.append(name);
    h.append(":{\"dtype\":\"").append(DTypeName(t.dtype)).append("\",\"shape\":");
    h.append(ShapeString(t.shape));
    h.append(",\"data_offsets\":[");
    h.append(std::to_string(begins[i])).append(",").append(std::to_string(begins[i] + sizes[i]));
    h.append("]}");
  }
  h.push_back('}');
  // Pad with spaces (JSON whitespace) so the data section starts at a multiple of 8.
  while ((kLengthPrefixBytes + h.size()) % 8 != 0) h.push_back(' ');
  return layout;
}

void AppendLengthPrefix(uint64_t n, std::string* out) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((n >> (8 * i)) & 0xff));
}

// Writes the pieces to `path` atomically (common/file/atomic_file.h).
Status WriteAtomically(const std::string& path,
                       std::span<const std::span<const std::byte>> pieces) {
  return file::WriteFileAtomic(path, 0644,
                               [pieces](file::WritableFile& out) {
                                 for (std::span<const std::byte> piece : pieces) {
                                   SLUICE_RETURN_IF_ERROR(out.Append(std::string_view(
                                       reinterpret_cast<const char*>(piece.data()), piece.size())));
                                 }
                                 return Status::Ok();
                               })
      .WithContext("safetensors");
}

std::span<const std::byte> AsBytes(std::string_view s) {
  return std::as_bytes(std::span<const char>(s.data(), s.size()));
}

std::string ShardName(size_t index, size_t count) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "model-%05zu-of-%05zu.safetensors", index, count);
  return buf;
}

bool IsShardName(std::string_view name) {
  // model-DDDDD-of-DDDDD.safetensors
  constexpr std::string_view kPattern = "model-#####-of-#####.safetensors";
  if (name.size() != kPattern.size()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (kPattern[i] == '#' ? (name[i] < '0' || name[i] > '9') : name[i] != kPattern[i]) {
      return false;
    }
  }
  return true;
}

}  // namespace

Result<std::vector<std::byte>> SerializeSafetensors(
    std::span<const TensorView> tensors, const std::map<std::string, std::string>& metadata) {
  SLUICE_ASSIGN_OR_RETURN(Layout layout, PlanLayout(tensors, metadata));
  std::string prefix;
  AppendLengthPrefix(layout.header.size(), &prefix);
  std::vector<std::byte> out;
  out.reserve(prefix.size() + layout.header.size() + layout.data_bytes);
  auto append = [&out](std::span<const std::byte> bytes) {
    out.insert(out.end(), bytes.begin(), bytes.end());
  };
  append(AsBytes(prefix));
  append(AsBytes(layout.header));
  for (size_t i : layout.order) append(tensors[i].data);
  return out;
}

Status WriteSafetensors(const std::string& path, std::span<const TensorView> tensors,
                        const std::map<std::string, std::string>& metadata) {
  SLUICE_ASSIGN_OR_RETURN(Layout layout, PlanLayout(tensors, metadata));
  std::string prefix;
  AppendLengthPrefix(layout.header.size(), &prefix);
  std::vector<std::span<const std::byte>> pieces;
  pieces.reserve(tensors.size() + 2);
  pieces.push_back(AsBytes(prefix));
  pieces.push_back(AsBytes(layout.header));
  for (size_t i : layout.order) pieces.push_back(tensors[i].data);
  return WriteAtomically(path, pieces);
}

Status WriteSharded(const std::string& dir, std::span<const TensorView> tensors,
                    uint64_t max_shard_bytes, const std::map<std::string, std::string>& metadata) {
  SLUICE_ASSIGN_OR_RETURN(std::vector<uint64_t> sizes, ValidateForWrite(tensors));
  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return tensors[a].name < tensors[b].name; });

  std::vector<std::vector<TensorView>> shards(1);
  uint64_t shard_bytes = 0;
  uint64_t total = 0;
  for (size_t i : order) {
    if (!shards.back().empty() && shard_bytes + sizes[i] > max_shard_bytes) {
      shards.emplace_back();
      shard_bytes = 0;
    }
    shards.back().push_back(tensors[i]);
    shard_bytes += sizes[i];
    total += sizes[i];
  }

  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::Internal("safetensors: cannot create " + dir + ": " + ec.message());

  json weight_map = json::object();
  std::set<std::string> written;
  for (size_t s = 0; s < shards.size(); ++s) {
    std::string name = ShardName(s + 1, shards.size());
    SLUICE_RETURN_IF_ERROR(WriteSafetensors((fs::path(dir) / name).string(), shards[s], metadata));
    for (const TensorView& t : shards[s]) weight_map[t.name] = name;
    written.insert(name);
  }
  json index = {{"metadata", {{"total_size", total}}}, {"weight_map", std::move(weight_map)}};
  std::string index_text = index.dump(2) + "\n";
  std::span<const std::byte> piece = AsBytes(index_text);
  SLUICE_RETURN_IF_ERROR(
      WriteAtomically((fs::path(dir) / ShardedCheckpoint::kIndexFileName).string(),
                      std::span<const std::span<const std::byte>>(&piece, 1)));

  // Shards of an earlier, differently split write would otherwise linger.
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (IsShardName(name) && written.count(name) == 0) {
      std::error_code remove_ec;
      fs::remove(entry.path(), remove_ec);
    }
  }
  return Status::Ok();
}

}  // namespace sluice::model
