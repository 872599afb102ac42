// sluice-operator's flags (operator/operator_flags.h).
#include "operator/operator_flags.h"

#include <gtest/gtest.h>

#include "common/config/parse.h"

namespace sluice::op {
namespace operator_flags_test {

TEST(BindAddressTest, ReadsControllerRuntimesForms) {
  struct Row {
    std::string text;
    bool ok;
    std::string host;
    int port;
  };
  for (const Row& r : std::vector<Row>{{":8080", true, "0.0.0.0", 8080},
                                       {"127.0.0.1:18080", true, "127.0.0.1", 18080},
                                       {":0", true, "0.0.0.0", 0},
                                       {"8080", false, "", 0},
                                       {":65536", false, "", 0},
                                       {":80a", false, "", 0},
                                       {"host:", false, "", 0}}) {
    Result<std::pair<std::string, int>> got = BindAddress(r.text, "--metrics-bind-address");
    ASSERT_EQ(got.ok(), r.ok) << r.text;
    if (got.ok()) {
      EXPECT_EQ(got->first, r.host) << r.text;
      EXPECT_EQ(got->second, r.port) << r.text;
    } else {
      EXPECT_EQ(got.status().field(), "--metrics-bind-address") << r.text;
    }
  }
}

TEST(OperatorFlagSpecTest, TheChartsFlagsParse) {
  Result<config::Config> cfg =
      config::Parse(OperatorFlagSpec(),
                    std::vector<std::string>{"--leader-elect=false", "--metrics-bind-address=:8080",
                                             "--health-probe-bind-address=:8081"},
                    config::Environment{});
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  EXPECT_FALSE(cfg->GetBool("leader-elect"));
}

}  // namespace operator_flags_test
}  // namespace sluice::op
