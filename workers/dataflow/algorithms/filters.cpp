#include "workers/dataflow/algorithms/filters.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "common/json/options_reader.h"
#include "workers/dataflow/algorithms/group_stats.h"

namespace sluice::dataflow {

namespace {

// Applies a per-sample predicate (true = reject) under a scope. `what` describes a rejection.
template <typename Reject>
FilterOutcome ApplyPerSample(std::vector<Sample>& group, FilterScope scope, std::string_view what,
                             Reject reject) {
  const size_t rejected = static_cast<size_t>(std::count_if(group.begin(), group.end(), reject));
  FilterOutcome outcome;
  if (rejected == 0) return outcome;
  const std::string count = std::to_string(rejected) + " of " + std::to_string(group.size());
  if (scope == FilterScope::kGroup || rejected == group.size()) {
    outcome.keep = false;
    outcome.reason = count + " samples " + std::string(what);
    return outcome;
  }
  std::erase_if(group, reject);
  outcome.samples_dropped = rejected;
  outcome.reason = count + " samples " + std::string(what);
  return outcome;
}

Result<FilterScope> ReadScope(JsonOptions& reader) {
  std::string scope = "sample";
  SLUICE_RETURN_IF_ERROR(reader.String("scope", scope));
  auto parsed = ParseFilterScope(scope);
  if (!parsed.ok()) return parsed.status();
  return *parsed;
}

}  // namespace

Result<FilterScope> ParseFilterScope(std::string_view name) {
  if (name == "sample") return FilterScope::kSample;
  if (name == "group") return FilterScope::kGroup;
  return Status::InvalidArgument("unknown scope '" + std::string(name) + "' (want sample or group)",
                                 "scope");
}

Status ValidateDynamicSamplingOptions(const DynamicSamplingOptions& options) {
  if (!std::isfinite(options.tolerance) || options.tolerance < 0) {
    return Status::InvalidArgument("must be finite and >= 0", "tolerance");
  }
  return Status::Ok();
}

FilterOutcome DynamicSamplingFilter::Apply(std::vector<Sample>& group) const {
  FilterOutcome outcome;
  if (RewardsAllEqual(group, options_.tolerance)) {
    outcome.keep = false;
    outcome.reason = "all " + std::to_string(group.size()) + " rewards equal";
  }
  return outcome;
}

Status ValidateLengthFilterOptions(const LengthFilterOptions& options) {
  if (options.min_tokens < 0) return Status::InvalidArgument("must be >= 0", "minTokens");
  if (options.max_tokens < 0) return Status::InvalidArgument("must be >= 0", "maxTokens");
  if (options.max_tokens != 0 && options.max_tokens < options.min_tokens) {
    return Status::InvalidArgument("must be 0 (no limit) or >= minTokens", "maxTokens");
  }
  return Status::Ok();
}

FilterOutcome LengthFilter::Apply(std::vector<Sample>& group) const {
  const int64_t lo = options_.min_tokens;
  const int64_t hi = options_.max_tokens;
  std::string what = "outside [" + std::to_string(lo) + ", " +
                     (hi == 0 ? std::string("inf") : std::to_string(hi)) + "] generated tokens";
  return ApplyPerSample(group, options_.scope, what, [lo, hi](const Sample& s) {
    const int64_t n = s.GeneratedTokens();
    return n < lo || (hi != 0 && n > hi);
  });
}

FilterOutcome TruncationFilter::Apply(std::vector<Sample>& group) const {
  return ApplyPerSample(group, options_.scope, "truncated (finish reason length)",
                        [](const Sample& s) { return s.Truncated(); });
}

Result<std::unique_ptr<GroupFilter>> MakeGroupFilter(std::string_view type,
                                                     const nlohmann::json& options) {
  if (type == "greso" || type == "filter-solved") {
    return Status::NotFound(std::string(type) + " is a prompt curator, not a group filter");
  }
  auto created = JsonOptions::Create(options);
  if (!created.ok()) return created.status();
  JsonOptions& reader = *created;
  std::unique_ptr<GroupFilter> filter;
  if (type == "dynamic-sampling") {
    DynamicSamplingOptions o;
    SLUICE_RETURN_IF_ERROR(reader.Double("tolerance", o.tolerance));
    SLUICE_RETURN_IF_ERROR(reader.RejectUnknown());
    SLUICE_RETURN_IF_ERROR(ValidateDynamicSamplingOptions(o));
    filter = std::make_unique<DynamicSamplingFilter>(o);
  } else if (type == "length") {
    LengthFilterOptions o;
    SLUICE_RETURN_IF_ERROR(reader.Int("minTokens", o.min_tokens));
    SLUICE_RETURN_IF_ERROR(reader.Int("maxTokens", o.max_tokens));
    SLUICE_ASSIGN_OR_RETURN(o.scope, ReadScope(reader));
    SLUICE_RETURN_IF_ERROR(reader.RejectUnknown());
    SLUICE_RETURN_IF_ERROR(ValidateLengthFilterOptions(o));
    filter = std::make_unique<LengthFilter>(o);
  } else if (type == "truncated") {
    TruncationFilterOptions o;
    SLUICE_ASSIGN_OR_RETURN(o.scope, ReadScope(reader));
    SLUICE_RETURN_IF_ERROR(reader.RejectUnknown());
    filter = std::make_unique<TruncationFilter>(o);
  } else {
    return Status::InvalidArgument("unknown filter type '" + std::string(type) +
                                       "' (want dynamic-sampling, length, truncated, greso or "
                                       "filter-solved)",
                                   "type");
  }
  return filter;
}

Result<FilterChain> FilterChain::Create(const std::vector<FilterSpec>& specs) {
  FilterChain chain;
  for (size_t i = 0; i < specs.size(); ++i) {
    const std::string where = "filters[" + std::to_string(i) + "]";
    auto made = MakeGroupFilter(specs[i].type, specs[i].options);
    if (made.status().code() == StatusCode::kNotFound) continue;  // A curator.
    if (!made.ok()) {
      const bool about_type = made.status().field() == "type";
      return PrefixField(made.status(), about_type ? where : where + ".options");
    }
    chain.counters_.push_back(FilterCounters{std::string((*made)->type()), 0, 0});
    chain.filters_.push_back(std::move(made).value());
  }
  return chain;
}

Result<FilterChain> FilterChain::FromJson(const nlohmann::json& filters) {
  if (filters.is_null()) return FilterChain();
  if (!filters.is_array()) return Status::InvalidArgument("must be a list", "filters");
  std::vector<FilterSpec> specs;
  for (size_t i = 0; i < filters.size(); ++i) {
    const std::string where = "filters[" + std::to_string(i) + "]";
    const nlohmann::json& item = filters[i];
    if (!item.is_object()) return Status::InvalidArgument("must be an object", where);
    auto type = item.find("type");
    if (type == item.end() || !type->is_string()) {
      return Status::InvalidArgument("must be a string", where + ".type");
    }
    for (const auto& el : item.items()) {
      if (el.key() != "type" && el.key() != "options") {
        return Status::InvalidArgument("unknown field", where + "." + el.key());
      }
    }
    FilterSpec spec{type->get<std::string>(), nlohmann::json::object()};
    if (auto options = item.find("options"); options != item.end()) spec.options = *options;
    specs.push_back(std::move(spec));
  }
  return Create(specs);
}

Result<FilterOutcome> FilterChain::Apply(std::vector<Sample>& group) {
  for (const Sample& s : group) {
    if (!std::isfinite(s.reward)) {
      return Status::InvalidArgument("reward of task '" + s.task_id + "' is not finite", "reward");
    }
  }
  FilterOutcome total;
  if (group.empty()) {
    ++empty_groups_;
    total.keep = false;
    total.reason = "empty group";
    return total;
  }
  for (size_t i = 0; i < filters_.size(); ++i) {
    const size_t before = group.size();
    FilterOutcome outcome = filters_[i]->Apply(group);
    FilterCounters& counters = counters_[i];
    if (outcome.reason.empty()) continue;
    if (!total.reason.empty()) total.reason += "; ";
    total.reason += counters.type + ": " + outcome.reason;
    if (!outcome.keep) {
      ++counters.groups_dropped;
      counters.samples_dropped += static_cast<int64_t>(before);
      total.keep = false;
      return total;
    }
    counters.samples_dropped += static_cast<int64_t>(outcome.samples_dropped);
    total.samples_dropped += outcome.samples_dropped;
  }
  return total;
}

}  // namespace sluice::dataflow
