// The decoder behind DecodeKubeProtobuf: kube's envelope, the protobuf wire format, the value
// types and messages, read against the schema tables of protobuf_*_kinds.cpp (protobuf_schema.h).
#include "localcluster/apiserver/protobuf_objects.h"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "common/base64.h"
#include "common/json/json_depth.h"
#include "localcluster/apiserver/protobuf_schema.h"

namespace sluice::apiserver {
namespace kube_protobuf {
namespace {

using nlohmann::json;

// ---------------------------------------------------------------------------------------------
// Schema lookup.

const MessageDef* FindKind(std::string_view api_version, std::string_view kind) {
  // DeleteOptions is registered in every group version.
  if (kind == "DeleteOptions" && !api_version.empty()) return &kDeleteOptions;
  for (std::span<const KindDef> kinds : {CoreKinds(), AuthKinds(), AppsKinds()}) {
    for (const KindDef& k : kinds) {
      if (k.api_version == api_version && k.kind == kind) return k.message;
    }
  }
  return nullptr;
}

const FieldDef* FindField(const MessageDef& def, uint32_t number) {
  for (const FieldDef& f : def.fields) {
    if (f.number == number) return &f;
  }
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// Wire format.

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

Status MalformedProto(std::string message) {
  return Status::InvalidArgument("malformed protobuf: " + std::move(message));
}

class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}

  bool AtEnd() const { return pos_ >= data_.size(); }

  Status Varint(uint64_t* out) {
    uint64_t value = 0;
    for (int i = 0; i < 10; ++i) {
      if (pos_ >= data_.size()) return MalformedProto("truncated varint");
      const auto byte = static_cast<uint8_t>(data_[pos_++]);
      if (i == 9 && byte > 1) return MalformedProto("varint overflows 64 bits");
      value |= static_cast<uint64_t>(byte & 0x7F) << (7 * i);
      if ((byte & 0x80) == 0) {
        *out = value;
        return Status::Ok();
      }
    }
    return MalformedProto("varint longer than 10 bytes");
  }

  Status Tag(uint32_t* number, uint32_t* wire_type) {
    uint64_t key = 0;
    SLUICE_RETURN_IF_ERROR(Varint(&key));
    const uint64_t field = key >> 3;
    if (field == 0 || field > 0x1FFFFFFF) return MalformedProto("invalid field number");
    *number = static_cast<uint32_t>(field);
    *wire_type = static_cast<uint32_t>(key & 7);
    return Status::Ok();
  }

  Status LengthDelimited(std::string_view* out) {
    uint64_t length = 0;
    SLUICE_RETURN_IF_ERROR(Varint(&length));
    if (length > data_.size() - pos_) return MalformedProto("length past the end of the data");
    *out = data_.substr(pos_, static_cast<size_t>(length));
    pos_ += static_cast<size_t>(length);
    return Status::Ok();
  }

  Status Skip(uint32_t wire_type) {
    switch (wire_type) {
      case kVarint: {
        uint64_t ignored = 0;
        return Varint(&ignored);
      }
      case kFixed64:
        return Advance(8);
      case kLengthDelimited: {
        std::string_view ignored;
        return LengthDelimited(&ignored);
      }
      case kFixed32:
        return Advance(4);
      case kStartGroup:
      case kEndGroup:
        return MalformedProto("groups are not supported");
      default:
        return MalformedProto("invalid wire type " + std::to_string(wire_type));
    }
  }

 private:
  Status Advance(size_t n) {
    if (n > data_.size() - pos_) return MalformedProto("truncated fixed-width field");
    pos_ += n;
    return Status::Ok();
  }

  std::string_view data_;
  size_t pos_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Values.

// Go's encoding/json writes invalid UTF-8 as U+FFFD, one per bad byte; nlohmann::json refuses to
// dump it at all, so strings are made valid here.
std::string ValidUtf8(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  size_t i = 0;
  while (i < in.size()) {
    const auto c = static_cast<uint8_t>(in[i]);
    size_t length = 0;
    uint32_t min = 0;
    uint32_t code = 0;
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      length = 2, min = 0x80, code = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      length = 3, min = 0x800, code = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      length = 4, min = 0x10000, code = c & 0x07;
    }
    bool valid = length != 0 && i + length <= in.size();
    for (size_t k = 1; valid && k < length; ++k) {
      const auto next = static_cast<uint8_t>(in[i + k]);
      if ((next & 0xC0) != 0x80) valid = false;
      code = (code << 6) | (next & 0x3F);
    }
    valid = valid && code >= min && code <= 0x10FFFF && !(code >= 0xD800 && code <= 0xDFFF);
    if (valid) {
      out.append(in.substr(i, length));
      i += length;
    } else {
      out.append("\xEF\xBF\xBD");
      ++i;
    }
  }
  return out;
}

// The seconds of 0001-01-01T00:00:00Z, Go's zero time, and the range RFC 3339 can print.
constexpr int64_t kZeroTimeSeconds = -62135596800;
constexpr int64_t kYear0Seconds = -62167219200;
constexpr int64_t kYear10000Seconds = 253402300800;

Result<std::string> FormatTime(int64_t seconds, int64_t micros, bool with_micros) {
  if (seconds < kYear0Seconds || seconds >= kYear10000Seconds) {
    return MalformedProto("timestamp outside years 0 to 9999");
  }
  using std::chrono::days;
  using std::chrono::sys_seconds;
  const sys_seconds point{std::chrono::seconds{seconds}};
  const auto day = std::chrono::floor<days>(point);
  const std::chrono::year_month_day date{day};
  const std::chrono::hh_mm_ss time{point - day};
  char buffer[40];
  int n = std::snprintf(buffer, sizeof(buffer), "%04d-%02u-%02uT%02d:%02d:%02d",
                        static_cast<int>(date.year()), static_cast<unsigned>(date.month()),
                        static_cast<unsigned>(date.day()), static_cast<int>(time.hours().count()),
                        static_cast<int>(time.minutes().count()),
                        static_cast<int>(time.seconds().count()));
  if (with_micros) {
    n += std::snprintf(buffer + n, sizeof(buffer) - static_cast<size_t>(n), ".%06lld",
                       static_cast<long long>(micros));
  }
  return std::string(buffer, static_cast<size_t>(n)) + "Z";
}

// metav1.Time and metav1.MicroTime: a Timestamp {seconds = 1, nanos = 2}. Time drops the nanos
// (kube's JSON has whole seconds); MicroTime truncates them to microseconds.
Result<json> DecodeTime(std::string_view bytes, bool micro) {
  if (bytes.empty()) return json(nullptr);  // The zero time.
  int64_t seconds = 0;
  int64_t nanos = 0;
  Reader reader(bytes);
  while (!reader.AtEnd()) {
    uint32_t number = 0, wire = 0;
    SLUICE_RETURN_IF_ERROR(reader.Tag(&number, &wire));
    if ((number == 1 || number == 2) && wire == kVarint) {
      uint64_t v = 0;
      SLUICE_RETURN_IF_ERROR(reader.Varint(&v));
      if (number == 1) {
        seconds = static_cast<int64_t>(v);
      } else {
        nanos = static_cast<int32_t>(static_cast<uint32_t>(v));
      }
    } else {
      SLUICE_RETURN_IF_ERROR(reader.Skip(wire));
    }
  }
  if (seconds < kYear0Seconds || seconds >= kYear10000Seconds) {
    return MalformedProto("timestamp outside years 0 to 9999");
  }
  int64_t micros = 0;
  if (micro) {
    nanos -= nanos % 1000;  // Toward zero, as Go's Duration.Truncate.
    seconds += nanos / 1000000000;
    nanos %= 1000000000;
    if (nanos < 0) {
      nanos += 1000000000;
      seconds -= 1;
    }
    micros = nanos / 1000;
  }
  if (seconds == kZeroTimeSeconds && micros == 0) return json(nullptr);
  SLUICE_ASSIGN_OR_RETURN(std::string text, FormatTime(seconds, micros, micro));
  return json(std::move(text));
}

// The syntax resource.ParseQuantity accepts: a signed decimal number, then a binary suffix
// (Ki..Ei), a decimal suffix (n, u, m, k, M, G, T, P, E) or an exponent (e3, E-2).
bool IsQuantity(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  size_t digits = 0;
  bool dot = false;
  for (; i < s.size(); ++i) {
    if (s[i] >= '0' && s[i] <= '9') {
      ++digits;
    } else if (s[i] == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
  }
  if (digits == 0) return false;
  const std::string_view suffix = s.substr(i);
  if (suffix.empty()) return true;
  for (std::string_view ok :
       {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M", "G", "T", "P", "E"}) {
    if (suffix == ok) return true;
  }
  if (suffix[0] != 'e' && suffix[0] != 'E') return false;
  size_t k = 1;
  if (k < suffix.size() && (suffix[k] == '+' || suffix[k] == '-')) ++k;
  if (k == suffix.size()) return false;
  for (; k < suffix.size(); ++k) {
    if (suffix[k] < '0' || suffix[k] > '9') return false;
  }
  return true;
}

Result<json> DecodeQuantity(std::string_view bytes) {
  std::string_view text = "0";  // A zero Quantity prints as "0".
  bool sent = false;
  Reader reader(bytes);
  while (!reader.AtEnd()) {
    uint32_t number = 0, wire = 0;
    SLUICE_RETURN_IF_ERROR(reader.Tag(&number, &wire));
    if (number == 1 && wire == kLengthDelimited) {
      SLUICE_RETURN_IF_ERROR(reader.LengthDelimited(&text));
      sent = true;
    } else {
      SLUICE_RETURN_IF_ERROR(reader.Skip(wire));
    }
  }
  if (sent && !IsQuantity(text)) {
    return Status::InvalidArgument(
        "quantities must match the regular expression "
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
  }
  return json(std::string(text));
}

Result<json> DecodeIntOrString(std::string_view bytes) {
  int64_t type = 0;
  int32_t int_value = 0;
  std::string_view str_value;
  Reader reader(bytes);
  while (!reader.AtEnd()) {
    uint32_t number = 0, wire = 0;
    SLUICE_RETURN_IF_ERROR(reader.Tag(&number, &wire));
    uint64_t v = 0;
    if ((number == 1 || number == 2) && wire == kVarint) {
      SLUICE_RETURN_IF_ERROR(reader.Varint(&v));
      if (number == 1) {
        type = static_cast<int64_t>(v);
      } else {
        int_value = static_cast<int32_t>(static_cast<uint32_t>(v));
      }
    } else if (number == 3 && wire == kLengthDelimited) {
      SLUICE_RETURN_IF_ERROR(reader.LengthDelimited(&str_value));
    } else {
      SLUICE_RETURN_IF_ERROR(reader.Skip(wire));
    }
  }
  if (type == 0) return json(int_value);
  if (type == 1) return json(ValidUtf8(str_value));
  return MalformedProto("int-or-string of unknown type " + std::to_string(type));
}

Result<json> DecodeFieldsV1(std::string_view bytes) {
  std::string_view raw;
  bool sent = false;
  Reader reader(bytes);
  while (!reader.AtEnd()) {
    uint32_t number = 0, wire = 0;
    SLUICE_RETURN_IF_ERROR(reader.Tag(&number, &wire));
    if (number == 1 && wire == kLengthDelimited) {
      SLUICE_RETURN_IF_ERROR(reader.LengthDelimited(&raw));
      sent = true;
    } else {
      SLUICE_RETURN_IF_ERROR(reader.Skip(wire));
    }
  }
  if (!sent) return json(nullptr);
  if (FirstTooDeepJson(raw, static_cast<size_t>(kMaxKubeProtobufDepth)).has_value()) {
    return Status::InvalidArgument("fieldsV1 nests deeper than " +
                                   std::to_string(kMaxKubeProtobufDepth));
  }
  json parsed = json::parse(raw, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return Status::InvalidArgument("fieldsV1 is not valid JSON");
  return parsed;
}

// Go's ExtraValue: a fresh, non-nil []string, so [] when no item is sent.
Result<json> DecodeStringList(std::string_view bytes) {
  json items = json::array();
  Reader reader(bytes);
  while (!reader.AtEnd()) {
    uint32_t number = 0, wire = 0;
    SLUICE_RETURN_IF_ERROR(reader.Tag(&number, &wire));
    if (number == 1 && wire == kLengthDelimited) {
      std::string_view item;
      SLUICE_RETURN_IF_ERROR(reader.LengthDelimited(&item));
      items.push_back(ValidUtf8(item));
    } else {
      SLUICE_RETURN_IF_ERROR(reader.Skip(wire));
    }
  }
  return items;
}

// ---------------------------------------------------------------------------------------------
// Messages.

std::string JoinPath(std::string_view head, const std::string& tail) {
  if (tail.empty()) return std::string(head);
  if (tail[0] == '[') return std::string(head) + tail;
  return std::string(head) + "." + tail;
}

Status AtField(const Status& status, std::string_view name) {
  if (status.ok() || name.empty()) return status;
  return Status::InvalidArgument(status.message(), JoinPath(name, status.field()));
}

bool IsProtoZero(const json& v) {
  if (v.is_null()) return true;
  if (v.is_string()) return v.get_ref<const std::string&>().empty();
  if (v.is_boolean()) return !v.get<bool>();
  if (v.is_number_integer()) return v.get<int64_t>() == 0;
  if (v.is_array() || v.is_object()) return v.empty();
  return false;
}

class Decoder {
 public:
  // Merges the fields in `bytes` into `obj` (a message seen twice merges, as in Go).
  Status Parse(std::string_view bytes, const MessageDef& def, json& obj, int depth) {
    if (depth > kMaxKubeProtobufDepth) {
      return Status::InvalidArgument("protobuf nests deeper than " +
                                     std::to_string(kMaxKubeProtobufDepth) + " messages");
    }
    Reader reader(bytes);
    while (!reader.AtEnd()) {
      uint32_t number = 0, wire = 0;
      SLUICE_RETURN_IF_ERROR(reader.Tag(&number, &wire));
      const FieldDef* field = FindField(def, number);
      if (field == nullptr) {
        SLUICE_RETURN_IF_ERROR(reader.Skip(wire));
        continue;
      }
      SLUICE_RETURN_IF_ERROR(
          AtField(ParseField(reader, wire, *field, obj, depth), field->json_name));
    }
    return Status::Ok();
  }

  // Applies Go's JSON presence rules to the fields of `def` in `obj`: zero omitempty values go,
  // missing always-printed ones get their zero value.
  void Finalize(const MessageDef& def, json& obj) {
    for (const FieldDef& f : def.fields) {
      if (f.type == Type::kInline) {
        Finalize(*f.message, obj);
        continue;
      }
      const std::string key(f.json_name);
      const bool present = obj.contains(key);
      switch (f.presence) {
        case Presence::kOmitEmpty:
          if (present && IsProtoZero(obj[key])) obj.erase(key);
          break;
        case Presence::kAlways:
          if (!present) obj[key] = ZeroValue(f);
          break;
        case Presence::kPointer:
          break;
        case Presence::kNullable:
          if (!present) obj[key] = nullptr;
          break;
      }
    }
  }

 private:
  json ZeroValue(const FieldDef& f) {
    if (f.shape != Shape::kSingle) return nullptr;  // A nil slice or map.
    switch (f.type) {
      case Type::kString:
        return "";
      case Type::kInt32:
      case Type::kInt64:
      case Type::kIntOrString:
        return 0;
      case Type::kBool:
        return false;
      case Type::kQuantity:
        return "0";
      case Type::kMessage: {
        json value = json::object();
        Finalize(*f.message, value);
        return value;
      }
      case Type::kBytes:
      case Type::kInline:
      case Type::kTime:
      case Type::kMicroTime:
      case Type::kFieldsV1:
      case Type::kStringList:
        return nullptr;
    }
    return nullptr;
  }

  static bool IsVarintType(Type t) {
    return t == Type::kInt32 || t == Type::kInt64 || t == Type::kBool;
  }

  static json VarintValue(Type t, uint64_t v) {
    switch (t) {
      case Type::kInt32:
        return static_cast<int32_t>(static_cast<uint32_t>(v));
      case Type::kInt64:
        return static_cast<int64_t>(v);
      default:
        return v != 0;
    }
  }

  // A length-delimited value of a non-repeated type.
  Result<json> Value(const FieldDef& f, Type type, std::string_view bytes, int depth) {
    switch (type) {
      case Type::kString:
        return json(ValidUtf8(bytes));
      case Type::kBytes:
        return json(Base64Encode(bytes));
      case Type::kMessage: {
        json value = json::object();
        SLUICE_RETURN_IF_ERROR(Parse(bytes, *f.message, value, depth + 1));
        Finalize(*f.message, value);
        return value;
      }
      case Type::kTime:
        return DecodeTime(bytes, /*micro=*/false);
      case Type::kMicroTime:
        return DecodeTime(bytes, /*micro=*/true);
      case Type::kQuantity:
        return DecodeQuantity(bytes);
      case Type::kIntOrString:
        return DecodeIntOrString(bytes);
      case Type::kFieldsV1:
        return DecodeFieldsV1(bytes);
      case Type::kStringList:
        return DecodeStringList(bytes);
      default:
        return MalformedProto("unexpected length-delimited value");
    }
  }

  Status ParseField(Reader& reader, uint32_t wire, const FieldDef& f, json& obj, int depth) {
    const std::string key(f.json_name);
    if (IsVarintType(f.type)) {
      if (wire == kVarint) {
        uint64_t v = 0;
        SLUICE_RETURN_IF_ERROR(reader.Varint(&v));
        if (f.shape == Shape::kList) {
          obj[key].push_back(VarintValue(f.type, v));
        } else {
          obj[key] = VarintValue(f.type, v);
        }
        return Status::Ok();
      }
      if (wire == kLengthDelimited && f.shape == Shape::kList) {  // Packed.
        std::string_view packed;
        SLUICE_RETURN_IF_ERROR(reader.LengthDelimited(&packed));
        Reader values(packed);
        json& list = obj[key];
        if (!list.is_array()) list = json::array();
        while (!values.AtEnd()) {
          uint64_t v = 0;
          SLUICE_RETURN_IF_ERROR(values.Varint(&v));
          list.push_back(VarintValue(f.type, v));
        }
        return Status::Ok();
      }
      return MalformedProto("wire type " + std::to_string(wire) + " for a varint field");
    }
    if (wire != kLengthDelimited) {
      return MalformedProto("wire type " + std::to_string(wire) + " for a length-delimited field");
    }
    std::string_view bytes;
    SLUICE_RETURN_IF_ERROR(reader.LengthDelimited(&bytes));
    if (f.type == Type::kInline) return Parse(bytes, *f.message, obj, depth + 1);
    switch (f.shape) {
      case Shape::kSingle: {
        json& slot = obj[key];
        if (f.type == Type::kMessage && slot.is_object()) {
          SLUICE_RETURN_IF_ERROR(Parse(bytes, *f.message, slot, depth + 1));
          Finalize(*f.message, slot);
          return Status::Ok();
        }
        SLUICE_ASSIGN_OR_RETURN(slot, Value(f, f.type, bytes, depth));
        return Status::Ok();
      }
      case Shape::kList: {
        json& list = obj[key];
        if (!list.is_array()) list = json::array();
        Result<json> value = Value(f, f.type, bytes, depth);
        if (!value.ok()) {
          return AtField(value.status(), "[" + std::to_string(list.size()) + "]");
        }
        list.push_back(std::move(value).value());
        return Status::Ok();
      }
      case Shape::kMap:
        return ParseMapEntry(bytes, f, obj[key], depth);
    }
    return Status::Ok();
  }

  Status ParseMapEntry(std::string_view bytes, const FieldDef& f, json& map, int depth) {
    if (!map.is_object()) map = json::object();
    std::string_view key;
    std::optional<std::string_view> value;
    Reader reader(bytes);
    while (!reader.AtEnd()) {
      uint32_t number = 0, wire = 0;
      SLUICE_RETURN_IF_ERROR(reader.Tag(&number, &wire));
      if ((number == 1 || number == 2) && wire == kLengthDelimited) {
        std::string_view item;
        SLUICE_RETURN_IF_ERROR(reader.LengthDelimited(&item));
        if (number == 1) {
          key = item;
        } else {
          value = item;
        }
      } else {
        SLUICE_RETURN_IF_ERROR(reader.Skip(wire));
      }
    }
    const std::string name = ValidUtf8(key);
    // A missing value is the zero value: "", empty bytes, a zero quantity.
    Result<json> decoded = Value(f, f.type, value.value_or(std::string_view()), depth);
    if (!decoded.ok()) return AtField(decoded.status(), "[" + json(name).dump() + "]");
    map[name] = std::move(decoded).value();
    return Status::Ok();
  }
};

struct Envelope {
  std::string api_version;
  std::string kind;
  std::string_view raw;
  std::string content_encoding;
  std::string content_type;
};

Status ParseTypeMeta(std::string_view bytes, Envelope& out) {
  Reader reader(bytes);
  while (!reader.AtEnd()) {
    uint32_t number = 0, wire = 0;
    SLUICE_RETURN_IF_ERROR(reader.Tag(&number, &wire));
    if ((number == 1 || number == 2) && wire == kLengthDelimited) {
      std::string_view text;
      SLUICE_RETURN_IF_ERROR(reader.LengthDelimited(&text));
      (number == 1 ? out.api_version : out.kind) = ValidUtf8(text);
    } else {
      SLUICE_RETURN_IF_ERROR(reader.Skip(wire));
    }
  }
  return Status::Ok();
}

Status ParseEnvelope(std::string_view bytes, Envelope& out) {
  Reader reader(bytes);
  while (!reader.AtEnd()) {
    uint32_t number = 0, wire = 0;
    SLUICE_RETURN_IF_ERROR(reader.Tag(&number, &wire));
    if (number >= 1 && number <= 4 && wire == kLengthDelimited) {
      std::string_view item;
      SLUICE_RETURN_IF_ERROR(reader.LengthDelimited(&item));
      switch (number) {
        case 1:
          SLUICE_RETURN_IF_ERROR(ParseTypeMeta(item, out));
          break;
        case 2:
          out.raw = item;
          break;
        case 3:
          out.content_encoding = ValidUtf8(item);
          break;
        default:
          out.content_type = ValidUtf8(item);
          break;
      }
    } else {
      SLUICE_RETURN_IF_ERROR(reader.Skip(wire));
    }
  }
  return Status::Ok();
}

Result<json> Decode(std::string_view body) {
  if (body.size() < kKubeProtobufMagic.size() ||
      body.substr(0, kKubeProtobufMagic.size()) != kKubeProtobufMagic) {
    return Status::InvalidArgument("protobuf body does not start with the k8s magic bytes");
  }
  Envelope envelope;
  SLUICE_RETURN_IF_ERROR(ParseEnvelope(body.substr(kKubeProtobufMagic.size()), envelope));
  if (!envelope.content_encoding.empty()) {
    return Status::InvalidArgument("protobuf content encoding \"" + envelope.content_encoding +
                                   "\" is not supported");
  }
  if (!envelope.content_type.empty() && envelope.content_type != kKubeProtobufContentType) {
    return Status::InvalidArgument("protobuf envelope holds \"" + envelope.content_type +
                                   "\", not " + std::string(kKubeProtobufContentType));
  }
  if (envelope.kind.empty()) {
    return Status::InvalidArgument("protobuf envelope names no kind");
  }
  const MessageDef* def = FindKind(envelope.api_version, envelope.kind);
  if (def == nullptr) {
    return Status::InvalidArgument("protobuf is not supported for " + envelope.api_version +
                                   ", Kind=" + envelope.kind + "; send JSON");
  }
  json obj = json::object();
  Decoder decoder;
  Status status = decoder.Parse(envelope.raw, *def, obj, 1);
  if (!status.ok()) {
    return Status::InvalidArgument("decoding protobuf " + envelope.kind + ": " + status.message(),
                                   status.field());
  }
  decoder.Finalize(*def, obj);
  obj["apiVersion"] = envelope.api_version;
  obj["kind"] = envelope.kind;
  return obj;
}

}  // namespace
}  // namespace kube_protobuf

Result<nlohmann::json> DecodeKubeProtobuf(std::string_view body) {
  return kube_protobuf::Decode(body);
}

}  // namespace sluice::apiserver
