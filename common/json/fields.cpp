#include "common/json/fields.h"

namespace sluice {

using nlohmann::json;

namespace {

const json& Null() {
  static const json kNull;
  return kNull;
}

const json& EmptyArray() {
  static const json kEmpty = json::array();
  return kEmpty;
}

// The member `key` of obj, or null when obj is no object or lacks it.
const json* Member(const json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  const auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

// The value at `pointer`, or null when any step is missing or of another kind.
const json* Pointee(const json& obj, std::string_view pointer) {
  const json::json_pointer ptr{std::string(pointer)};
  return obj.contains(ptr) ? &obj.at(ptr) : nullptr;
}

std::string StringOf(const json* v, std::string_view fallback) {
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string(fallback);
}

std::optional<int64_t> IntOf(const json* v) {
  if (v == nullptr || !v->is_number_integer()) return std::nullopt;
  return v->get<int64_t>();
}

std::optional<double> NumberOf(const json* v) {
  if (v == nullptr || !v->is_number()) return std::nullopt;
  return v->get<double>();
}

bool BoolOf(const json* v, bool fallback) {
  return v != nullptr && v->is_boolean() ? v->get<bool>() : fallback;
}

const json& ObjectOf(const json* v) { return v != nullptr && v->is_object() ? *v : Null(); }

const json& ArrayOf(const json* v) { return v != nullptr && v->is_array() ? *v : EmptyArray(); }

}  // namespace

const json& ArrayValue(const json& value) { return ArrayOf(&value); }

std::string StringValue(const json& value, std::string_view fallback) {
  return StringOf(&value, fallback);
}

const json& AnyField(const json& obj, std::string_view key) {
  const json* v = Member(obj, key);
  return v != nullptr ? *v : Null();
}

std::string StringField(const json& obj, std::string_view key, std::string_view fallback) {
  return StringOf(Member(obj, key), fallback);
}

int64_t IntField(const json& obj, std::string_view key, int64_t fallback) {
  return IntOf(Member(obj, key)).value_or(fallback);
}

std::optional<int64_t> OptionalIntField(const json& obj, std::string_view key) {
  return IntOf(Member(obj, key));
}

double NumberField(const json& obj, std::string_view key, double fallback) {
  return NumberOf(Member(obj, key)).value_or(fallback);
}

std::optional<double> OptionalNumberField(const json& obj, std::string_view key) {
  return NumberOf(Member(obj, key));
}

bool BoolField(const json& obj, std::string_view key, bool fallback) {
  return BoolOf(Member(obj, key), fallback);
}

const json& ObjectField(const json& obj, std::string_view key) {
  return ObjectOf(Member(obj, key));
}

const json& ArrayField(const json& obj, std::string_view key) { return ArrayOf(Member(obj, key)); }

const json* ValueAt(const json& obj, std::string_view pointer) { return Pointee(obj, pointer); }

const json& AnyAt(const json& obj, std::string_view pointer) {
  const json* v = Pointee(obj, pointer);
  return v != nullptr ? *v : Null();
}

std::string StringAt(const json& obj, std::string_view pointer, std::string_view fallback) {
  return StringOf(Pointee(obj, pointer), fallback);
}

int64_t IntAt(const json& obj, std::string_view pointer, int64_t fallback) {
  return IntOf(Pointee(obj, pointer)).value_or(fallback);
}

std::optional<int64_t> OptionalIntAt(const json& obj, std::string_view pointer) {
  return IntOf(Pointee(obj, pointer));
}

double NumberAt(const json& obj, std::string_view pointer, double fallback) {
  return NumberOf(Pointee(obj, pointer)).value_or(fallback);
}

std::optional<double> OptionalNumberAt(const json& obj, std::string_view pointer) {
  return NumberOf(Pointee(obj, pointer));
}

bool BoolAt(const json& obj, std::string_view pointer, bool fallback) {
  return BoolOf(Pointee(obj, pointer), fallback);
}

const json& ObjectAt(const json& obj, std::string_view pointer) {
  return ObjectOf(Pointee(obj, pointer));
}

const json& ArrayAt(const json& obj, std::string_view pointer) {
  return ArrayOf(Pointee(obj, pointer));
}

}  // namespace sluice
