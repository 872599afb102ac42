// sluice-trainer's flags and the readings of them before it starts (trainer_flags.h).
#include "workers/trainer/trainer_flags.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/config/parse.h"

namespace sluice::trainer {
namespace trainer_flags_test {

// Runs TakeTrainerConfig over `args` (after the program name); returns the path and what is left.
std::pair<std::string, std::vector<std::string>> Take(std::vector<std::string> args) {
  args.insert(args.begin(), "sluice-trainer");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  int argc = static_cast<int>(argv.size());
  const std::string path = TakeTrainerConfig(argc, argv.data());
  return {path, std::vector<std::string>(argv.begin() + 1, argv.begin() + argc)};
}

TEST(TakeTrainerConfigTest, TakesBothFormsAndLeavesTheOtherFlags) {
  EXPECT_EQ(
      Take({"--rank=1", "--config=/c/t.json", "--steps=3"}),
      (std::pair<std::string, std::vector<std::string>>{"/c/t.json", {"--rank=1", "--steps=3"}}));
  EXPECT_EQ(Take({"--config", "/d/t.json", "--rank=0"}),
            (std::pair<std::string, std::vector<std::string>>{"/d/t.json", {"--rank=0"}}));
  EXPECT_EQ(Take({"--rank=0"}), (std::pair<std::string, std::vector<std::string>>{
                                    "/etc/sluice/config/trainer.json", {"--rank=0"}}));
  // A trailing --config without a value is left for the flag parser to refuse.
  EXPECT_EQ(Take({"--config"}), (std::pair<std::string, std::vector<std::string>>{
                                    "/etc/sluice/config/trainer.json", {"--config"}}));
}

TEST(ExportRootTest, PrefersExportDirThenTheCheckpointDirectory) {
  const config::Spec spec = TrainerFlagSpec();
  auto root = [&](std::vector<std::string> args) {
    args.push_back("--dataflow-url=http://df:8080");
    Result<config::Config> cfg = config::Parse(spec, args, config::Environment{});
    EXPECT_TRUE(cfg.ok()) << cfg.status().message();
    return cfg.ok() ? ExportRoot(*cfg) : "?";
  };
  EXPECT_EQ(root({"--export-dir=/x", "--checkpoint-dir=/ck"}), "/x");
  EXPECT_EQ(root({"--checkpoint-dir=/ck"}), "/ck/exports");
  EXPECT_EQ(root({}), "");
}

}  // namespace trainer_flags_test
}  // namespace sluice::trainer
