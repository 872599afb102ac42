// Field selectors for the local API server: the `?fieldSelector=` string kubectl sends for
// `kubectl get --field-selector ...` (and that controllers use, e.g. pods by spec.nodeName).
//
// Grammar (as kube-apiserver accepts it): comma-separated terms, all of which must hold:
//   field=value  field==value  field!=value
// Fields are dotted JSON paths. metadata.name and metadata.namespace are always allowed; every
// other field must be in the caller's per-resource list (pods: spec.nodeName, status.phase, ...);
// others fail with InvalidArgument "field label not supported: <field>". Values may escape ',',
// '=' and '\' with a backslash, as kube's fields.EscapeValue does. Whitespace around fields and
// values is trimmed (kube keeps it and then rejects the field).
//
// Ownership: FieldSelector is a plain value that owns its strings.
// Thread safety: values; const methods are safe to call concurrently; functions are pure.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace sluice::apiserver {

struct FieldRequirement {
  std::string field;     // "spec.nodeName"
  bool negated = false;  // != instead of = / ==
  std::string value;     // unescaped

  // Canonical text "field=value" or "field!=value", value escaped.
  std::string ToString() const;
  friend bool operator==(const FieldRequirement&, const FieldRequirement&) = default;
};

class FieldSelector {
 public:
  // The empty selector: matches every object.
  FieldSelector() = default;

  // True when every requirement holds. A field absent from the object (or null) reads as "";
  // numbers and booleans compare by their JSON text ("3", "true").
  bool Matches(const nlohmann::json& object) const;

  bool Empty() const { return requirements_.empty(); }
  const std::vector<FieldRequirement>& requirements() const { return requirements_; }
  // Canonical string: terms sorted, joined by ","; parses back to an equal selector.
  std::string ToString() const;

  // The value the selector requires for `field` with "=" (for index lookups such as
  // metadata.namespace or spec.nodeName); "" and false when there is none.
  bool RequiresExactMatch(std::string_view field, std::string* value) const;

  friend bool operator==(const FieldSelector&, const FieldSelector&) = default;

 private:
  friend Result<FieldSelector> ParseFieldSelector(std::string_view,
                                                  const std::vector<std::string>&);
  std::vector<FieldRequirement> requirements_;
};

// Parses a field selector. `allowed_fields` lists the resource's selectable fields besides
// metadata.name and metadata.namespace.
Result<FieldSelector> ParseFieldSelector(std::string_view text,
                                         const std::vector<std::string>& allowed_fields);

// Reads a dotted path ("status.phase") of an object as the string a field selector compares.
std::string FieldValueOf(const nlohmann::json& object, std::string_view field);

// Escapes '\', ',' and '=' in a field selector value.
std::string EscapeFieldValue(std::string_view value);

}  // namespace sluice::apiserver
