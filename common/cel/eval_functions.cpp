// The CEL builtin functions (evaluator.h): size(), the string functions (startsWith, endsWith,
// contains, matches, lowerAscii, upperAscii) and the conversions int(), uint(), double(),
// string() and dyn().
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "common/cel/eval.h"
#include "common/cel/eval_support.h"
#include "common/cel/evaluator.h"

namespace sluice::cel::detail {
namespace {

using Kind = Value::Kind;

size_t CodePoints(const std::string& s) {
  size_t n = 0;
  for (char c : s) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  }
  return n;
}

template <typename T>
bool ParseInteger(const std::string& s, T& out) {
  const char* begin = s.data();
  const char* end = s.data() + s.size();
  if (begin != end && *begin == '+') ++begin;
  auto res = std::from_chars(begin, end, out);
  return res.ec == std::errc() && res.ptr == end && begin != end;
}

Result<Value> ToInt(const Value& x) {
  switch (x.kind()) {
    case Kind::kInt:
      return x;
    case Kind::kUint:
      if (x.uint_value() > static_cast<uint64_t>(INT64_MAX)) {
        return EvalError("int() overflow: " + std::to_string(x.uint_value()));
      }
      return Value::Int(static_cast<int64_t>(x.uint_value()));
    case Kind::kDouble: {
      double d = x.double_value();
      if (std::isnan(d) || d >= 9223372036854775808.0 || d < -9223372036854775808.0) {
        return EvalError("int() overflow: " + FormatDouble(d));
      }
      return Value::Int(static_cast<int64_t>(d));
    }
    case Kind::kString: {
      int64_t v = 0;
      if (!ParseInteger(x.string_value(), v)) {
        return EvalError("int(): cannot convert '" + x.string_value() + "'");
      }
      return Value::Int(v);
    }
    default:
      return NoOverload("int()", x);
  }
}

Result<Value> ToUint(const Value& x) {
  switch (x.kind()) {
    case Kind::kUint:
      return x;
    case Kind::kInt:
      if (x.int_value() < 0) {
        return EvalError("uint() overflow: " + std::to_string(x.int_value()));
      }
      return Value::Uint(static_cast<uint64_t>(x.int_value()));
    case Kind::kDouble: {
      double d = x.double_value();
      if (std::isnan(d) || d <= -1.0 || d >= 18446744073709551616.0) {
        return EvalError("uint() overflow: " + FormatDouble(d));
      }
      return Value::Uint(static_cast<uint64_t>(d));
    }
    case Kind::kString: {
      uint64_t v = 0;
      if (!ParseInteger(x.string_value(), v)) {
        return EvalError("uint(): cannot convert '" + x.string_value() + "'");
      }
      return Value::Uint(v);
    }
    default:
      return NoOverload("uint()", x);
  }
}

Result<Value> ToDouble(const Value& x) {
  switch (x.kind()) {
    case Kind::kDouble:
      return x;
    case Kind::kInt:
      return Value::Double(static_cast<double>(x.int_value()));
    case Kind::kUint:
      return Value::Double(static_cast<double>(x.uint_value()));
    case Kind::kString: {
      const std::string& s = x.string_value();
      char* end = nullptr;
      double d = s.empty() ? 0 : std::strtod(s.c_str(), &end);
      if (s.empty() || end != s.c_str() + s.size() ||
          std::isspace(static_cast<unsigned char>(s[0]))) {
        return EvalError("double(): cannot convert '" + s + "'");
      }
      return Value::Double(d);
    }
    default:
      return NoOverload("double()", x);
  }
}

Result<Value> ToString(const Value& x) {
  switch (x.kind()) {
    case Kind::kString:
      return x;
    case Kind::kBool:
      return Value::String(x.bool_value() ? "true" : "false");
    case Kind::kInt:
      return Value::String(std::to_string(x.int_value()));
    case Kind::kUint:
      return Value::String(std::to_string(x.uint_value()));
    case Kind::kDouble:
      return Value::String(FormatDouble(x.double_value()));
    default:
      return NoOverload("string()", x);
  }
}

}  // namespace

Result<Value> Evaluator::EvalCall(const Expr& e) {
  std::vector<Value> args;
  args.reserve(e.args.size());
  for (const auto& a : e.args) {
    SLUICE_ASSIGN_OR_RETURN(Value v, Eval(*a));
    args.push_back(std::move(v));
  }
  const Value& x = args[0];
  auto string_pair = [&]() {
    return args.size() == 2 && x.kind() == Kind::kString && args[1].kind() == Kind::kString;
  };
  switch (e.fn) {
    case Builtin::kSize:
      if (x.kind() == Kind::kString) {
        return Value::Int(static_cast<int64_t>(CodePoints(x.string_value())));
      }
      if (x.kind() == Kind::kList) return Value::Int(static_cast<int64_t>(x.list_size()));
      if (x.kind() == Kind::kMap) return Value::Int(static_cast<int64_t>(x.map_size()));
      return NoOverload("size()", x);
    case Builtin::kStartsWith:
    case Builtin::kEndsWith:
    case Builtin::kContains: {
      if (!string_pair()) return NoOverload(e.name + "()", x, args[1]);
      const std::string& s = x.string_value();
      const std::string& p = args[1].string_value();
      SLUICE_RETURN_IF_ERROR(Charge(s.size() / 64));
      if (e.fn == Builtin::kStartsWith) return Value::Bool(s.compare(0, p.size(), p) == 0);
      if (e.fn == Builtin::kEndsWith) {
        return Value::Bool(s.size() >= p.size() &&
                           s.compare(s.size() - p.size(), p.size(), p) == 0);
      }
      return Value::Bool(s.find(p) != std::string::npos);
    }
    case Builtin::kMatches:
      return Matches(e, args);
    case Builtin::kLowerAscii:
    case Builtin::kUpperAscii: {
      if (x.kind() != Kind::kString) return NoOverload(e.name + "()", x);
      std::string s = x.string_value();
      SLUICE_RETURN_IF_ERROR(Charge(s.size() / 64));
      for (char& c : s) {
        if (e.fn == Builtin::kLowerAscii && c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
        if (e.fn == Builtin::kUpperAscii && c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
      }
      return Value::String(std::move(s));
    }
    case Builtin::kInt:
      return ToInt(x);
    case Builtin::kUint:
      return ToUint(x);
    case Builtin::kDouble:
      return ToDouble(x);
    case Builtin::kString:
      return ToString(x);
    case Builtin::kDyn:
      return x;
  }
  return Status::Internal("unknown function");
}

Result<Value> Evaluator::Matches(const Expr& e, const std::vector<Value>& args) {
  const Value& s = args[0];
  const Value& p = args[1];
  if (s.kind() != Kind::kString || p.kind() != Kind::kString) {
    return NoOverload("matches()", s, p);
  }
  if (s.string_value().size() > kMaxRegexInput) {
    return EvalError("matches(): input of " + std::to_string(s.string_value().size()) +
                     " bytes exceeds the supported " + std::to_string(kMaxRegexInput));
  }
  SLUICE_RETURN_IF_ERROR(Charge(s.string_value().size() + 1));
  std::shared_ptr<const Regex> regex = e.regex;
  if (!regex) {
    Result<std::shared_ptr<const Regex>> compiled = Regex::Compile(p.string_value());
    if (!compiled.ok()) {
      return EvalError("matches(): invalid regular expression " + compiled.status().message());
    }
    regex = *std::move(compiled);
  }
  const Result<bool> found = regex->Search(s.string_value());
  if (!found.ok()) return EvalError("matches(): " + found.status().message());
  return Value::Bool(*found);
}

}  // namespace sluice::cel::detail
