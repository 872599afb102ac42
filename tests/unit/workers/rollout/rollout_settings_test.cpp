#include "workers/rollout/rollout_settings.h"

#include <gtest/gtest.h>

namespace sluice::rollout {
namespace {

constexpr char kConfig[] = R"({
  "pool": {"metadata": {"name": "gen"}},
  "policies": [
    {"metadata": {"name": "solver"},
     "spec": {"model": {"dtype": "float32", "source": {"builtin": {"layers": 1, "hiddenSize": 32,
              "heads": 2, "kvHeads": 2, "intermediateSize": 64, "maxSequenceLength": 128}}}}},
    {"metadata": {"name": "judge"},
     "spec": {"model": {"source": {"path": "/models/qwen"}},
              "tokenizer": {"chatTemplate": "chatml"}, "weightSync": {"keepVersions": 4, "chunkSizeMiB": 8}}}
  ]})";

TEST(RolloutSettingsTest, ResolvesEveryHostedPolicy) {
  Result<RolloutSettings> s = ParseRolloutConfig(kConfig, {"judge", "solver"});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->pool, "gen");
  ASSERT_EQ(s->policies.size(), 2u);
  const HostedPolicy& judge = s->policies[0];
  EXPECT_EQ(judge.name, "judge");
  EXPECT_EQ(judge.model.directory, "/models/qwen");
  EXPECT_EQ(judge.tokenizer, "model");
  EXPECT_EQ(judge.tokenizer_file, "/models/qwen/tokenizer.json");
  EXPECT_EQ(judge.chat_template, "chatml");
  EXPECT_EQ(judge.keep_versions, 4);
  EXPECT_EQ(judge.chunk_bytes, uint64_t{8} << 20);
  const HostedPolicy& solver = s->policies[1];
  EXPECT_EQ(solver.tokenizer, "char");
  EXPECT_EQ(solver.chat_template, "plain");
  EXPECT_EQ(solver.dtype, "float32");
  EXPECT_EQ(solver.chunk_bytes, uint64_t{64} << 20);  // The CRD's default, 64 MiB.
  EXPECT_EQ(solver.model.builtin_uri.rfind("builtin:tiny?layers=1&d=32", 0), 0u)
      << solver.model.builtin_uri;
}

TEST(RolloutSettingsTest, ErrorsNameTheField) {
  Result<RolloutSettings> missing = ParseRolloutConfig(kConfig, {"critic"});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().field(), "policies");
  EXPECT_NE(missing.status().message().find("critic"), std::string::npos);

  Result<RolloutSettings> bad = ParseRolloutConfig(
      R"({"policies": [{"metadata": {"name": "a"}, "spec": {"model": {"dtype": "int8",
          "source": {"path": "/m"}}}}]})",
      {"a"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().field().find("policies[0].spec.model.dtype"), std::string::npos)
      << bad.status().ToString();

  EXPECT_EQ(ParseRolloutConfig("[]", {"a"}).status().field(), "rollout.json");
  EXPECT_EQ(ParseRolloutConfig("{}", {"a"}).status().field(), "policies");
  Result<RolloutSettings> none = ParseRolloutConfig(
      R"({"policies": [{"metadata": {"name": "a"}, "spec": {"model": {"source": {"path": "/m"}},
          "tokenizer": {"chatTemplate": "none"}}}]})",
      {"a"});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().field(), "policies[0].spec.tokenizer.chatTemplate");
}

TEST(RolloutSettingsTest, PoliciesOnClaimsResolveToTheirOwnMounts) {
  // Two Policies on two claims (and the same path in each): each under its own directory.
  Result<RolloutSettings> s = ParseRolloutConfig(
      R"({"policies": [
        {"metadata": {"name": "actor"},
         "spec": {"model": {"source": {"pvc": {"claimName": "actor-weights", "path": "/m"}}}}},
        {"metadata": {"name": "judge"},
         "spec": {"model": {"source": {"pvc": {"claimName": "judge-weights", "path": "/m"}}}}}]})",
      {"actor", "judge"});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->policies.size(), 2u);
  EXPECT_EQ(s->policies[0].model.directory, "/var/lib/sluice/model/actor/m");
  EXPECT_EQ(s->policies[0].tokenizer_file, "/var/lib/sluice/model/actor/m/tokenizer.json");
  EXPECT_EQ(s->policies[1].model.directory, "/var/lib/sluice/model/judge/m");
}

TEST(RolloutSettingsTest, UriModelsLoadFromTheirCacheEntry) {
  Result<RolloutSettings> s = ParseRolloutConfig(
      R"({"policies": [
        {"metadata": {"name": "actor"},
         "spec": {"model": {"source": {"uri": "https://models.example.com/qwen3"}},
                  "tokenizer": {"path": "tok/tokenizer.json"}}}]})",
      {"actor"}, "/cache");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const HostedPolicy& p = s->policies[0];
  EXPECT_EQ(p.model.uri, "https://models.example.com/qwen3");
  EXPECT_EQ(p.model.directory, model::ModelCacheDir("/cache", "https://models.example.com/qwen3"));
  EXPECT_EQ(p.tokenizer, "model");
  EXPECT_EQ(p.tokenizer_file, p.model.directory + "/tok/tokenizer.json");
}

}  // namespace
}  // namespace sluice::rollout
