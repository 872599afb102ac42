// What the parts of the CEL evaluator (eval*.cpp) share: the error constructors, heterogeneous
// numeric comparison, map lookup, and the formatting of keys and doubles in error messages and
// conversions. Internal to common/cel.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/cel/value.h"
#include "common/status.h"

namespace sluice::cel::detail {

// An evaluation error (InvalidArgument).
Status EvalError(std::string msg);

// "no such overload" for an operator or function applied to values of the wrong kinds.
Status NoOverload(std::string_view op, const Value& a);
Status NoOverload(std::string_view op, const Value& a, const Value& b);

// Three-way comparison of two numbers (int, uint, double in any mix) by mathematical value;
// nullopt when a NaN is involved.
std::optional<int> CompareNumbers(const Value& a, const Value& b);

// Equality of map keys (null, bool, numbers by value, strings); lists and maps are never keys.
bool KeyEqual(const Value& a, const Value& b);

// The value under `key` in map `m`, or nullopt.
std::optional<Value> MapFind(const Value& m, const Value& key);

// A map key as written in an error message ("a", 1, 2u, true).
std::string Quote(const Value& key);

// A double as CEL's string() renders it: shortest round-trip form, NaN, +Inf, -Inf.
std::string FormatDouble(double d);

}  // namespace sluice::cel::detail
