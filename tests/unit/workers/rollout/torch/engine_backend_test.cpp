// The workflows on the real built-in engine (tiny random models, CharTokenizer, "plain" chat
// template) through EngineBackend: the token layout of single-turn groups, solve-and-verify's
// owners and rewards with two policies, multi-turn invariants with the calculator environment,
// and weight swaps tagging later tokens with the new version.
#include "workers/rollout/backend/engine_backend.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "workers/model/char_tokenizer.h"
#include "workers/model/chat_template.h"
#include "workers/model/nn/decoder_model.h"
#include "workers/rollout/workflows/workflow.h"
#include "workers/weights/weight_snapshot.h"

namespace sluice::rollout {
namespace {

using nlohmann::json;

constexpr char kModel[] =
    "builtin:tiny?layers=1&d=32&heads=2&kv_heads=2&ff=64&max_pos=256&seed=SEED&vocab=char";

std::string ModelUri(int seed) {
  std::string uri = kModel;
  uri.replace(uri.find("SEED"), 4, std::to_string(seed));
  return uri;
}

class EngineBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    engine::EngineOptions options;
    options.kv_cache_tokens = 8192;
    backend_ = std::make_unique<EngineBackend>(options);
    auto tokenizer = std::make_shared<const model::CharTokenizer>();
    auto chat =
        std::make_shared<const model::ChatTemplate>(model::ChatTemplate::ByName("plain").value());
    for (const auto& [name, seed] : {std::pair<std::string, int>{"solver", 1}, {"verifier", 2}}) {
      auto m = std::make_shared<model::DecoderModel>(
          model::DecoderModel::FromBuiltin(ModelUri(seed)).value());
      models_[name] = m;
      ASSERT_TRUE(backend_->engine().AddPolicy(name, m, 0, tokenizer).ok());
      context_.policies[name] = PolicyText{tokenizer, chat};
    }
    context_.backend = backend_.get();
  }

  LeasedTask Task(json workflow, int64_t samples) {
    LeasedTask t;
    t.task_id = "task-1";
    t.lease_id = "lease-1";
    t.prompt_id = "row-1";
    t.prompt = "12+30=";
    t.answer = "42";
    t.samples = samples;
    t.sampling = {{"temperature", 1.0}, {"maxNewTokens", 12}};
    t.workflow = std::move(workflow);
    return t;
  }

  std::unique_ptr<EngineBackend> backend_;
  std::map<std::string, std::shared_ptr<model::DecoderModel>> models_;
  EpisodeContext context_;
};

// Mask 1 exactly where a policy generated the token (version >= 0, a log-prob <= 0).
void ExpectConsistentLayout(const dataflow::Sample& s) {
  ASSERT_EQ(s.loss_mask.size(), s.tokens.size());
  ASSERT_EQ(s.versions.size(), s.tokens.size());
  ASSERT_EQ(s.behaviour_logprobs.size(), s.tokens.size());
  for (size_t i = 0; i < s.tokens.size(); ++i) {
    if (s.loss_mask[i] == 1) {
      EXPECT_GE(s.versions[i], 0) << i;
      EXPECT_TRUE(std::isfinite(s.behaviour_logprobs[i]) && s.behaviour_logprobs[i] <= 0) << i;
    } else {
      EXPECT_EQ(s.versions[i], dataflow::kNoVersion) << i;
      EXPECT_EQ(s.behaviour_logprobs[i], 0.0f) << i;
    }
  }
}

TEST_F(EngineBackendTest, SingleTurnGroupsHaveMaskedPromptsAndVersionedCompletions) {
  const json workflow = {{"type", "single-turn"},
                         {"roles", {{{"name", "solver"}, {"policy", "solver"}}}},
                         {"reward", {{"type", "math"}}}};
  Result<std::unique_ptr<Workflow>> wf = MakeWorkflow(workflow);
  ASSERT_TRUE(wf.ok()) << wf.status().ToString();
  Result<EpisodeResult> r = (*wf)->Run(Task(workflow, 4), context_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->samples.size(), 4u);
  for (const dataflow::Sample& s : r->samples) {
    ExpectConsistentLayout(s);
    EXPECT_EQ(s.policy, "solver");
    ASSERT_EQ(s.turn_starts.size(), 1u);
    const size_t prompt = s.turn_starts[0];
    ASSERT_GT(prompt, 0u);
    ASSERT_GT(s.tokens.size(), prompt);
    for (size_t i = 0; i < prompt; ++i) EXPECT_EQ(s.loss_mask[i], 0) << i;
    for (size_t i = prompt; i < s.tokens.size(); ++i) {
      EXPECT_EQ(s.loss_mask[i], 1) << i;
      EXPECT_EQ(s.versions[i], 0) << i;
    }
    EXPECT_TRUE(s.reward == 0.0 || s.reward == 1.0);
    EXPECT_TRUE(s.finish_reason == "stop" || s.finish_reason == "length") << s.finish_reason;
  }
  EXPECT_GT(r->stats.generated_tokens, 0);
}

TEST_F(EngineBackendTest, SolveAndVerifyTagsOwnersAndRewardsBothPolicies) {
  const json workflow = {{"type", "solve-and-verify"},
                         {"roles",
                          {{{"name", "solver"}, {"policy", "solver"}},
                           {{"name", "verifier"}, {"policy", "verifier"}}}},
                         {"maxTurns", 1},
                         {"reward", {{"type", "exact-match"}}}};
  Result<std::unique_ptr<Workflow>> wf = MakeWorkflow(workflow);
  ASSERT_TRUE(wf.ok()) << wf.status().ToString();
  Result<EpisodeResult> r = (*wf)->Run(Task(workflow, 2), context_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->samples.size(), 2u);
  for (const dataflow::Sample& s : r->samples) {
    ExpectConsistentLayout(s);
    ASSERT_EQ(s.policies, (std::vector<std::string>{"solver", "verifier"}));
    ASSERT_EQ(s.policy_rewards.size(), 2u);
    ASSERT_EQ(s.token_owner.size(), s.tokens.size());
    bool solver = false, verifier = false;
    for (size_t i = 0; i < s.tokens.size(); ++i) {
      EXPECT_EQ(s.loss_mask[i] == 1, s.token_owner[i] >= 0) << i;
      solver |= s.token_owner[i] == 0;
      verifier |= s.token_owner[i] == 1;
    }
    EXPECT_TRUE(solver);
    EXPECT_TRUE(verifier);
    // The random solver is wrong, so the verifier earns 1 exactly when it says no.
    EXPECT_EQ(s.policy_rewards[0], 0.0);
  }
}

TEST_F(EngineBackendTest, MultiTurnWithTheCalculatorKeepsTheLayout) {
  const json workflow = {{"type", "multi-turn"},
                         {"roles", {{{"name", "agent"}, {"policy", "solver"}}}},
                         {"maxTurns", 3},
                         {"environment", {{"builtin", "calculator"}}},
                         {"reward", {{"type", "math"}}}};
  Result<std::unique_ptr<Workflow>> wf = MakeWorkflow(workflow);
  ASSERT_TRUE(wf.ok()) << wf.status().ToString();
  Result<EpisodeResult> r = (*wf)->Run(Task(workflow, 3), context_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->samples.size(), 3u);
  for (const dataflow::Sample& s : r->samples) {
    ExpectConsistentLayout(s);
    ASSERT_FALSE(s.turn_starts.empty());
    EXPECT_EQ(s.loss_mask[s.turn_starts[0]], 1);
  }
}

TEST_F(EngineBackendTest, ApplyWeightsTagsLaterTokensWithTheNewVersion) {
  // Version 5: the verifier's weights, published as a snapshot (bf16, as a trainer would).
  std::vector<torch::Tensor> keep;
  std::vector<model::TensorView> views;
  for (const auto& [name, t] : models_["verifier"]->NamedParameters()) {
    torch::Tensor c = t.detach().to(torch::kBFloat16).contiguous();
    keep.push_back(c);
    views.push_back({name, model::DType::kBF16, c.sizes().vec(),
                     std::span<const std::byte>(static_cast<const std::byte*>(c.data_ptr()),
                                                static_cast<size_t>(c.nbytes()))});
  }
  Result<weights::WeightSnapshot> snapshot = weights::WeightSnapshot::Build(views, 5);
  ASSERT_TRUE(snapshot.ok()) << snapshot.status().ToString();
  ASSERT_TRUE(backend_->ApplyWeights("solver", *snapshot).ok());

  GenerateRequest req;
  req.policy = "solver";
  req.prompt = {'1', '+', '1', '='};
  req.sampling.max_new_tokens = 6;
  req.sampling.ignore_eos = true;
  req.sampling.n = 2;
  Result<std::vector<Completion>> out = backend_->Generate(req, CancellationToken());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 2u);
  for (const Completion& c : *out) {
    ASSERT_EQ(c.tokens.size(), 6u);
    for (int64_t v : c.versions) EXPECT_EQ(v, 5);
  }
  // The swapped weights are the verifier's (rounded to bf16).
  const torch::Tensor a = models_["solver"]->NamedParameters().begin()->second;
  const torch::Tensor b = models_["verifier"]->NamedParameters().begin()->second;
  EXPECT_TRUE(torch::allclose(a, b.to(torch::kBFloat16).to(torch::kFloat32)));

  // A snapshot with a tensor the model lacks is refused, naming it.
  model::TensorView bogus{
      "no.such.weight",
      model::DType::kF32,
      {1},
      std::span<const std::byte>(reinterpret_cast<const std::byte*>(&kModel[0]), 4)};
  Result<weights::WeightSnapshot> bad = weights::WeightSnapshot::Build({&bogus, 1}, 6);
  ASSERT_TRUE(bad.ok());
  EXPECT_FALSE(backend_->ApplyWeights("solver", *bad).ok());
}

TEST_F(EngineBackendTest, CancellingAbortsAGeneration) {
  CancellationSource cancel;
  cancel.Cancel();
  GenerateRequest req;
  req.policy = "solver";
  req.prompt = {'1', '+'};
  req.sampling.max_new_tokens = 200;
  req.sampling.ignore_eos = true;
  Result<std::vector<Completion>> out = backend_->Generate(req, cancel.Token());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->at(0).finish_reason, "abort");
  EXPECT_LT(out->at(0).tokens.size(), 200u);
}

}  // namespace
}  // namespace sluice::rollout
