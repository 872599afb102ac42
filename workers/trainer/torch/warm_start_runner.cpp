#include "workers/trainer/torch/warm_start_runner.h"

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/file/atomic_file.h"
#include "workers/rollout/environments/tool_call_format.h"
#include "workers/rollout/workflows/policy_text_loader.h"
#include "workers/trainer/calculator_warm_start.h"
#include "workers/trainer/verifier_warm_start.h"
#include "workers/trainer/warm_start.h"

namespace sluice::trainer {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kWarmStartDir = "warm-start";

// Rank 0 fetches the rows (retrying until the dataflow answers) and broadcasts them as JSON.
Result<std::vector<dataflow::PromptRow>> ShareRows(const WarmStartInputs& in) {
  std::string text;
  if (in.comm->rank() == 0) {
    const Clock& clock = ClockOrSystem(in.clock);
    const Clock::MonoTime give_up = clock.Now() + in.fetch_timeout;
    Result<std::vector<dataflow::PromptRow>> rows = Status::Unavailable("not fetched");
    while (true) {
      rows = in.fetch_rows();
      if (rows.ok() || clock.Now() >= give_up) break;
      if (in.logger) {
        in.logger->Warn("reading the training split failed; retrying",
                        {{"error", rows.status().ToString()}});
      }
      if (in.stop.WaitFor(std::chrono::seconds(1))) return Status::Cancelled("stopping");
    }
    if (!rows.ok()) return rows.status().WithContext("reading the Dataflow's training split");
    json all = json::array();
    for (const dataflow::PromptRow& r : *rows) {
      json row = {{"id", r.id}, {"prompt", r.prompt}, {"answer", r.answer}};
      // The calculator warm start's call (calculator_warm_start.h); absent from other datasets.
      if (std::optional<std::string> expression = RowExpression(r)) row["expression"] = *expression;
      all.push_back(std::move(row));
    }
    text = all.dump();
  }
  SLUICE_RETURN_IF_ERROR(in.comm->Broadcast(text, 0));
  const json all = json::parse(text, nullptr, false);
  if (!all.is_array()) return Status::Internal("the broadcast training split is not a JSON array");
  std::vector<dataflow::PromptRow> rows;
  rows.reserve(all.size());
  for (const json& r : all) {
    dataflow::PromptRow row;
    row.id = r.value("id", "");
    row.prompt = r.value("prompt", "");
    row.answer = r.value("answer", "");
    if (auto it = r.find("expression"); it != r.end() && it->is_string()) {
      row.row = json{{"expression", *it}};
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

// A seed for the row order that depends on the job's model source only, so a restarted warm
// start (without a saved state) walks the same rows.
uint64_t RowSeed(const TrainerSettings& s) {
  return std::hash<std::string>{}(s.model.builtin_uri + "|" + s.model.directory + "|" + s.job);
}

rollout::ToolCallFormat ToolCallFormatOf(const api::DataflowSpecWorkflowToolCall& markers) {
  rollout::ToolCallFormat format;
  format.call_open = markers.call_open;
  format.call_close = markers.call_close;
  format.answer_open = markers.answer_open;
  format.answer_close = markers.answer_close;
  return format;
}

// The supervised batch of rows[i] for each i in `picked`, in the shape of the Policy's role.
Result<dataflow::Batch> SupervisedBatch(const TrainerSettings& s,
                                        const std::vector<dataflow::PromptRow>& rows,
                                        const std::vector<size_t>& picked,
                                        const rollout::PolicyText& text, uint64_t seed,
                                        int64_t version) {
  std::vector<const dataflow::PromptRow*> selected;
  selected.reserve(picked.size());
  for (size_t i : picked) selected.push_back(&rows[i]);
  switch (s.warm_start_transcript) {
    case WarmStartTranscript::kAnswer:
      return WarmStartBatch(selected, text, s.system_prompt, s.policy, version);
    case WarmStartTranscript::kVerdict:
      return VerifierWarmStartBatch(rows, picked, text, s.system_prompt,
                                    ToolCallFormatOf(s.tool_call), seed, s.policy, version);
    case WarmStartTranscript::kCalculatorCall:
      return CalculatorWarmStartBatch(selected, text, s.system_prompt,
                                      ToolCallFormatOf(s.tool_call), s.policy, version);
  }
  return Status::Internal("unknown warm start transcript shape");
}

}  // namespace

Status CopyWeights(const model::DecoderModel& from, model::DecoderModel& to) {
  const auto src = from.NamedParameters();
  const auto dst = to.NamedParameters();
  if (src.size() != dst.size()) {
    return Status::InvalidArgument("the models have " + std::to_string(src.size()) + " and " +
                                   std::to_string(dst.size()) + " parameters");
  }
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i].first != dst[i].first || !src[i].second.sizes().equals(dst[i].second.sizes())) {
      return Status::InvalidArgument("parameter " + dst[i].first + " differs", dst[i].first);
    }
    dst[i].second.copy_(src[i].second);
  }
  return Status::Ok();
}

Result<std::unique_ptr<PolicyTrainer>> RunWarmStart(const WarmStartInputs& in) {
  const TrainerSettings& base = *in.settings;
  const api::TrainerJobSpecWarmStart& ws = *base.spec.warm_start;
  // The CRD's rule, again here: a warm-up as long as the warm start would never reach lr.
  if (ws.warmup_steps < 0 || ws.warmup_steps >= ws.steps) {
    return Status::InvalidArgument("must be at least 0 and less than spec.warmStart.steps (" +
                                       std::to_string(ws.steps) + "), got " +
                                       std::to_string(ws.warmup_steps),
                                   "spec.warmStart.warmupSteps");
  }
  TrainerSettings sft = base;
  sft.spec.algorithm = api::TrainerJobSpecAlgorithm{};
  sft.spec.algorithm.type = "sft";
  sft.spec.optimizer.lr = ws.lr;
  sft.spec.optimizer.schedule = "constant";
  sft.spec.optimizer.warmup_steps = ws.warmup_steps;
  sft.spec.steps = ws.steps;
  sft.spec.warm_start.reset();
  sft.minibatches = 1;
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<PolicyTrainer> trainer,
                          PolicyTrainer::Create(sft, in.loader, in.comm));

  const std::string saved =
      in.checkpoint_dir.empty() ? "" : in.checkpoint_dir + "/" + kWarmStartDir;
  std::error_code ec;
  if (!saved.empty() && fs::exists(saved + "/state.json", ec)) {
    SLUICE_RETURN_IF_ERROR(trainer->LoadState(saved));
    if (in.logger)
      in.logger->Info("warm start resumed", {{"dir", saved}, {"step", trainer->step()}});
    return trainer;
  }

  SLUICE_ASSIGN_OR_RETURN(const std::vector<dataflow::PromptRow> rows, ShareRows(in));
  if (rows.empty()) {
    return Status::InvalidArgument("the Dataflow's training split is empty", "spec.warmStart");
  }
  SLUICE_ASSIGN_OR_RETURN(
      const rollout::PolicyText text,
      rollout::LoadPolicyText(base.policy, base.text.tokenizer, base.text.tokenizer_file,
                              base.text.chat_template));
  const uint64_t seed = RowSeed(base);
  if (in.logger) {
    in.logger->Info("warm start", {{"steps", ws.steps},
                                   {"prompts_per_step", ws.prompts_per_step},
                                   {"rows", static_cast<int64_t>(rows.size())},
                                   {"role", base.warm_start_role},
                                   {"lr", ws.lr},
                                   {"warmup_steps", ws.warmup_steps}});
  }
  while (trainer->step() < ws.steps) {
    if (in.stop.IsCancelled()) return Status::Cancelled("stopping");
    const std::vector<size_t> picked =
        WarmStartRows(rows.size(), ws.prompts_per_step, trainer->step(), seed);
    SLUICE_ASSIGN_OR_RETURN(dataflow::Batch batch,
                            SupervisedBatch(base, rows, picked, text, seed, trainer->version()));
    SLUICE_ASSIGN_OR_RETURN(const StepReport report, trainer->Step(batch));
    if (in.on_step) in.on_step(report, ws.steps);
  }
  if (!saved.empty() && in.comm->rank() == 0) {
    const std::string tmp = in.checkpoint_dir + "/." + kWarmStartDir + ".tmp";
    fs::remove_all(tmp, ec);
    fs::create_directories(tmp, ec);
    if (ec) return Status::Internal("creating " + tmp + ": " + ec.message());
    SLUICE_RETURN_IF_ERROR(trainer->SaveState(tmp));
    SLUICE_RETURN_IF_ERROR(file::SyncDirectoryContents(tmp));
    SLUICE_RETURN_IF_ERROR(file::RenameDurably(tmp, saved));
    if (in.logger) in.logger->Info("warm start saved", {{"dir", saved}});
  }
  return trainer;
}

}  // namespace sluice::trainer
