// The end of the data, as the operator reports it (docs/operator.md, "The end of the data").
//
//   Dataflow    the worker's GET /v1/status says "exhausted" (every epoch's prompts handed out and
//               no train task pending or leased): condition Exhausted=True, reason
//               DatasetExhausted, whose message names the epochs and the drained policies (those
//               whose trainers can never be served another batch, each with the worker's reason).
//               The message holds nothing that changes while a policy is still being served, and
//               a drained policy's reason no longer changes, so the message changes only when
//               another policy is drained: the Dataflow controller records a Normal
//               DatasetExhausted event when the condition turns True and a Warning DataflowDrained
//               event whenever the message names a newly drained policy.
//   TrainerJob  rank 0 reports phase "Starved" (its Dataflow can never feed it before spec.steps):
//               condition Starved=True, reason DataflowDrained, and the job ends with phase
//               Failed, reason DataExhausted: it did not run spec.steps (its newest checkpoint
//               holds what it learned).
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace sluice::controllers {

inline constexpr char kExhaustedCondition[] = "Exhausted";
inline constexpr char kDatasetExhaustedReason[] = "DatasetExhausted";
inline constexpr char kDataRemainingReason[] = "DataRemaining";
inline constexpr char kStarvedCondition[] = "Starved";
inline constexpr char kDataflowDrainedReason[] = "DataflowDrained";
inline constexpr char kDataExhaustedReason[] = "DataExhausted";

struct DataflowExhaustion {
  bool exhausted = false;
  std::vector<std::string> drained;  // Drained policies, in the report's order.
  std::string message;               // Of the Exhausted condition; empty when not exhausted.
};

// From the dataflow worker's GET /v1/status reply ("exhausted", "epochs", "prompts.total",
// per policy "drained" and "drain_reason"), e.g. message "the dataset is exhausted: all 600
// prompts of its 3 epochs were handed out and no train task is in flight; drained: the 1
// buffered group of policy actor cannot fill a batch of 8".
DataflowExhaustion ExhaustionFromWorker(const nlohmann::json& worker_status);

// When rank 0's GET /v1/status reply has phase "Starved": the Starved condition's message,
// "Dataflow <dataflow>: <the reply's message>"; nullopt for any other reply.
std::optional<std::string> StarvedMessage(const nlohmann::json& rank0_report,
                                          const std::string& dataflow);

}  // namespace sluice::controllers
