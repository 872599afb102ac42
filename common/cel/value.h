// Value: one runtime value of the CEL subset (see docs/cel.md).
//
// A Value is null, bool, int (int64), uint (uint64), double, string, list or map. Scalars are held
// by value. Lists and maps come in two representations that behave the same:
//   - owned: built by the evaluator (literals, `+`, map()/filter()); shared, immutable storage
//     (std::shared_ptr<const ...>), so copying a Value is cheap;
//   - borrowed: a view of a JSON array or object (the `self`/`oldSelf` documents). Nothing is
//     copied when a rule walks `self`; a scalar read out of the document becomes an owned scalar.
// JSON typing: an integral JSON number is an int, or a uint when it exceeds the int64 range; any
// other JSON number is a double; JSON strings, booleans, null, arrays and objects map onto the
// obvious kinds. Map keys of owned maps may be bool, int, uint or string; keys of borrowed maps
// (JSON objects) are strings.
//
// Ownership: a borrowed Value points into a nlohmann::json owned by the caller, which must outlive
// every Value derived from it (the evaluator guarantees this for the duration of one evaluation).
// Thread safety: a Value is immutable after construction; concurrent reads are safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace sluice::cel {

class Value;
using ValueList = std::vector<Value>;
// Entries in insertion order; keys are unique (the evaluator checks when building one).
using ValueMap = std::vector<std::pair<Value, Value>>;

class Value {
 public:
  enum class Kind : uint8_t { kNull, kBool, kInt, kUint, kDouble, kString, kList, kMap };

  Value() = default;  // null

  static Value Null() { return Value(); }
  static Value Bool(bool b) { return Value(Kind::kBool, b); }
  static Value Int(int64_t i) { return Value(Kind::kInt, i); }
  static Value Uint(uint64_t u) { return Value(Kind::kUint, u); }
  static Value Double(double d) { return Value(Kind::kDouble, d); }
  static Value String(std::string s) { return Value(Kind::kString, std::move(s)); }
  static Value List(ValueList l) {
    return Value(Kind::kList, std::make_shared<const ValueList>(std::move(l)));
  }
  static Value Map(ValueMap m) {
    return Value(Kind::kMap, std::make_shared<const ValueMap>(std::move(m)));
  }
  // A view of `j`: arrays and objects are borrowed (j must outlive the Value), scalars copied.
  static Value FromJson(const nlohmann::json& j) {
    switch (j.type()) {
      case nlohmann::json::value_t::boolean:
        return Bool(j.get<bool>());
      case nlohmann::json::value_t::number_integer:
        return Int(j.get<int64_t>());
      case nlohmann::json::value_t::number_unsigned: {
        uint64_t u = j.get<uint64_t>();
        if (u <= static_cast<uint64_t>(INT64_MAX)) return Int(static_cast<int64_t>(u));
        return Uint(u);
      }
      case nlohmann::json::value_t::number_float:
        return Double(j.get<double>());
      case nlohmann::json::value_t::string:
        return String(j.get_ref<const std::string&>());
      case nlohmann::json::value_t::array:
        return Value(Kind::kList, &j);
      case nlohmann::json::value_t::object:
        return Value(Kind::kMap, &j);
      default:  // null, discarded, binary
        return Null();
    }
  }

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::kNull; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_number() const {
    return kind_ == Kind::kInt || kind_ == Kind::kUint || kind_ == Kind::kDouble;
  }

  // Accessors: call only on a Value of the matching kind.
  bool bool_value() const { return std::get<bool>(rep_); }
  int64_t int_value() const { return std::get<int64_t>(rep_); }
  uint64_t uint_value() const { return std::get<uint64_t>(rep_); }
  double double_value() const { return std::get<double>(rep_); }
  const std::string& string_value() const { return std::get<std::string>(rep_); }

  // Lists (kind() == kList).
  size_t list_size() const {
    if (const auto* j = json_rep()) return j->size();
    return std::get<std::shared_ptr<const ValueList>>(rep_)->size();
  }
  Value list_at(size_t i) const {
    if (const auto* j = json_rep()) return FromJson((*j)[i]);
    return (*std::get<std::shared_ptr<const ValueList>>(rep_))[i];
  }

  // Maps (kind() == kMap).
  size_t map_size() const {
    if (const auto* j = json_rep()) return j->size();
    return std::get<std::shared_ptr<const ValueMap>>(rep_)->size();
  }
  // The keys in iteration order (JSON object order, or insertion order for owned maps).
  std::vector<Value> map_keys() const {
    std::vector<Value> keys;
    if (const auto* j = json_rep()) {
      keys.reserve(j->size());
      for (auto it = j->begin(); it != j->end(); ++it) keys.push_back(String(it.key()));
    } else {
      for (const auto& [k, v] : *std::get<std::shared_ptr<const ValueMap>>(rep_)) {
        keys.push_back(k);
      }
    }
    return keys;
  }
  // The JSON object behind a borrowed map or the JSON array behind a borrowed list; else null.
  const nlohmann::json* json_rep() const {
    const auto* p = std::get_if<const nlohmann::json*>(&rep_);
    return p ? *p : nullptr;
  }
  // The entries of an owned map; null for a borrowed one.
  const ValueMap* owned_map() const {
    const auto* p = std::get_if<std::shared_ptr<const ValueMap>>(&rep_);
    return p ? p->get() : nullptr;
  }

 private:
  template <typename T>
  Value(Kind kind, T rep) : kind_(kind), rep_(std::move(rep)) {}

  Kind kind_ = Kind::kNull;
  std::variant<std::monostate, bool, int64_t, uint64_t, double, std::string,
               std::shared_ptr<const ValueList>, std::shared_ptr<const ValueMap>,
               const nlohmann::json*>
      rep_;
};

}  // namespace sluice::cel
