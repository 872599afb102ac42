// Test fixtures shared by the dataflow core and service tests: small trajectories whose token
// layout the tests' expectations are written against.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "workers/dataflow/client/dataset.h"
#include "workers/dataflow/client/sample.h"
#include "workers/dataflow/dataflow_core.h"

namespace sluice::dataflow::fixtures {

// A single-policy sample: 2 prompt tokens, 2 generated at `version`.
inline Sample Single(double reward, int64_t version = 0) {
  Sample s;
  s.tokens = {11, 12, 13, 14};
  s.loss_mask = {0, 0, 1, 1};
  s.behaviour_logprobs = {0, 0, -0.5f, -0.25f};
  s.versions = {-1, -1, version, version};
  s.reward = reward;
  s.finish_reason = "stop";
  return s;
}

// A solver/verifier trajectory: a prompt token, 2 solver tokens, 1 verifier token.
inline Sample Duo(double solver_reward, double verifier_reward) {
  Sample s;
  s.tokens = {1, 2, 3, 4};
  s.loss_mask = {0, 1, 1, 1};
  s.behaviour_logprobs = {0, -0.1f, -0.2f, -0.3f};
  s.versions = {-1, 0, 0, 0};
  s.token_owner = {-1, 0, 0, 1};
  s.policies = {"solver", "verifier"};
  s.policy_rewards = {solver_reward, verifier_reward};
  s.finish_reason = "stop";
  return s;
}

// The built-in arithmetic dataset with `rows` rows (seed 7, operands up to 100), `eval_split` of
// them held out.
// The submission of `samples` for leased task `t`, from worker "w".
inline TrajectoryGroup Group(const LeasedTask& t, std::vector<Sample> samples) {
  TrajectoryGroup g;
  g.task_id = t.task_id;
  g.attempt = t.attempt;
  g.lease_id = t.lease_id;
  g.worker_id = "w";
  g.prompt_id = t.prompt_id;
  g.eval = t.eval;
  g.samples = std::move(samples);
  return g;
}

inline Dataset MakeDataset(int64_t rows, double eval_split = 0.0) {
  DatasetSource src;
  src.builtin = BuiltinDataset{"arithmetic", rows, 100, 7};
  src.eval_split = eval_split;
  auto d = Dataset::Load(src);
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  return std::move(d).value();
}

}  // namespace sluice::dataflow::fixtures
