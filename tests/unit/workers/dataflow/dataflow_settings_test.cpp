// SettingsFromDataflow and LoadDataflowManifest: every example Dataflow maps to the expected
// service settings, and bad values or references are refused naming the CR field.
#include "workers/dataflow/settings/dataflow_settings.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "workers/dataflow/algorithms/filters.h"
#include "workers/dataflow/client/dataset.h"
#include "workers/dataflow/dataflow_core.h"

namespace sluice::dataflow {
namespace {

using nlohmann::json;

constexpr uint64_t kMiB = uint64_t{1} << 20;

std::string SourceFile(const std::string& path) {
  const char* dir = std::getenv("SLUICE_SOURCE_DIR");
  return (dir != nullptr ? std::string(dir) : std::string(".")) + "/" + path;
}
std::string Example(const std::string& name) { return SourceFile("examples/" + name); }

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

TEST(DataflowSettingsTest, SolveAndVerifyExampleHasTwoPoliciesABarrierAndEvaluation) {
  const DataflowSettings s = MapExample("solve-and-verify.yaml");
  const DataflowConfig& c = s.config;
  EXPECT_EQ(c.policies, (std::vector<std::string>{"solver", "verifier"}));
  EXPECT_EQ(c.group_size, 8);
  EXPECT_TRUE(c.version_barrier);
  EXPECT_EQ(c.groups_per_batch, 16);
  // Every episode has a verifier turn: both policies take batches of the same size.
  EXPECT_TRUE(s.groups_per_batch_by_policy.empty());
  EXPECT_EQ(c.eval.every_versions, 50);
  EXPECT_EQ(c.staleness.max_staleness, 2);
  EXPECT_TRUE(c.filters.empty());  // dynamic-sampling starved the verifier (all-equal groups).
  EXPECT_EQ(c.workflow["type"], "solve-and-verify");
  EXPECT_EQ(c.workflow["maxTurns"], 1);
  EXPECT_EQ(c.workflow["reward"]["type"], "digit-match");
  EXPECT_EQ(s.dataset.builtin->generator, "reverse");
  EXPECT_EQ(s.dataset.builtin->count, 20000);
  EXPECT_EQ(s.dataset.builtin->prompt_style, "equation");
  EXPECT_EQ(s.storage_bytes, std::optional<uint64_t>(256 * kMiB));
}

TEST(DataflowSettingsTest, ToolUseExampleIsAShortCalculatorEpisodeWithEvaluation) {
  const DataflowSettings s = MapExample("tool-use-agent.yaml");
  const DataflowConfig& c = s.config;
  EXPECT_EQ(c.policies, (std::vector<std::string>{"calc-agent"}));
  EXPECT_TRUE(c.filters.empty());  // dynamic-sampling starved the trainer of a fresh model.
  EXPECT_EQ(c.curator, "accept-all");
  EXPECT_EQ(c.staleness.max_staleness, 2);
  EXPECT_EQ(c.groups_per_batch, 16);
  EXPECT_EQ(s.dataset.builtin->generator, "arithmetic-chain");
  EXPECT_EQ(s.dataset.builtin->prompt_style, "equation");
  EXPECT_EQ(c.workflow["environment"], (json{{"builtin", "calculator"}, {"timeoutSeconds", 5}}));
  EXPECT_EQ(c.workflow["maxTurns"], 2);
  EXPECT_EQ(c.workflow["reward"]["type"], "digit-match");
  EXPECT_EQ(c.eval.every_versions, 50);
  EXPECT_EQ(c.eval.samples, 400);
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

// The buffer knobs that once were flag-only (--down-weight-decay, --replay-*, --advantage,
// --curator filter-solved) take their flags' defaults when the manifest leaves them out.
TEST(DataflowSettingsTest, BufferKnobsDefaultLikeTheirFlags) {
  Result<DataflowSettings> s = MapYaml(Manifest(kBuiltin));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const DataflowConfig& c = s->config;
  const DataflowConfig flags{};  // The core's defaults, which are the flags' defaults.
  EXPECT_DOUBLE_EQ(c.staleness.down_weight_decay, flags.staleness.down_weight_decay);
  EXPECT_EQ(c.replay.selector, ReplaySelector::kLatest);
  EXPECT_EQ(c.replay.capacity, flags.replay.capacity);
  EXPECT_DOUBLE_EQ(c.replay.alpha, flags.replay.alpha);
  EXPECT_DOUBLE_EQ(c.replay.epsilon, flags.replay.epsilon);
  EXPECT_EQ(c.group_stats.advantage, AdvantageMode::kNone);
  EXPECT_EQ(c.curator, "accept-all");
}

TEST(DataflowSettingsTest, DownWeightDecayMapsToStaleness) {
  Result<DataflowSettings> s = MapYaml(Manifest(
      std::string(kBuiltin) + "  buffer: {staleAction: down-weight, downWeightDecay: 0.25}\n"));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->config.staleness.stale_action, StaleAction::kDownWeight);
  EXPECT_DOUBLE_EQ(s->config.staleness.down_weight_decay, 0.25);
}

TEST(DataflowSettingsTest, ReplayMapsToReplayOptions) {
  Result<DataflowSettings> s = MapYaml(
      Manifest(std::string(kBuiltin) +
               "  buffer:\n    replayRatio: 0.25\n"
               "    replay: {selector: prioritized, capacity: 64, alpha: 0.5, epsilon: 0.001}\n"));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const ReplayOptions& r = s->config.replay;
  EXPECT_DOUBLE_EQ(r.replay_ratio, 0.25);
  EXPECT_EQ(r.selector, ReplaySelector::kPrioritized);
  EXPECT_EQ(r.capacity, 64U);
  EXPECT_DOUBLE_EQ(r.alpha, 0.5);
  EXPECT_DOUBLE_EQ(r.epsilon, 0.001);
}

TEST(DataflowSettingsTest, AdvantageMapsToGroupStats) {
  const std::vector<std::pair<std::string, AdvantageMode>> cases = {
      {"none", AdvantageMode::kNone},
      {"grpo", AdvantageMode::kGrpo},
      {"mean-only", AdvantageMode::kMeanOnly}};
  for (const auto& [name, mode] : cases) {
    SCOPED_TRACE(name);
    Result<DataflowSettings> s =
        MapYaml(Manifest(std::string(kBuiltin) + "  buffer: {advantage: " + name + "}\n"));
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ(s->config.group_stats.advantage, mode);
  }
}

TEST(DataflowSettingsTest, TruncatedFilterIsAGroupFilter) {
  Result<DataflowSettings> s =
      MapYaml(Manifest(std::string(kBuiltin) + "  buffer:\n    filters:\n      - type: truncated\n"
                                               "        options: {scope: group}\n"));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(FilterTypes(s->config), (std::vector<std::string>{"truncated"}));
  EXPECT_EQ(s->config.filters[0].options, (json{{"scope", "group"}}));
  EXPECT_EQ(s->config.curator, "accept-all");
  Result<FilterChain> chain = FilterChain::Create(s->config.filters);
  ASSERT_TRUE(chain.ok()) << chain.status().ToString();
  EXPECT_EQ(chain->size(), 1U);

  ExpectFieldError(
      MapYaml(Manifest(std::string(kBuiltin) + "  buffer:\n    filters:\n      - type: truncated\n"
                                               "        options: {scope: batch}\n")),
      "spec.buffer.filters[0].options.scope");
}

// filter-solved is expressed like greso: a filter entry that selects the prompt curator.
TEST(DataflowSettingsTest, FilterSolvedEntrySelectsTheCurator) {
  Result<DataflowSettings> s = MapYaml(Manifest(
      std::string(kBuiltin) +
      "  buffer:\n    filters:\n      - type: dynamic-sampling\n      - type: filter-solved\n"
      "        options: {threshold: 0.8, minAttempts: 2}\n"));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const DataflowConfig& c = s->config;
  EXPECT_EQ(FilterTypes(c), (std::vector<std::string>{"dynamic-sampling", "filter-solved"}));
  EXPECT_EQ(c.curator, "filter-solved");
  EXPECT_EQ(c.curator_options, (json{{"threshold", 0.8}, {"minAttempts", 2}}));
  // The core accepts it: the chain skips the curator entry.
  Result<Dataset> dataset = Dataset::Load(s->dataset);
  ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
  FakeClock clock;
  Result<std::unique_ptr<DataflowCore>> core = DataflowCore::Create(c, &*dataset, &clock, 1);
  EXPECT_TRUE(core.ok()) << core.status().ToString();

  ExpectFieldError(MapYaml(Manifest(std::string(kBuiltin) +
                                    "  buffer:\n    filters:\n      - type: filter-solved\n"
                                    "        options: {decay: 1.0}\n")),
                   "spec.buffer.filters[0].options.decay");
}

TEST(DataflowSettingsTest, AtMostOneCuratorEntry) {
  const std::string both =
      Manifest(std::string(kBuiltin) +
               "  buffer:\n    filters:\n      - type: greso\n      - type: filter-solved\n");
  // The CRD's rule refuses the manifest...
  Result<api::Dataflow> df = LoadDataflowManifest(both, "");
  ASSERT_FALSE(df.ok());
  EXPECT_EQ(df.status().code(), StatusCode::kUnprocessable);
  EXPECT_NE(df.status().message().find("spec.buffer.filters"), std::string::npos)
      << df.status().message();
  // ...and the mapping refuses a typed object that skipped validation.
  df = LoadDataflowManifest(Manifest(kBuiltin), "");
  ASSERT_TRUE(df.ok()) << df.status().ToString();
  df->spec.buffer.filters = std::vector<api::DataflowSpecBufferFilter>(2);
  (*df->spec.buffer.filters)[0].type = "greso";
  (*df->spec.buffer.filters)[1].type = "filter-solved";
  ExpectFieldError(SettingsFromDataflow(*df, TestMounts()), "spec.buffer.filters[1].type");
}

TEST(DataflowSettingsTest, ReplayAndCurationManifestMapsEveryBufferKnob) {
  Result<api::Dataflow> df = LoadDataflowManifestFile(
      SourceFile("tests/data/manifests/valid/dataflow-replay-and-curation.yaml"), "");
  ASSERT_TRUE(df.ok()) << df.status().ToString();
  Result<DataflowSettings> s = SettingsFromDataflow(*df, TestMounts());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const DataflowConfig& c = s->config;
  EXPECT_EQ(c.staleness.max_staleness, 2);
  EXPECT_EQ(c.staleness.stale_action, StaleAction::kDownWeight);
  EXPECT_DOUBLE_EQ(c.staleness.down_weight_decay, 0.8);
  EXPECT_DOUBLE_EQ(c.replay.replay_ratio, 0.25);
  EXPECT_EQ(c.replay.selector, ReplaySelector::kPrioritized);
  EXPECT_EQ(c.replay.capacity, 256U);
  EXPECT_DOUBLE_EQ(c.replay.alpha, 0.7);
  EXPECT_DOUBLE_EQ(c.replay.epsilon, 1e-4);
  EXPECT_EQ(c.group_stats.advantage, AdvantageMode::kGrpo);
  EXPECT_EQ(FilterTypes(c), (std::vector<std::string>{"truncated", "length", "filter-solved"}));
  EXPECT_EQ(c.curator, "filter-solved");
  EXPECT_EQ(c.curator_options, (json{{"threshold", 0.9}, {"decay", 0.8}, {"minAttempts", 2}}));
  Result<Dataset> dataset = Dataset::Load(s->dataset);
  ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
  FakeClock clock;
  Result<std::unique_ptr<DataflowCore>> core = DataflowCore::Create(c, &*dataset, &clock, 1);
  EXPECT_TRUE(core.ok()) << core.status().ToString();
}

// Values outside the CRD's bounds and enums are refused when the manifest is loaded.
TEST(DataflowSettingsTest, ManifestRefusesBadBufferKnobs) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"downWeightDecay: 0", "spec.buffer.downWeightDecay"},
      {"downWeightDecay: 1.5", "spec.buffer.downWeightDecay"},
      {"replay: {selector: random}", "spec.buffer.replay.selector"},
      {"replay: {capacity: 0}", "spec.buffer.replay.capacity"},
      {"replay: {alpha: -1}", "spec.buffer.replay.alpha"},
      {"replay: {epsilon: 0}", "spec.buffer.replay.epsilon"},
      {"advantage: ppo", "spec.buffer.advantage"}};
  for (const auto& [buffer, field] : cases) {
    SCOPED_TRACE(buffer);
    Result<api::Dataflow> df =
        LoadDataflowManifest(Manifest(std::string(kBuiltin) + "  buffer: {" + buffer + "}\n"), "");
    ASSERT_FALSE(df.ok());
    EXPECT_EQ(df.status().code(), StatusCode::kUnprocessable);
    EXPECT_NE(df.status().message().find(field), std::string::npos) << df.status().message();
  }
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
  EXPECT_EQ(train->config.eval.sampling, json::object());  // Unset: eval samples like training.
}

// Only the fields set override spec.sampling; the core merges them into each eval task.
TEST(DataflowSettingsTest, EvaluationSamplingOverridesOnlyTheFieldsSet) {
  Result<DataflowSettings> s =
      MapYaml(Manifest(std::string(kBuiltin) + "  evaluation: {split: train, everyVersions: 5, "
                                               "sampling: {temperature: 0, maxNewTokens: 4}}\n"));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->config.eval.sampling, (json{{"temperature", 0.0}, {"maxNewTokens", 4}}));
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
  df.spec.buffer.down_weight_decay = 0;
  ExpectFieldError(SettingsFromDataflow(df, TestMounts()), "spec.buffer.downWeightDecay");

  df = *valid;
  df.spec.buffer.replay.selector = "random";
  ExpectFieldError(SettingsFromDataflow(df, TestMounts()), "spec.buffer.replay.selector");

  df = *valid;
  df.spec.buffer.replay.capacity = 0;
  ExpectFieldError(SettingsFromDataflow(df, TestMounts()), "spec.buffer.replay.capacity");

  df = *valid;
  df.spec.buffer.replay.alpha = -0.5;
  ExpectFieldError(SettingsFromDataflow(df, TestMounts()), "spec.buffer.replay.alpha");

  df = *valid;
  df.spec.buffer.replay.epsilon = 0;
  ExpectFieldError(SettingsFromDataflow(df, TestMounts()), "spec.buffer.replay.epsilon");

  df = *valid;
  df.spec.buffer.advantage = "ppo";
  ExpectFieldError(SettingsFromDataflow(df, TestMounts()), "spec.buffer.advantage");

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
  EXPECT_TRUE(LoadDataflowManifestFile(Example("solve-and-verify.yaml"), "rev-mas").ok());
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
