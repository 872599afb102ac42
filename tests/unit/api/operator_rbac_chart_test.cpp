// The chart's RBAC template is generated from the operator's RBAC table; this fails while the
// committed helm/sluice/templates/rbac.yaml is not the generator's current output. (What helm
// renders from it is checked in tests/helm/chart_rbac_test.cpp.)
#include "api/operator_rbac_chart.h"

#include <gtest/gtest.h>

#include <string>

#include "api/operator_rbac.h"
#include "tests/unit/api/test_files.h"

namespace sluice::api {
namespace {

TEST(ChartRbacTest, CommittedTemplateIsCurrent) {
  const std::string committed =
      testing_files::ReadFile(testing_files::SourceDir() / kChartRbacTemplatePath);
  EXPECT_TRUE(committed == RenderChartRbacTemplate())
      << kChartRbacTemplatePath
      << " is stale: run build/bin/sluice-chart-rbac from the repository root (after `make`)";
}

TEST(ChartRbacTest, EveryRuleOfTheTableIsInTheTemplate) {
  const std::string text = RenderChartRbacTemplate();
  for (const OperatorRbacRule& r : OperatorRbacRules()) {
    EXPECT_NE(text.find("  # " + r.why + "\n"), std::string::npos) << r.why;
    for (const std::string& resource : r.resources) {
      EXPECT_NE(text.find("\"" + resource + "\""), std::string::npos) << resource;
    }
  }
  // Helm template actions open and close in pairs.
  size_t opened = 0, closed = 0;
  for (const char* opener : {"{{- if ", "{{- range ", "{{- with ", "{{ if "}) {
    for (size_t at = text.find(opener); at != std::string::npos; at = text.find(opener, at + 1)) {
      ++opened;
    }
  }
  for (size_t at = text.find("{{- end }}"); at != std::string::npos;
       at = text.find("{{- end }}", at + 1)) {
    ++closed;
  }
  for (size_t at = text.find("{{ end }}"); at != std::string::npos;
       at = text.find("{{ end }}", at + 1)) {
    ++closed;
  }
  EXPECT_EQ(opened, closed);
}

}  // namespace
}  // namespace sluice::api
