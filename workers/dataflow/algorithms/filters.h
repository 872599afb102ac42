// Filters applied to finished groups before they enter a policy's buffer.
//
// A group is the samples of one (prompt, policy) after splitting (see PartitionGroups). A
// GroupFilter looks at a whole group and either keeps it (possibly removing some samples) or
// drops it, always saying why so the reason can feed metrics and logs. A FilterChain applies any
// number of filters in list order, as configured by the Dataflow's `spec.buffer.filters`, and
// counts what each dropped.
//
// Filters (CRD `type`, then options with defaults):
//   dynamic-sampling  {tolerance: 0}            drop a group whose rewards are all equal
//                                               (max − min <= tolerance): its advantages are 0.
//   length            {minTokens: 0, maxTokens: 0 (no limit), scope: "sample"}
//                                               drop samples whose GeneratedTokens() is outside
//                                               [minTokens, maxTokens]; scope "group" drops the
//                                               whole group when any sample is outside.
//   truncated         {scope: "sample"}         drop samples with finish reason "length"; scope
//                                               "group" drops the group if any was truncated.
//   greso, filter-solved
//                     (prompt curators, see curators.h) accepted and skipped by the chain; the
//                     Dataflow mapping makes such an entry select the curator.
// A group left with no samples is dropped. Lengths are in generated tokens.
//
// Ownership: the chain owns its filters. Thread safety: filters are immutable after creation and
// safe to share; a FilterChain updates its counters in Apply and is not synchronized.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "workers/dataflow/client/sample.h"

namespace sluice::dataflow {

struct FilterOutcome {
  bool keep = true;            // False: drop the whole group.
  size_t samples_dropped = 0;  // Samples removed from a kept group.
  std::string reason;          // Why something was dropped; empty when the group is untouched.
};

class GroupFilter {
 public:
  virtual ~GroupFilter() = default;
  // The CRD type name ("dynamic-sampling").
  virtual std::string_view type() const = 0;
  // Decides on `group` (non-empty, rewards finite) and may erase samples from it when it keeps
  // the group. When the outcome drops the group, `group` is left unchanged.
  virtual FilterOutcome Apply(std::vector<Sample>& group) const = 0;
};

enum class FilterScope { kSample, kGroup };
Result<FilterScope> ParseFilterScope(std::string_view name);  // "sample" | "group".

struct DynamicSamplingOptions {
  double tolerance = 0.0;  // Rewards within this of each other count as equal; >= 0.
};
Status ValidateDynamicSamplingOptions(const DynamicSamplingOptions& options);

class DynamicSamplingFilter final : public GroupFilter {
 public:
  explicit DynamicSamplingFilter(const DynamicSamplingOptions& options) : options_(options) {}
  std::string_view type() const override { return "dynamic-sampling"; }
  FilterOutcome Apply(std::vector<Sample>& group) const override;

 private:
  DynamicSamplingOptions options_;
};

struct LengthFilterOptions {
  int64_t min_tokens = 0;  // minTokens: fewest generated tokens kept; >= 0.
  int64_t max_tokens = 0;  // maxTokens: most generated tokens kept; 0: no limit; >= minTokens.
  FilterScope scope = FilterScope::kSample;
};
Status ValidateLengthFilterOptions(const LengthFilterOptions& options);

class LengthFilter final : public GroupFilter {
 public:
  explicit LengthFilter(const LengthFilterOptions& options) : options_(options) {}
  std::string_view type() const override { return "length"; }
  FilterOutcome Apply(std::vector<Sample>& group) const override;

 private:
  LengthFilterOptions options_;
};

struct TruncationFilterOptions {
  FilterScope scope = FilterScope::kSample;
};

class TruncationFilter final : public GroupFilter {
 public:
  explicit TruncationFilter(const TruncationFilterOptions& options) : options_(options) {}
  std::string_view type() const override { return "truncated"; }
  FilterOutcome Apply(std::vector<Sample>& group) const override;

 private:
  TruncationFilterOptions options_;
};

// Builds one filter from its CRD type and options object. InvalidArgument with field "type" for
// an unknown type, or the option's name for a bad or unknown option. "greso" and "filter-solved"
// are not group filters: NotFound (the chain skips them).
Result<std::unique_ptr<GroupFilter>> MakeGroupFilter(std::string_view type,
                                                     const nlohmann::json& options);

struct FilterSpec {
  std::string type;
  nlohmann::json options = nlohmann::json::object();
};

struct FilterCounters {
  std::string type;
  int64_t groups_dropped = 0;   // Whole groups this filter dropped.
  int64_t samples_dropped = 0;  // Samples it removed, including those of dropped groups.
};

class FilterChain {
 public:
  FilterChain() = default;  // No filters: keeps every non-empty group.

  // Errors carry the field "filters[i].type" or "filters[i].options.<name>".
  static Result<FilterChain> Create(const std::vector<FilterSpec>& specs);
  // From the CRD list form: [{"type": "length", "options": {...}}, ...].
  static Result<FilterChain> FromJson(const nlohmann::json& filters);

  // Runs the filters in order until one drops the group. InvalidArgument (nothing counted) when
  // a reward is not finite. An empty group is dropped with reason "empty group" and counted only
  // in empty_groups(). The returned reason is prefixed with the deciding filter's type.
  Result<FilterOutcome> Apply(std::vector<Sample>& group);

  size_t size() const { return filters_.size(); }
  const std::vector<FilterCounters>& counters() const { return counters_; }
  int64_t empty_groups() const { return empty_groups_; }

 private:
  std::vector<std::unique_ptr<GroupFilter>> filters_;
  std::vector<FilterCounters> counters_;  // Parallel to filters_.
  int64_t empty_groups_ = 0;
};

}  // namespace sluice::dataflow
