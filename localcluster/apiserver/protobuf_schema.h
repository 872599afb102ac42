// The schema tables protobuf_objects.cpp decodes kube protobuf with: the vocabulary they are
// written in, and the kinds each table file contributes. Internal to the protobuf decoder
// (protobuf_objects.cpp and the protobuf_*_kinds.cpp tables); not part of the server's API.
//
// A MessageDef lists a message's fields: field number -> JSON name, type, and how Go's
// encoding/json prints the field of the decoded Go value (Presence). Tables are written with the
// helpers below and SLUICE_MESSAGE, leaves first, with field numbers, JSON names and Go
// pointer/omitempty shapes taken from k8s.io/api and k8s.io/apimachinery (generated.proto and
// types.go).
//
// Thread safety: everything here is constant-initialized and immutable.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace sluice::apiserver::kube_protobuf {

enum class Type : uint8_t {
  kString,
  kInt32,
  kInt64,
  kBool,
  kBytes,        // base64 in JSON.
  kMessage,      // A nested object described by FieldDef::message.
  kInline,       // An embedded Go struct (`json:",inline"`): its fields sit in the parent object.
  kTime,         // metav1.Time: RFC 3339 in seconds; null when zero.
  kMicroTime,    // metav1.MicroTime: RFC 3339 with microseconds; null when zero.
  kQuantity,     // resource.Quantity {string = 1}: the string.
  kIntOrString,  // intstr.IntOrString {type = 1, intVal = 2, strVal = 3}: a number or a string.
  kFieldsV1,     // metav1.FieldsV1 {raw = 1}: the JSON document held in raw.
  kStringList,   // A message {repeated string items = 1} that Go holds as a []string
                 // (authorization's ExtraValue): a list, [] when it has no items.
};

enum class Shape : uint8_t {
  kSingle,
  kList,  // repeated.
  kMap,   // repeated entry {key = 1 (string), value = 2}.
};

// How Go's encoding/json prints the field of the decoded Go value.
enum class Presence : uint8_t {
  kOmitEmpty,  // Non-pointer scalar, slice or map with omitempty: left out when zero or empty.
  kAlways,     // No omitempty, or a non-pointer struct (omitempty has no effect on those): printed
               // always, as the zero value ("", 0, false, null, {}) when not sent.
  kPointer,    // Pointer with omitempty: printed exactly when sent, zero or not.
  kNullable,   // Pointer without omitempty: null when not sent.
};

struct MessageDef;

struct FieldDef {
  uint32_t number;
  std::string_view json_name;  // Empty for kInline.
  Type type;
  Shape shape;
  Presence presence;
  const MessageDef* message;  // For kMessage and kInline.
};

struct MessageDef {
  std::string_view name;
  std::span<const FieldDef> fields;
};

constexpr FieldDef Scalar(uint32_t n, std::string_view j, Type t, Presence p) {
  return {n, j, t, Shape::kSingle, p, nullptr};
}
constexpr FieldDef Str(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kString, Presence::kOmitEmpty);
}
constexpr FieldDef StrA(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kString, Presence::kAlways);
}
constexpr FieldDef StrP(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kString, Presence::kPointer);
}
constexpr FieldDef Int(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kInt32, Presence::kOmitEmpty);
}
constexpr FieldDef IntA(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kInt32, Presence::kAlways);
}
constexpr FieldDef IntP(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kInt32, Presence::kPointer);
}
constexpr FieldDef Long(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kInt64, Presence::kOmitEmpty);
}
constexpr FieldDef LongA(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kInt64, Presence::kAlways);
}
constexpr FieldDef LongP(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kInt64, Presence::kPointer);
}
constexpr FieldDef Bool(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kBool, Presence::kOmitEmpty);
}
constexpr FieldDef BoolA(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kBool, Presence::kAlways);
}
constexpr FieldDef BoolP(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kBool, Presence::kPointer);
}
constexpr FieldDef TimeA(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kTime, Presence::kAlways);
}
constexpr FieldDef TimeP(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kTime, Presence::kPointer);
}
constexpr FieldDef MicroA(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kMicroTime, Presence::kAlways);
}
constexpr FieldDef MicroP(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kMicroTime, Presence::kPointer);
}
constexpr FieldDef QtyA(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kQuantity, Presence::kAlways);
}
constexpr FieldDef QtyP(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kQuantity, Presence::kPointer);
}
constexpr FieldDef IntStrA(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kIntOrString, Presence::kAlways);
}
constexpr FieldDef IntStrP(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kIntOrString, Presence::kPointer);
}
// A non-pointer struct: always printed.
constexpr FieldDef Obj(uint32_t n, std::string_view j, const MessageDef& m) {
  return {n, j, Type::kMessage, Shape::kSingle, Presence::kAlways, &m};
}
constexpr FieldDef ObjP(uint32_t n, std::string_view j, const MessageDef& m) {
  return {n, j, Type::kMessage, Shape::kSingle, Presence::kPointer, &m};
}
// A pointer to a struct without omitempty: null when not sent.
constexpr FieldDef ObjN(uint32_t n, std::string_view j, const MessageDef& m) {
  return {n, j, Type::kMessage, Shape::kSingle, Presence::kNullable, &m};
}
constexpr FieldDef Objs(uint32_t n, std::string_view j, const MessageDef& m) {
  return {n, j, Type::kMessage, Shape::kList, Presence::kOmitEmpty, &m};
}
constexpr FieldDef ObjsA(uint32_t n, std::string_view j, const MessageDef& m) {
  return {n, j, Type::kMessage, Shape::kList, Presence::kAlways, &m};
}
constexpr FieldDef Inline(uint32_t n, const MessageDef& m) {
  return {n, {}, Type::kInline, Shape::kSingle, Presence::kAlways, &m};
}
constexpr FieldDef Strs(uint32_t n, std::string_view j) {
  return {n, j, Type::kString, Shape::kList, Presence::kOmitEmpty, nullptr};
}
// No omitempty: null when not sent.
constexpr FieldDef StrsA(uint32_t n, std::string_view j) {
  return {n, j, Type::kString, Shape::kList, Presence::kAlways, nullptr};
}
constexpr FieldDef Longs(uint32_t n, std::string_view j) {
  return {n, j, Type::kInt64, Shape::kList, Presence::kOmitEmpty, nullptr};
}
constexpr FieldDef StrMap(uint32_t n, std::string_view j) {
  return {n, j, Type::kString, Shape::kMap, Presence::kOmitEmpty, nullptr};
}
constexpr FieldDef BytesMap(uint32_t n, std::string_view j) {
  return {n, j, Type::kBytes, Shape::kMap, Presence::kOmitEmpty, nullptr};
}
constexpr FieldDef QtyMap(uint32_t n, std::string_view j) {
  return {n, j, Type::kQuantity, Shape::kMap, Presence::kOmitEmpty, nullptr};
}
constexpr FieldDef StrListMap(uint32_t n, std::string_view j) {
  return {n, j, Type::kStringList, Shape::kMap, Presence::kOmitEmpty, nullptr};
}

// Defines `var`, a MessageDef named `name` with the given fields, and its field array.
#define SLUICE_MESSAGE(var, name, ...)              \
  constexpr FieldDef var##Fields[] = {__VA_ARGS__}; \
  constexpr MessageDef var { name, std::span<const FieldDef>(var##Fields) }

// A kind a body may hold: the envelope's apiVersion and kind, and the object's message.
struct KindDef {
  std::string_view api_version;
  std::string_view kind;
  const MessageDef* message;
};

// Messages more than one table file uses (defined in protobuf_core_kinds.cpp).
extern const MessageDef kObjectMeta;
extern const MessageDef kLabelSelectorRequirement;
extern const MessageDef kLabelSelector;
extern const MessageDef kDeleteOptions;
extern const MessageDef kPodSpec;

// The kinds of each table file: core/v1 and the small groups (protobuf_core_kinds.cpp), RBAC and
// the access and self-subject reviews (protobuf_auth_kinds.cpp), apps/v1 (protobuf_apps_kinds.cpp).
// DeleteOptions, registered in every group version, is in none of them.
std::span<const KindDef> CoreKinds();
std::span<const KindDef> AuthKinds();
std::span<const KindDef> AppsKinds();

}  // namespace sluice::apiserver::kube_protobuf
