// Safetensors: the weights format of Hugging Face checkpoints, read through a read-only memory
// map and written atomically.
//
// A file is an 8-byte little-endian header length N, N bytes of JSON
//   {"__metadata__": {str: str}, name: {"dtype": "F32", "shape": [..], "data_offsets": [b, e]}}
// and then the data section; a tensor's bytes are data[b, e), row-major, little-endian. A sharded
// checkpoint is a directory of such files plus `model.safetensors.index.json`, whose
// "weight_map" names the file holding each tensor.
//
// Every length, offset, shape and dtype in a header is checked against the file before any byte
// of data is handed out, so a truncated, corrupt or hostile file yields a Status naming the file
// and the tensor, never a crash or an out-of-range read. The checks (ParseSafetensorsHeader):
// header length within the file and under a cap; header JSON is an object without duplicate keys;
// known dtype; shape a list of non-negative integers whose element count and byte size do not
// overflow; data_offsets [begin, end] with begin <= end <= data size and end - begin equal to the
// byte size; tensors neither overlap nor (unless allowed) leave gaps or trailing bytes;
// "__metadata__" maps strings to strings.
//
// The writer lays tensors out like the reference implementation: header keys sorted by name,
// data ordered by dtype size (largest first) then name so every tensor starts at a multiple of
// its element size, the header padded with spaces so the data starts at a multiple of 8.
//
// Element types (DType) and the conversions of element bytes to and from float32 are in
// tensor_dtype.h, included here. Reading is in safetensors.cpp, writing in safetensors_writer.cpp.
//
// Thread safety: a SafetensorsFile or ShardedCheckpoint is immutable after Open; its views may be
// read from any number of threads while it lives. The free functions are thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "workers/model/tensor_dtype.h"

namespace sluice::model {

// One tensor: its bytes are a view into a memory map (or, when writing, into the caller's
// buffer) and live as long as that.
struct TensorView {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::span<const std::byte> data;

  // Product of the shape (1 for a scalar).
  int64_t NumElements() const;
};

// What a header says about one tensor; offsets are relative to the start of the data section.
struct TensorEntry {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

struct SafetensorsHeader {
  uint64_t header_length = 0;        // N, the JSON's length in bytes.
  uint64_t data_start = 0;           // 8 + N: where the data section begins in the file.
  uint64_t data_length = 0;          // Bytes after data_start.
  std::vector<TensorEntry> tensors;  // Sorted by name.
  std::map<std::string, std::string> metadata;
};

struct SafetensorsParseOptions {
  // A header longer than this is refused before it is read.
  uint64_t max_header_bytes = uint64_t{100} << 20;
  // The reference implementation requires the tensors to tile the data section exactly; set to
  // accept unused bytes between tensors and after the last one.
  bool allow_gaps = false;
};

// Parses and validates the header of a whole file image (length prefix, JSON and data section).
// `label` names the file in error messages. Errors are Corruption, with field() naming the part
// of the header ("header.length", "tensors.<name>.data_offsets", ...).
Result<SafetensorsHeader> ParseSafetensorsHeader(std::span<const std::byte> file_bytes,
                                                 std::string_view label = "<memory>",
                                                 const SafetensorsParseOptions& options = {});

// A safetensors file mapped read-only; the mapping is released on destruction.
class SafetensorsFile {
 public:
  static Result<SafetensorsFile> Open(const std::string& path,
                                      const SafetensorsParseOptions& options = {});

  SafetensorsFile(SafetensorsFile&& other) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&& other) noexcept;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;
  ~SafetensorsFile();

  const std::string& path() const { return path_; }
  uint64_t file_size() const { return size_; }
  const SafetensorsHeader& header() const { return header_; }
  const std::map<std::string, std::string>& metadata() const { return header_.metadata; }
  // Sorted by name; the data spans point into the map.
  const std::vector<TensorView>& tensors() const { return tensors_; }
  // nullptr when absent.
  const TensorView* Find(std::string_view name) const;
  // NotFound naming the file and the tensor when absent.
  Result<TensorView> Get(std::string_view name) const;

 private:
  SafetensorsFile() = default;
  void Release();

  std::string path_;
  void* map_ = nullptr;
  uint64_t size_ = 0;
  SafetensorsHeader header_;
  std::vector<TensorView> tensors_;
};

// A checkpoint directory: `model.safetensors.index.json` with its shards, or a single
// `model.safetensors`. Open checks that the index is well formed, that its file names are plain
// names inside the directory, that every named file exists and parses, that every tensor is in
// the file the index names, and that no tensor appears twice (in two shards, or in a shard but
// not in the index).
class ShardedCheckpoint {
 public:
  static constexpr std::string_view kIndexFileName = "model.safetensors.index.json";
  static constexpr std::string_view kSingleFileName = "model.safetensors";

  static Result<ShardedCheckpoint> Open(const std::string& dir,
                                        const SafetensorsParseOptions& options = {});

  const std::string& dir() const { return dir_; }
  // The index's "metadata": strings as they are, numbers, booleans and null as JSON text (e.g.
  // total_size -> "1234"), objects and arrays left out; empty for a single file.
  const std::map<std::string, std::string>& index_metadata() const { return index_metadata_; }
  // Sorted.
  const std::vector<std::string>& tensor_names() const { return names_; }
  const std::vector<std::unique_ptr<SafetensorsFile>>& files() const { return files_; }
  size_t size() const { return names_.size(); }

  const TensorView* Find(std::string_view name) const;
  Result<TensorView> Get(std::string_view name) const;

 private:
  std::string dir_;
  std::map<std::string, std::string> index_metadata_;
  std::vector<std::string> names_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const TensorView*, std::less<>> by_name_;
};

// Serializes tensors into a complete file image (see the layout above). Names must be unique,
// non-empty, valid UTF-8 and not "__metadata__"; each data span must hold exactly
// product(shape) * DTypeSize(dtype) bytes. Empty metadata writes no "__metadata__" key.
Result<std::vector<std::byte>> SerializeSafetensors(
    std::span<const TensorView> tensors, const std::map<std::string, std::string>& metadata = {});

// Writes SerializeSafetensors' bytes to `path` atomically: a temporary file in the same
// directory, fsync, rename, fsync of the directory.
Status WriteSafetensors(const std::string& path, std::span<const TensorView> tensors,
                        const std::map<std::string, std::string>& metadata = {});

// Writes `dir`/model-00001-of-0000N.safetensors ... and model.safetensors.index.json
// ({"metadata": {"total_size": bytes}, "weight_map": {name: file}}), creating `dir` if needed.
// Tensors are packed in name order; a shard is closed when the next tensor would take it past
// max_shard_bytes of tensor data (a larger tensor gets a shard of its own). Each shard carries
// `metadata`. The index is written last; shard files of an earlier write that the new index
// does not name are then removed. Always writes the sharded layout, even for one shard.
Status WriteSharded(const std::string& dir, std::span<const TensorView> tensors,
                    uint64_t max_shard_bytes,
                    const std::map<std::string, std::string>& metadata = {});

}  // namespace sluice::model
