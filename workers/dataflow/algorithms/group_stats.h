// Group statistics: per (prompt, policy) group mean and unbiased standard deviation of rewards,
// stamped on every sample of the group, and optionally a GRPO-style advantage (CRD
// `spec.buffer.advantage`, flag --advantage).
//
//   mean = (1/n) Σ r_i
//   std  = sqrt( Σ (r_i − mean)² / (n − 1) )   for n ≥ 2;   std = 1 for n = 1 (singleton)
//   advantage (grpo)      = (r − mean) / (std + epsilon)
//   advantage (mean-only) =  r − mean
//
// Rewards are unitless (whatever the reward function returns); they must be finite.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "workers/dataflow/client/sample.h"

namespace sluice::dataflow {

enum class AdvantageMode {
  kNone,      // Stamp mean and std only; the trainer normalizes.
  kGrpo,      // (r − mean) / (std + epsilon).
  kMeanOnly,  // r − mean (Dr. GRPO style, no std division).
};

struct GroupStatsOptions {
  AdvantageMode advantage = AdvantageMode::kNone;
  double epsilon = 1e-6;  // Added to std in kGrpo; must be finite and >= 0.
};

// Parses "none", "grpo", "mean-only"; InvalidArgument naming `advantage` otherwise.
Result<AdvantageMode> ParseAdvantageMode(std::string_view name);
Status ValidateGroupStatsOptions(const GroupStatsOptions& options);

struct GroupStats {
  size_t size = 0;
  double mean = 0.0;
  double std = 1.0;
};

// Mean and unbiased std of `rewards`. InvalidArgument for an empty span or a non-finite reward.
Result<GroupStats> ComputeGroupStats(std::span<const double> rewards);

// Partitions samples into groups keyed by (prompt_id, policy), in order of first appearance;
// sample order within a group is kept. Moves the samples out of `samples`.
std::vector<std::vector<Sample>> PartitionGroups(std::vector<Sample>&& samples);

// Stamps group_mean, group_std (and advantage unless kNone) on every sample, computing the stats
// per (prompt_id, policy) over `samples`. On error nothing is stamped.
Status StampGroupStats(std::span<Sample> samples, const GroupStatsOptions& options);

// True when every reward lies within `tolerance` of every other (max − min <= tolerance);
// vacuously true for an empty group.
bool RewardsAllEqual(std::span<const Sample> group, double tolerance);

}  // namespace sluice::dataflow
