#include "workers/trainer/torch/policy_trainer.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <utility>
#include <vector>

#include "common/file/atomic_file.h"
#include "workers/trainer/advantages.h"
#include "workers/trainer/batch_layout.h"
#include "workers/trainer/lr_schedule.h"
#include "workers/trainer/torch/policy_loss.h"
#include "workers/trainer/train_sequence.h"

namespace sluice::trainer {
namespace {

// Per-target arrays of one sequence computed before the update.
struct SequenceState {
  std::vector<float> old_logp;
  std::vector<float> ref_logp;    // klCoef > 0.
  std::vector<float> old_values;  // ppo.
  std::vector<float> advantages;
  std::vector<float> returns;  // ppo.
};

// The packed tensors of one micro-batch: sequences laid end to end; hidden row `rows[k]` predicts
// target k.
struct MicroBatch {
  std::vector<size_t> sequences;  // Batch indices, in order.
  torch::Tensor tokens;           // [T] int64.
  torch::Tensor cu_seqlens;       // [B + 1] int64.
  torch::Tensor rows;             // [N] int64: hidden rows with a target.
  torch::Tensor targets;          // [N] int64.
  torch::Tensor seq_index;        // [N] int64 in [0, B).
  torch::Tensor mask;             // [N] float32.
};

MicroBatch Pack(const std::vector<TrainSequence>& seqs, const std::vector<size_t>& indices) {
  MicroBatch mb;
  mb.sequences = indices;
  std::vector<int64_t> tokens, cu{0}, rows, targets, seq_index;
  std::vector<float> mask;
  for (size_t b = 0; b < indices.size(); ++b) {
    const TrainSequence& s = seqs[indices[b]];
    const int64_t offset = static_cast<int64_t>(tokens.size());
    tokens.insert(tokens.end(), s.tokens.begin(), s.tokens.end());
    cu.push_back(static_cast<int64_t>(tokens.size()));
    for (size_t j = 0; j < s.mask.size(); ++j) {
      rows.push_back(offset + static_cast<int64_t>(j));
      targets.push_back(s.tokens[j + 1]);
      seq_index.push_back(static_cast<int64_t>(b));
      mask.push_back(s.mask[j]);
    }
  }
  auto i64 = [](const std::vector<int64_t>& v) {
    return torch::tensor(v.empty() ? std::vector<int64_t>{} : v, torch::kInt64)
        .reshape({static_cast<int64_t>(v.size())});
  };
  mb.tokens = i64(tokens);
  mb.cu_seqlens = i64(cu);
  mb.rows = i64(rows);
  mb.targets = i64(targets);
  mb.seq_index = i64(seq_index);
  mb.mask = torch::tensor(mask.empty() ? std::vector<float>{} : mask, torch::kFloat32)
                .reshape({static_cast<int64_t>(mask.size())});
  return mb;
}

// Concatenates a per-target array of the micro-batch's sequences.
torch::Tensor Gather(const std::vector<size_t>& indices,
                     const std::vector<std::vector<float>>& per_sequence) {
  std::vector<float> out;
  for (size_t i : indices) out.insert(out.end(), per_sequence[i].begin(), per_sequence[i].end());
  return torch::tensor(out.empty() ? std::vector<float>{} : out, torch::kFloat32)
      .reshape({static_cast<int64_t>(out.size())});
}

std::vector<float> ToVector(const torch::Tensor& t) {
  torch::Tensor c = t.detach().to(torch::kFloat32).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

std::vector<torch::Tensor> Grads(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> g;
  for (const torch::Tensor& p : params) {
    if (!p.grad().defined()) const_cast<torch::Tensor&>(p).mutable_grad() = torch::zeros_like(p);
    g.push_back(p.grad());
  }
  return g;
}

void SetLearningRate(torch::optim::AdamW& opt, double lr) {
  for (auto& group : opt.param_groups()) {
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
  }
}

std::unique_ptr<torch::optim::AdamW> MakeAdamW(const std::vector<torch::Tensor>& params,
                                               const api::TrainerJobSpecOptimizer& o, double lr) {
  const double b1 = o.betas.size() > 0 ? o.betas[0] : 0.9;
  const double b2 = o.betas.size() > 1 ? o.betas[1] : 0.999;
  return std::make_unique<torch::optim::AdamW>(
      params,
      torch::optim::AdamWOptions(lr).betas({b1, b2}).eps(o.eps).weight_decay(o.weight_decay));
}

}  // namespace

struct PolicyTrainer::Impl {
  TrainerSettings settings;
  PolicyTrainerOptions options;
  Communicator* comm = nullptr;
  std::unique_ptr<model::DecoderModel> policy;
  std::unique_ptr<model::DecoderModel> reference;  // klCoef > 0.
  std::unique_ptr<model::DecoderModel> critic;     // ppo.
  torch::Tensor value_head;                        // [d] (ppo).
  torch::Tensor value_bias;                        // [1] (ppo).
  std::unique_ptr<torch::optim::AdamW> optimizer;
  std::unique_ptr<torch::optim::AdamW> critic_optimizer;
  std::vector<torch::Tensor> params;
  std::vector<torch::Tensor> critic_params;
  PolicyLossOptions loss;
  RewardShapingOptions shaping;
  std::optional<AdvantageMode> group_mode;  // Unset: raw rewards.
  bool batch_normalize = false;
  GaeOptions gae;
  bool kl_in_reward = false;
  LrSchedule schedule = LrSchedule::kConstant;
  int64_t updates = 0;  // Optimizer updates applied so far.
  int64_t total_updates = 1;

  // Log-probs (and entropy) of the micro-batch's targets under `m`.
  Result<model::TokenLogProbsResult> LogProbs(const model::DecoderModel& m,
                                              const MicroBatch& mb) const {
    Result<torch::Tensor> hidden = m.Forward(mb.tokens, mb.cu_seqlens);
    if (!hidden.ok()) return hidden.status();
    return m.TokenLogProbs(hidden->index_select(0, mb.rows), mb.targets, options.logprob_chunk);
  }

  Result<torch::Tensor> Values(const MicroBatch& mb) const {
    Result<torch::Tensor> hidden = critic->Forward(mb.tokens, mb.cu_seqlens);
    if (!hidden.ok()) return hidden.status();
    return torch::matmul(hidden->index_select(0, mb.rows), value_head) + value_bias;
  }
};

PolicyTrainer::PolicyTrainer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {
  model_ = impl_->policy.get();
  version_base_ = impl_->options.version_base;
}
PolicyTrainer::~PolicyTrainer() = default;

Result<std::unique_ptr<PolicyTrainer>> PolicyTrainer::Create(const TrainerSettings& settings,
                                                             const ModelLoader& loader,
                                                             Communicator* comm,
                                                             PolicyTrainerOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->settings = settings;
  impl->options = options;
  impl->comm = comm;
  const api::TrainerJobSpecAlgorithm& a = settings.spec.algorithm;
  const api::TrainerJobSpecOptimizer& o = settings.spec.optimizer;

  // Loss options by algorithm type.
  PolicyLossOptions& loss = impl->loss;
  loss.type = a.type == "sft"    ? PolicyLossType::kSft
              : a.type == "gspo" ? PolicyLossType::kGspo
                                 : PolicyLossType::kPpoClip;
  loss.clip_low = a.clip_low;
  loss.clip_high = a.clip_high;
  loss.dual_clip = a.dual_clip.value_or(0.0);
  if (a.type == "m2po") loss.m2po_threshold = a.m2po_threshold.value_or(0.01);
  impl->kl_in_reward = a.kl_penalty == "reward";
  loss.kl_coef = impl->kl_in_reward ? 0.0 : a.kl_coef;
  Result<KlEstimator> est = ParseKlEstimator(a.kl_estimator);
  if (!est.ok())
    return Status::InvalidArgument(est.status().message(), "spec.algorithm.klEstimator");
  loss.kl_estimator = *est;
  loss.entropy_coef = a.entropy_coef;
  if (a.importance_correction.type == "tis") loss.tis_cap = a.importance_correction.cap.value_or(0);
  Result<LossAggregation> agg = ParseLossAggregation(a.loss_aggregation);
  if (!agg.ok()) {
    return Status::InvalidArgument(agg.status().message(), "spec.algorithm.lossAggregation");
  }
  loss.aggregation = *agg;
  if (Status st = Validate(loss); !st.ok()) {
    return Status::InvalidArgument(st.message(), "spec.algorithm (" + st.field() + ")");
  }

  // Rewards and advantages.
  if (a.overlong) {
    impl->shaping.max_new_tokens = settings.max_new_tokens;
    impl->shaping.overlong_buffer_tokens =
        std::min<int64_t>(a.overlong->buffer_tokens, settings.max_new_tokens);
    impl->shaping.overlong_penalty_factor = a.overlong->penalty_factor;
  }
  if (Status st = Validate(impl->shaping); !st.ok()) {
    return Status::InvalidArgument(st.message(), "spec.algorithm.overlong");
  }
  const std::string norm = a.advantage.normalization.value_or(a.type == "ppo" ? "batch" : "group");
  if (norm == "batch") {
    impl->batch_normalize = true;
  } else if (norm != "none") {
    Result<AdvantageMode> mode = ParseAdvantageMode(norm);
    if (!mode.ok()) {
      return Status::InvalidArgument(mode.status().message(),
                                     "spec.algorithm.advantage.normalization");
    }
    impl->group_mode = *mode;
  }
  impl->gae.gamma = a.advantage.gamma;
  impl->gae.lambda = a.advantage.lambda;

  // Optimizer schedule.
  Result<LrSchedule> schedule = ParseLrSchedule(o.schedule);
  if (!schedule.ok())
    return Status::InvalidArgument(schedule.status().message(), "spec.optimizer.schedule");
  impl->schedule = *schedule;
  impl->total_updates = settings.spec.steps * std::max<int64_t>(settings.minibatches, 1);
  if (Status st = ValidateLrSchedule(impl->total_updates, o.lr,
                                     o.warmup_steps * std::max<int64_t>(settings.minibatches, 1),
                                     o.min_lr_ratio);
      !st.ok()) {
    return Status::InvalidArgument(st.message(), "spec.optimizer");
  }

  // Models.
  Result<model::DecoderModel> policy = loader();
  if (!policy.ok()) return policy.status();
  impl->policy = std::make_unique<model::DecoderModel>(std::move(*policy));
  if (impl->policy->dtype() != torch::kFloat32 || !impl->policy->device().is_cpu()) {
    return Status::InvalidArgument("the trainer trains float32 weights on the CPU", "model");
  }
  impl->policy->SetRequiresGrad(true);
  impl->params = impl->policy->Parameters();
  impl->optimizer = MakeAdamW(impl->params, o, o.lr);
  if (a.kl_coef > 0) {
    Result<model::DecoderModel> ref = loader();
    if (!ref.ok()) return ref.status();
    impl->reference = std::make_unique<model::DecoderModel>(std::move(*ref));
    impl->reference->SetRequiresGrad(false);
  }
  if (a.type == "ppo") {
    Result<model::DecoderModel> critic = loader();
    if (!critic.ok()) return critic.status();
    impl->critic = std::make_unique<model::DecoderModel>(std::move(*critic));
    impl->critic->SetRequiresGrad(true);
    const int64_t d = impl->critic->config().hidden_size;
    impl->value_head = torch::zeros({d}, torch::kFloat32).set_requires_grad(true);
    impl->value_bias = torch::zeros({1}, torch::kFloat32).set_requires_grad(true);
    impl->critic_params = impl->critic->Parameters();
    impl->critic_params.push_back(impl->value_head);
    impl->critic_params.push_back(impl->value_bias);
    const double critic_lr = a.critic ? a.critic->lr : 1e-5;
    impl->critic_optimizer = MakeAdamW(impl->critic_params, o, critic_lr);
  }
  return std::unique_ptr<PolicyTrainer>(new PolicyTrainer(std::move(impl)));
}

Result<StepReport> PolicyTrainer::Step(const dataflow::Batch& batch) {
  Impl& im = *impl_;
  const Clock& clock = ClockOrSystem(im.options.clock);
  const Clock::MonoTime start = clock.Now();
  const int rank = im.comm->rank();
  const int world = im.comm->world_size();
  const model::ModelConfig& cfg = im.policy->config();
  Result<std::vector<TrainSequence>> converted =
      ToTrainSequences(batch, cfg.vocab_size, cfg.max_position_embeddings);
  if (!converted.ok()) return converted.status();
  const std::vector<TrainSequence>& seqs = *converted;
  const size_t n = seqs.size();
  if (n == 0) return Status::InvalidArgument("the batch has no samples", "samples");

  StepReport report;
  std::vector<int64_t> lengths(n);
  std::vector<double> rewards(n), groups_raw(n);
  std::vector<int64_t> groups(n);
  for (size_t i = 0; i < n; ++i) {
    lengths[i] = seqs[i].length();
    rewards[i] = ShapeReward(seqs[i].reward, seqs[i].generated_tokens, im.shaping);
    groups[i] = seqs[i].group;
    report.tokens += lengths[i];
    report.trained_tokens += seqs[i].generated_tokens;
    report.reward_mean += seqs[i].reward / static_cast<double>(n);
  }
  std::vector<double> seq_adv = rewards;
  if (im.group_mode) {
    GroupAdvantageOptions go;
    go.mode = *im.group_mode;
    Result<std::vector<double>> adv = GroupAdvantages(rewards, groups, go);
    if (!adv.ok()) return adv.status();
    seq_adv = std::move(*adv);
  }
  const Staleness staleness = TokenStaleness(seqs, version());

  // Layout: the same on every rank.
  std::vector<size_t> all(n);
  std::iota(all.begin(), all.end(), size_t{0});
  const int minibatches =
      static_cast<int>(std::clamp<int64_t>(im.settings.minibatches, 1, static_cast<int64_t>(n)));
  const std::vector<std::vector<size_t>> parts = SplitBalanced(all, lengths, minibatches);
  std::vector<std::vector<size_t>> shards;  // This rank's share of each minibatch.
  std::vector<size_t> mine;
  for (const auto& part : parts) {
    shards.push_back(SplitBalanced(part, lengths, world)[static_cast<size_t>(rank)]);
    mine.insert(mine.end(), shards.back().begin(), shards.back().end());
  }
  std::sort(mine.begin(), mine.end());
  const int64_t budget = im.settings.spec.micro_batch_tokens;

  const double kl_reward_coef = im.kl_in_reward ? im.settings.spec.algorithm.kl_coef : 0.0;
  const bool proximal_from_update =
      !im.options.always_separate_proximal_pass &&
      ProximalLogProbsFromUpdatePass(parts.size(), kl_reward_coef > 0);

  // Pre-update pass over this rank's sequences.
  std::vector<SequenceState> state(n);
  {
    torch::NoGradGuard no_grad;
    for (const std::vector<size_t>& idx : PackMicroBatches(mine, lengths, budget)) {
      const MicroBatch mb = Pack(seqs, idx);
      std::vector<float> old, ref, values;
      if (!proximal_from_update) {
        Result<model::TokenLogProbsResult> lp = im.LogProbs(*im.policy, mb);
        if (!lp.ok()) return lp.status();
        old = ToVector(lp->log_probs);
        ++report.policy_passes;
      }
      if (im.reference) {
        Result<model::TokenLogProbsResult> r = im.LogProbs(*im.reference, mb);
        if (!r.ok()) return r.status();
        ref = ToVector(r->log_probs);
      }
      if (im.critic) {
        Result<torch::Tensor> v = im.Values(mb);
        if (!v.ok()) return v.status();
        values = ToVector(*v);
      }
      size_t offset = 0;
      for (size_t i : idx) {
        const size_t m = seqs[i].mask.size();
        if (!old.empty()) state[i].old_logp.assign(old.begin() + offset, old.begin() + offset + m);
        if (!ref.empty()) state[i].ref_logp.assign(ref.begin() + offset, ref.begin() + offset + m);
        if (!values.empty()) {
          state[i].old_values.assign(values.begin() + offset, values.begin() + offset + m);
        }
        offset += m;
      }
    }
  }

  // Token advantages.
  MomentSums moments;
  std::vector<std::vector<double>> token_adv(n);
  for (size_t i : mine) {
    const TrainSequence& s = seqs[i];
    std::vector<double> kl;
    if (kl_reward_coef > 0 && !state[i].ref_logp.empty()) {
      kl.resize(s.mask.size());
      for (size_t j = 0; j < kl.size(); ++j) {
        kl[j] = static_cast<double>(state[i].old_logp[j]) - state[i].ref_logp[j];  // k1.
      }
    }
    Result<std::vector<double>> tr = TokenRewards(seq_adv[i], s.mask, kl, kl_reward_coef);
    if (!tr.ok()) return tr.status();
    std::vector<double> values(state[i].old_values.begin(), state[i].old_values.end());
    Result<GaeResult> gae = Gae(*tr, values, s.mask, im.gae);
    if (!gae.ok()) return gae.status();
    for (double& v : gae->advantages) v *= s.loss_weight;
    token_adv[i] = gae->advantages;
    state[i].returns.assign(gae->returns.begin(), gae->returns.end());
    if (im.batch_normalize) {
      Result<MomentSums> m = MaskedMoments(token_adv[i], s.mask);
      if (!m.ok()) return m.status();
      moments.Merge(*m);
    }
  }
  if (im.batch_normalize) {
    std::vector<torch::Tensor> sums{
        torch::tensor({moments.sum, moments.sum_sq, moments.count}, torch::kFloat64)};
    SLUICE_RETURN_IF_ERROR(im.comm->AllReduceSum(sums));
    const MomentSums global{sums[0][0].item<double>(), sums[0][1].item<double>(),
                            sums[0][2].item<double>()};
    for (size_t i : mine) {
      SLUICE_RETURN_IF_ERROR(NormalizeAdvantages(token_adv[i], seqs[i].mask, global));
    }
  }
  double adv_sum = 0, adv_count = 0;
  for (size_t i : mine) {
    state[i].advantages.assign(token_adv[i].begin(), token_adv[i].end());
    for (size_t j = 0; j < seqs[i].mask.size(); ++j) {
      if (seqs[i].mask[j] != 0) {
        adv_sum += token_adv[i][j];
        adv_count += 1;
      }
    }
  }

  // Updates.
  PolicyLossStats stats;
  ValueLossStats value_stats;
  double loss_total = 0, value_loss_total = 0;
  const api::TrainerJobSpecOptimizer& o = im.settings.spec.optimizer;
  const int64_t warmup = o.warmup_steps * std::max<int64_t>(im.settings.minibatches, 1);
  for (size_t p = 0; p < parts.size(); ++p) {
    LossNormaliser norm;
    for (size_t i : parts[p]) {
      norm.tokens += static_cast<double>(seqs[i].generated_tokens);
      if (seqs[i].generated_tokens > 0) norm.sequences += 1;
    }
    const double lr =
        LearningRate(im.updates, im.total_updates, o.lr, warmup, im.schedule, o.min_lr_ratio);
    ++im.updates;
    report.learning_rate = lr;
    if (norm.tokens == 0) continue;  // Nothing to learn from; the schedule still advances.
    im.optimizer->zero_grad();
    if (im.critic_optimizer) im.critic_optimizer->zero_grad();
    for (const std::vector<size_t>& idx : PackMicroBatches(shards[p], lengths, budget)) {
      const MicroBatch mb = Pack(seqs, idx);
      if (mb.rows.numel() == 0) continue;
      Result<model::TokenLogProbsResult> lp = im.LogProbs(*im.policy, mb);
      if (!lp.ok()) return lp.status();
      ++report.policy_passes;
      std::vector<std::vector<float>> old(n), ref(n), adv(n), behaviour(n), vals(n), rets(n);
      for (size_t i : idx) {
        old[i] = state[i].old_logp;
        ref[i] = state[i].ref_logp;
        adv[i] = state[i].advantages;
        behaviour[i] = seqs[i].behaviour_logp;
        vals[i] = state[i].old_values;
        rets[i] = state[i].returns;
      }
      PolicyLossInputs in;
      in.logp = lp->log_probs;
      // The update pass runs on the pre-update weights here: its values are the proximal ones.
      in.old_logp = proximal_from_update ? lp->log_probs.detach() : Gather(idx, old);
      in.behaviour_logp = Gather(idx, behaviour);
      in.advantages = Gather(idx, adv);
      in.mask = mb.mask;
      in.seq_index = mb.seq_index;
      in.num_sequences = static_cast<int64_t>(idx.size());
      if (im.reference && im.loss.kl_coef > 0) in.ref_logp = Gather(idx, ref);
      in.entropy = lp->entropy;
      std::vector<float> seq_tokens;
      for (size_t i : idx) seq_tokens.push_back(static_cast<float>(seqs[i].generated_tokens));
      norm.sequence_tokens = torch::tensor(seq_tokens, torch::kFloat32);
      Result<PolicyLossResult> l = PolicyLoss(in, im.loss, norm);
      if (!l.ok()) return l.status();
      l->loss.backward();
      loss_total += l->loss.item<double>();
      stats.Merge(l->stats);
      if (im.critic) {
        Result<torch::Tensor> v = im.Values(mb);
        if (!v.ok()) return v.status();
        const double clip =
            im.settings.spec.algorithm.critic ? im.settings.spec.algorithm.critic->value_clip : 0.2;
        Result<ValueLossResult> vl =
            ValueLoss(*v, Gather(idx, vals), Gather(idx, rets), mb.mask, clip, norm.tokens);
        if (!vl.ok()) return vl.status();
        vl->loss.backward();
        value_loss_total += vl->loss.item<double>();
        value_stats.Merge(vl->stats);
      }
    }
    SLUICE_RETURN_IF_ERROR(
        AllReduceInBuckets(*im.comm, Grads(im.params), im.options.gradient_bucket_bytes));
    const double max_norm = o.grad_clip > 0 ? o.grad_clip : std::numeric_limits<double>::infinity();
    report.grad_norm = torch::nn::utils::clip_grad_norm_(im.params, max_norm);
    SetLearningRate(*im.optimizer, lr);
    im.optimizer->step();
    if (im.critic_optimizer) {
      SLUICE_RETURN_IF_ERROR(
          AllReduceInBuckets(*im.comm, Grads(im.critic_params), im.options.gradient_bucket_bytes));
      torch::nn::utils::clip_grad_norm_(im.critic_params, max_norm);
      im.critic_optimizer->step();
    }
    ++report.optimizer_updates;
  }

  // Statistics over ranks.
  std::vector<torch::Tensor> sums{
      torch::tensor({loss_total, value_loss_total, stats.tokens, stats.clipped_tokens,
                     stats.entropy_sum, stats.kl_sum, stats.approx_kl_sum, adv_sum, adv_count},
                    torch::kFloat64)};
  SLUICE_RETURN_IF_ERROR(im.comm->AllReduceSum(sums));
  auto at = [&](int k) { return sums[0][k].item<double>(); };
  const double tokens = at(2);
  report.loss = at(0);
  report.value_loss = at(1);
  report.clip_fraction = tokens > 0 ? at(3) / tokens : 0;
  report.entropy = tokens > 0 ? at(4) / tokens : 0;
  report.kl = tokens > 0 ? at(5) / tokens : 0;
  report.approx_kl = tokens > 0 ? at(6) / tokens : 0;
  report.advantage_mean = at(8) > 0 ? at(7) / at(8) : 0;
  report.sequences = static_cast<int64_t>(n);
  report.staleness_mean = staleness.mean;
  report.staleness_max = staleness.max;
  ++step_;
  report.step = step_;
  report.version = version();
  report.seconds = std::chrono::duration<double>(clock.Now() - start).count();
  report.tokens_per_second =
      report.seconds > 0 ? static_cast<double>(report.tokens) / report.seconds : 0;
  return report;
}

Status PolicyTrainer::SaveState(const std::string& dir) const {
  const Impl& im = *impl_;
  try {
    torch::serialize::OutputArchive weights;
    for (const auto& [name, t] : im.policy->NamedParameters()) weights.write(name, t.detach());
    if (im.critic) {
      for (const auto& [name, t] : im.critic->NamedParameters()) {
        weights.write("critic." + name, t.detach());
      }
      weights.write("critic.value_head", im.value_head.detach());
      weights.write("critic.value_bias", im.value_bias.detach());
    }
    weights.write("rng", at::detail::getDefaultCPUGenerator().get_state());
    weights.save_to(dir + "/weights.pt");
    torch::save(*im.optimizer, dir + "/optimizer.pt");
    if (im.critic_optimizer) torch::save(*im.critic_optimizer, dir + "/critic_optimizer.pt");
  } catch (const std::exception& e) {
    return Status::Internal("saving the training state to " + dir + ": " + e.what());
  }
  const nlohmann::json meta = {{"step", step_}, {"version", version()}, {"updates", im.updates}};
  return file::WriteFileAtomic(dir + "/state.json", meta.dump() + "\n");
}

Status PolicyTrainer::LoadState(const std::string& dir) {
  Impl& im = *impl_;
  std::ifstream in(dir + "/state.json");
  nlohmann::json meta = nlohmann::json::parse(in, nullptr, false);
  if (meta.is_discarded() || !meta.contains("step") || !meta.contains("updates")) {
    return Status::Corruption(dir + "/state.json is missing or malformed");
  }
  try {
    torch::serialize::InputArchive weights;
    weights.load_from(dir + "/weights.pt");
    torch::NoGradGuard no_grad;
    auto restore = [&](const std::string& key, const torch::Tensor& into) {
      torch::Tensor t;
      weights.read(key, t);
      into.copy_(t);
    };
    for (const auto& [name, t] : im.policy->NamedParameters()) restore(name, t);
    if (im.critic) {
      for (const auto& [name, t] : im.critic->NamedParameters()) restore("critic." + name, t);
      restore("critic.value_head", im.value_head);
      restore("critic.value_bias", im.value_bias);
    }
    torch::Tensor rng;
    weights.read("rng", rng);
    at::Generator gen = at::detail::getDefaultCPUGenerator();
    gen.set_state(rng);
    torch::load(*im.optimizer, dir + "/optimizer.pt");
    if (im.critic_optimizer) torch::load(*im.critic_optimizer, dir + "/critic_optimizer.pt");
  } catch (const std::exception& e) {
    return Status::Corruption("loading the training state from " + dir + ": " + e.what());
  }
  step_ = meta["step"].get<int64_t>();
  im.updates = meta["updates"].get<int64_t>();
  if (meta.contains("version") && meta["version"].is_number_integer()) {
    version_base_ = meta["version"].get<int64_t>() - step_;
  }
  return Status::Ok();
}

}  // namespace sluice::trainer
