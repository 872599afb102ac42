// The chart's files that are copies or claims about the rest of the repository: its crds/ are the
// top-level crds/ byte for byte (scripts/sync-chart-crds.sh copies them), and its Grafana
// dashboard queries only series some Sluice binary exports (names read from the sources, as for
// the examples' autoscaling queries). No helm needed.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "tests/helm/helm_chart.h"
#include "tests/unit/common/example_queries.h"

namespace sluice::helm_test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<std::string> YamlFiles(const fs::path& dir) {
  std::vector<std::string> names;
  if (!fs::is_directory(dir)) return names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".yaml") names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(ChartCrdsTest, ChartCrdsAreTheTopLevelCrds) {
  const fs::path top = RepoDir() / "crds";
  const fs::path chart = ChartDir() / "crds";
  const std::vector<std::string> names = YamlFiles(top);
  ASSERT_EQ(names.size(), 4u) << top;
  EXPECT_EQ(YamlFiles(chart), names) << "run scripts/sync-chart-crds.sh";
  for (const std::string& name : names) {
    EXPECT_TRUE(ReadText(chart / name) == ReadText(top / name))
        << "helm/sluice/crds/" << name << " differs from crds/" << name
        << ": run scripts/sync-chart-crds.sh";
  }
}

// Every panel of the dashboard, rows' nested panels included.
void CollectPanels(const json& panels, std::vector<json>& out) {
  if (!panels.is_array()) return;
  for (const json& p : panels) {
    out.push_back(p);
    if (p.contains("panels")) CollectPanels(p["panels"], out);
  }
}

TEST(ChartDashboardTest, PanelsQueryOnlyExportedSeries) {
  const json board =
      json::parse(ReadText(ChartDir() / "dashboards" / "sluice.json"), nullptr, false);
  ASSERT_TRUE(board.is_object()) << "helm/sluice/dashboards/sluice.json is not a JSON object";
  const std::map<std::string, std::string> registered = test_support::RegisteredMetricNames();
  ASSERT_GT(registered.size(), 50u);

  std::vector<json> panels;
  CollectPanels(board.value("panels", json::array()), panels);
  std::set<std::string> titles, used;
  for (const json& panel : panels) {
    const std::string title = panel.value("title", "");
    titles.insert(title);
    if (panel.value("type", "") == "row") continue;
    const json targets = panel.value("targets", json::array());
    EXPECT_FALSE(targets.empty()) << title;
    for (const json& target : targets) {
      const std::string expr = target.value("expr", "");
      EXPECT_FALSE(expr.empty()) << title;
      for (const std::string& name : test_support::MetricNamesInQuery(expr)) {
        used.insert(name);
        EXPECT_TRUE(test_support::IsExportedName(name, registered))
            << "panel \"" << title << "\" queries " << name << ", which no Sluice binary exports";
      }
    }
  }
  // The template variable's query too.
  for (const json& variable : board.value("/templating/list"_json_pointer, json::array())) {
    for (const std::string& name :
         test_support::MetricNamesInQuery(variable.value("definition", ""))) {
      EXPECT_TRUE(test_support::IsExportedName(name, registered)) << name;
    }
  }
  // What the dashboard is for (issue 26).
  for (const char* title : {"Rollout throughput", "Training throughput", "Reward", "Staleness",
                            "Replicas per region", "Autoscaler decisions", "Trainer data wait"}) {
    EXPECT_TRUE(titles.count(title)) << "no panel \"" << title << "\"";
  }
  for (const char* series :
       {"sluice_rollout_generated_tokens_total", "sluice_trainer_reward_mean",
        "sluice_trainer_staleness_mean", "sluice_rolloutpool_region_replicas",
        "sluice_autoscaler_desired_replicas", "sluice_trainer_data_wait_seconds_total"}) {
    EXPECT_TRUE(used.count(series)) << series;
  }
}

}  // namespace
}  // namespace sluice::helm_test
