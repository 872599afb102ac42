#include "common/openapi/schema.h"

#include <cmath>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <set>

#include "common/json/fields.h"

namespace sluice::openapi {
namespace {

using nlohmann::json;

const json* Child(const json& schema, const char* key) {
  auto it = schema.find(key);
  return it == schema.end() ? nullptr : &*it;
}

// A non-negative integer keyword (minItems: 1), whether JSON stored it signed or unsigned.
std::optional<size_t> Count(const json& schema, const char* key) {
  auto it = schema.find(key);
  if (it == schema.end() || !(it->is_number_integer() || it->is_number_unsigned())) {
    return std::nullopt;
  }
  const int64_t v = it->get<int64_t>();
  if (v < 0) return std::nullopt;
  return static_cast<size_t>(v);
}

std::string TypeOf(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "integer";
    case json::value_t::number_float:
      return "number";
    case json::value_t::string:
      return "string";
    case json::value_t::array:
      return "array";
    case json::value_t::object:
      return "object";
    default:
      return "unknown";
  }
}

bool IsIntegral(const json& v) {
  if (v.is_number_integer() || v.is_number_unsigned()) return true;
  if (!v.is_number_float()) return false;
  const double d = v.get<double>();
  return std::isfinite(d) && std::floor(d) == d;
}

bool MatchesType(const std::string& type, const json& v) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "boolean") return v.is_boolean();
  if (type == "integer") return IsIntegral(v);
  if (type == "number") return v.is_number();
  return true;
}

// Shortest JSON text of a value, for messages ("x" for strings, 3 for numbers).
std::string Show(const json& v) { return v.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string ShowNumber(const json& v) {
  if (IsIntegral(v)) return std::to_string(v.get<int64_t>());
  return Show(v);
}

const std::regex* CompiledPattern(const std::string& pattern) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<std::regex>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(pattern);
  if (it == cache.end()) {
    std::unique_ptr<std::regex> re;
    try {
      re = std::make_unique<std::regex>(pattern, std::regex::ECMAScript);
    } catch (const std::regex_error&) {
      re = nullptr;  // Reported by CheckStructural; validation treats it as matching nothing.
    }
    it = cache.emplace(pattern, std::move(re)).first;
  }
  return it->second.get();
}

bool IsDateTime(const std::string& s) {
  // RFC 3339: 2026-11-22T10:00:00Z, optional fraction, Z or +hh:mm.
  static const std::regex re(
      R"(^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$)");
  return std::regex_match(s, re);
}

class Validator {
 public:
  Validator(const ValidateOptions& options, FieldErrors& errors)
      : options_(options), errors_(errors) {}

  void Check(const json& schema, const json& v, const std::string& path, bool root) {
    if (v.is_null()) {
      if (!BoolField(schema, "nullable") && schema.contains("type")) {
        Add(path, "Invalid value: \"null\": must be of type " + schema["type"].get<std::string>());
      }
      return;
    }
    const bool int_or_string = BoolField(schema, "x-kubernetes-int-or-string");
    if (int_or_string) {
      if (!IsIntegral(v) && !v.is_string()) {
        Add(path, "Invalid value: \"" + TypeOf(v) + "\": must be of type integer or string");
        return;
      }
    } else if (const json* type = Child(schema, "type"); type && type->is_string()) {
      if (!MatchesType(type->get<std::string>(), v)) {
        Add(path,
            "Invalid value: \"" + TypeOf(v) + "\": must be of type " + type->get<std::string>());
        return;  // Further keywords assume the right type.
      }
    }
    if (const json* e = Child(schema, "enum"); e && e->is_array()) {
      bool found = false;
      for (const json& allowed : *e) found = found || allowed == v;
      if (!found) {
        std::string list;
        for (const json& allowed : *e) list += (list.empty() ? "" : ", ") + Show(allowed);
        Add(path, "Unsupported value: " + Show(v) + ": supported values: " + list);
      }
    }
    if (v.is_number()) CheckNumber(schema, v, path);
    if (v.is_string()) CheckString(schema, v.get<std::string>(), path);
    if (v.is_array()) CheckArray(schema, v, path);
    if (v.is_object()) CheckObject(schema, v, path, root);
  }

 private:
  void Add(const std::string& path, std::string message) {
    errors_.push_back({path, std::move(message)});
  }

  void CheckNumber(const json& schema, const json& v, const std::string& path) {
    const double d = v.get<double>();
    if (const json* min = Child(schema, "minimum"); min && min->is_number()) {
      const bool exclusive = BoolField(schema, "exclusiveMinimum");
      if (exclusive ? !(d > min->get<double>()) : !(d >= min->get<double>())) {
        Add(path, std::string("Invalid value: ") + ShowNumber(v) + ": should be greater than " +
                      (exclusive ? "" : "or equal to ") + ShowNumber(*min));
      }
    }
    if (const json* max = Child(schema, "maximum"); max && max->is_number()) {
      const bool exclusive = BoolField(schema, "exclusiveMaximum");
      if (exclusive ? !(d < max->get<double>()) : !(d <= max->get<double>())) {
        Add(path, std::string("Invalid value: ") + ShowNumber(v) + ": should be less than " +
                      (exclusive ? "" : "or equal to ") + ShowNumber(*max));
      }
    }
    if (const json* f = Child(schema, "format"); f && f->is_string() && IsIntegral(v)) {
      const double lo = *f == "int32" ? -2147483648.0 : -9223372036854775808.0;
      const double hi = *f == "int32" ? 2147483647.0 : 9223372036854775807.0;
      if ((*f == "int32" || *f == "int64") && (d < lo || d > hi)) {
        Add(path, "Invalid value: " + ShowNumber(v) + ": does not fit in " + f->get<std::string>());
      }
    }
  }

  void CheckString(const json& schema, const std::string& s, const std::string& path) {
    // Lengths count characters, not bytes, as the API server does.
    size_t chars = 0;
    for (unsigned char c : s) chars += (c & 0xC0) != 0x80;
    if (const std::optional<size_t> min = Count(schema, "minLength")) {
      if (chars < *min) {
        Add(path, "Invalid value: " + Show(s) + ": should be at least " + std::to_string(*min) +
                      " chars long");
      }
    }
    if (const std::optional<size_t> max = Count(schema, "maxLength")) {
      if (chars > *max) {
        Add(path, "Too long: may not be longer than " + std::to_string(*max));
      }
    }
    if (const json* p = Child(schema, "pattern"); p && p->is_string()) {
      const std::regex* re = CompiledPattern(p->get<std::string>());
      if (re == nullptr || !std::regex_search(s, *re)) {
        Add(path, "Invalid value: " + Show(s) + ": should match '" + p->get<std::string>() + "'");
      }
    }
    if (const json* f = Child(schema, "format"); f && *f == "date-time" && !IsDateTime(s)) {
      Add(path, "Invalid value: " + Show(s) + ": must be an RFC 3339 date-time");
    }
  }

  void CheckArray(const json& schema, const json& v, const std::string& path) {
    if (const std::optional<size_t> min = Count(schema, "minItems")) {
      if (v.size() < *min) {
        Add(path, "Invalid value: " + std::to_string(v.size()) + ": should have at least " +
                      std::to_string(*min) + " items");
      }
    }
    if (const std::optional<size_t> max = Count(schema, "maxItems")) {
      if (v.size() > *max) {
        Add(path, "Too many: " + std::to_string(v.size()) + ": must have at most " +
                      std::to_string(*max) + " items");
      }
    }
    const json* items = Child(schema, "items");
    for (size_t i = 0; i < v.size(); ++i) {
      if (items && items->is_object()) Check(*items, v[i], IndexPath(path, i), false);
    }
    const json* list_type = Child(schema, "x-kubernetes-list-type");
    if (list_type && *list_type == "set") {
      for (size_t i = 0; i < v.size(); ++i) {
        for (size_t j = 0; j < i; ++j) {
          if (v[i] == v[j]) {
            Add(IndexPath(path, i), "Duplicate value: " + Show(v[i]));
            break;
          }
        }
      }
    } else if (list_type && *list_type == "map") {
      const json* keys = Child(schema, "x-kubernetes-list-map-keys");
      if (!keys || !keys->is_array()) return;
      std::set<std::string> seen;
      for (size_t i = 0; i < v.size(); ++i) {
        if (!v[i].is_object()) continue;
        json key = json::object();
        for (const json& k : *keys) {
          const std::string name = k.get<std::string>();
          if (v[i].contains(name)) key[name] = v[i][name];
        }
        if (!seen.insert(key.dump()).second) {
          Add(IndexPath(path, i), "Duplicate value: " + Show(key));
        }
      }
    }
  }

  void CheckObject(const json& schema, const json& v, const std::string& path, bool root) {
    const json* props = Child(schema, "properties");
    if (const json* req = Child(schema, "required"); req && req->is_array()) {
      for (const json& name : *req) {
        if (!v.contains(name.get<std::string>())) {
          Add(JoinPath(path, name.get<std::string>()), "Required value");
        }
      }
    }
    if (const std::optional<size_t> min = Count(schema, "minProperties")) {
      if (v.size() < *min) {
        Add(path, "should have at least " + std::to_string(*min) + " properties");
      }
    }
    if (const std::optional<size_t> max = Count(schema, "maxProperties")) {
      if (v.size() > *max) {
        Add(path, "must have at most " + std::to_string(*max) + " properties");
      }
    }
    const json* additional = Child(schema, "additionalProperties");
    const bool preserve = BoolField(schema, "x-kubernetes-preserve-unknown-fields");
    const bool embedded = BoolField(schema, "x-kubernetes-embedded-resource");
    for (auto it = v.begin(); it != v.end(); ++it) {
      const std::string& key = it.key();
      const std::string child = JoinPath(path, key);
      if ((root || embedded) && (key == "apiVersion" || key == "kind" || key == "metadata")) {
        if (key != "metadata" && !it->is_string()) {
          Add(child, "Invalid value: \"" + TypeOf(*it) + "\": must be of type string");
        } else if (key == "metadata" && !it->is_object()) {
          Add(child, "Invalid value: \"" + TypeOf(*it) + "\": must be of type object");
        }
        continue;
      }
      if (props && props->contains(key)) {
        Check((*props)[key], *it, child, false);
      } else if (additional && additional->is_object()) {
        Check(*additional, *it, child, false);
      } else if (!preserve && options_.reject_unknown_fields &&
                 !(additional && additional->is_boolean() && additional->get<bool>())) {
        Add(child, "unknown field \"" + child + "\"");
      }
    }
  }

  const ValidateOptions& options_;
  FieldErrors& errors_;
};

// Where a schema node sits; kube words some structural rules differently for each.
enum class Level { kRoot, kItems, kField };

// The type of a schema node as kube shows it in "Invalid value" messages ("" when absent).
std::string SchemaType(const json& node) {
  const json* type = Child(node, "type");
  return type && type->is_string() ? type->get<std::string>() : "";
}

// A keyword whose value is its type's zero (false, "", null, [], {}) is absent to kube's
// structural schema (a Go zero value), so only the others count as "specified".
bool IsSpecified(const json& value) {
  if (value.is_null()) return false;
  if (value.is_boolean()) return value.get<bool>();
  if (value.is_string()) return !value.get<std::string>().empty();
  if (value.is_array() || value.is_object()) return !value.empty();
  return true;
}

// Whether the schema of the root's metadata says anything besides what kube allows there: type
// (checked on its own), default (forbidden on its own), and properties limited to name and
// generateName. Keywords that kube's structural schema does not carry (example, externalDocs)
// and those rejected elsewhere ($ref, ...) are not counted.
bool RestrictsMoreThanNames(const json& metadata) {
  static const std::set<std::string> kIgnored = {
      "type",        "default",      "example",           "externalDocs",   "id", "$schema", "$ref",
      "definitions", "dependencies", "patternProperties", "additionalItems"};
  for (auto it = metadata.begin(); it != metadata.end(); ++it) {
    if (kIgnored.count(it.key()) || !IsSpecified(*it)) continue;
    if (it.key() == "properties" && it->is_object()) {
      bool only_names = true;
      for (auto p = it->begin(); p != it->end(); ++p) {
        only_names = only_names && (p.key() == "name" || p.key() == "generateName");
      }
      if (only_names) continue;
    }
    return true;
  }
  return false;
}

// kube's rules for apiVersion, kind and metadata of a resource (the root, or an embedded one):
// apiVersion and kind are strings, metadata an object, and at the root metadata may restrict
// only name and generateName (the API server owns the rest of ObjectMeta).
void CheckResourceMeta(const json& node, const std::string& path, Level level,
                       FieldErrors& errors) {
  const json* props = Child(node, "properties");
  if (!props || !props->is_object()) return;
  const bool resource = level == Level::kRoot || BoolField(node, "x-kubernetes-embedded-resource");
  const std::string props_path = JoinPath(path, "properties");
  for (const char* key : {"apiVersion", "kind"}) {
    auto it = props->find(key);
    if (resource && it != props->end() && it->is_object() && SchemaType(*it) != "string") {
      errors.push_back({JoinPath(KeyPath(props_path, key), "type"),
                        "Invalid value: \"" + SchemaType(*it) + "\": must be string"});
    }
  }
  auto metadata = props->find("metadata");
  if (metadata == props->end() || !metadata->is_object()) return;
  const std::string metadata_path = KeyPath(props_path, "metadata");
  if (resource && SchemaType(*metadata) != "object") {
    errors.push_back({JoinPath(metadata_path, "type"),
                      "Invalid value: \"" + SchemaType(*metadata) + "\": must be object"});
  }
  if (level == Level::kRoot && RestrictsMoreThanNames(*metadata)) {
    errors.push_back({metadata_path,
                      "Forbidden: must not specify anything other than name and generateName, "
                      "but metadata is implicitly specified"});
  }
}

// `no_defaults` is non-empty below the root's apiVersion, kind and metadata, where defaults are
// forbidden ("in top-level metadata").
void CheckNode(const json& node, const std::string& path, Level level,
               const std::string& no_defaults, FieldErrors& errors) {
  if (!node.is_object()) {
    errors.push_back({path, "must be a schema object"});
    return;
  }
  const bool int_or_string = BoolField(node, "x-kubernetes-int-or-string");
  const bool preserve = BoolField(node, "x-kubernetes-preserve-unknown-fields");
  const json* type = Child(node, "type");
  if (!int_or_string && !preserve &&
      (!type || !type->is_string() || type->get<std::string>().empty())) {
    const char* where = level == Level::kRoot    ? "at the root"
                        : level == Level::kItems ? "for specified array items"
                                                 : "for specified object fields";
    errors.push_back(
        {JoinPath(path, "type"), std::string("Required value: must not be empty ") + where});
  } else if (level == Level::kRoot && type && type->is_string() && *type != "object") {
    errors.push_back({JoinPath(path, "type"),
                      "Invalid value: \"" + SchemaType(node) + "\": must be object at the root"});
  }
  CheckResourceMeta(node, path, level, errors);
  const json* props = Child(node, "properties");
  const json* additional = Child(node, "additionalProperties");
  if (props && additional) {
    errors.push_back({JoinPath(path, "additionalProperties"),
                      "Forbidden: additionalProperties and properties are mutual exclusive"});
  }
  if (additional && level == Level::kRoot) {
    errors.push_back(
        {JoinPath(path, "additionalProperties"), "Forbidden: must not be used at the root"});
  }
  if (additional && additional->is_boolean() && !additional->get<bool>()) {
    errors.push_back({JoinPath(path, "additionalProperties"),
                      "Forbidden: must not be false (use no additionalProperties instead)"});
  }
  for (const char* banned : {"anyOf", "oneOf", "allOf", "not", "$ref"}) {
    if (node.contains(banned) && !int_or_string) {
      errors.push_back({JoinPath(path, banned), "Forbidden: not supported by Sluice's schemas"});
    }
  }
  if (const json* p = Child(node, "pattern"); p && p->is_string() && !CompiledPattern(*p)) {
    errors.push_back({JoinPath(path, "pattern"), "Invalid value: not a valid regular expression"});
  }
  if (props) {
    if (!props->is_object()) {
      errors.push_back({JoinPath(path, "properties"), "must be an object"});
    } else {
      for (auto it = props->begin(); it != props->end(); ++it) {
        const bool top_level_meta =
            level == Level::kRoot &&
            (it.key() == "metadata" || it.key() == "kind" || it.key() == "apiVersion");
        CheckNode(*it, KeyPath(JoinPath(path, "properties"), it.key()), Level::kField,
                  top_level_meta ? "in top-level " + it.key() : no_defaults, errors);
      }
    }
  }
  if (additional && additional->is_object()) {
    CheckNode(*additional, JoinPath(path, "additionalProperties"), Level::kField, no_defaults,
              errors);
  }
  if (const json* items = Child(node, "items")) {
    if (!items->is_object()) {
      errors.push_back({JoinPath(path, "items"), "must be a single schema, not a list"});
    } else {
      CheckNode(*items, JoinPath(path, "items"), Level::kItems, no_defaults, errors);
    }
  } else if (type && *type == "array") {
    errors.push_back({JoinPath(path, "items"), "Required value: must be specified for arrays"});
  }
  if (const json* lt = Child(node, "x-kubernetes-list-type"); lt && *lt == "map") {
    const json* keys = Child(node, "x-kubernetes-list-map-keys");
    const json* items = Child(node, "items");
    if (!keys || !keys->is_array() || keys->empty()) {
      errors.push_back({JoinPath(path, "x-kubernetes-list-map-keys"),
                        "Required value: must not be empty if x-kubernetes-list-type is map"});
    } else if (items && items->is_object()) {
      const json* item_props = Child(*items, "properties");
      const json* item_required = Child(*items, "required");
      for (const json& k : *keys) {
        const std::string key = k.get<std::string>();
        const bool declared = item_props && item_props->contains(key);
        bool required = false;
        if (item_required && item_required->is_array()) {
          for (const json& r : *item_required) required = required || r == key;
        }
        const bool defaulted = declared && (*item_props)[key].contains("default");
        if (!declared || !(required || defaulted)) {
          errors.push_back({JoinPath(path, "items"),
                            "Invalid value: map key \"" + key +
                                "\" must be a required or defaulted property of the items"});
        }
      }
    }
  }
  if (const json* def = Child(node, "default")) {
    if (!no_defaults.empty()) {
      errors.push_back({JoinPath(path, "default"), "Forbidden: must not be set " + no_defaults});
      return;
    }
    // Errors inside the value carry its path below `default`, as kube reports them
    // ("properties[spec].properties[drain].default.graceSeconds: Invalid value: ...").
    FieldErrors problems;
    ValidateOptions options;
    options.is_resource_root = false;
    Validator(options, problems).Check(node, *def, "default", false);
    for (FieldError& e : problems) {
      errors.push_back({JoinPath(path, e.field), std::move(e.message)});
    }
  }
}

void DefaultNode(const json& schema, json& v) {
  if (v.is_object()) {
    if (const json* props = Child(schema, "properties"); props && props->is_object()) {
      for (auto it = props->begin(); it != props->end(); ++it) {
        const json& child = *it;
        auto found = v.find(it.key());
        const bool missing = found == v.end();
        const bool null_not_allowed = !missing && found->is_null() && !BoolField(child, "nullable");
        if ((missing || null_not_allowed) && child.contains("default")) {
          v[it.key()] = child["default"];
        }
      }
      for (auto it = props->begin(); it != props->end(); ++it) {
        auto found = v.find(it.key());
        if (found != v.end()) DefaultNode(*it, *found);
      }
    } else if (const json* additional = Child(schema, "additionalProperties");
               additional && additional->is_object()) {
      for (auto& [key, child] : v.items()) DefaultNode(*additional, child);
    }
  } else if (v.is_array()) {
    if (const json* items = Child(schema, "items"); items && items->is_object()) {
      for (json& item : v) DefaultNode(*items, item);
    }
  }
}

void PruneNode(const json& schema, json& v, const std::string& path, bool root,
               std::vector<std::string>& removed) {
  if (BoolField(schema, "x-kubernetes-preserve-unknown-fields") && !schema.contains("properties")) {
    return;
  }
  if (v.is_object()) {
    const json* props = Child(schema, "properties");
    const json* additional = Child(schema, "additionalProperties");
    const bool preserve = BoolField(schema, "x-kubernetes-preserve-unknown-fields");
    const bool embedded = BoolField(schema, "x-kubernetes-embedded-resource");
    for (auto it = v.begin(); it != v.end();) {
      const std::string key = it.key();
      const std::string child = JoinPath(path, key);
      if ((root || embedded) && (key == "apiVersion" || key == "kind" || key == "metadata")) {
        ++it;
        continue;
      }
      if (props && props->contains(key)) {
        PruneNode((*props)[key], *it, child, false, removed);
        ++it;
      } else if (additional && additional->is_object()) {
        PruneNode(*additional, *it, child, false, removed);
        ++it;
      } else if (preserve || (additional && additional->is_boolean() && additional->get<bool>())) {
        ++it;
      } else {
        removed.push_back(child);
        it = v.erase(it);
      }
    }
  } else if (v.is_array()) {
    if (const json* items = Child(schema, "items"); items && items->is_object()) {
      for (size_t i = 0; i < v.size(); ++i) {
        PruneNode(*items, v[i], IndexPath(path, i), false, removed);
      }
    }
  }
}

}  // namespace

FieldErrors CheckStructural(const json& schema) {
  FieldErrors errors;
  CheckNode(schema, "", Level::kRoot, "", errors);
  return errors;
}

FieldErrors Validate(const json& schema, const json& value, const ValidateOptions& options) {
  FieldErrors errors;
  Validator(options, errors).Check(schema, value, "", options.is_resource_root);
  return errors;
}

void ApplyDefaults(const json& schema, json& value) { DefaultNode(schema, value); }

std::vector<std::string> Prune(const json& schema, json& value, bool is_resource_root) {
  std::vector<std::string> removed;
  PruneNode(schema, value, "", is_resource_root, removed);
  return removed;
}

}  // namespace sluice::openapi
