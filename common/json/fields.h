// Reading one field of a JSON document the forgiving way: a missing field, a field of another
// type, or a document that is not an object reads as the caller's fallback, never throws. Kube
// objects, worker reports and manifests are read this way where an absent or odd field has a
// meaning of its own (the default); where a wrong type is the user's error, validate first
// (api/validation.h, common/openapi) and report the field's path instead.
//
// Two families: `...Field(obj, "key")` reads one member of `obj`; `...At(obj, "/a/b")` reads by
// JSON pointer (RFC 6901; "~1" stands for "/" as in "/metadata/labels/sluice.dev~1rank"). A
// pointer must start with "/": it is a literal in the code, so a malformed one is a bug and
// throws nlohmann::json::parse_error.
//
// Integers: only JSON integers read as integers (a number with a fraction, a string of digits or
// a bool read as the fallback), as the API server's schemas type them.
//
// Thread safety: pure functions. The references returned point into `obj`, or to a static empty
// value, and live as long as `obj`.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace sluice {

// `value` when it is a string; else `fallback`.
std::string StringValue(const nlohmann::json& value, std::string_view fallback = "");
// `value` when it is an array; else an empty array (missing, null and ill-typed lists read as
// empty).
const nlohmann::json& ArrayValue(const nlohmann::json& value);

// obj[key] whatever its type; null when obj is no object or lacks it.
const nlohmann::json& AnyField(const nlohmann::json& obj, std::string_view key);
// obj[key] when obj is an object holding a string there; else `fallback`.
std::string StringField(const nlohmann::json& obj, std::string_view key,
                        std::string_view fallback = "");
// obj[key] when obj is an object holding an integer there; else `fallback`.
int64_t IntField(const nlohmann::json& obj, std::string_view key, int64_t fallback = 0);
std::optional<int64_t> OptionalIntField(const nlohmann::json& obj, std::string_view key);
// obj[key] when obj is an object holding a number (integer or not) there; else `fallback`.
double NumberField(const nlohmann::json& obj, std::string_view key, double fallback = 0);
std::optional<double> OptionalNumberField(const nlohmann::json& obj, std::string_view key);
// obj[key] when obj is an object holding a bool there; else `fallback`.
bool BoolField(const nlohmann::json& obj, std::string_view key, bool fallback = false);
// obj[key] when it is an object; else null (which iterates as empty and reads no members).
const nlohmann::json& ObjectField(const nlohmann::json& obj, std::string_view key);
// obj[key] when it is an array; else an empty array.
const nlohmann::json& ArrayField(const nlohmann::json& obj, std::string_view key);

// The same by JSON pointer.
// The value at `pointer` whatever its type; nullptr when a step is missing.
const nlohmann::json* ValueAt(const nlohmann::json& obj, std::string_view pointer);
// The value at `pointer` whatever its type; null when a step is missing.
const nlohmann::json& AnyAt(const nlohmann::json& obj, std::string_view pointer);
std::string StringAt(const nlohmann::json& obj, std::string_view pointer,
                     std::string_view fallback = "");
int64_t IntAt(const nlohmann::json& obj, std::string_view pointer, int64_t fallback = 0);
std::optional<int64_t> OptionalIntAt(const nlohmann::json& obj, std::string_view pointer);
double NumberAt(const nlohmann::json& obj, std::string_view pointer, double fallback = 0);
std::optional<double> OptionalNumberAt(const nlohmann::json& obj, std::string_view pointer);
bool BoolAt(const nlohmann::json& obj, std::string_view pointer, bool fallback = false);
const nlohmann::json& ObjectAt(const nlohmann::json& obj, std::string_view pointer);
const nlohmann::json& ArrayAt(const nlohmann::json& obj, std::string_view pointer);

// The readers that return a reference refuse a temporary document, whose reference would
// dangle (`for (auto& c : ArrayAt(Get(...), "/status/conditions"))`): keep it in a variable.
const nlohmann::json& ArrayValue(nlohmann::json&&) = delete;
const nlohmann::json& AnyField(nlohmann::json&&, std::string_view) = delete;
const nlohmann::json& ObjectField(nlohmann::json&&, std::string_view) = delete;
const nlohmann::json& ArrayField(nlohmann::json&&, std::string_view) = delete;
const nlohmann::json* ValueAt(nlohmann::json&&, std::string_view) = delete;
const nlohmann::json& AnyAt(nlohmann::json&&, std::string_view) = delete;
const nlohmann::json& ObjectAt(nlohmann::json&&, std::string_view) = delete;
const nlohmann::json& ArrayAt(nlohmann::json&&, std::string_view) = delete;

}  // namespace sluice
