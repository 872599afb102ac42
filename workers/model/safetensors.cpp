#include "workers/model/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

namespace sluice::model {
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; big-endian hosts would need byte swaps");

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr std::string_view kMetadataKey = "__metadata__";
constexpr size_t kLengthPrefixBytes = 8;
// Index files are a few hundred KiB even for the largest public models.
constexpr uint64_t kMaxIndexBytes = uint64_t{64} << 20;
// Longer names are cut in error messages so a hostile header cannot bloat them.
constexpr size_t kMaxQuotedName = 160;

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  size_t size;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::kF32, "F32", 4}, {DType::kF16, "F16", 2},   {DType::kBF16, "BF16", 2},
    {DType::kF64, "F64", 8}, {DType::kI64, "I64", 8},   {DType::kI32, "I32", 4},
    {DType::kU8, "U8", 1},   {DType::kBool, "BOOL", 1},
};

std::string Quote(std::string_view name) {
  std::string out = "'";
  if (name.size() > kMaxQuotedName) {
    out.append(name.substr(0, kMaxQuotedName));
    out.append("...");
  } else {
    out.append(name);
  }
  out.push_back('\'');
  return out;
}

std::string Errno(int err) { return std::strerror(err); }

// A JSON value for an error message: scalars as JSON text (cut short), containers by type only,
// since serializing a deeply nested hostile value would recurse.
std::string Describe(const nlohmann::json& value) {
  if (value.is_structured()) return std::string("an ") + value.type_name();
  std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() > kMaxQuotedName) text = text.substr(0, kMaxQuotedName) + "...";
  return text;
}

// Element count and byte size of a shape, or nullopt when a dim is negative or either overflows
// int64.
struct Extent {
  uint64_t elements;
  uint64_t bytes;
};

std::optional<Extent> ComputeExtent(DType dtype, std::span<const int64_t> shape) {
  uint64_t elements = 1;
  for (int64_t dim : shape) {
    if (dim < 0) return std::nullopt;
    if (__builtin_mul_overflow(elements, static_cast<uint64_t>(dim), &elements)) {
      return std::nullopt;
    }
  }
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(elements, static_cast<uint64_t>(DTypeSize(dtype)), &bytes)) {
    return std::nullopt;
  }
  constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (elements > kMax || bytes > kMax) return std::nullopt;
  return Extent{elements, bytes};
}

std::string ShapeString(std::span<const int64_t> shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out.append(",");
    out.append(std::to_string(shape[i]));
  }
  out.append("]");
  return out;
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
    *error = "duplicate key " + Quote(duplicate);
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
    return Status::Corruption("safetensors " + label_ + ": tensor " + Quote(name) + ": " + what,
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
                      "unknown dtype " + Quote(dtype_name) +
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
    return Status::InvalidArgument("safetensors: " + Quote(text) + " is not valid UTF-8");
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
      return Status::InvalidArgument("safetensors: duplicate tensor name " + Quote(t.name));
    }
    std::optional<Extent> extent = ComputeExtent(t.dtype, t.shape);
    if (!extent) {
      return Status::InvalidArgument("safetensors: tensor " + Quote(t.name) + ": shape " +
                                     ShapeString(t.shape) + " is negative or overflows");
    }
    if (t.data.size() != extent->bytes) {
      return Status::InvalidArgument(
          "safetensors: tensor " + Quote(t.name) + ": " + std::to_string(t.data.size()) +
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

Status WriteAll(int fd, const void* data, size_t size, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, std::min<size_t>(size, size_t{1} << 30));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::Internal("safetensors: cannot write " + path + ": " + Errno(errno));
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status SyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::Internal("safetensors: cannot open " + dir + ": " + Errno(errno));
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  // Some filesystems cannot sync a directory; the rename itself has happened.
  if (rc != 0 && err != EINVAL) {
    return Status::Internal("safetensors: cannot fsync " + dir + ": " + Errno(err));
  }
  return Status::Ok();
}

// Writes the pieces to `path` through a temporary file and a rename.
Status WriteAtomically(const std::string& path,
                       std::span<const std::span<const std::byte>> pieces) {
  static std::atomic<uint64_t> counter{0};
  std::string tmp = path + ".tmp-" + std::to_string(::getpid()) + "-" +
                    std::to_string(counter.fetch_add(1, std::memory_order_relaxed));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::Internal("safetensors: cannot create " + tmp + ": " + Errno(errno));
  Status status;
  for (std::span<const std::byte> piece : pieces) {
    status = WriteAll(fd, piece.data(), piece.size(), tmp);
    if (!status.ok()) break;
  }
  if (status.ok() && ::fsync(fd) != 0) {
    status = Status::Internal("safetensors: cannot fsync " + tmp + ": " + Errno(errno));
  }
  if (::close(fd) != 0 && status.ok()) {
    status = Status::Internal("safetensors: cannot close " + tmp + ": " + Errno(errno));
  }
  if (status.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    status =
        Status::Internal("safetensors: cannot rename " + tmp + " to " + path + ": " + Errno(errno));
  }
  if (!status.ok()) {
    ::unlink(tmp.c_str());
    return status;
  }
  std::string dir = fs::path(path).parent_path().string();
  return SyncDir(dir.empty() ? "." : dir);
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

std::string_view DTypeName(DType dtype) {
  for (const DTypeInfo& info : kDTypes) {
    if (info.dtype == dtype) return info.name;
  }
  return "?";
}

std::optional<DType> ParseDType(std::string_view name) {
  for (const DTypeInfo& info : kDTypes) {
    if (info.name == name) return info.dtype;
  }
  return std::nullopt;
}

size_t DTypeSize(DType dtype) {
  for (const DTypeInfo& info : kDTypes) {
    if (info.dtype == dtype) return info.size;
  }
  return 1;
}

int64_t TensorView::NumElements() const {
  int64_t n = 1;
  for (int64_t dim : shape) {
    if (dim < 0 || __builtin_mul_overflow(n, dim, &n)) return -1;
  }
  return n;
}

// ---------------------------------------------------------------------------------------------
// Reading.

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
          return err.File("header.__metadata__",
                          "\"__metadata__\" value for " + Quote(mkey) + " is not a string");
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
                            std::to_string(t->end) + "] overlap tensor " + Quote(last->name) +
                            " (which ends at " + std::to_string(cursor) + ")");
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
    return Status::NotFound("safetensors " + path_ + ": no tensor " + Quote(name));
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

  SLUICE_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(index_path, kMaxIndexBytes));
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
      return corrupt("tensor " + Quote(tensor) + " maps to " + Describe(file) +
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
      return corrupt("names " + Quote(file) + " for tensor " + Quote(tensor) +
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
        return corrupt("shard " + Quote(file) + " holds tensor " + Quote(t.name) +
                       " that the weight_map does not list");
      }
      if (it->second != file) {
        return corrupt("tensor " + Quote(t.name) + " appears in both " + Quote(file) + " and " +
                           Quote(it->second),
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
  if (t == nullptr) return Status::NotFound("checkpoint " + dir_ + ": no tensor " + Quote(name));
  return *t;
}

// ---------------------------------------------------------------------------------------------
// Writing.

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

// ---------------------------------------------------------------------------------------------
// Element conversions.

float Float16BitsToFloat32(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  uint32_t out;
  if (exponent == 0x1f) {
    out = sign | 0x7f800000u | (mantissa << 13);  // Inf, or NaN with its payload.
  } else if (exponent != 0) {
    out = sign | ((exponent + 112) << 23) | (mantissa << 13);  // Rebias 15 -> 127.
  } else if (mantissa == 0) {
    out = sign;  // Signed zero.
  } else {
    // Subnormal: mantissa * 2^-24; normalize so the leading one becomes implicit.
    int e = -14;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --e;
    }
    out = sign | (static_cast<uint32_t>(e + 127) << 23) | ((mantissa & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(out);
}

float BFloat16BitsToFloat32(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

uint16_t Float32ToFloat16Bits(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) {
    // NaN: keep the high payload bits and set the quiet bit so it cannot become Inf.
    return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  }
  // 65520 is halfway between the largest half (65504, odd mantissa) and 2^16: ties go up.
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  const uint32_t exponent = abs >> 23;
  if (exponent >= 113) {
    // Normal in half precision: rebias and round away 13 mantissa bits. A carry out of the
    // mantissa correctly bumps the exponent.
    uint32_t h = ((exponent - 112) << 10) | ((abs >> 13) & 0x3ffu);
    const uint32_t rest = abs & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u) != 0)) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  // Below 2^-25 (half the smallest subnormal; a tie that rounds to even zero) -> zero.
  if (exponent < 102) return sign;
  // Subnormal in half precision: value = m * 2^(exponent - 150), counted in units of 2^-24.
  const uint32_t m = (abs & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126 - exponent;  // 14..24
  uint32_t h = m >> shift;
  const uint32_t rest = m & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (h & 1u) != 0)) ++h;  // May reach 0x400, the least normal.
  return static_cast<uint16_t>(sign | h);
}

uint16_t Float32ToBFloat16Bits(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    return static_cast<uint16_t>((x >> 16) | 0x0040u);  // Quiet NaN, sign and payload kept.
  }
  // Round to nearest even on the 16 dropped bits; overflow carries into Inf as it should.
  const uint32_t lsb = (x >> 16) & 1u;
  return static_cast<uint16_t>((x + 0x7fffu + lsb) >> 16);
}

Result<std::vector<float>> ToFloat32(const TensorView& tensor) {
  std::optional<Extent> extent = ComputeExtent(tensor.dtype, tensor.shape);
  if (!extent || extent->bytes != tensor.data.size()) {
    return Status::InvalidArgument(
        "ToFloat32: tensor " + Quote(tensor.name) + " has " + std::to_string(tensor.data.size()) +
        " bytes, which does not match shape " + ShapeString(tensor.shape) + " of " +
        std::string(DTypeName(tensor.dtype)));
  }
  const size_t n = extent->elements;
  std::vector<float> out(n);
  const std::byte* p = tensor.data.data();
  auto load = [p]<typename T>(size_t i, T* v) { std::memcpy(v, p + i * sizeof(T), sizeof(T)); };
  switch (tensor.dtype) {
    case DType::kF32:
      if (n > 0) std::memcpy(out.data(), p, n * sizeof(float));
      break;
    case DType::kF16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t v;
        load(i, &v);
        out[i] = Float16BitsToFloat32(v);
      }
      break;
    case DType::kBF16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t v;
        load(i, &v);
        out[i] = BFloat16BitsToFloat32(v);
      }
      break;
    case DType::kF64:
      for (size_t i = 0; i < n; ++i) {
        double v;
        load(i, &v);
        out[i] = static_cast<float>(v);
      }
      break;
    case DType::kI64:
      for (size_t i = 0; i < n; ++i) {
        int64_t v;
        load(i, &v);
        out[i] = static_cast<float>(v);
      }
      break;
    case DType::kI32:
      for (size_t i = 0; i < n; ++i) {
        int32_t v;
        load(i, &v);
        out[i] = static_cast<float>(v);
      }
      break;
    case DType::kU8:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(std::to_integer<uint8_t>(p[i]));
      break;
    case DType::kBool:
      for (size_t i = 0; i < n; ++i) out[i] = std::to_integer<uint8_t>(p[i]) != 0 ? 1.0f : 0.0f;
      break;
  }
  return out;
}

Result<std::vector<std::byte>> FromFloat32(std::span<const float> values, DType dtype) {
  std::vector<std::byte> out(values.size() * DTypeSize(dtype));
  std::byte* p = out.data();
  switch (dtype) {
    case DType::kF32:
      if (!values.empty()) std::memcpy(p, values.data(), values.size_bytes());
      return out;
    case DType::kF16:
      for (size_t i = 0; i < values.size(); ++i) {
        uint16_t v = Float32ToFloat16Bits(values[i]);
        std::memcpy(p + 2 * i, &v, 2);
      }
      return out;
    case DType::kBF16:
      for (size_t i = 0; i < values.size(); ++i) {
        uint16_t v = Float32ToBFloat16Bits(values[i]);
        std::memcpy(p + 2 * i, &v, 2);
      }
      return out;
    case DType::kF64:
      for (size_t i = 0; i < values.size(); ++i) {
        double v = values[i];
        std::memcpy(p + 8 * i, &v, 8);
      }
      return out;
    default:
      return Status::InvalidArgument("FromFloat32: cannot encode floats as " +
                                     std::string(DTypeName(dtype)));
  }
}

}  // namespace sluice::model
