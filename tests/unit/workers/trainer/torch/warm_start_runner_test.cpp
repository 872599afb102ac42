// RunWarmStart in process, one rank: spec.warmStart's steps, learning rate and warm-up reach the
// supervised steps (the on_step reports), and the rows it trains on are the training split's.
#include "workers/trainer/torch/warm_start_runner.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "workers/dataflow/client/dataset.h"
#include "workers/trainer/trainer_settings.h"

namespace sluice::trainer {
namespace {

constexpr const char* kWarmStartRunnerModel =
    "builtin:tiny?layers=1&d=32&heads=2&ff=64&max_pos=64&seed=3&vocab=char";

TrainerSettings WarmStartSettings(int64_t steps, double lr, int64_t warmup) {
  TrainerSettings s;
  s.policy = "rev";
  s.job = "warm-start-runner-test";
  s.model.builtin_uri = kWarmStartRunnerModel;
  s.text.tokenizer = "char";
  s.text.chat_template = "plain";
  s.spec.steps = 10;
  s.spec.micro_batch_tokens = 4096;
  s.spec.algorithm.type = "grpo";
  s.spec.optimizer.lr = 1e-4;  // RL's, which the warm start must not use.
  api::TrainerJobSpecWarmStart ws;
  ws.steps = steps;
  ws.prompts_per_step = 4;
  ws.lr = lr;
  ws.warmup_steps = warmup;
  s.spec.warm_start = ws;
  s.warm_start_transcript = WarmStartTranscript::kAnswer;
  return s;
}

std::vector<dataflow::PromptRow> ReverseRows() {
  dataflow::BuiltinDataset builtin;
  builtin.length = 3;
  builtin.prompt_style = "equation";
  builtin.count = 32;
  builtin.seed = 1;
  Result<std::vector<dataflow::PromptRow>> rows = dataflow::GenerateBuiltinRows(builtin, "reverse");
  EXPECT_TRUE(rows.ok()) << rows.status().ToString();
  return rows.ok() ? *rows : std::vector<dataflow::PromptRow>{};
}

// The learning rate of each supervised step, as the on_step reports give it.
std::vector<double> WarmStartRates(const TrainerSettings& settings) {
  std::unique_ptr<Communicator> comm = MakeLocalCommunicator();
  std::vector<double> rates;
  WarmStartInputs in;
  in.settings = &settings;
  in.loader = [] { return model::DecoderModel::FromBuiltin(kWarmStartRunnerModel); };
  in.comm = comm.get();
  in.fetch_rows = [] { return Result<std::vector<dataflow::PromptRow>>(ReverseRows()); };
  in.on_step = [&](const StepReport& report, int64_t total) {
    EXPECT_EQ(total, settings.spec.warm_start->steps);
    rates.push_back(report.learning_rate);
  };
  Result<std::unique_ptr<PolicyTrainer>> trainer = RunWarmStart(in);
  EXPECT_TRUE(trainer.ok()) << trainer.status().ToString();
  if (trainer.ok()) {
    EXPECT_EQ((*trainer)->step(), settings.spec.warm_start->steps);
  }
  return rates;
}

TEST(WarmStartRunnerTest, TheSupervisedStepsRampUpOverWarmupStepsThenHoldTheRate) {
  const std::vector<double> rates = WarmStartRates(WarmStartSettings(5, 0.004, 2));
  ASSERT_EQ(rates.size(), 5u);
  EXPECT_DOUBLE_EQ(rates[0], 0.002);
  EXPECT_DOUBLE_EQ(rates[1], 0.004);
  EXPECT_DOUBLE_EQ(rates[2], 0.004);
  EXPECT_DOUBLE_EQ(rates[4], 0.004);
}

TEST(WarmStartRunnerTest, WithoutWarmupEveryStepTrainsAtTheWarmStartRate) {
  const std::vector<double> rates = WarmStartRates(WarmStartSettings(3, 0.003, 0));
  ASSERT_EQ(rates.size(), 3u);
  for (double rate : rates) EXPECT_DOUBLE_EQ(rate, 0.003);
}

TEST(WarmStartRunnerTest, AWarmupAsLongAsTheWarmStartIsRefused) {
  std::unique_ptr<Communicator> comm = MakeLocalCommunicator();
  const TrainerSettings settings = WarmStartSettings(3, 0.003, 3);
  WarmStartInputs in;
  in.settings = &settings;
  in.loader = [] { return model::DecoderModel::FromBuiltin(kWarmStartRunnerModel); };
  in.comm = comm.get();
  in.fetch_rows = [] { return Result<std::vector<dataflow::PromptRow>>(ReverseRows()); };
  Result<std::unique_ptr<PolicyTrainer>> trainer = RunWarmStart(in);
  ASSERT_FALSE(trainer.ok());
  EXPECT_EQ(trainer.status().field(), "spec.warmStart.warmupSteps");
}

}  // namespace
}  // namespace sluice::trainer
