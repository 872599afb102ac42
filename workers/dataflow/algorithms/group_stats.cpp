#include "workers/dataflow/algorithms/group_stats.h"

#include <cmath>
#include <map>
#include <utility>

namespace sluice::dataflow {

Result<AdvantageMode> ParseAdvantageMode(std::string_view name) {
  if (name == "none") return AdvantageMode::kNone;
  if (name == "grpo") return AdvantageMode::kGrpo;
  if (name == "mean-only") return AdvantageMode::kMeanOnly;
  return Status::InvalidArgument(
      "unknown advantage mode '" + std::string(name) + "' (want none, grpo or mean-only)",
      "advantage");
}

Status ValidateGroupStatsOptions(const GroupStatsOptions& options) {
  if (!std::isfinite(options.epsilon) || options.epsilon < 0) {
    return Status::InvalidArgument("must be finite and >= 0", "epsilon");
  }
  return Status::Ok();
}

Result<GroupStats> ComputeGroupStats(std::span<const double> rewards) {
  if (rewards.empty()) return Status::InvalidArgument("empty group", "rewards");
  double sum = 0.0;
  for (double r : rewards) {
    if (!std::isfinite(r)) return Status::InvalidArgument("reward is not finite", "rewards");
    sum += r;
  }
  GroupStats stats;
  stats.size = rewards.size();
  stats.mean = sum / static_cast<double>(rewards.size());
  if (rewards.size() == 1) {
    stats.std = 1.0;
    return stats;
  }
  double squares = 0.0;  // Two-pass: no cancellation from Σr² − n·mean².
  for (double r : rewards) squares += (r - stats.mean) * (r - stats.mean);
  stats.std = std::sqrt(squares / static_cast<double>(rewards.size() - 1));
  return stats;
}

namespace {

using GroupKey = std::pair<std::string, std::string>;  // (prompt_id, policy)

// Indices of samples per key, keys in order of first appearance.
std::vector<std::vector<size_t>> GroupIndices(std::span<const Sample> samples) {
  std::map<GroupKey, size_t> slot;
  std::vector<std::vector<size_t>> groups;
  for (size_t i = 0; i < samples.size(); ++i) {
    GroupKey key{samples[i].prompt_id, samples[i].policy};
    auto [it, inserted] = slot.emplace(std::move(key), groups.size());
    if (inserted) groups.emplace_back();
    groups[it->second].push_back(i);
  }
  return groups;
}

}  // namespace

std::vector<std::vector<Sample>> PartitionGroups(std::vector<Sample>&& samples) {
  std::vector<std::vector<Sample>> out;
  for (const auto& indices : GroupIndices(samples)) {
    std::vector<Sample> group;
    group.reserve(indices.size());
    for (size_t i : indices) group.push_back(std::move(samples[i]));
    out.push_back(std::move(group));
  }
  samples.clear();
  return out;
}

Status StampGroupStats(std::span<Sample> samples, const GroupStatsOptions& options) {
  SLUICE_RETURN_IF_ERROR(ValidateGroupStatsOptions(options));
  const auto groups = GroupIndices(samples);
  std::vector<GroupStats> stats;
  stats.reserve(groups.size());
  for (const auto& indices : groups) {  // Compute everything first: all-or-nothing.
    std::vector<double> rewards;
    rewards.reserve(indices.size());
    for (size_t i : indices) rewards.push_back(samples[i].reward);
    auto computed = ComputeGroupStats(rewards);
    if (!computed.ok()) {
      return computed.status().WithContext("prompt '" + samples[indices[0]].prompt_id +
                                           "' policy '" + samples[indices[0]].policy + "'");
    }
    stats.push_back(*computed);
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t i : groups[g]) {
      Sample& s = samples[i];
      s.group_mean = stats[g].mean;
      s.group_std = stats[g].std;
      switch (options.advantage) {
        case AdvantageMode::kNone:
          s.advantage.reset();
          break;
        case AdvantageMode::kGrpo:
          s.advantage = (s.reward - stats[g].mean) / (stats[g].std + options.epsilon);
          break;
        case AdvantageMode::kMeanOnly:
          s.advantage = s.reward - stats[g].mean;
          break;
      }
    }
  }
  return Status::Ok();
}

bool RewardsAllEqual(std::span<const Sample> group, double tolerance) {
  if (group.empty()) return true;
  double lo = group[0].reward;
  double hi = group[0].reward;
  for (const Sample& s : group) {
    lo = std::min(lo, s.reward);
    hi = std::max(hi, s.reward);
  }
  return hi - lo <= tolerance;
}

}  // namespace sluice::dataflow
