// SettingsFromDataflow and LoadDataflowManifest: every example Dataflow maps to the expected
// service settings, and bad values or references are refused naming the CR field.
#include "workers/dataflow/dataflow_settings.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/clock.h"
#include "workers/dataflow/dataflow_core.h"
#include "workers/dataflow/dataset.h"

namespace sluice::dataflow {
namespace {

using nlohmann::json;

constexpr uint64_t kMiB = uint64_t{1} << 20;

std::string Example(const std::string& name) {
  const char* dir = std::getenv("SLUICE_SOURCE_DIR");
  return (dir != nullptr ? std::string(dir) : std::string(".")) + "/examples/" + name;
}

DataflowMounts TestMounts() { return {"/mnt/cm", "/mnt/pvc"}; }

DataflowSettings MapExample(const std::string& file) {
  Result<api::Dataflow> df = LoadDataflowManifestFile(Example(file), "");
  EXPECT_TRUE(df.ok()) << df.status().ToString();
  if (!df.ok()) return {};
  Result<DataflowSettings> s = SettingsFromDataflow(*df, TestMounts());
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? *s : DataflowSettings{};
}

std::vector<std::string> FilterTypes(const DataflowConfig& c) {
  std::vector<std::string> types;
  for (const FilterSpec& f : c.filters) types.push_back(f.type);
  return types;
}

// A small valid Dataflow to vary; `spec_extra` is appended under spec (two-space indent).
std::string Manifest(const std::string& spec_extra, const std::string& name = "df") {
  return "apiVersion: sluice.dev/v1alpha1\nkind: Dataflow\nmetadata:\n  name: " + name +
         "\nspec:\n  workflow:\n    roles:\n      - name: policy\n        policy: p\n" + spec_extra;
}
constexpr char kBuiltin[] = "  dataset:\n    builtin: {}\n";

Result<DataflowSettings> MapYaml(const std::string& yaml) {
  SLUICE_ASSIGN_OR_RETURN(api::Dataflow df, LoadDataflowManifest(yaml, ""));
  return SettingsFromDataflow(df, TestMounts());
}

TEST(DataflowSettingsTest, SinglePolicyGrpoExample) {
  const DataflowSettings s = MapExample("single-policy-grpo.yaml");
  const DataflowConfig& c = s.config;
  EXPECT_EQ(s.name, "arithmetic");
  EXPECT_EQ(c.policies, (std::vector<std::string>{"tiny"}));
  EXPECT_EQ(c.group_size, 8);
  ASSERT_TRUE(s.dataset.builtin.has_value());
  EXPECT_FALSE(s.dataset.file.has_value());
  EXPECT_EQ(s.dataset.builtin->generator, "arithmetic");
  EXPECT_EQ(s.dataset.builtin->count, 20000);
  EXPECT_EQ(s.dataset.builtin->max_operand, 50);
  EXPECT_DOUBLE_EQ(s.dataset.eval_split, 0.02);
  EXPECT_TRUE(s.dataset.shuffle);
  EXPECT_EQ(s.dataset.epochs, 1);
  // No filters: a random model's all-zero groups would all be dropped by dynamic sampling.
  EXPECT_TRUE(FilterTypes(c).empty());
  EXPECT_EQ(c.curator, "accept-all");
  EXPECT_EQ(c.staleness.max_staleness, 2);
  EXPECT_EQ(c.staleness.order, QueueOrder::kEdf);
  EXPECT_EQ(c.staleness.stale_action, StaleAction::kDrop);
  EXPECT_DOUBLE_EQ(c.replay.replay_ratio, 0.0);
  EXPECT_EQ(c.capacity_groups, 65536 / 8);  // Default capacity, in trajectories.
  EXPECT_EQ(c.groups_per_batch, 16);
  EXPECT_TRUE(s.groups_per_batch_by_policy.empty());
  EXPECT_FALSE(c.version_barrier);
  EXPECT_EQ(c.eval.every_versions, 50);
  EXPECT_EQ(c.eval.k, 1);
  EXPECT_EQ(c.eval.samples, 200);
  EXPECT_FALSE(c.eval.at_start);
  EXPECT_EQ(c.sampling, (json{{"temperature", 1.0},
                              {"topP", 1.0},
                              {"topK", 0},
                              {"maxNewTokens", 8},
                              {"stop", json::array({"\n"})}}));
  EXPECT_EQ(c.workflow["type"], "single-turn");
  EXPECT_EQ(c.workflow["roles"], json::parse(R"([{"name": "policy", "policy": "tiny"}])"));
  EXPECT_EQ(c.workflow["reward"]["type"], "exact-match");
  ASSERT_TRUE(s.storage_bytes.has_value());
  EXPECT_EQ(*s.storage_bytes, 256 * kMiB);
  EXPECT_EQ(s.segment_bytes, 16 * kMiB);
  EXPECT_EQ(s.snapshot_bytes, 32 * kMiB);
}

TEST(DataflowSettingsTest, GpuClusterExampleUsesPvcGresoAndReplay) {
  const DataflowSettings s = MapExample("gpu-cluster-qwen3.yaml");
  const DataflowConfig& c = s.config;
  EXPECT_EQ(c.policies, (std::vector<std::string>{"qwen3"}));
  ASSERT_TRUE(s.dataset.file.has_value());
  EXPECT_EQ(*s.dataset.file, "/mnt/pvc/math/train.jsonl");
  EXPECT_FALSE(s.dataset.builtin.has_value());
  EXPECT_EQ(s.dataset.fields.prompt, "problem");
  EXPECT_EQ(s.dataset.fields.answer, "answer");
  EXPECT_EQ(s.dataset.fields.id, "id");
  EXPECT_EQ(s.dataset.shuffle_seed, 1234u);
  EXPECT_EQ(s.dataset.epochs, 2);
  EXPECT_EQ(c.shuffle_seed, 1234u);
  EXPECT_EQ(c.epochs, 2);
  EXPECT_DOUBLE_EQ(s.dataset.eval_split, 0.01);
  EXPECT_EQ(FilterTypes(c), (std::vector<std::string>{"dynamic-sampling", "greso"}));
  EXPECT_EQ(c.curator, "greso");
  EXPECT_EQ(c.curator_options, (json{{"minSubmitEasy", 0.05}, {"minSubmitHard", 0.3}}));
  EXPECT_EQ(c.staleness.max_staleness, 8);
  EXPECT_DOUBLE_EQ(c.replay.replay_ratio, 0.3);
  EXPECT_EQ(c.capacity_groups, 10000 / 8);
  EXPECT_EQ(c.groups_per_batch, 32);
  EXPECT_EQ(s.minibatches, 4);
  EXPECT_EQ(c.eval.every_versions, 25);
  EXPECT_EQ(c.eval.k, 4);
  EXPECT_EQ(c.eval.samples, 500);
  EXPECT_TRUE(c.eval.at_start);
  EXPECT_EQ(c.sampling["maxNewTokens"], 8192);
  EXPECT_FALSE(c.sampling.contains("groupSize"));
  EXPECT_EQ(c.workflow["systemPrompt"], "Solve the problem. Put the final answer in \\boxed{}.");
  EXPECT_EQ(c.workflow["reward"]["type"], "math");
  EXPECT_EQ(s.segment_bytes, 64 * kMiB);  // 50Gi: the 64Mi caps.
  EXPECT_EQ(s.snapshot_bytes, 64 * kMiB);
}

TEST(DataflowSettingsTest, SolveAndVerifyExampleHasTwoPoliciesAndPerPolicyBatches) {
  const DataflowSettings s = MapExample("solve-and-verify.yaml");
  const DataflowConfig& c = s.config;
  EXPECT_EQ(c.policies, (std::vector<std::string>{"solver", "verifier"}));
  EXPECT_EQ(c.group_size, 4);
  EXPECT_TRUE(c.version_barrier);
  EXPECT_EQ(c.groups_per_batch, 16);
  EXPECT_EQ(s.groups_per_batch_by_policy, (std::map<std::string, int64_t>{{"verifier", 8}}));
  EXPECT_EQ(c.eval.every_versions, 0);  // No spec.evaluation.
  EXPECT_EQ(c.capacity_groups, 65536 / 4);
  EXPECT_EQ(c.staleness.max_staleness, 4);
  EXPECT_EQ(FilterTypes(c), (std::vector<std::string>{"dynamic-sampling"}));
  EXPECT_EQ(c.workflow["type"], "solve-and-verify");
  EXPECT_EQ(c.workflow["maxTurns"], 2);
  EXPECT_EQ(s.dataset.builtin->count, 50000);
  // Defaulted storage (1Gi): 64Mi segments and snapshot threshold.
  EXPECT_EQ(s.storage_bytes, std::optional<uint64_t>(1024 * kMiB));
  EXPECT_EQ(s.segment_bytes, 64 * kMiB);
}

TEST(DataflowSettingsTest, ToolUseExampleKeepsFilterOrderAndOptions) {
  const DataflowSettings s = MapExample("tool-use-agent.yaml");
  const DataflowConfig& c = s.config;
  EXPECT_EQ(c.policies, (std::vector<std::string>{"calc-agent"}));
  ASSERT_EQ(FilterTypes(c), (std::vector<std::string>{"dynamic-sampling", "length"}));
  EXPECT_EQ(c.filters[0].options, json::object());
  EXPECT_EQ(c.filters[1].options, (json{{"maxTokens", 400}}));
  EXPECT_EQ(c.curator, "accept-all");
  EXPECT_EQ(c.staleness.max_staleness, 2);
  EXPECT_EQ(c.staleness.order, QueueOrder::kEdf);
  EXPECT_EQ(c.groups_per_batch, 8);
  EXPECT_EQ(s.dataset.builtin->generator, "arithmetic-chain");
  EXPECT_EQ(c.workflow["environment"], (json{{"builtin", "calculator"}, {"timeoutSeconds", 5}}));
  EXPECT_EQ(c.workflow["maxTurns"], 6);
}

// The settings of every builtin-dataset example are accepted by the dataset and the core.
TEST(DataflowSettingsTest, BuiltinExamplesCreateACore) {
  for (const char* file :
       {"single-policy-grpo.yaml", "solve-and-verify.yaml", "tool-use-agent.yaml"}) {
    SCOPED_TRACE(file);
    const DataflowSettings s = MapExample(file);
    Result<Dataset> dataset = Dataset::Load(s.dataset);
    ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
    FakeClock clock;
    Result<std::unique_ptr<DataflowCore>> core =
        DataflowCore::Create(s.config, &*dataset, &clock, 1);
    EXPECT_TRUE(core.ok()) << core.status().ToString();
  }
}

TEST(DataflowSettingsTest, ConfigMapDatasetIsAFileUnderTheMountDir) {
  Result<DataflowSettings> s =
      MapYaml(Manifest("  dataset:\n    configMap: {name: prompts, key: train.jsonl}\n"));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->dataset.file, std::optional<std::string>("/mnt/cm/train.jsonl"));
}

void ExpectFieldError(const Result<DataflowSettings>& s, const std::string& field) {
  ASSERT_FALSE(s.ok()) << "expected an error at " << field;
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << s.status().ToString();
  EXPECT_EQ(s.status().field(), field) << s.status().ToString();
}

TEST(DataflowSettingsTest, BadFilterOptionsNameTheField) {
  ExpectFieldError(MapYaml(Manifest(std::string(kBuiltin) +
                                    "  buffer:\n    filters:\n      - type: dynamic-sampling\n"
                                    "      - type: length\n        options: {maxTokens: many}\n")),
                   "spec.buffer.filters[1].options.maxTokens");
  ExpectFieldError(
      MapYaml(Manifest(std::string(kBuiltin) + "  buffer:\n    filters:\n      - type: length\n"
                                               "        options: {bogus: 1}\n")),
      "spec.buffer.filters[0].options.bogus");
  ExpectFieldError(
      MapYaml(Manifest(std::string(kBuiltin) + "  buffer:\n    filters:\n      - type: greso\n"
                                               "        options: {minSubmitEasy: 2}\n")),
      "spec.buffer.filters[0].options.minSubmitEasy");
}

TEST(DataflowSettingsTest, BadDatasetPathsNameTheField) {
  ExpectFieldError(MapYaml(Manifest("  dataset:\n    pvc: {claimName: data}\n")),
                   "spec.dataset.pvc.path");  // Default path "/" is the claim's root.
  ExpectFieldError(
      MapYaml(Manifest("  dataset:\n    pvc: {claimName: data, path: /a/../../etc/passwd}\n")),
      "spec.dataset.pvc.path");
  ExpectFieldError(MapYaml(Manifest("  dataset:\n    configMap: {name: prompts, key: ..}\n")),
                   "spec.dataset.configMap.key");
}

TEST(DataflowSettingsTest, EvaluationSplitTrainOrEval) {
  Result<DataflowSettings> train = MapYaml(Manifest(
      std::string(kBuiltin) + "  evaluation: {split: train, everyVersions: 5, samples: 64}\n"));
  ASSERT_TRUE(train.ok()) << train.status().ToString();
  EXPECT_TRUE(train->config.eval.from_train);
  EXPECT_EQ(train->config.eval.samples, 64);
}

// Typed objects that skipped validation: the mapping checks references itself.
TEST(DataflowSettingsTest, UnvalidatedObjectsAreChecked) {
  Result<api::Dataflow> valid = LoadDataflowManifest(Manifest(kBuiltin), "");
  ASSERT_TRUE(valid.ok()) << valid.status().ToString();

  api::Dataflow df = *valid;
  api::DataflowSpecBatchPerPolicyItem ghost;
  ghost.groups_per_batch = 4;
  ghost.policy = "ghost";
  df.spec.batch.per_policy = std::vector<api::DataflowSpecBatchPerPolicyItem>{ghost};
  ExpectFieldError(SettingsFromDataflow(df, TestMounts()), "spec.batch.perPolicy[0].policy");

  df = *valid;
  df.spec.dataset.builtin.reset();
  ExpectFieldError(SettingsFromDataflow(df, TestMounts()), "spec.dataset");

  df = *valid;
  df.spec.workflow.roles.clear();
  ExpectFieldError(SettingsFromDataflow(df, TestMounts()), "spec.workflow.roles");

  df = *valid;
  df.spec.buffer.order = "lifo";
  ExpectFieldError(SettingsFromDataflow(df, TestMounts()), "spec.buffer.order");

  df = *valid;
  df.spec.buffer.filters = std::vector<api::DataflowSpecBufferFilter>(1);
  (*df.spec.buffer.filters)[0].type = "sometimes";
  ExpectFieldError(SettingsFromDataflow(df, TestMounts()), "spec.buffer.filters[0].type");

  df = *valid;
  df.spec.buffer.replay_ratio = 0.99;
  ExpectFieldError(SettingsFromDataflow(df, TestMounts()), "spec.buffer.replayRatio");

  df = *valid;
  df.spec.sampling.group_size = 1;
  df.spec.buffer.filters = std::vector<api::DataflowSpecBufferFilter>(1);
  (*df.spec.buffer.filters)[0].type = "dynamic-sampling";
  ExpectFieldError(SettingsFromDataflow(df, TestMounts()), "spec.sampling.groupSize");
}

TEST(DataflowSettingsTest, SharedPolicyAcrossRolesIsListedOnce) {
  Result<api::Dataflow> df = LoadDataflowManifest(Manifest(kBuiltin), "");
  ASSERT_TRUE(df.ok());
  df->spec.workflow.roles = {{.name = "solver", .policy = "p"},
                             {.name = "verifier", .policy = "p"}};
  Result<DataflowSettings> s = SettingsFromDataflow(*df, TestMounts());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->config.policies, (std::vector<std::string>{"p"}));
}

TEST(DataflowSettingsTest, ManifestValidationListsEveryFieldError) {
  Result<api::Dataflow> df = LoadDataflowManifest(
      Manifest(std::string(kBuiltin) + "  sampling: {groupSize: 0}\n  buffer: {order: lifo}\n"),
      "");
  ASSERT_FALSE(df.ok());
  EXPECT_EQ(df.status().code(), StatusCode::kUnprocessable);
  EXPECT_NE(df.status().message().find("spec.sampling.groupSize"), std::string::npos)
      << df.status().message();
  EXPECT_NE(df.status().message().find("spec.buffer.order"), std::string::npos)
      << df.status().message();

  // A reference the CRD's CEL rules check.
  df = LoadDataflowManifest(
      Manifest(std::string(kBuiltin) + "  batch:\n    perPolicy: [{policy: ghost}]\n"), "");
  ASSERT_FALSE(df.ok());
  EXPECT_NE(df.status().message().find("spec.batch.perPolicy"), std::string::npos)
      << df.status().message();
}

TEST(DataflowSettingsTest, ManifestPicksTheDataflowByName) {
  const std::string two = Manifest(kBuiltin, "one") + "---\n" +
                          "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\n" +
                          Manifest(std::string(kBuiltin) + "  sampling: {groupSize: 3}\n", "two");
  Result<api::Dataflow> df = LoadDataflowManifest(two, "");
  ASSERT_FALSE(df.ok());
  EXPECT_NE(df.status().message().find("one, two"), std::string::npos) << df.status().message();
  df = LoadDataflowManifest(two, "two");
  ASSERT_TRUE(df.ok()) << df.status().ToString();
  EXPECT_EQ(df->metadata.name, "two");
  EXPECT_EQ(df->spec.sampling.group_size, 3);
  EXPECT_FALSE(LoadDataflowManifest(two, "three").ok());
  EXPECT_FALSE(LoadDataflowManifest("apiVersion: v1\nkind: ConfigMap\n", "").ok());
  // The examples hold other kinds too; the single Dataflow is picked.
  EXPECT_TRUE(LoadDataflowManifestFile(Example("solve-and-verify.yaml"), "math-mas").ok());
  EXPECT_EQ(LoadDataflowManifestFile("/nonexistent.yaml", "").status().code(),
            StatusCode::kNotFound);
}

TEST(DataflowSettingsTest, QuantityBytes) {
  EXPECT_EQ(QuantityBytes("256Mi"), std::optional<uint64_t>(256 * kMiB));
  EXPECT_EQ(QuantityBytes("50Gi"), std::optional<uint64_t>(uint64_t{50} << 30));
  EXPECT_EQ(QuantityBytes("1G"), std::optional<uint64_t>(1000000000));
  EXPECT_EQ(QuantityBytes("1.5Ki"), std::optional<uint64_t>(1536));
  EXPECT_EQ(QuantityBytes("1024"), std::optional<uint64_t>(1024));
  EXPECT_EQ(QuantityBytes("5m"), std::nullopt);
  EXPECT_EQ(QuantityBytes("Gi"), std::nullopt);
  EXPECT_EQ(QuantityBytes("1..2Gi"), std::nullopt);
  EXPECT_EQ(QuantityBytes("1e3"), std::nullopt);
}

}  // namespace
}  // namespace sluice::dataflow
