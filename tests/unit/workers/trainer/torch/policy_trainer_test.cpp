// PolicyTrainer on the tiny built-in model: data-parallel equivalence over Gloo, a dead rank
// failing the gang, exact resume from a saved state, and SFT/GRPO moving the model the right way.
#include "workers/trainer/torch/policy_trainer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <future>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/free_port.h"
#include "workers/trainer/trainer_settings.h"

namespace sluice::trainer {
namespace {

using test_support::FreePort;

constexpr const char* kModel = "builtin:tiny?layers=1&d=32&heads=2&ff=64&max_pos=128&seed=3";

TrainerSettings Settings(const std::string& type, int64_t minibatches = 1) {
  TrainerSettings s;
  s.policy = "actor";
  s.spec.steps = 10;
  s.spec.micro_batch_tokens = 64;  // Several micro-batches per rank.
  s.spec.algorithm.type = type;
  s.spec.optimizer.lr = 1e-2;
  s.spec.optimizer.betas = {0.9, 0.999};
  s.spec.optimizer.weight_decay = 0.01;
  s.minibatches = minibatches;
  s.max_new_tokens = 16;
  s.model.builtin_uri = kModel;
  return s;
}

ModelLoader Loader() {
  return [] { return model::DecoderModel::FromBuiltin(kModel); };
}

// A batch of `groups` groups of 4 completions of a short prompt: rewards 1 for completions that
// start with 'a', else 0; behaviour log-probs near the model's.
dataflow::Batch MakeBatch(uint64_t seed, int groups = 4) {
  std::mt19937_64 rng(seed);
  dataflow::Batch b;
  b.batch_id = "b" + std::to_string(seed);
  b.policy = "actor";
  for (int g = 0; g < groups; ++g) {
    for (int k = 0; k < 4; ++k) {
      dataflow::Sample s;
      s.policy = "actor";
      const int prompt = 4 + static_cast<int>(rng() % 4);
      const int completion = 3 + static_cast<int>(rng() % 8);
      for (int i = 0; i < prompt; ++i) s.tokens.push_back('0' + static_cast<int>(rng() % 10));
      for (int i = 0; i < completion; ++i) s.tokens.push_back('a' + static_cast<int>(rng() % 3));
      const size_t n = s.tokens.size();
      s.loss_mask.assign(n, 0);
      s.behaviour_logprobs.assign(n, 0.0f);
      s.versions.assign(n, -1);
      for (size_t i = static_cast<size_t>(prompt); i < n; ++i) {
        s.loss_mask[i] = 1;
        s.behaviour_logprobs[i] = -5.5f;
        s.versions[i] = 0;
      }
      s.reward = s.tokens[static_cast<size_t>(prompt)] == 'a' ? 1.0 : 0.0;
      b.samples.push_back(std::move(s));
      b.group_index.push_back(static_cast<uint32_t>(g));
      b.replayed.push_back(0);
    }
  }
  return b;
}

std::vector<torch::Tensor> Params(const PolicyTrainer& t) {
  std::vector<torch::Tensor> out;
  for (const auto& [name, p] : t.model().NamedParameters()) out.push_back(p.detach().clone());
  return out;
}

double MaxDiff(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, (a[i] - b[i]).abs().max().item<double>());
  return d;
}

std::unique_ptr<PolicyTrainer> Make(const TrainerSettings& s, Communicator* comm) {
  Result<std::unique_ptr<PolicyTrainer>> t = PolicyTrainer::Create(s, Loader(), comm);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(*t) : nullptr;
}

TEST(PolicyTrainerTest, TwoGlooRanksTrainTheSameParametersAsOne) {
  for (const std::string type : {"grpo", "ppo"}) {
    SCOPED_TRACE(type);
    TrainerSettings s = Settings(type, /*minibatches=*/2);
    // Adam turns gradient rounding differences (summation order) into update differences of up
    // to ~lr * 1e-3; keep lr small enough for the 1e-6 bound.
    s.spec.optimizer.lr = 1e-3;
    std::unique_ptr<Communicator> local = MakeLocalCommunicator();
    std::unique_ptr<PolicyTrainer> single = Make(s, local.get());
    ASSERT_NE(single, nullptr);
    for (uint64_t step = 0; step < 3; ++step) ASSERT_TRUE(single->Step(MakeBatch(step)).ok());

    const int port = FreePort();
    auto rank = [&](int r) -> std::vector<torch::Tensor> {
      GlooOptions o;
      o.rank = r;
      o.world_size = 2;
      o.master_port = port;
      o.timeout = std::chrono::seconds(30);
      Result<std::unique_ptr<Communicator>> comm = ConnectGloo(o);
      if (!comm.ok()) {
        ADD_FAILURE() << comm.status().ToString();
        return {};
      }
      std::unique_ptr<PolicyTrainer> t = Make(s, comm->get());
      for (uint64_t step = 0; step < 3; ++step) {
        Result<StepReport> r2 = t->Step(MakeBatch(step));
        if (!r2.ok()) {
          ADD_FAILURE() << r2.status().ToString();
          return {};
        }
      }
      return Params(*t);
    };
    std::future<std::vector<torch::Tensor>> r1 = std::async(std::launch::async, rank, 1);
    const std::vector<torch::Tensor> p0 = rank(0);
    const std::vector<torch::Tensor> p1 = r1.get();
    ASSERT_EQ(p0.size(), Params(*single).size());
    ASSERT_EQ(p1.size(), p0.size());
    EXPECT_EQ(MaxDiff(p0, p1), 0.0);  // The ranks hold identical replicas.
    EXPECT_LT(MaxDiff(p0, Params(*single)), 1e-6);
    // And training moved the weights by far more than that.
    std::unique_ptr<PolicyTrainer> fresh = Make(s, local.get());
    EXPECT_GT(MaxDiff(p0, Params(*fresh)), 1e-3);  // ~3 steps of lr.
  }
}

TEST(PolicyTrainerTest, ADeadRankMakesTheOtherFailInsteadOfHanging) {
  const TrainerSettings s = Settings("grpo");
  const int port = FreePort();
  std::promise<void> rank1_done;
  std::thread rank1([&] {
    GlooOptions o;
    o.rank = 1;
    o.world_size = 2;
    o.master_port = port;
    o.timeout = std::chrono::seconds(5);
    Result<std::unique_ptr<Communicator>> comm = ConnectGloo(o);
    ASSERT_TRUE(comm.ok()) << comm.status().ToString();
    std::unique_ptr<PolicyTrainer> t = Make(s, comm->get());
    EXPECT_TRUE(t->Step(MakeBatch(0)).ok());
    // Rank 1 dies here: its trainer and process group go away.
  });
  GlooOptions o;
  o.rank = 0;
  o.world_size = 2;
  o.master_port = port;
  o.timeout = std::chrono::seconds(5);
  Result<std::unique_ptr<Communicator>> comm = ConnectGloo(o);
  ASSERT_TRUE(comm.ok()) << comm.status().ToString();
  std::unique_ptr<PolicyTrainer> t = Make(s, comm->get());
  ASSERT_TRUE(t->Step(MakeBatch(0)).ok());
  rank1.join();
  const auto start = std::chrono::steady_clock::now();
  Result<StepReport> r = t->Step(MakeBatch(1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().ToString();
  EXPECT_NE(r.status().message().find("failed"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

TEST(PolicyTrainerTest, ResumingFromASavedStateContinuesExactly) {
  for (const std::string type : {"grpo", "ppo"}) {
    SCOPED_TRACE(type);
    TrainerSettings s = Settings(type);
    s.spec.optimizer.schedule = "cosine";
    s.spec.optimizer.warmup_steps = 1;
    s.spec.steps = 4;
    std::unique_ptr<Communicator> comm = MakeLocalCommunicator();
    std::unique_ptr<PolicyTrainer> straight = Make(s, comm.get());
    for (uint64_t step = 0; step < 3; ++step) ASSERT_TRUE(straight->Step(MakeBatch(step)).ok());

    const std::string dir = ::testing::TempDir() + "/trainer_state_" + type;
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    {
      std::unique_ptr<PolicyTrainer> first = Make(s, comm.get());
      for (uint64_t step = 0; step < 2; ++step) ASSERT_TRUE(first->Step(MakeBatch(step)).ok());
      ASSERT_TRUE(first->SaveState(dir).ok());
    }
    std::unique_ptr<PolicyTrainer> resumed = Make(s, comm.get());
    ASSERT_TRUE(resumed->LoadState(dir).ok());
    EXPECT_EQ(resumed->step(), 2);
    EXPECT_EQ(resumed->version(), 2);
    Result<StepReport> r = resumed->Step(MakeBatch(2));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->step, 3);
    EXPECT_EQ(MaxDiff(Params(*resumed), Params(*straight)), 0.0);
  }
}

// A trainer that continued above a dead run's versions keeps that numbering in its checkpoints.
TEST(PolicyTrainerTest, AContinuedVersionSurvivesSaveAndLoad) {
  TrainerSettings s = Settings("grpo");
  s.spec.steps = 4;
  std::unique_ptr<Communicator> comm = MakeLocalCommunicator();
  const std::string dir = ::testing::TempDir() + "/trainer_state_continued";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  {
    std::unique_ptr<PolicyTrainer> first = Make(s, comm.get());
    ASSERT_TRUE(first->Step(MakeBatch(0)).ok());
    EXPECT_EQ(first->version(), 1);
    first->ContinueAt(8);  // The dead run had announced up to 7.
    EXPECT_EQ(first->version(), 8);
    Result<StepReport> r = first->Step(MakeBatch(1));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->version, 9);
    ASSERT_TRUE(first->SaveState(dir).ok());
  }
  std::unique_ptr<PolicyTrainer> resumed = Make(s, comm.get());
  ASSERT_TRUE(resumed->LoadState(dir).ok());
  EXPECT_EQ(resumed->step(), 2);
  EXPECT_EQ(resumed->version(), 9);
}

TEST(PolicyTrainerTest, LoadStateRejectsAMissingState) {
  std::unique_ptr<Communicator> comm = MakeLocalCommunicator();
  std::unique_ptr<PolicyTrainer> t = Make(Settings("grpo"), comm.get());
  const std::string dir = ::testing::TempDir() + "/trainer_state_missing";
  std::filesystem::create_directories(dir);
  EXPECT_EQ(t->LoadState(dir).code(), StatusCode::kCorruption);
}

TEST(PolicyTrainerTest, SftLowersTheLossOnItsData) {
  TrainerSettings s = Settings("sft");
  std::unique_ptr<Communicator> comm = MakeLocalCommunicator();
  std::unique_ptr<PolicyTrainer> t = Make(s, comm.get());
  const dataflow::Batch batch = MakeBatch(7);
  Result<StepReport> first = t->Step(batch);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  double last = first->loss;
  for (int i = 0; i < 9; ++i) {
    Result<StepReport> r = t->Step(batch);
    ASSERT_TRUE(r.ok());
    last = r->loss;
  }
  // Token-mean negative log-likelihood, from ~ln(264) = 5.6 for the random model.
  EXPECT_GT(first->loss, 4.0);
  EXPECT_LT(last, first->loss - 1.0);
  EXPECT_EQ(t->step(), 10);
}

TEST(PolicyTrainerTest, GrpoRaisesTheProbabilityOfRewardedCompletions) {
  // Reward 1 when a completion starts with 'a': GRPO should raise p('a' | prompt) against the
  // alternatives it was shown.
  TrainerSettings s = Settings("grpo");
  std::unique_ptr<Communicator> comm = MakeLocalCommunicator();
  std::unique_ptr<PolicyTrainer> t = Make(s, comm.get());
  const std::vector<int64_t> prompt = {'1', '2', '3', '4'};
  auto p_a = [&]() {
    torch::NoGradGuard g;
    torch::Tensor tokens = torch::tensor(prompt, torch::kInt64);
    torch::Tensor cu = torch::tensor(std::vector<int64_t>{0, 4}, torch::kInt64);
    torch::Tensor hidden = t->model().Forward(tokens, cu).value();
    torch::Tensor logits = t->model().Logits(hidden.slice(0, 3, 4));
    torch::Tensor pr = torch::softmax(logits, -1)[0];
    // The share of 'a' among the completions' first tokens the batches sample (a, b, c): what
    // the reward ranks. (Absolute probabilities of untrained tokens drift either way.)
    return pr['a'].item<double>() /
           (pr['a'].item<double>() + pr['b'].item<double>() + pr['c'].item<double>());
  };
  const double before = p_a();
  for (uint64_t step = 0; step < 8; ++step) {
    Result<StepReport> r = t->Step(MakeBatch(100 + step, 8));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  EXPECT_GT(p_a(), before + 0.15) << "before " << before;
}

TEST(PolicyTrainerTest, OneMinibatchReadsTheProximalLogProbsOffTheUpdatePass) {
  // With one optimizer update per step the update pass runs on the pre-update weights, so its
  // detached log-probs are the proximal ones and the separate pass is skipped: the same step for
  // half the policy forwards. With two minibatches both passes stay.
  for (const double kl : {0.0, 0.05}) {
    for (const int64_t minibatches : {1, 2}) {
      SCOPED_TRACE(std::to_string(kl) + " kl, " + std::to_string(minibatches) + " minibatches");
      TrainerSettings s = Settings("grpo", minibatches);
      s.spec.algorithm.kl_coef = kl;
      s.spec.optimizer.lr = 1e-3;  // Adam and rounding, as in TwoGlooRanksTrainTheSameParameters.
      std::unique_ptr<Communicator> comm = MakeLocalCommunicator();
      std::unique_ptr<PolicyTrainer> reused = Make(s, comm.get());
      PolicyTrainerOptions separate_options;
      separate_options.always_separate_proximal_pass = true;
      Result<std::unique_ptr<PolicyTrainer>> separate =
          PolicyTrainer::Create(s, Loader(), comm.get(), separate_options);
      ASSERT_TRUE(separate.ok()) << separate.status().ToString();
      for (uint64_t step = 0; step < 3; ++step) {
        Result<StepReport> a = reused->Step(MakeBatch(step));
        Result<StepReport> b = (*separate)->Step(MakeBatch(step));
        ASSERT_TRUE(a.ok()) << a.status().ToString();
        ASSERT_TRUE(b.ok()) << b.status().ToString();
        if (minibatches == 1) {
          EXPECT_GT(a->policy_passes, 1);  // Several micro-batches.
          EXPECT_EQ(2 * a->policy_passes, b->policy_passes);
        } else {
          EXPECT_EQ(a->policy_passes, b->policy_passes);
        }
        EXPECT_NEAR(a->loss, b->loss, 1e-6);
      }
      EXPECT_LT(MaxDiff(Params(*reused), Params(**separate)), 1e-6);
      std::unique_ptr<PolicyTrainer> fresh = Make(s, comm.get());
      EXPECT_GT(MaxDiff(Params(*reused), Params(*fresh)), 1e-3);
    }
  }
}

TEST(PolicyTrainerTest, RejectsTokensOutsideTheVocabularyBeforeAnyUpdate) {
  std::unique_ptr<Communicator> comm = MakeLocalCommunicator();
  std::unique_ptr<PolicyTrainer> t = Make(Settings("grpo"), comm.get());
  dataflow::Batch b = MakeBatch(1);
  b.samples[3].tokens[1] = 100000;
  Result<StepReport> r = t->Step(b);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().field(), "samples[3].tokens");
  EXPECT_EQ(t->step(), 0);
}

}  // namespace
}  // namespace sluice::trainer
