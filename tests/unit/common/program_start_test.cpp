#include "common/config/program_start.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/config/option.h"
#include "common/logging/level.h"

namespace sluice::config {
namespace {

Spec TestSpec() {
  Spec spec("SLUICE_PROGRAM_START_TEST");
  spec.Add(Option::Int("port", 8080, "Port."))
      .Add(Option::Enum("log-level", {"debug", "info", "warn", "error"}, "info", "Level."));
  return spec;
}

std::optional<Config> Start(std::vector<std::string> args, int* exit_code) {
  args.insert(args.begin(), "prog");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return StartProgram(TestSpec(), static_cast<int>(argv.size()), argv.data(), "sluice-test",
                      "Does test things.", exit_code);
}

TEST(StartProgramTest, ParsesFlagsAndSetsTheLogLevel) {
  const log::Level before = log::MinLevel();
  int code = -1;
  std::optional<Config> cfg = Start({"--port=9", "--log-level=warn"}, &code);
  ASSERT_TRUE(cfg.has_value());
  EXPECT_EQ(code, 0);
  EXPECT_EQ(cfg->GetInt("port"), 9);
  EXPECT_EQ(log::MinLevel(), log::Level::kWarn);
  log::SetMinLevel(before);
}

TEST(StartProgramTest, HelpAndVersionExitZeroOnStdout) {
  int code = -1;
  testing::internal::CaptureStdout();
  EXPECT_FALSE(Start({"--help"}, &code).has_value());
  const std::string help = testing::internal::GetCapturedStdout();
  EXPECT_EQ(code, 0);
  EXPECT_NE(help.find("Does test things."), std::string::npos) << help;
  EXPECT_NE(help.find("--port"), std::string::npos) << help;

  testing::internal::CaptureStdout();
  EXPECT_FALSE(Start({"--version"}, &code).has_value());
  EXPECT_EQ(testing::internal::GetCapturedStdout(), "sluice-test 0.1.0\n");
  EXPECT_EQ(code, 0);
}

TEST(StartProgramTest, ABadFlagExitsTwoNamingIt) {
  int code = -1;
  testing::internal::CaptureStderr();
  EXPECT_FALSE(Start({"--port=x"}, &code).has_value());
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, 2);
  EXPECT_EQ(err.rfind("sluice-test: ", 0), 0u) << err;
  EXPECT_NE(err.find("port"), std::string::npos) << err;
}

}  // namespace
}  // namespace sluice::config
