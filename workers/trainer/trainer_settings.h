// TrainerSettings: what one sluice-trainer rank needs to know about its job, read from the
// trainer.json the operator mounts (docs/operator.md, "TrainerJob"): the TrainerJob, its Policy
// and its Dataflow, each as {apiVersion, kind, metadata{name, namespace}, spec}. Specs are
// defaulted and validated against the CRD schemas exactly as the API server would, so a hand-made
// file gets the same field-naming errors as kubectl apply.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "api/generated/dataflow_types.h"
#include "api/generated/policy_types.h"
#include "api/generated/trainer_job_types.h"
#include "common/status.h"
#include "workers/model/policy_model.h"

namespace sluice::trainer {

// The shape of the warm start's supervised transcripts (docs/trainer.md, "Warm start"), from the
// Dataflow's workflow and the role this trainer's Policy plays in it.
enum class WarmStartTranscript {
  // single-turn, and the solver of solve-and-verify (its first turn is rendered like a
  // single-turn prompt): the prompt, then the reference answer (warm_start.h).
  kAnswer,
  // The verifier of solve-and-verify: the solver's prompt, a candidate answer, the verify
  // instruction, then the verdict (verifier_warm_start.h).
  kVerdict,
  // multi-turn with the built-in calculator: the prompt, a calculator call, its value, then the
  // reference answer (calculator_warm_start.h).
  kCalculatorCall,
};

struct TrainerSettings {
  std::string job;       // TrainerJob metadata.name.
  std::string nspace;    // Its namespace.
  std::string policy;    // The Policy's name: the dataflow's policy id (/v1/batches/{policy}).
  std::string dataflow;  // The Dataflow's name.
  api::TrainerJobSpec spec;
  api::PolicySpec policy_spec;
  model::ModelSource model;
  // From the Dataflow: optimizer updates per batch (spec.batch.perPolicy[policy].minibatches,
  // else spec.batch.minibatches), and the completion limit (spec.sampling.maxNewTokens, tokens)
  // that DAPO's overlong shaping measures against.
  int64_t minibatches = 1;
  int64_t max_new_tokens = 512;
  // Set with spec.warmStart: how prompts are rendered, the Dataflow's spec.workflow.systemPrompt,
  // the transcript shape, the role the Policy plays (spec.workflow.roles[].name), and the
  // workflow's tool-call and answer markers (spec.workflow.toolCall, defaulted when unset), which
  // frame the calculator call, the final answer and the verifier's verdict.
  model::TextSettings text;
  std::optional<std::string> system_prompt;
  WarmStartTranscript warm_start_transcript = WarmStartTranscript::kAnswer;
  std::string warm_start_role;
  api::DataflowSpecWorkflowToolCall tool_call;
};

// Parses trainer.json text. InvalidArgument naming the field ("trainerJob.spec.steps", ...) for
// a missing object, a schema violation or an unsupported model source, and naming
// "trainerJob.spec.warmStart" for a warm start the Dataflow's workflow cannot have: a workflow
// other than single-turn, solve-and-verify and multi-turn; a solve-and-verify Policy that plays
// no role, both roles, or a role other than solver and verifier; a multi-turn environment other
// than the built-in calculator, or maxTurns below 2 (the transcript has two turns).
// `model_cache_root`: as model::ResolveModelSource's (--model-cache-dir).
Result<TrainerSettings> ParseTrainerConfig(std::string_view text,
                                           std::string_view model_cache_root = {});
// Reads and parses the file; errors carry the path.
Result<TrainerSettings> LoadTrainerConfigFile(const std::string& path,
                                              std::string_view model_cache_root = {});

}  // namespace sluice::trainer
