// The helpers the parts of the CEL evaluator share (eval_support.h): error constructors,
// heterogeneous numeric comparison, map lookup and formatting.
#include "common/cel/eval_support.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <utility>

#include "common/cel/eval.h"

namespace sluice::cel::detail {
namespace {

using Kind = Value::Kind;

std::optional<int> Sign(bool less, bool greater) { return less ? -1 : (greater ? 1 : 0); }

std::optional<int> CompareIntDouble(int64_t i, double d) {
  if (std::isnan(d)) return std::nullopt;
  if (d >= 9223372036854775808.0) return -1;
  if (d < -9223372036854775808.0) return 1;
  double t = std::trunc(d);
  auto ti = static_cast<int64_t>(t);
  if (i != ti) return Sign(i<ti, i> ti);
  double frac = d - t;
  return Sign(frac > 0, frac < 0);
}

std::optional<int> CompareUintDouble(uint64_t u, double d) {
  if (std::isnan(d)) return std::nullopt;
  if (d < 0) return 1;
  if (d >= 18446744073709551616.0) return -1;
  double t = std::trunc(d);
  auto tu = static_cast<uint64_t>(t);
  if (u != tu) return Sign(u<tu, u> tu);
  double frac = d - t;
  return Sign(frac > 0, frac < 0);
}

}  // namespace

Status EvalError(std::string msg) { return Status::InvalidArgument(std::move(msg)); }

Status NoOverload(std::string_view op, const Value& a) {
  return EvalError("no such overload: " + std::string(op) + " on " + std::string(TypeName(a)));
}
Status NoOverload(std::string_view op, const Value& a, const Value& b) {
  return EvalError("no such overload: " + std::string(TypeName(a)) + " " + std::string(op) + " " +
                   std::string(TypeName(b)));
}

std::optional<int> CompareNumbers(const Value& a, const Value& b) {
  Kind ka = a.kind();
  Kind kb = b.kind();
  if (ka == Kind::kInt && kb == Kind::kInt) {
    return Sign(a.int_value() < b.int_value(), a.int_value() > b.int_value());
  }
  if (ka == Kind::kUint && kb == Kind::kUint) {
    return Sign(a.uint_value() < b.uint_value(), a.uint_value() > b.uint_value());
  }
  if (ka == Kind::kDouble && kb == Kind::kDouble) {
    double x = a.double_value();
    double y = b.double_value();
    if (std::isnan(x) || std::isnan(y)) return std::nullopt;
    return Sign(x<y, x> y);
  }
  if (ka == Kind::kInt && kb == Kind::kUint) {
    if (a.int_value() < 0) return -1;
    auto x = static_cast<uint64_t>(a.int_value());
    return Sign(x<b.uint_value(), x> b.uint_value());
  }
  if (ka == Kind::kUint && kb == Kind::kInt) {
    std::optional<int> r = CompareNumbers(b, a);
    return r ? std::optional<int>(-*r) : std::nullopt;
  }
  if (ka == Kind::kInt) return CompareIntDouble(a.int_value(), b.double_value());
  if (ka == Kind::kUint) return CompareUintDouble(a.uint_value(), b.double_value());
  std::optional<int> r = CompareNumbers(b, a);  // a is the double
  return r ? std::optional<int>(-*r) : std::nullopt;
}

bool KeyEqual(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    std::optional<int> c = CompareNumbers(a, b);
    return c && *c == 0;
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::kBool:
      return a.bool_value() == b.bool_value();
    case Kind::kString:
      return a.string_value() == b.string_value();
    case Kind::kNull:
      return true;
    default:
      return false;  // lists and maps are never keys
  }
}

std::optional<Value> MapFind(const Value& m, const Value& key) {
  if (const nlohmann::json* j = m.json_rep()) {
    if (key.kind() != Kind::kString) return std::nullopt;
    auto it = j->find(key.string_value());
    if (it == j->end()) return std::nullopt;
    return Value::FromJson(*it);
  }
  for (const auto& [k, v] : *m.owned_map()) {
    if (KeyEqual(k, key)) return v;
  }
  return std::nullopt;
}

std::string Quote(const Value& key) {
  if (key.kind() == Kind::kString) return key.string_value();
  if (key.kind() == Kind::kInt) return std::to_string(key.int_value());
  if (key.kind() == Kind::kUint) return std::to_string(key.uint_value()) + "u";
  if (key.kind() == Kind::kBool) return key.bool_value() ? "true" : "false";
  return std::string(TypeName(key));
}

std::string FormatDouble(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d);
  return std::string(buf, res.ptr);
}

}  // namespace sluice::cel::detail
