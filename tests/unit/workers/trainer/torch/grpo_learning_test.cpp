// Learning, end to end in one process: the tiny built-in model learns the built-in arithmetic
// task from GRPO on completions the built-in engine generates. The harness is the closed loop
// a job runs, without the HTTP hops: the single-turn workflow samples groups through
// EngineBackend and scores them with the exact-match reward, PolicyTrainer trains on them, and
// every new version is published (PublishWeights) and swapped into the engine (ApplyWeights), so
// each step's samples come from the previous step's weights.
//
// A random model never writes a bare number, so the run starts from a format-only SFT warm
// start: completions are answers of *other* problems, which teaches "a number, then end of turn"
// but not which number. Mean reward then sits near chance (the answers' collision rate), and
// anything above it is what GRPO learned. Everything is seeded (model, problems, warm-start
// answers, and every generation through SeededBackend), so the run is reproducible.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "workers/dataflow/client/dataset.h"
#include "workers/model/char_tokenizer.h"
#include "workers/model/chat_template.h"
#include "workers/model/nn/decoder_model.h"
#include "workers/rollout/backend/engine_backend.h"
#include "workers/rollout/workflows/parallel_for.h"
#include "workers/rollout/workflows/policy_turn.h"
#include "workers/rollout/workflows/transcript.h"
#include "workers/rollout/workflows/workflow.h"
#include "workers/trainer/torch/policy_trainer.h"
#include "workers/trainer/torch/published_weights.h"
#include "workers/weights/weight_snapshot.h"

namespace sluice::trainer {
namespace {

using nlohmann::json;

constexpr char kModel[] =
    "builtin:tiny?layers=2&d=64&heads=4&kv_heads=2&ff=128&max_pos=128&seed=11&vocab=char";
constexpr char kPolicy[] = "actor";
constexpr int kProblems = 16;
constexpr int kGroupSize = 8;
constexpr int kSftSteps = 40;
constexpr int kGrpoSteps = 50;
constexpr int kEvalSamples = 32;

// Seeds every request from (request prompt, a per-call counter) so generation is reproducible
// whatever order the engine batches concurrent requests in.
class SeededBackend final : public rollout::GenerationBackend {
 public:
  explicit SeededBackend(rollout::GenerationBackend* inner) : inner_(inner) {}
  void set_round(uint64_t round) { round_ = round; }

  Result<std::vector<rollout::Completion>> Generate(const rollout::GenerateRequest& request,
                                                    const CancellationToken& cancel) override {
    rollout::GenerateRequest seeded = request;
    uint64_t h = round_ * 0x9E3779B97F4A7C15ull;
    for (int32_t t : request.prompt) h = (h ^ static_cast<uint64_t>(t)) * 0x100000001B3ull;
    seeded.sampling.seed = h;
    return inner_->Generate(seeded, cancel);
  }

 private:
  rollout::GenerationBackend* inner_;
  uint64_t round_ = 0;
};

TrainerSettings Settings(const std::string& type, double lr) {
  TrainerSettings s;
  s.policy = kPolicy;
  s.spec.steps = 1000;
  s.spec.micro_batch_tokens = 4096;
  s.spec.algorithm.type = type;
  s.spec.optimizer.lr = lr;
  s.spec.optimizer.betas = {0.9, 0.999};
  s.spec.optimizer.weight_decay = 0.0;
  s.minibatches = 1;
  s.max_new_tokens = 4;
  return s;
}

class GrpoLearningTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("sluice-grpo-learning-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    dataflow::BuiltinDataset builtin;
    builtin.count = kProblems;
    builtin.max_operand = 4;
    builtin.seed = 5;
    Result<std::vector<dataflow::PromptRow>> rows =
        dataflow::GenerateBuiltinRows(builtin, "arithmetic");
    ASSERT_TRUE(rows.ok()) << rows.status().ToString();
    rows_ = std::move(*rows);
    text_.tokenizer = std::make_shared<const model::CharTokenizer>();
    text_.chat_template =
        std::make_shared<const model::ChatTemplate>(model::ChatTemplate::ByName("plain").value());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  rollout::LeasedTask Task(size_t i, int64_t samples) const {
    rollout::LeasedTask t;
    t.task_id = "task-" + std::to_string(i);
    t.lease_id = "lease-" + std::to_string(i);
    t.prompt_id = rows_[i].id;
    t.prompt = rows_[i].prompt;
    t.answer = rows_[i].answer;
    t.samples = samples;
    t.sampling = {{"temperature", 1.0}, {"maxNewTokens", 4}};
    t.workflow = Workflow();
    return t;
  }

  static json Workflow() {
    return {{"type", "single-turn"},
            {"roles", {{{"name", "solver"}, {"policy", kPolicy}}}},
            {"reward", {{"type", "exact-match"}}}};
  }

  // Format-only warm start: each problem's prompt followed by another problem's answer.
  dataflow::Batch WarmStartBatch(std::mt19937_64& rng) const {
    dataflow::Batch b;
    b.batch_id = "sft";
    b.policy = kPolicy;
    const int32_t end = rollout::EndOfTurnId(text_).value();
    for (size_t i = 0; i < rows_.size(); ++i) {
      for (int k = 0; k < 4; ++k) {
        dataflow::Sample s;
        s.policy = kPolicy;
        s.tokens = rollout::EncodeConversation(
                       text_, rollout::PromptMessages(std::nullopt, rows_[i].prompt), true)
                       .value();
        const size_t prompt = s.tokens.size();
        const std::string& answer = rows_[rng() % rows_.size()].answer;
        for (int32_t t : text_.tokenizer->EncodeOrdinary(answer)) s.tokens.push_back(t);
        s.tokens.push_back(end);
        s.loss_mask.assign(s.tokens.size(), 0);
        s.behaviour_logprobs.assign(s.tokens.size(), 0.0f);
        s.versions.assign(s.tokens.size(), dataflow::kNoVersion);
        for (size_t j = prompt; j < s.tokens.size(); ++j) {
          s.loss_mask[j] = 1;
          s.versions[j] = 0;
        }
        b.samples.push_back(std::move(s));
        b.group_index.push_back(static_cast<uint32_t>(i));
        b.replayed.push_back(0);
      }
    }
    return b;
  }

  // One group per problem through the real single-turn workflow, run concurrently so the engine
  // batches them; the groups make one batch.
  dataflow::Batch Rollout(int64_t samples) {
    const Result<std::unique_ptr<rollout::Workflow>> wf = rollout::MakeWorkflow(Workflow());
    EXPECT_TRUE(wf.ok()) << wf.status().ToString();
    std::vector<Result<rollout::EpisodeResult>> results(rows_.size(), Status::Internal("not run"));
    rollout::ParallelFor(rows_.size(), rows_.size(),
                         [&](size_t i) { results[i] = (*wf)->Run(Task(i, samples), context_); });
    dataflow::Batch b;
    b.batch_id = "grpo";
    b.policy = kPolicy;
    for (size_t i = 0; i < results.size(); ++i) {
      EXPECT_TRUE(results[i].ok()) << results[i].status().ToString();
      if (!results[i].ok()) continue;
      for (dataflow::Sample& s : results[i]->samples) {
        b.samples.push_back(std::move(s));
        b.group_index.push_back(static_cast<uint32_t>(i));
        b.replayed.push_back(0);
      }
    }
    return b;
  }

  static double MeanReward(const dataflow::Batch& b) {
    double sum = 0;
    for (const dataflow::Sample& s : b.samples) sum += s.reward;
    return b.samples.empty() ? 0 : sum / static_cast<double>(b.samples.size());
  }

  std::filesystem::path dir_;
  std::vector<dataflow::PromptRow> rows_;
  rollout::PolicyText text_;
  rollout::EpisodeContext context_;
};

TEST_F(GrpoLearningTest, GrpoOnEngineGeneratedGroupsRaisesMeanReward) {
  // 1. Format-only SFT warm start, saved as the Policy's initial weights.
  std::unique_ptr<Communicator> comm = MakeLocalCommunicator();
  {
    TrainerSettings sft = Settings("sft", 3e-3);
    sft.model.builtin_uri = kModel;
    Result<std::unique_ptr<PolicyTrainer>> t = PolicyTrainer::Create(
        sft, [] { return model::DecoderModel::FromBuiltin(kModel); }, comm.get());
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    std::mt19937_64 rng(17);
    for (int step = 0; step < kSftSteps; ++step) {
      Result<StepReport> r = (*t)->Step(WarmStartBatch(rng));
      ASSERT_TRUE(r.ok()) << r.status().ToString();
    }
    ASSERT_TRUE((*t)->model().SaveHf((dir_ / "warm").string()).ok());
  }
  const std::string warm = (dir_ / "warm").string();

  // 2. The engine serves the warm start (version 0); the trainer starts from it.
  engine::EngineOptions options;
  options.kv_cache_tokens = 32768;
  rollout::EngineBackend engine(options);
  auto served = std::make_shared<model::DecoderModel>(model::DecoderModel::LoadHf(warm).value());
  ASSERT_TRUE(engine.engine().AddPolicy(kPolicy, served, 0, text_.tokenizer).ok());
  SeededBackend seeded(&engine);
  context_.backend = &seeded;
  context_.policies[kPolicy] = text_;

  TrainerSettings grpo = Settings("grpo", 5e-4);
  grpo.model.directory = warm;
  // Eight optimizer updates per batch (two groups each): learns faster than one update at a
  // higher rate, which collapses the format (no end-of-turn, every reward 0, no signal left).
  grpo.minibatches = 8;
  Result<std::unique_ptr<PolicyTrainer>> trainer = PolicyTrainer::Create(
      grpo, [&] { return model::DecoderModel::LoadHf(warm); }, comm.get());
  ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();

  seeded.set_round(1'000'000);
  const double before = MeanReward(Rollout(kEvalSamples));

  // 3. The closed loop: generate with version v, train, publish v + 1 into the engine.
  std::vector<double> curve;
  for (int step = 0; step < kGrpoSteps; ++step) {
    seeded.set_round(static_cast<uint64_t>(step));
    const dataflow::Batch batch = Rollout(kGroupSize);
    for (const dataflow::Sample& s : batch.samples) {
      for (size_t i = 0; i < s.tokens.size(); ++i) {
        if (s.loss_mask[i] == 1) {
          ASSERT_EQ(s.versions[i], (*trainer)->version());
        }
      }
    }
    Result<StepReport> r = (*trainer)->Step(batch);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    curve.push_back(r->reward_mean);
    Result<PublishedWeights> w = PublishWeights((*trainer)->model(), "float32");
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    Result<weights::WeightSnapshot> snapshot =
        weights::WeightSnapshot::Build(w->views, (*trainer)->version());
    ASSERT_TRUE(snapshot.ok()) << snapshot.status().ToString();
    ASSERT_TRUE(engine.ApplyWeights(kPolicy, *snapshot).ok());
  }

  seeded.set_round(1'000'000);
  const double after = MeanReward(Rollout(kEvalSamples));
  std::string trace;
  for (double c : curve) trace += std::to_string(c).substr(0, 4) + " ";
  std::printf("mean reward %.3f before, %.3f after %d GRPO steps; per step: %s\n", before, after,
              kGrpoSteps, trace.c_str());
  EXPECT_GT(after, before + 0.15) << "before " << before << " after " << after << "; per step "
                                  << trace;
}

}  // namespace
}  // namespace sluice::trainer
