// LeasedTask: one task of a POST /v1/leases reply (docs/dataflow.md, "HTTP API"), parsed, and
// how its sampling settings (the Dataflow's spec.sampling) become the engine's SamplingParams.
//
// Thread safety: values and pure functions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"
#include "workers/rollout/engine/sampling_params.h"

namespace sluice::rollout {

struct LeasedTask {
  std::string task_id;
  std::string lease_id;
  uint32_t attempt = 1;
  bool eval = false;
  std::string prompt_id;
  std::string prompt;
  std::string answer;
  std::string dataset;
  nlohmann::json row = nlohmann::json::object();
  int64_t samples = 1;  // Completions to generate (the group size, or eval k).
  nlohmann::json sampling = nlohmann::json::object();  // spec.sampling minus groupSize.
  // spec.workflow plus "reward" (spec.reward): type, roles, maxTurns, systemPrompt, environment,
  // toolCall.
  nlohmann::json workflow = nlohmann::json::object();
  int64_t deadline_unix_ms = 0;
};

// InvalidArgument naming the field ("tasks[].task_id") for a missing id or a value of the wrong
// type; unknown fields are ignored (the dataflow may add some).
Result<LeasedTask> ParseLeasedTask(const nlohmann::json& json);

// The engine's sampling of a task: temperature, topP, topK, maxNewTokens and stop of the
// Dataflow's spec.sampling (camelCase; absent keys keep the CRD defaults: 1.0, 1.0, 0, 512, none),
// n = `n`. InvalidArgument naming "sampling.<key>".
Result<engine::SamplingParams> TaskSamplingParams(const nlohmann::json& sampling, int32_t n);

}  // namespace sluice::rollout
