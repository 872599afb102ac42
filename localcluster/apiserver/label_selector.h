// Label selectors for the local API server: the `?labelSelector=` string kubectl sends for
// `kubectl get -l ...`, and the metav1.LabelSelector JSON shape (matchLabels/matchExpressions)
// used by workloads and by scale subresources' `status.selector`.
//
// Grammar (as kube-apiserver accepts it): comma-separated requirements, all of which must hold:
//   key=value  key==value  key!=value  key in (v1,v2)  key notin (v1,v2)  key  !key
//   key>N  key<N (integer comparison, as kube's gt/lt)
// Whitespace between tokens is ignored. Keys are qualified names ([prefix/]name: name <= 63
// chars of [A-Za-z0-9-_.] starting and ending alphanumeric; prefix a DNS-1123 subdomain <= 253);
// values are label values (<= 63 chars, same charset, may be empty). Parse errors are
// Status::InvalidArgument with kube's wording ("unable to parse requirement: ...",
// "found '(', expected: ...").
//
// Ownership: LabelSelector and Requirement are plain values that own their strings.
// Thread safety: values; const methods are safe to call concurrently; functions are pure.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace sluice::apiserver {

enum class LabelOperator {
  kEquals,        // key=value
  kDoubleEquals,  // key==value
  kNotEquals,     // key!=value
  kIn,            // key in (a,b)
  kNotIn,         // key notin (a,b)
  kExists,        // key
  kDoesNotExist,  // !key
  kGreaterThan,   // key>N
  kLessThan,      // key<N
};

// One requirement of a selector. Values are sorted and unique.
struct LabelRequirement {
  std::string key;
  LabelOperator op = LabelOperator::kExists;
  std::vector<std::string> values;

  bool Matches(const std::map<std::string, std::string>& labels) const;
  // Canonical text: "a=b", "a!=b", "a in (x,y)", "!a", ...
  std::string ToString() const;

  friend bool operator==(const LabelRequirement&, const LabelRequirement&) = default;
};

class LabelSelector {
 public:
  // The empty selector: matches every object.
  LabelSelector() = default;
  // A selector that matches no object (what a null metav1.LabelSelector means).
  static LabelSelector Nothing();
  // Builds a validated requirement list (sorted by key, as kube does).
  static Result<LabelSelector> FromRequirements(std::vector<LabelRequirement> requirements);
  // Equality requirements for each entry of a map (Service spec.selector, matchLabels).
  static Result<LabelSelector> FromSet(const std::map<std::string, std::string>& labels);

  bool Matches(const std::map<std::string, std::string>& labels) const;
  // Matches the object's metadata.labels (absent or malformed labels count as none).
  bool MatchesObject(const nlohmann::json& object) const;

  // True when it matches everything (no requirements).
  bool Empty() const { return !nothing_ && requirements_.empty(); }
  bool IsNothing() const { return nothing_; }
  const std::vector<LabelRequirement>& requirements() const { return requirements_; }

  // Canonical string: requirements sorted by key, joined by ",". It parses back to an equal
  // selector. Empty and Nothing both print as "" (as in kube).
  std::string ToString() const;

  friend bool operator==(const LabelSelector&, const LabelSelector&) = default;

 private:
  std::vector<LabelRequirement> requirements_;
  bool nothing_ = false;
};

// Parses the `labelSelector` query string. "" is the empty selector.
Result<LabelSelector> ParseLabelSelector(std::string_view text);

// Converts JSON into a selector:
//  - an object in metav1.LabelSelector shape: {"matchLabels": {...}, "matchExpressions":
//    [{"key", "operator": In|NotIn|Exists|DoesNotExist, "values": [...]}]}; {} selects all;
//  - a string: parsed with ParseLabelSelector (scale subresource `status.selector`);
//  - null: selects nothing (as kube's LabelSelectorAsSelector(nil)).
// Errors are InvalidArgument with the offending field path in Status::field().
Result<LabelSelector> FromLabelSelectorJson(const nlohmann::json& selector);

// Reads metadata.labels of an object as a map; non-string values are skipped.
std::map<std::string, std::string> LabelsOf(const nlohmann::json& object);

// Kubernetes label key/value validation. The returned messages are kube's
// (validation.IsQualifiedName / IsValidLabelValue), joined by "; "; "" when valid.
std::string LabelKeyErrors(std::string_view key);
std::string LabelValueErrors(std::string_view value);

}  // namespace sluice::apiserver
