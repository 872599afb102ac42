#include "workers/model/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "workers/model/safetensors_internal.h"

namespace sluice::model {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using safetensors_internal::ComputeExtent;
using safetensors_internal::Errno;
using safetensors_internal::Extent;
using safetensors_internal::kLengthPrefixBytes;
using safetensors_internal::kMaxQuotedName;
using safetensors_internal::kMetadataKey;
using safetensors_internal::QuoteTensorName;
using safetensors_internal::ShapeString;

// Index files are a few hundred KiB even for the largest public models.
constexpr uint64_t kMaxSafetensorsIndexBytes = uint64_t{64} << 20;

// A JSON value for an error message: scalars as JSON text (cut short), containers by type only,
// since serializing a deeply nested hostile value would recurse.
std::string Describe(const nlohmann::json& value) {
  if (value.is_structured()) return std::string("an ") + value.type_name();
  std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() > kMaxQuotedName) text = text.substr(0, kMaxQuotedName) + "...";
  return text;
}

// Parses JSON text, refusing duplicate keys in any object (nlohmann would keep the last one
// silently, so two readers could disagree about a tensor). Returns nullopt with `error` set.
std::optional<json> ParseStrictJson(std::string_view text, std::string* error) {
  std::vector<std::set<std::string>> keys;
  std::string duplicate;
  auto callback = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        keys.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!keys.empty()) keys.pop_back();
        break;
      case json::parse_event_t::key:
        if (!keys.empty() && parsed.is_string() && duplicate.empty() &&
            !keys.back().insert(parsed.get_ref<const std::string&>()).second) {
          duplicate = parsed.get_ref<const std::string&>();
        }
        break;
      default:
        break;
    }
    return true;
  };
  json value;
  try {
    value = json::parse(text.data(), text.data() + text.size(), callback,
                        /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const json::exception& e) {
    *error = std::string("not valid JSON: ") + e.what();
    return std::nullopt;
  }
  if (!duplicate.empty()) {
    *error = "duplicate key " + QuoteTensorName(duplicate);
    return std::nullopt;
  }
  return value;
}

class HeaderErrors {
 public:
  explicit HeaderErrors(std::string_view label) : label_(label) {}

  Status File(std::string_view field, const std::string& what) const {
    return Status::Corruption("safetensors " + label_ + ": " + what, std::string(field));
  }
  Status Tensor(std::string_view name, std::string_view field, const std::string& what) const {
    return Status::Corruption(
        "safetensors " + label_ + ": tensor " + QuoteTensorName(name) + ": " + what,
        "tensors." + std::string(name) + "." + std::string(field));
  }

 private:
  std::string label_;
};

Result<TensorEntry> ParseEntry(const HeaderErrors& err, const std::string& name, const json& value,
                               uint64_t data_length) {
  if (!value.is_object()) {
    return err.Tensor(name, "", "entry is not an object but " + std::string(value.type_name()));
  }
  TensorEntry entry;
  entry.name = name;

  auto dtype_it = value.find("dtype");
  if (dtype_it == value.end() || !dtype_it->is_string()) {
    return err.Tensor(name, "dtype", "missing or non-string \"dtype\"");
  }
  const auto& dtype_name = dtype_it->get_ref<const std::string&>();
  std::optional<DType> dtype = ParseDType(dtype_name);
  if (!dtype) {
    return err.Tensor(name, "dtype",
                      "unknown dtype " + QuoteTensorName(dtype_name) +
                          " (supported: F32, F16, BF16, F64, I64, I32, U8, BOOL)");
  }
  entry.dtype = *dtype;

  auto shape_it = value.find("shape");
  if (shape_it == value.end() || !shape_it->is_array()) {
    return err.Tensor(name, "shape", "missing or non-array \"shape\"");
  }
  entry.shape.reserve(shape_it->size());
  for (const json& dim : *shape_it) {
    if (!dim.is_number_unsigned() ||
        dim.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return err.Tensor(
          name, "shape",
          "shape has a dimension that is not a non-negative integer: " + Describe(dim));
    }
    entry.shape.push_back(static_cast<int64_t>(dim.get<uint64_t>()));
  }
  std::optional<Extent> extent = ComputeExtent(entry.dtype, entry.shape);
  if (!extent) {
    return err.Tensor(name, "shape",
                      "shape " + ShapeString(entry.shape) + " of " +
                          std::string(DTypeName(entry.dtype)) + " overflows the byte size");
  }

  auto offsets_it = value.find("data_offsets");
  if (offsets_it == value.end() || !offsets_it->is_array() || offsets_it->size() != 2 ||
      !(*offsets_it)[0].is_number_unsigned() || !(*offsets_it)[1].is_number_unsigned()) {
    return err.Tensor(name, "data_offsets",
                      "\"data_offsets\" is not a pair of non-negative integers");
  }
  entry.begin = (*offsets_it)[0].get<uint64_t>();
  entry.end = (*offsets_it)[1].get<uint64_t>();
  std::string span = "[" + std::to_string(entry.begin) + ", " + std::to_string(entry.end) + "]";
  if (entry.begin > entry.end) {
    return err.Tensor(name, "data_offsets", "data_offsets " + span + " begin after end");
  }
  if (entry.end > data_length) {
    return err.Tensor(name, "data_offsets",
                      "data_offsets " + span + " end past the data section (" +
                          std::to_string(data_length) + " bytes)");
  }
  if (entry.end - entry.begin != extent->bytes) {
    return err.Tensor(name, "data_offsets",
                      "data_offsets " + span + " hold " + std::to_string(entry.end - entry.begin) +
                          " bytes but shape " + ShapeString(entry.shape) + " of " +
                          std::string(DTypeName(entry.dtype)) + " needs " +
                          std::to_string(extent->bytes));
  }
  return entry;
}

// A shard file name from an index must stay inside the checkpoint directory.
bool IsPlainFileName(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string_view::npos &&
         name.find('\0') == std::string_view::npos;
}

Result<std::string> ReadSmallFile(const std::string& path, uint64_t max_bytes) {
  std::error_code ec;
  uint64_t size = fs::file_size(path, ec);
  if (ec) return Status::Internal("cannot stat " + path + ": " + ec.message());
  if (size > max_bytes) {
    return Status::Corruption(path + ": " + std::to_string(size) + " bytes, over the limit of " +
                              std::to_string(max_bytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Internal("cannot open " + path);
  std::string text(size, '\0');
  in.read(text.data(), static_cast<std::streamsize>(size));
  if (static_cast<uint64_t>(in.gcount()) != size) return Status::Internal("cannot read " + path);
  return text;
}

}  // namespace

int64_t TensorView::NumElements() const {
  int64_t n = 1;
  for (int64_t dim : shape) {
    if (dim < 0 || __builtin_mul_overflow(n, dim, &n)) return -1;
  }
  return n;
}

Result<SafetensorsHeader> ParseSafetensorsHeader(std::span<const std::byte> file_bytes,
                                                 std::string_view label,
                                                 const SafetensorsParseOptions& options) {
  HeaderErrors err(label);
  if (file_bytes.size() < kLengthPrefixBytes) {
    return err.File("header.length", "file is " + std::to_string(file_bytes.size()) +
                                         " bytes, too short for the 8-byte header length");
  }
  uint64_t n = 0;
  for (size_t i = 0; i < kLengthPrefixBytes; ++i) {
    n |= static_cast<uint64_t>(file_bytes[i]) << (8 * i);
  }
  const uint64_t available = file_bytes.size() - kLengthPrefixBytes;
  if (n > options.max_header_bytes) {
    return err.File("header.length", "header length " + std::to_string(n) +
                                         " exceeds the limit of " +
                                         std::to_string(options.max_header_bytes) + " bytes");
  }
  if (n > available) {
    return err.File("header.length", "header length " + std::to_string(n) +
                                         " runs past the end of the file (" +
                                         std::to_string(available) + " bytes follow the length)");
  }
  SafetensorsHeader header;
  header.header_length = n;
  header.data_start = kLengthPrefixBytes + n;
  header.data_length = available - n;

  std::string_view text(reinterpret_cast<const char*>(file_bytes.data()) + kLengthPrefixBytes, n);
  std::string json_error;
  std::optional<json> root = ParseStrictJson(text, &json_error);
  if (!root) return err.File("header", "header is " + json_error);
  if (!root->is_object()) {
    return err.File("header", "header is not a JSON object but " + std::string(root->type_name()));
  }

  for (const auto& [key, value] : root->items()) {
    if (key == kMetadataKey) {
      if (value.is_null()) continue;
      if (!value.is_object()) {
        return err.File("header.__metadata__", "\"__metadata__\" is not an object");
      }
      for (const auto& [mkey, mvalue] : value.items()) {
        if (!mvalue.is_string()) {
          return err.File("header.__metadata__", "\"__metadata__\" value for " +
                                                     QuoteTensorName(mkey) + " is not a string");
        }
        header.metadata.emplace(mkey, mvalue.get<std::string>());
      }
      continue;
    }
    SLUICE_ASSIGN_OR_RETURN(TensorEntry entry, ParseEntry(err, key, value, header.data_length));
    header.tensors.push_back(std::move(entry));
  }
  // items() of an object iterates in key order, so tensors are sorted by name already.

  std::vector<const TensorEntry*> by_offset;
  by_offset.reserve(header.tensors.size());
  for (const TensorEntry& t : header.tensors) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(), [](const TensorEntry* a, const TensorEntry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t cursor = 0;
  const TensorEntry* last = nullptr;
  for (const TensorEntry* t : by_offset) {
    if (t->begin < cursor) {
      return err.Tensor(t->name, "data_offsets",
                        "data_offsets [" + std::to_string(t->begin) + ", " +
                            std::to_string(t->end) + "] overlap tensor " +
                            QuoteTensorName(last->name) + " (which ends at " +
                            std::to_string(cursor) + ")");
    }
    if (t->begin > cursor && !options.allow_gaps) {
      return err.Tensor(t->name, "data_offsets",
                        "data_offsets begin at " + std::to_string(t->begin) +
                            ", leaving a gap of " + std::to_string(t->begin - cursor) +
                            " unused bytes after offset " + std::to_string(cursor));
    }
    if (t->end > cursor || last == nullptr) {
      cursor = t->end;
      last = t;
    }
  }
  if (cursor != header.data_length && !options.allow_gaps) {
    return err.File("data", "tensors cover " + std::to_string(cursor) +
                                " bytes of the data section but it has " +
                                std::to_string(header.data_length) + " (trailing bytes)");
  }
  return header;
}

Result<SafetensorsFile> SafetensorsFile::Open(const std::string& path,
                                              const SafetensorsParseOptions& options) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    std::string msg = "safetensors: cannot open " + path + ": " + Errno(e);
    return e == ENOENT ? Status::NotFound(msg) : Status::Internal(msg);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return Status::Internal("safetensors: cannot stat " + path + ": " + Errno(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::InvalidArgument("safetensors: " + path + " is not a regular file");
  }
  SafetensorsFile file;
  file.path_ = path;
  file.size_ = static_cast<uint64_t>(st.st_size);
  if (file.size_ < kLengthPrefixBytes) {
    ::close(fd);
    return Status::Corruption("safetensors " + path + ": file is " + std::to_string(file.size_) +
                                  " bytes, too short for the 8-byte header length",
                              "header.length");
  }
  void* map = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd, 0);
  int map_errno = errno;
  ::close(fd);
  if (map == MAP_FAILED) {
    return Status::Internal("safetensors: cannot mmap " + path + ": " + Errno(map_errno));
  }
  file.map_ = map;

  std::span<const std::byte> bytes(static_cast<const std::byte*>(map), file.size_);
  SLUICE_ASSIGN_OR_RETURN(file.header_, ParseSafetensorsHeader(bytes, path, options));
  std::span<const std::byte> data = bytes.subspan(file.header_.data_start);
  file.tensors_.reserve(file.header_.tensors.size());
  for (const TensorEntry& e : file.header_.tensors) {
    file.tensors_.push_back(
        TensorView{e.name, e.dtype, e.shape, data.subspan(e.begin, e.end - e.begin)});
  }
  return file;
}

SafetensorsFile::SafetensorsFile(SafetensorsFile&& other) noexcept
    : path_(std::move(other.path_)),
      map_(std::exchange(other.map_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      header_(std::move(other.header_)),
      tensors_(std::move(other.tensors_)) {}

SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&& other) noexcept {
  if (this != &other) {
    Release();
    path_ = std::move(other.path_);
    map_ = std::exchange(other.map_, nullptr);
    size_ = std::exchange(other.size_, 0);
    header_ = std::move(other.header_);
    tensors_ = std::move(other.tensors_);
  }
  return *this;
}

SafetensorsFile::~SafetensorsFile() { Release(); }

void SafetensorsFile::Release() {
  if (map_ != nullptr) ::munmap(map_, size_);
  map_ = nullptr;
  size_ = 0;
  tensors_.clear();
}

const TensorView* SafetensorsFile::Find(std::string_view name) const {
  auto it = std::lower_bound(tensors_.begin(), tensors_.end(), name,
                             [](const TensorView& t, std::string_view n) { return t.name < n; });
  return it != tensors_.end() && it->name == name ? &*it : nullptr;
}

Result<TensorView> SafetensorsFile::Get(std::string_view name) const {
  const TensorView* t = Find(name);
  if (t == nullptr) {
    return Status::NotFound("safetensors " + path_ + ": no tensor " + QuoteTensorName(name));
  }
  return *t;
}

Result<ShardedCheckpoint> ShardedCheckpoint::Open(const std::string& dir,
                                                  const SafetensorsParseOptions& options) {
  ShardedCheckpoint ckpt;
  ckpt.dir_ = dir;
  const std::string index_path = (fs::path(dir) / kIndexFileName).string();
  const std::string single_path = (fs::path(dir) / kSingleFileName).string();
  std::error_code ec;

  if (!fs::exists(index_path, ec)) {
    if (!fs::exists(single_path, ec)) {
      return Status::NotFound("checkpoint " + dir + ": neither " + std::string(kIndexFileName) +
                              " nor " + std::string(kSingleFileName) + " exists");
    }
    SLUICE_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::Open(single_path, options));
    ckpt.files_.push_back(std::make_unique<SafetensorsFile>(std::move(file)));
    for (const TensorView& t : ckpt.files_[0]->tensors()) {
      ckpt.names_.push_back(t.name);
      ckpt.by_name_.emplace(t.name, &t);
    }
    return ckpt;
  }

  SLUICE_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(index_path, kMaxSafetensorsIndexBytes));
  auto corrupt = [&](const std::string& what, std::string field = {}) {
    return Status::Corruption("checkpoint index " + index_path + ": " + what, std::move(field));
  };
  std::string json_error;
  std::optional<json> root = ParseStrictJson(text, &json_error);
  if (!root) return corrupt("is " + json_error);
  if (!root->is_object()) return corrupt("is not a JSON object");
  if (auto it = root->find("metadata"); it != root->end() && !it->is_null()) {
    if (!it->is_object()) return corrupt("\"metadata\" is not an object", "metadata");
    for (const auto& [key, value] : it->items()) {
      if (value.is_string()) {
        ckpt.index_metadata_.emplace(key, value.get<std::string>());
      } else if (value.is_primitive()) {
        ckpt.index_metadata_.emplace(key, value.dump());
      }
    }
  }
  auto map_it = root->find("weight_map");
  if (map_it == root->end() || !map_it->is_object()) {
    return corrupt("missing or non-object \"weight_map\"", "weight_map");
  }
  std::map<std::string, std::string> weight_map;  // tensor -> file
  std::map<std::string, size_t> file_index;
  for (const auto& [tensor, file] : map_it->items()) {
    if (!file.is_string() || !IsPlainFileName(file.get_ref<const std::string&>())) {
      return corrupt("tensor " + QuoteTensorName(tensor) + " maps to " + Describe(file) +
                         ", not a file name inside the checkpoint directory",
                     "weight_map." + tensor);
    }
    weight_map.emplace(tensor, file.get<std::string>());
    file_index.emplace(file.get<std::string>(), 0);
  }
  for (auto& [name, index] : file_index) {
    std::string path = (fs::path(dir) / name).string();
    Result<SafetensorsFile> file = SafetensorsFile::Open(path, options);
    if (!file.ok()) {
      return file.status().WithContext("checkpoint " + dir + ": shard named by the index");
    }
    index = ckpt.files_.size();
    ckpt.files_.push_back(std::make_unique<SafetensorsFile>(std::move(file).value()));
  }
  for (const auto& [tensor, file] : weight_map) {
    const SafetensorsFile& shard = *ckpt.files_[file_index.at(file)];
    const TensorView* view = shard.Find(tensor);
    if (view == nullptr) {
      return corrupt("names " + QuoteTensorName(file) + " for tensor " + QuoteTensorName(tensor) +
                         " but that file does not hold it",
                     "weight_map." + tensor);
    }
    ckpt.by_name_.emplace(tensor, view);
    ckpt.names_.push_back(tensor);
  }
  for (const auto& [file, index] : file_index) {
    for (const TensorView& t : ckpt.files_[index]->tensors()) {
      auto it = weight_map.find(t.name);
      if (it == weight_map.end()) {
        return corrupt("shard " + QuoteTensorName(file) + " holds tensor " +
                       QuoteTensorName(t.name) + " that the weight_map does not list");
      }
      if (it->second != file) {
        return corrupt("tensor " + QuoteTensorName(t.name) + " appears in both " +
                           QuoteTensorName(file) + " and " + QuoteTensorName(it->second),
                       "weight_map." + t.name);
      }
    }
  }
  return ckpt;
}

const TensorView* ShardedCheckpoint::Find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

Result<TensorView> ShardedCheckpoint::Get(std::string_view name) const {
  const TensorView* t = Find(name);
  if (t == nullptr)
    return Status::NotFound("checkpoint " + dir_ + ": no tensor " + QuoteTensorName(name));
  return *t;
}

}  // namespace sluice::model
