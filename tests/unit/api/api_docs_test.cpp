// docs/api.md is rendered from crds/*.yaml; this fails while the committed file is stale.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "api/crds/crd_reference.h"

namespace sluice::api {
namespace {

namespace fs = std::filesystem;

TEST(ApiDocsTest, ApiReferenceMatchesTheCrds) {
  const char* env = std::getenv("SLUICE_SOURCE_DIR");
  const fs::path root = env ? fs::path(env) : fs::current_path();
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(root / "crds")) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<YAML::Node> crds;
  for (const fs::path& f : files) {
    for (const YAML::Node& doc : YAML::LoadAllFromFile(f.string())) {
      if (doc.IsMap()) crds.push_back(doc);
    }
  }
  ASSERT_EQ(crds.size(), 4u);
  Result<std::string> rendered = RenderApiReference(crds);
  ASSERT_TRUE(rendered.ok()) << rendered.status().ToString();
  std::ifstream in(root / "docs/api.md", std::ios::binary);
  std::ostringstream committed;
  committed << in.rdbuf();
  EXPECT_TRUE(committed.str() == *rendered)
      << "docs/api.md is stale: run build/bin/sluice-crd-docs crds docs/api.md";
  // Every field of every kind is in the reference.
  for (const char* fragment : {"## Policy", "## RolloutPool", "## Dataflow", "## TrainerJob",
                               "### spec.autoscaling", "maxStaleness", "clipHigh"}) {
    EXPECT_NE(rendered->find(fragment), std::string::npos) << fragment;
  }
}

}  // namespace
}  // namespace sluice::api
