// Prompt curators: consulted before a prompt is leased, they may skip prompts that are not
// worth rolling out (already solved, or recently zero-variance), and learn from every finished
// group's rewards.
//
// The service calls, for each candidate prompt, ShouldLease(prompt, u) with u drawn uniformly
// from [0, 1) by the caller (so tests and WAL replay are deterministic); Update() with the
// trajectory-level rewards of each finished group; OnVersion() when its policy announces a new
// version. Serialize()/Deserialize() carry the whole state for WAL snapshots; a state change is
// exactly an Update or OnVersion call, so replaying those calls reproduces the state.
//
// A Dataflow selects filter-solved or greso by listing it in `spec.buffer.filters` (at most one
// of them); the flags are --curator and --curator-options.
//
// Curators (type, then options with defaults):
//   accept-all     {}  leases everything.
//   filter-solved  {threshold: 0.95, decay: 0.9, prior: 0.0, minAttempts: 1, successThreshold: 0}
//       per prompt: success = fraction of rewards > successThreshold;
//                   ewma ← decay · ewma + (1 − decay) · success   (ewma starts at prior)
//       lease iff attempts < minAttempts or ewma < threshold.
//   greso          {minSubmitEasy: 0.10, minSubmitHard: 0.40, correctThreshold: 0.5,
//                   alphaEasy: 0.083, alphaHard: 0.167, deltaP: 0.01, pMin: 0.01, pMax: 0.99,
//                   pEasyInit: 0.5, pHardInit: 0.5, warmupOutcomes: 0, tolerance: 0}
//       (GRESO, arXiv 2506.02177.) Per prompt a zero-variance streak z and a kind. An outcome is
//       zero-variance when max − min of its rewards <= tolerance; then z ← z + 1 and kind ← easy
//       if mean reward > correctThreshold else hard; otherwise z ← 0.
//       ShouldLease: z = 0 (or unseen) → lease; else lease iff u < max(p_kind^z, minSubmit_kind).
//       Adaptation, at each OnVersion: over the outcomes since the previous OnVersion (the
//       window), easyRatio = easy zero-variance outcomes / outcomes and hardRatio likewise.
//       If armed and the window is non-empty:
//         p_easy ← clamp(p_easy − deltaP if easyRatio >= alphaEasy else p_easy + deltaP,
//                        pMin, pMax)
//         p_hard ← the same with hardRatio, alphaHard
//       (too many zero-variance groups of a kind → skip that kind more). The window then
//       restarts, armed or not. Armed once warmupOutcomes outcomes have been seen in total
//       (the reference arms after one epoch: set warmupOutcomes to the dataset size).
//
// Ownership: a curator owns its state. Thread safety: not synchronized; the service serializes
// calls.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>

#include "common/status.h"

namespace sluice::dataflow {

struct CuratorDecision {
  bool lease = true;
  double probability = 1.0;  // Probability of leasing that was compared with u.
  std::string reason;        // Why skipped; empty when leased.
};

class PromptCurator {
 public:
  virtual ~PromptCurator() = default;
  virtual std::string_view type() const = 0;
  // `unit_random` is a uniform draw from [0, 1).
  virtual CuratorDecision ShouldLease(std::string_view prompt_id, double unit_random) const = 0;
  // Rewards of one finished group of `prompt_id` (trajectory level). InvalidArgument for an
  // empty group or a non-finite reward; the state is then unchanged.
  virtual Status Update(std::string_view prompt_id, std::span<const double> rewards) = 0;
  virtual void OnVersion(int64_t /*version*/) {}
  // The state as JSON, including "type".
  virtual nlohmann::json Serialize() const = 0;
  // Replaces the state; InvalidArgument (state unchanged) for a malformed or foreign state.
  virtual Status Deserialize(const nlohmann::json& state) = 0;
};

class AcceptAllCurator final : public PromptCurator {
 public:
  std::string_view type() const override { return "accept-all"; }
  CuratorDecision ShouldLease(std::string_view, double) const override { return {}; }
  Status Update(std::string_view prompt_id, std::span<const double> rewards) override;
  nlohmann::json Serialize() const override;
  Status Deserialize(const nlohmann::json& state) override;
};

struct FilterSolvedOptions {
  double threshold = 0.95;         // Skip once ewma >= threshold; in (0, 1].
  double decay = 0.9;              // Weight of the old ewma; in [0, 1).
  double prior = 0.0;              // Initial ewma; in [0, 1].
  int64_t min_attempts = 1;        // minAttempts: groups seen before skipping; >= 0.
  double success_threshold = 0.0;  // successThreshold: reward > this is a success.
};
Status ValidateFilterSolvedOptions(const FilterSolvedOptions& options);

class FilterSolvedCurator final : public PromptCurator {
 public:
  explicit FilterSolvedCurator(const FilterSolvedOptions& options) : options_(options) {}
  std::string_view type() const override { return "filter-solved"; }
  CuratorDecision ShouldLease(std::string_view prompt_id, double unit_random) const override;
  Status Update(std::string_view prompt_id, std::span<const double> rewards) override;
  nlohmann::json Serialize() const override;
  Status Deserialize(const nlohmann::json& state) override;

  struct PromptState {
    double ewma = 0.0;
    int64_t attempts = 0;
  };
  // Null when the prompt was never updated.
  const PromptState* Find(std::string_view prompt_id) const;

 private:
  FilterSolvedOptions options_;
  std::map<std::string, PromptState, std::less<>> prompts_;
};

struct GresoOptions {
  double min_submit_easy = 0.10;   // minSubmitEasy: floor of the easy lease probability.
  double min_submit_hard = 0.40;   // minSubmitHard.
  double correct_threshold = 0.5;  // correctThreshold: mean reward above it is "easy".
  double alpha_easy = 0.083;       // alphaEasy: target easy zero-variance ratio.
  double alpha_hard = 0.167;       // alphaHard.
  double delta_p = 0.01;           // deltaP: step of p per version.
  double p_min = 0.01;             // pMin, pMax: clamp of p_easy and p_hard.
  double p_max = 0.99;
  double p_easy_init = 0.5;  // pEasyInit, pHardInit: initial p's.
  double p_hard_init = 0.5;
  int64_t warmup_outcomes = 0;  // warmupOutcomes: outcomes before adaptation arms.
  double tolerance = 0.0;       // Rewards within this count as zero variance.
};
Status ValidateGresoOptions(const GresoOptions& options);

class GresoCurator final : public PromptCurator {
 public:
  explicit GresoCurator(const GresoOptions& options);
  std::string_view type() const override { return "greso"; }
  CuratorDecision ShouldLease(std::string_view prompt_id, double unit_random) const override;
  Status Update(std::string_view prompt_id, std::span<const double> rewards) override;
  void OnVersion(int64_t version) override;
  nlohmann::json Serialize() const override;
  Status Deserialize(const nlohmann::json& state) override;

  struct PromptState {
    int64_t streak = 0;  // Consecutive zero-variance outcomes.
    bool easy = false;   // Kind of the last zero-variance outcome.
  };
  // Lease probability for a prompt now (1 when its streak is 0).
  double LeaseProbability(std::string_view prompt_id) const;
  double p_easy() const { return p_easy_; }
  double p_hard() const { return p_hard_; }
  bool armed() const { return outcomes_ >= options_.warmup_outcomes; }
  int64_t Streak(std::string_view prompt_id) const;

 private:
  GresoOptions options_;
  double p_easy_;
  double p_hard_;
  int64_t outcomes_ = 0;  // All outcomes ever (for arming).
  int64_t window_outcomes_ = 0;
  int64_t window_easy_ = 0;
  int64_t window_hard_ = 0;
  // Only prompts with streak > 0 are kept, so memory follows the skippable prompts.
  std::map<std::string, PromptState, std::less<>> prompts_;
};

// Builds a curator from its type ("accept-all", "filter-solved", "greso") and options object.
// InvalidArgument naming "type" or the option.
Result<std::unique_ptr<PromptCurator>> MakeCurator(std::string_view type,
                                                   const nlohmann::json& options);

}  // namespace sluice::dataflow
