// The built-in generator's operations and the eval split held out by problem (dataset.h).
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>

#include "workers/dataflow/client/dataset.h"

namespace sluice::dataflow {
namespace {

TEST(DatasetBuiltinTest, ArithmeticDrawsOnlyTheChosenOperations) {
  BuiltinDataset b{"arithmetic", 2000, 19, 4};
  b.operations = "+-";
  auto rows = GenerateBuiltinRows(b, "");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  int plus = 0, minus = 0;
  for (const PromptRow& r : *rows) {
    EXPECT_EQ(r.prompt.find(" * "), std::string::npos) << r.prompt;
    EXPECT_EQ(r.prompt.find(" / "), std::string::npos) << r.prompt;
    plus += r.prompt.find(" + ") != std::string::npos ? 1 : 0;
    minus += r.prompt.find(" - ") != std::string::npos ? 1 : 0;
  }
  EXPECT_EQ(plus + minus, 2000);
  EXPECT_GT(plus, 900);  // Uniform over the two.
  EXPECT_GT(minus, 900);
  // The default (all four) draws exactly the rows it always drew.
  BuiltinDataset all{"arithmetic", 50, 19, 4};
  BuiltinDataset spelt = all;
  spelt.operations = "+-*/";
  EXPECT_EQ(GenerateBuiltinRows(all, "")->at(17).prompt,
            GenerateBuiltinRows(spelt, "")->at(17).prompt);

  for (const std::string bad : {"", "+%", "++", "+-*/+"}) {
    BuiltinDataset x = all;
    x.operations = bad;
    EXPECT_EQ(GenerateBuiltinRows(x, "").status().field(), "spec.dataset.builtin.operations")
        << bad;
  }
  BuiltinDataset chain{"arithmetic-chain", 10, 19, 4};
  chain.operations = "+-";
  EXPECT_EQ(GenerateBuiltinRows(chain, "").status().field(), "spec.dataset.builtin.operations");
}

TEST(DatasetLoadTest, NoEvalProblemIsTrainedOnUnderAnotherId) {
  // Operands up to 3 give few distinct problems, so 400 rows repeat each many times.
  DatasetSource src;
  src.builtin = BuiltinDataset{"arithmetic", 400, 3, 1};
  src.eval_split = 0.05;
  auto d = Dataset::Load(src);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->eval_size(), 20u);
  EXPECT_GT(d->dropped_duplicates(), 0u);
  EXPECT_EQ(d->train_size() + d->eval_size() + d->dropped_duplicates(), 400u);
  std::set<std::string> eval_prompts;
  for (size_t i = 0; i < d->eval_size(); ++i) eval_prompts.insert(d->eval(i).prompt);
  for (size_t i = 0; i < d->train_size(); ++i) {
    EXPECT_EQ(eval_prompts.count(d->train(i).prompt), 0u) << d->train(i).prompt;
  }

  // When every training row repeats an eval prompt, nothing is left to train on: an error.
  const std::string file = ::testing::TempDir() + "/sluice-same-prompt.jsonl";
  {
    std::ofstream out(file);
    for (int i = 0; i < 10; ++i)
      out << R"({"id": "q)" << i << R"(", "prompt": "p"})"
          << "\n";
  }
  src.builtin.reset();
  src.file = file;
  src.eval_split = 0.2;
  auto all_same = Dataset::Load(src);
  ASSERT_FALSE(all_same.ok());
  EXPECT_EQ(all_same.status().field(), "spec.dataset.evalSplit");
}

}  // namespace
}  // namespace sluice::dataflow
