#include "workers/trainer/warm_start.h"

#include <utility>

namespace sluice::trainer {

std::vector<size_t> WarmStartRows(size_t rows, int64_t n, int64_t step, uint64_t seed) {
  std::vector<size_t> out;
  if (rows == 0 || n <= 0 || step < 0) return out;
  out.reserve(static_cast<size_t>(n));
  const uint64_t first = static_cast<uint64_t>(step) * static_cast<uint64_t>(n);
  int64_t epoch = -1;
  std::vector<size_t> order;
  for (uint64_t g = first; g < first + static_cast<uint64_t>(n); ++g) {
    const auto e = static_cast<int64_t>(g / rows);
    if (e != epoch) {
      epoch = e;
      order = dataflow::DatasetCursor::EpochOrder(rows, true, seed, epoch);
    }
    out.push_back(order[g % rows]);
  }
  return out;
}

Result<dataflow::Batch> WarmStartBatch(const std::vector<const dataflow::PromptRow*>& rows,
                                       const rollout::PolicyText& text,
                                       const std::optional<std::string>& system_prompt,
                                       const std::string& policy, int64_t version) {
  SLUICE_ASSIGN_OR_RETURN(const int32_t end, rollout::EndOfTurnId(text));
  dataflow::Batch b = EmptyWarmStartBatch(policy, version);
  for (const dataflow::PromptRow* row : rows) {
    SLUICE_RETURN_IF_ERROR(CheckHasAnswer(*row));
    dataflow::Sample s;
    s.task_id = "warm-start";
    s.prompt_id = row->id;
    s.policy = policy;
    SLUICE_ASSIGN_OR_RETURN(s.tokens,
                            rollout::EncodeConversation(
                                text, rollout::PromptMessages(system_prompt, row->prompt), true));
    const size_t prompt = s.tokens.size();
    for (int32_t t : text.tokenizer->EncodeOrdinary(row->answer)) s.tokens.push_back(t);
    s.tokens.push_back(end);
    s.loss_mask.assign(s.tokens.size(), 0);
    s.behaviour_logprobs.assign(s.tokens.size(), 0.0f);
    s.versions.assign(s.tokens.size(), dataflow::kNoVersion);
    for (size_t j = prompt; j < s.tokens.size(); ++j) {
      s.loss_mask[j] = 1;
      s.versions[j] = version;
    }
    s.reward = 1.0;
    s.finish_reason = "stop";
    b.group_index.push_back(static_cast<uint32_t>(b.samples.size()));
    b.replayed.push_back(0);
    b.samples.push_back(std::move(s));
  }
  return b;
}

dataflow::Batch EmptyWarmStartBatch(const std::string& policy, int64_t version) {
  dataflow::Batch b;
  b.batch_id = "warm-start";
  b.policy = policy;
  b.policy_version = version;
  return b;
}

rollout::Completion SupervisedTurn(std::vector<int32_t> tokens, int64_t version) {
  rollout::Completion c;
  c.logprobs.assign(tokens.size(), 0.0f);
  c.versions.assign(tokens.size(), version);
  c.tokens = std::move(tokens);
  c.finish_reason = "stop";
  return c;
}

void AddWarmStartSample(dataflow::Batch& batch, const std::string& row_id,
                        rollout::Transcript& transcript) {
  dataflow::Sample s;
  s.task_id = "warm-start";
  s.prompt_id = row_id;
  s.policy = batch.policy;
  transcript.MoveInto(&s, false);
  s.reward = 1.0;
  s.finish_reason = "stop";
  batch.group_index.push_back(static_cast<uint32_t>(batch.samples.size()));
  batch.replayed.push_back(0);
  batch.samples.push_back(std::move(s));
}

Status CheckHasAnswer(const dataflow::PromptRow& row) {
  if (!row.answer.empty()) return Status::Ok();
  return Status::InvalidArgument(
      "training row " + row.id +
          " has no answer to train on (a warm start needs reference answers)",
      "spec.warmStart");
}

}  // namespace sluice::trainer
