// Sample: one trajectory as the dataflow's data-algorithm stages see it (no libtorch).
//
// A sample is one completion of a prompt: the prompt tokens, the generated tokens and any
// environment or tool tokens, laid out in one flat sequence. Per-token arrays are parallel to
// `tokens` (same length); `token_owner` may be empty for a single-policy trajectory.
//
// Before splitting (see splitting.h) a multi-policy trajectory lists every policy of the workflow
// in `policies`, with `token_owner[t]` the index of the policy that generated token t (−1 for
// prompt, environment and tool tokens) and `policy_rewards[i]` the reward of `policies[i]`. After
// splitting each sample belongs to exactly one policy: `policy` names it and `reward` is its
// reward. The stages downstream of splitting (group stats, filters, staleness, replay) read
// `policy` and `reward` only.
//
// Units: `versions` are policy weight versions (the trainer's optimizer-step count as announced to
// the dataflow); `behaviour_logprobs` are natural-log probabilities under the generating weights;
// lengths are in tokens.
//
// Ownership and thread safety: a plain value; stages take samples by reference or span and never
// keep pointers to them. Not synchronized.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace sluice::dataflow {

// Version of tokens no policy generated (prompt, environment, tool output).
inline constexpr int64_t kNoVersion = -1;
// Owner of tokens no policy generated.
inline constexpr int32_t kNoOwner = -1;
// Finish reason of a completion cut off at its token limit.
inline constexpr std::string_view kFinishLength = "length";

struct Sample {
  // --- Identity.
  std::string task_id;    // The leased task (one prompt rolled out groupSize times).
  std::string prompt_id;  // Stable id of the dataset row.
  uint64_t group_id = 0;  // Unique per submitted group; assigned at ingest.
  std::string policy;     // The policy this sample trains; set by splitting.

  // --- Tokens (all the same length as `tokens`, except `token_owner`, which may be empty).
  std::vector<int32_t> tokens;
  std::vector<uint8_t> loss_mask;         // 1: train on this token; 0: prompt, env, other policy.
  std::vector<float> behaviour_logprobs;  // 0 where no policy generated the token.
  std::vector<int64_t> versions;          // kNoVersion where no policy generated the token.
  std::vector<int32_t> token_owner;       // Index into `policies`, kNoOwner; empty: all `policy`.

  // --- Policies and rewards.
  std::vector<std::string> policies;   // Policies of a multi-policy trajectory (roles' policies).
  std::vector<double> policy_rewards;  // Parallel to `policies`.
  double reward = 0.0;                 // Reward of `policy`.
  std::string finish_reason;           // "stop", "length" (truncated), "abort", ...

  // --- Episode record (carried to the trainer, not read by the stages).
  std::vector<uint32_t> turn_starts;  // Token offsets where each model turn begins.
  double generation_seconds = 0.0;    // Time spent generating this sample's tokens.
  double environment_seconds = 0.0;   // Time spent in environment / tool steps.
  double reward_seconds = 0.0;        // Time spent scoring.
  // Model turns that held a complete tool call (the multi-turn workflow counts them, also a call
  // whose environment step then failed); nullopt for workflows without tools. Only trajectory
  // groups carry it (batches do not): the dataflow reads it for evaluation's tool-call share.
  std::optional<uint32_t> tool_calls = std::nullopt;

  // --- Stamped by the stages.
  std::optional<double> group_mean;  // Mean reward of the (prompt, policy) group.
  std::optional<double> group_std;   // Unbiased std of that group; 1 for a singleton group.
  std::optional<double> advantage;   // Only when group stats computes advantages.
  double loss_weight = 1.0;          // In (0, 1]; below 1 only when stale and down-weighted.

  // Smallest version over tokens with version >= 0; kNoVersion when there are none. Version 0
  // (the initial weights) counts, unlike the reference, which skipped it.
  int64_t MinVersion() const {
    int64_t best = kNoVersion;
    for (int64_t v : versions) {
      if (v >= 0 && (best == kNoVersion || v < best)) best = v;
    }
    return best;
  }

  // Largest version over tokens with version >= 0; kNoVersion when there are none.
  int64_t MaxVersion() const {
    int64_t best = kNoVersion;
    for (int64_t v : versions) best = std::max(best, v);
    return best < 0 ? kNoVersion : best;
  }

  // Tokens this sample trains on (loss mask set): its policy's generated tokens.
  int64_t GeneratedTokens() const {
    return std::count_if(loss_mask.begin(), loss_mask.end(), [](uint8_t m) { return m != 0; });
  }

  bool Truncated() const { return finish_reason == kFinishLength; }
};

// Checks that the per-token arrays are parallel, owners index `policies`, `policy_rewards`
// matches `policies`, and rewards are finite. InvalidArgument naming the field otherwise.
inline Status ValidateSample(const Sample& s) {
  const size_t n = s.tokens.size();
  if (s.loss_mask.size() != n)
    return Status::InvalidArgument("length differs from tokens", "loss_mask");
  if (s.behaviour_logprobs.size() != n) {
    return Status::InvalidArgument("length differs from tokens", "behaviour_logprobs");
  }
  if (s.versions.size() != n)
    return Status::InvalidArgument("length differs from tokens", "versions");
  if (!s.token_owner.empty() && s.token_owner.size() != n) {
    return Status::InvalidArgument("length differs from tokens", "token_owner");
  }
  for (int32_t o : s.token_owner) {
    if (o != kNoOwner && (o < 0 || static_cast<size_t>(o) >= s.policies.size())) {
      return Status::InvalidArgument("owner index out of range", "token_owner");
    }
  }
  if (s.policy_rewards.size() != s.policies.size()) {
    return Status::InvalidArgument("length differs from policies", "policy_rewards");
  }
  for (double r : s.policy_rewards) {
    if (!std::isfinite(r)) return Status::InvalidArgument("reward is not finite", "policy_rewards");
  }
  if (!std::isfinite(s.reward)) return Status::InvalidArgument("reward is not finite", "reward");
  return Status::Ok();
}

// Smallest MinVersion over the samples of a group (kNoVersion when none has a version).
inline int64_t GroupMinVersion(std::span<const Sample> group) {
  int64_t best = kNoVersion;
  for (const Sample& s : group) {
    const int64_t v = s.MinVersion();
    if (v >= 0 && (best == kNoVersion || v < best)) best = v;
  }
  return best;
}

// Sum of GeneratedTokens over a group.
inline int64_t GroupGeneratedTokens(std::span<const Sample> group) {
  int64_t total = 0;
  for (const Sample& s : group) total += s.GeneratedTokens();
  return total;
}

}  // namespace sluice::dataflow
