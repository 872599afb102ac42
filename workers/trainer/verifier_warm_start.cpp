#include "workers/trainer/verifier_warm_start.h"

#include <algorithm>
#include <charconv>
#include <system_error>
#include <utility>

#include "common/splitmix64.h"
#include "workers/rollout/workflows/solve_and_verify_workflow.h"
#include "workers/rollout/workflows/transcript.h"
#include "workers/trainer/warm_start.h"

namespace sluice::trainer {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// An optional '-' and ASCII digits only, within int64; nullopt otherwise.
std::optional<int64_t> ParseInteger(std::string_view s) {
  const size_t first = !s.empty() && s.front() == '-' ? 1 : 0;
  if (first == s.size()) return std::nullopt;
  for (size_t i = first; i < s.size(); ++i) {
    if (!IsDigit(s[i])) return std::nullopt;
  }
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

// `s` with one ASCII digit replaced by another, both picked by `key`; nullopt without a digit.
std::optional<std::string> ChangeDigit(std::string_view s, uint64_t key) {
  std::vector<size_t> digits;
  for (size_t i = 0; i < s.size(); ++i) {
    if (IsDigit(s[i])) digits.push_back(i);
  }
  if (digits.empty()) return std::nullopt;
  const size_t at = digits[key % digits.size()];
  // A leading zero would make a spelling no solver writes ("02"), an easy tell for the verifier.
  const bool starts_number = at == 0 || (!IsDigit(s[at - 1]) && s[at - 1] != '.');
  const bool leading = starts_number && at + 1 < s.size() && IsDigit(s[at + 1]);
  std::string replacements;
  for (char d = '0'; d <= '9'; ++d) {
    if (d != s[at] && !(leading && d == '0')) replacements += d;
  }
  std::string out(s);
  out[at] = replacements[(key >> 32) % replacements.size()];
  return out;
}

}  // namespace

std::optional<std::string> PerturbAnswer(std::string_view answer, uint64_t key) {
  // Mixed first, so that nearby keys (0, 1, 2, ...) still give unrelated mistakes. Bit 0 picks
  // the kind of mistake for integers, bits 1-3 the move, the rest the digit.
  const uint64_t h = SplitMix64(key);
  const std::optional<int64_t> value = ParseInteger(answer);
  if (value && (h & 1) == 0) {
    const auto step = static_cast<int64_t>(1 + (h >> 1) % 3);
    const int64_t delta = ((h >> 3) & 1) != 0 ? -step : step;
    int64_t moved = 0;
    // std::to_string of another value differs from `answer` even when `answer` is not in
    // canonical form ("007", "-0"), since canonical text never equals non-canonical text.
    if (!__builtin_add_overflow(*value, delta, &moved)) return std::to_string(moved);
  }
  return ChangeDigit(answer, h >> 4);
}

std::string VerifierTrace(std::string_view candidate, std::string_view reference) {
  std::string trace;
  const size_t n = std::max(candidate.size(), reference.size());
  trace.reserve(4 * n);
  for (size_t i = 0; i < n; ++i) {
    const char c = i < candidate.size() ? candidate[i] : '_';
    const char r = i < reference.size() ? reference[i] : '_';
    trace += c;
    trace += r;
    trace += c == r && i < candidate.size() && i < reference.size() ? '=' : 'x';
    trace += ' ';
  }
  return trace;
}

Result<VerifierCandidate> PickVerifierCandidate(const dataflow::PromptRow& row, size_t index,
                                                uint64_t seed) {
  SLUICE_RETURN_IF_ERROR(CheckHasAnswer(row));
  // One draw per (seed, index): its low bit picks the verdict, the rest keys the perturbation.
  const uint64_t draw = SplitMix64(SplitMix64(seed) ^ static_cast<uint64_t>(index));
  // Perturbed even when the answer is shown as it is, so that a row that cannot be perturbed is
  // refused whichever verdict it drew, not only on unlucky steps.
  std::optional<std::string> wrong = PerturbAnswer(row.answer, draw >> 1);
  if (!wrong) {
    return Status::InvalidArgument("training row " + row.id +
                                       " has an answer without a digit; the verifier's warm start "
                                       "shows wrong answers made by changing a number",
                                   "spec.warmStart");
  }
  if ((draw & 1) == 0) return VerifierCandidate{row.answer, true};
  return VerifierCandidate{std::move(*wrong), false};
}

Result<dataflow::Batch> VerifierWarmStartBatch(std::span<const dataflow::PromptRow> split,
                                               const std::vector<size_t>& picked,
                                               const rollout::PolicyText& text,
                                               const std::optional<std::string>& system_prompt,
                                               const rollout::ToolCallFormat& format, uint64_t seed,
                                               const std::string& policy, int64_t version) {
  using rollout::SolveAndVerifyWorkflow;
  SLUICE_ASSIGN_OR_RETURN(const int32_t end, rollout::EndOfTurnId(text));
  dataflow::Batch b = EmptyWarmStartBatch(policy, version);
  for (const size_t index : picked) {
    if (index >= split.size()) {
      return Status::InvalidArgument("row " + std::to_string(index) +
                                     " is outside the training split of " +
                                     std::to_string(split.size()) + " rows");
    }
    const dataflow::PromptRow& row = split[index];
    SLUICE_ASSIGN_OR_RETURN(const VerifierCandidate candidate,
                            PickVerifierCandidate(row, index, seed));
    const std::string verdict =
        rollout::FormatFinalAnswer(format, candidate.correct ? "yes" : "no");
    const std::string judgement = VerifierTrace(candidate.answer, row.answer) + verdict;
    // The workflow must read the verdict back as meant (markers that swallow it would teach the
    // opposite of what is rewarded).
    if (SolveAndVerifyWorkflow::IsYes(rollout::ExtractFinalAnswer(format, judgement)) !=
        candidate.correct) {
      return Status::InvalidArgument(
          "the workflow would not read the verdict \"" + verdict +
              "\" back as written; check the Dataflow's workflow.toolCall answer markers",
          "spec.warmStart");
    }

    rollout::Transcript transcript;
    SLUICE_ASSIGN_OR_RETURN(const std::vector<int32_t> prompt,
                            rollout::EncodeConversation(
                                text, rollout::PromptMessages(system_prompt, row.prompt), true));
    transcript.AppendContext(prompt);
    // The solver's turn as the engine would end it: the answer, then the end-of-turn marker.
    std::vector<int32_t> solved = text.tokenizer->EncodeOrdinary(candidate.answer);
    solved.push_back(end);
    transcript.AppendContext(solved);
    SLUICE_ASSIGN_OR_RETURN(const std::vector<int32_t> request,
                            SolveAndVerifyWorkflow::EncodeVerifyRequest(text, solved));
    transcript.AppendContext(request);
    std::vector<int32_t> judged = text.tokenizer->EncodeOrdinary(judgement);
    judged.push_back(end);
    SLUICE_RETURN_IF_ERROR(
        transcript.AppendGenerated(SupervisedTurn(std::move(judged), version), 0));
    AddWarmStartSample(b, row.id, transcript);
  }
  return b;
}

}  // namespace sluice::trainer
