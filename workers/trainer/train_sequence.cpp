#include "workers/trainer/train_sequence.h"

#include <algorithm>
#include <string>

namespace sluice::trainer {

Result<std::vector<TrainSequence>> ToTrainSequences(const dataflow::Batch& batch,
                                                    int64_t vocab_size, int64_t max_length) {
  std::vector<TrainSequence> out;
  out.reserve(batch.samples.size());
  for (size_t i = 0; i < batch.samples.size(); ++i) {
    const dataflow::Sample& s = batch.samples[i];
    const std::string where = "samples[" + std::to_string(i) + "].";
    SLUICE_RETURN_IF_ERROR(
        dataflow::ValidateSample(s).WithContext("samples[" + std::to_string(i) + "]"));
    const size_t n = s.tokens.size();
    if (static_cast<int64_t>(n) > max_length) {
      return Status::InvalidArgument(std::to_string(n) + " tokens exceed the model's " +
                                         std::to_string(max_length) + " positions",
                                     where + "tokens");
    }
    TrainSequence seq;
    seq.tokens.reserve(n);
    for (int32_t t : s.tokens) {
      if (t < 0 || t >= vocab_size) {
        return Status::InvalidArgument("token " + std::to_string(t) +
                                           " is outside the vocabulary [0, " +
                                           std::to_string(vocab_size) + ")",
                                       where + "tokens");
      }
      seq.tokens.push_back(t);
    }
    if (n >= 2) {
      seq.mask.reserve(n - 1);
      for (size_t j = 1; j < n; ++j) {
        seq.mask.push_back(s.loss_mask[j] != 0 ? 1.0f : 0.0f);
        seq.behaviour_logp.push_back(s.behaviour_logprobs[j]);
        seq.versions.push_back(s.versions[j]);
        if (s.loss_mask[j] != 0) ++seq.generated_tokens;
      }
    }
    seq.reward = s.reward;
    seq.group = i < batch.group_index.size() ? batch.group_index[i] : static_cast<int64_t>(i);
    seq.loss_weight = s.loss_weight;
    out.push_back(std::move(seq));
  }
  return out;
}

Staleness TokenStaleness(const std::vector<TrainSequence>& sequences, int64_t current_version) {
  double sum = 0, max = 0;
  int64_t count = 0;
  for (const TrainSequence& s : sequences) {
    for (size_t j = 0; j < s.mask.size(); ++j) {
      if (s.mask[j] == 0 || s.versions[j] < 0) continue;
      const double lag = static_cast<double>(std::max<int64_t>(current_version - s.versions[j], 0));
      sum += lag;
      max = std::max(max, lag);
      ++count;
    }
  }
  return count == 0 ? Staleness{} : Staleness{sum / static_cast<double>(count), max};
}

}  // namespace sluice::trainer
