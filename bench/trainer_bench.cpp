// Benchmark of the RL trainer on CPU (workers/trainer/torch/policy_trainer.h) and of publishing
// its weights (published_weights.h, workers/weights/weight_store.h). Three figures per model:
//
// 1. Training throughput: GRPO steps on a synthetic batch (8 groups x 4 samples, prompts and
//    completions of 48..80 tokens each, fixed seed; one micro-batch), timed after one warm-up
//    step: forward tokens/s, trained (loss-masked) tokens/s, seconds per step. Baseline, same run:
//    the model's forward-only pass over the same packed tokens under NoGradGuard (Forward plus
//    TokenLogProbs, what the step computes for its proximal log-probs), and the ratio step time /
//    forward time (a step of one minibatch is one forward with autograd, whose detached log-probs
//    serve as the proximal ones, the backward and an AdamW update).
// 2. Publishing: the time to publish one version, PublishWeights (convert the parameters to the
//    published dtype) plus WeightStore::Publish (serialize, hash, diff against the previous
//    version), in float32 and bfloat16, with the previous version held (the steady state) and for
//    the first version (no delta); bytes per version (the safetensors image); and the ratio to a
//    plain memcpy of the image's bytes between two already-touched buffers in the same run.
// 3. Delta density per training step at learning rates 1e-5 (the throughput run's versions, in
//    both dtypes) and 1e-3 (a fresh trainer on the same batch, bfloat16): the fraction of published
//    elements that changed and the delta's bytes against the full image. The store keeps a delta
//    only when it is smaller than the image (and reports nothing otherwise), so the density is
//    taken from EncodeDelta over the two consecutive stored snapshots without a size limit (the
//    same encoder, compared bitwise at the published dtype); where the store kept its delta, its
//    figures must agree or the run fails.
//
// Models: the built-in tiny model (2 layers, d 128, char vocabulary) and a small Qwen3-shaped
// one (4 layers, d 256, 8 heads, 2 kv heads, QK norm, vocabulary 8192).
//
// Flags: --quick (fewer timed steps), --threads T (torch intra-op threads, default: torch's),
// --blas-threads B (OpenBLAS's pool, as the workers' flag; default: OpenBLAS's own).
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_support.h"
#include "workers/model/nn/blas_threads.h"
#include "workers/trainer/torch/communicator.h"
#include "workers/trainer/torch/policy_trainer.h"
#include "workers/trainer/torch/published_weights.h"
#include "workers/weights/weight_delta.h"
#include "workers/weights/weight_store.h"

namespace sluice::trainer {
namespace {

using bench::BenchClock;
using bench::Check;
using bench::Fail;
using bench::Percentile;
using bench::Seconds;

struct Options {
  int timed_steps = 3;    // Throughput steps after the warm-up (lr 1e-5).
  int density_steps = 3;  // Steps of the lr 1e-3 run.
  int forward_reps = 3;   // Timed forward-only passes after a warm-up.
};

constexpr int kGroups = 8;
constexpr int kSamplesPerGroup = 4;
constexpr double kLowLr = 1e-5;
constexpr double kHighLr = 1e-3;

// GRPO groups: one prompt per group, each completion its own; rewards uniform in [0, 1) so every
// group has non-zero advantages. Token ids are uniform over the vocabulary (the byte tokens of
// the char vocabulary), so the embedding rows a step touches are spread as in real text.
dataflow::Batch MakeBatch(uint64_t seed, int64_t vocab) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> length(48, 80);
  const int64_t ids = vocab == model::kBuiltinCharVocabSize ? 256 : vocab;
  std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(ids) - 1);
  std::uniform_real_distribution<double> reward(0.0, 1.0);
  dataflow::Batch b;
  b.batch_id = "bench-" + std::to_string(seed);
  b.policy = "actor";
  for (int g = 0; g < kGroups; ++g) {
    std::vector<int32_t> prompt(static_cast<size_t>(length(rng)));
    for (int32_t& t : prompt) t = token(rng);
    for (int k = 0; k < kSamplesPerGroup; ++k) {
      dataflow::Sample s;
      s.policy = "actor";
      s.tokens = prompt;
      const int completion = length(rng);
      for (int i = 0; i < completion; ++i) s.tokens.push_back(token(rng));
      const size_t n = s.tokens.size();
      s.loss_mask.assign(n, 0);
      s.behaviour_logprobs.assign(n, 0.0f);
      s.versions.assign(n, -1);
      for (size_t i = prompt.size(); i < n; ++i) {
        s.loss_mask[i] = 1;
        s.behaviour_logprobs[i] = -5.0f;
        s.versions[i] = 0;
      }
      s.reward = reward(rng);
      b.samples.push_back(std::move(s));
      b.group_index.push_back(static_cast<uint32_t>(g));
      b.replayed.push_back(0);
    }
  }
  return b;
}

TrainerSettings MakeSettings(const std::string& uri, double lr) {
  TrainerSettings s;
  s.policy = "actor";
  s.spec.steps = 1000;                // Only bounds the (constant) schedule.
  s.spec.micro_batch_tokens = 16384;  // The whole batch (~5,000 tokens) in one micro-batch.
  s.spec.algorithm.type = "grpo";
  s.spec.optimizer.lr = lr;
  s.spec.optimizer.betas = {0.9, 0.999};
  s.max_new_tokens = 80;
  s.model.builtin_uri = uri;
  return s;
}

std::unique_ptr<PolicyTrainer> MakeTrainer(const std::string& uri, double lr, Communicator* comm) {
  Result<std::unique_ptr<PolicyTrainer>> t = PolicyTrainer::Create(
      MakeSettings(uri, lr), [uri] { return model::DecoderModel::FromBuiltin(uri); }, comm);
  Check(t.status(), "PolicyTrainer::Create " + uri);
  return std::move(t).value();
}

StepReport RunStep(PolicyTrainer& trainer, const dataflow::Batch& batch) {
  Result<StepReport> r = trainer.Step(batch);
  Check(r.status(), "Step");
  return *r;
}

// The forward-only baseline: the batch packed as the trainer packs one micro-batch, then
// Forward and TokenLogProbs of every target under NoGradGuard. Returns seconds per pass (median).
double ForwardSeconds(const model::DecoderModel& m, const dataflow::Batch& batch, int reps,
                      int64_t* tokens_out) {
  std::vector<int64_t> tokens, cu{0}, rows, targets;
  for (const dataflow::Sample& s : batch.samples) {
    const int64_t offset = static_cast<int64_t>(tokens.size());
    for (size_t j = 0; j + 1 < s.tokens.size(); ++j) {
      rows.push_back(offset + static_cast<int64_t>(j));
      targets.push_back(s.tokens[j + 1]);
    }
    tokens.insert(tokens.end(), s.tokens.begin(), s.tokens.end());
    cu.push_back(static_cast<int64_t>(tokens.size()));
  }
  *tokens_out = static_cast<int64_t>(tokens.size());
  const torch::Tensor t_tokens = torch::tensor(tokens, torch::kInt64);
  const torch::Tensor t_cu = torch::tensor(cu, torch::kInt64);
  const torch::Tensor t_rows = torch::tensor(rows, torch::kInt64);
  const torch::Tensor t_targets = torch::tensor(targets, torch::kInt64);
  const int64_t chunk = PolicyTrainerOptions{}.logprob_chunk;
  torch::NoGradGuard no_grad;
  std::vector<double> seconds;
  for (int i = 0; i <= reps; ++i) {  // Pass 0 warms up.
    const auto start = BenchClock::now();
    Result<torch::Tensor> hidden = m.Forward(t_tokens, t_cu);
    Check(hidden.status(), "Forward");
    Result<model::TokenLogProbsResult> lp =
        m.TokenLogProbs(hidden->index_select(0, t_rows), t_targets, chunk);
    Check(lp.status(), "TokenLogProbs");
    if (!std::isfinite(lp->log_probs.sum().item<double>())) Fail("forward: non-finite log-probs");
    if (i > 0) seconds.push_back(Seconds(start));
  }
  return Percentile(seconds, 0.5);
}

// One version's delta against the version before it, in one published dtype.
struct VersionDelta {
  int64_t version = 0;
  weights::DeltaStats stats;  // EncodeDelta without a size limit.
  bool kept = false;          // Whether the store kept its own (size-limited) delta.
  uint64_t full_bytes = 0;    // The version's safetensors image.
};

// Publishes a model's versions in one dtype into its own WeightStore, timing each publish and
// measuring each version's delta.
class Publisher {
 public:
  explicit Publisher(std::string dtype) : dtype_(std::move(dtype)) {}

  void Publish(const model::DecoderModel& m, int64_t version) {
    const auto start = BenchClock::now();
    Result<PublishedWeights> w = PublishWeights(m, dtype_);
    Check(w.status(), "PublishWeights " + dtype_);
    const double convert = Seconds(start);
    Check(store_.Publish(w->views, version), "WeightStore::Publish " + dtype_);
    const double total = Seconds(start);
    std::shared_ptr<const weights::WeightSnapshot> cur = store_.Full(version);
    if (!cur) Fail("version " + std::to_string(version) + " not held after Publish");
    image_bytes_ = cur->size_bytes();
    tensor_bytes_ = w->bytes;
    std::shared_ptr<const weights::WeightSnapshot> prev = store_.Full(version - 1);
    if (!prev) {
      first_seconds_ = total;
      return;
    }
    convert_seconds_.push_back(convert);
    publish_seconds_.push_back(total);
    VersionDelta d;
    d.version = version;
    d.full_bytes = cur->size_bytes();
    Check(weights::EncodeDelta(*prev, *cur, &d.stats).status(), "EncodeDelta " + dtype_);
    for (const weights::VersionInfo& info : store_.Versions()) {
      if (info.version != version || !info.delta_from) continue;
      d.kept = true;
      if (info.delta_stats.changed_elements != d.stats.changed_elements ||
          info.delta_stats.bytes != d.stats.bytes) {
        Fail("version " + std::to_string(version) + ": the store's delta figures differ from " +
             "EncodeDelta's");
      }
    }
    deltas_.push_back(d);
  }

  const std::string& dtype() const { return dtype_; }
  double first_seconds() const { return first_seconds_; }
  double MedianPublishSeconds() const { return Percentile(publish_seconds_, 0.5); }
  double MedianConvertSeconds() const { return Percentile(convert_seconds_, 0.5); }
  uint64_t image_bytes() const { return image_bytes_; }
  uint64_t tensor_bytes() const { return tensor_bytes_; }
  const std::vector<VersionDelta>& deltas() const { return deltas_; }

 private:
  std::string dtype_;
  weights::WeightStore store_{2};  // The previous version is needed for the delta.
  double first_seconds_ = 0;
  std::vector<double> convert_seconds_;
  std::vector<double> publish_seconds_;
  uint64_t image_bytes_ = 0;
  uint64_t tensor_bytes_ = 0;
  std::vector<VersionDelta> deltas_;
};

// Seconds of copying `bytes` between two buffers already written once (no page faults), the best
// of 7 copies: the machine's memory bandwidth, not disturbed by the other processes sharing it.
double MemcpySeconds(uint64_t bytes) {
  std::vector<char> src(bytes, 1);
  std::vector<char> dst(bytes, 0);
  std::vector<double> seconds;
  for (int i = 0; i < 7; ++i) {
    src[static_cast<size_t>(i) % bytes] = static_cast<char>(i);
    const auto start = BenchClock::now();
    std::memcpy(dst.data(), src.data(), bytes);
    seconds.push_back(Seconds(start));
    if (dst[static_cast<size_t>(i) % bytes] != static_cast<char>(i)) Fail("memcpy");
  }
  return *std::min_element(seconds.begin(), seconds.end());
}

struct ModelFigures {
  std::string name;
  std::string uri;
  int64_t parameters = 0;
  int64_t tokens = 0;          // Forward tokens per step.
  int64_t trained_tokens = 0;  // Loss-masked targets per step.
  double step_seconds = 0;     // Median over the timed steps.
  double forward_seconds = 0;  // Median forward-only pass over the same tokens.
  int timed_steps = 0;
  // The throughput run (lr 1e-5) published in float32 and in bfloat16; the lr 1e-3 run in
  // bfloat16.
  std::unique_ptr<Publisher> low_f32 = std::make_unique<Publisher>("float32");
  std::unique_ptr<Publisher> low_bf16 = std::make_unique<Publisher>("bfloat16");
  std::unique_ptr<Publisher> high_bf16 = std::make_unique<Publisher>("bfloat16");
};

ModelFigures RunModel(const char* name, const std::string& uri, const Options& options) {
  ModelFigures f;
  f.name = name;
  f.uri = uri;
  std::unique_ptr<Communicator> comm = MakeLocalCommunicator();

  // Throughput run (lr 1e-5), publishing every version in both dtypes.
  std::unique_ptr<PolicyTrainer> trainer = MakeTrainer(uri, kLowLr, comm.get());
  for (const torch::Tensor& p : trainer->model().Parameters()) f.parameters += p.numel();
  const int64_t vocab = trainer->model().config().vocab_size;
  auto publish_low = [&] {
    f.low_f32->Publish(trainer->model(), trainer->version());
    f.low_bf16->Publish(trainer->model(), trainer->version());
  };
  publish_low();
  const dataflow::Batch batch = MakeBatch(1, vocab);
  RunStep(*trainer, batch);  // Warm-up.
  publish_low();
  std::vector<double> step_seconds;
  for (int i = 0; i < options.timed_steps; ++i) {
    const auto start = BenchClock::now();
    const StepReport r = RunStep(*trainer, batch);
    step_seconds.push_back(Seconds(start));
    if (!std::isfinite(r.loss)) Fail(std::string(name) + ": non-finite loss");
    f.tokens = r.tokens;
    f.trained_tokens = r.trained_tokens;
    publish_low();
  }
  f.timed_steps = options.timed_steps;
  f.step_seconds = Percentile(step_seconds, 0.5);
  int64_t forward_tokens = 0;
  f.forward_seconds =
      ForwardSeconds(trainer->model(), batch, options.forward_reps, &forward_tokens);
  if (forward_tokens != f.tokens) Fail("forward baseline packed a different number of tokens");
  trainer.reset();

  // The lr 1e-3 run on the same batch, so the learning rate is the only difference (published in
  // bfloat16 only).
  trainer = MakeTrainer(uri, kHighLr, comm.get());
  f.high_bf16->Publish(trainer->model(), trainer->version());
  for (int i = 0; i < options.density_steps; ++i) {
    RunStep(*trainer, batch);
    f.high_bf16->Publish(trainer->model(), trainer->version());
  }
  return f;
}

double Ratio(double a, double b) { return b > 0 ? a / b : 0; }

void PrintThroughput(const ModelFigures& f) {
  std::printf("  %s (%s), %.2f M parameters\n", f.name.c_str(), f.uri.c_str(),
              static_cast<double>(f.parameters) / 1e6);
  std::printf(
      "    GRPO step: %d groups x %d samples, %lld tokens (%lld trained), median of %d steps "
      "after 1 warm-up: %.3f s/step = %.0f tokens/s, %.0f trained tokens/s\n",
      kGroups, kSamplesPerGroup, static_cast<long long>(f.tokens),
      static_cast<long long>(f.trained_tokens), f.timed_steps, f.step_seconds,
      Ratio(static_cast<double>(f.tokens), f.step_seconds),
      Ratio(static_cast<double>(f.trained_tokens), f.step_seconds));
  std::printf("    forward only (no grad, same tokens): %.3f s = %.0f tokens/s\n",
              f.forward_seconds, Ratio(static_cast<double>(f.tokens), f.forward_seconds));
  std::printf("    ratio step time / forward time: %.2fx\n",
              Ratio(f.step_seconds, f.forward_seconds));
}

void PrintPublishing(const ModelFigures& f) {
  std::printf("  %s\n", f.name.c_str());
  for (const Publisher* p_ptr : {f.low_f32.get(), f.low_bf16.get()}) {
    const Publisher& p = *p_ptr;
    const double memcpy_s = MemcpySeconds(p.image_bytes());
    const double publish_s = p.MedianPublishSeconds();
    std::printf(
        "    %-8s: %.2f MB/version (%.2f MB tensors); publish %.1f ms (convert %.2f ms), first "
        "version (no delta) %.1f ms; memcpy of %.2f MB (best of 7) %.2f ms (%.1f GB/s); ratio "
        "publish / "
        "memcpy %.0fx\n",
        p.dtype().c_str(), static_cast<double>(p.image_bytes()) / 1e6,
        static_cast<double>(p.tensor_bytes()) / 1e6, publish_s * 1e3,
        p.MedianConvertSeconds() * 1e3, p.first_seconds() * 1e3,
        static_cast<double>(p.image_bytes()) / 1e6, memcpy_s * 1e3,
        Ratio(static_cast<double>(p.image_bytes()) / 1e9, memcpy_s), Ratio(publish_s, memcpy_s));
  }
}

void PrintDeltas(const char* label, const Publisher& p) {
  std::printf("    %s, published %s:\n", label, p.dtype().c_str());
  for (const VersionDelta& d : p.deltas()) {
    std::printf(
        "      v%lld -> v%lld: %.2f%% of %llu elements changed; delta %.2f MB = %.1f%% of the "
        "%.2f MB image (%s)\n",
        static_cast<long long>(d.version - 1), static_cast<long long>(d.version),
        100.0 * d.stats.density(), static_cast<unsigned long long>(d.stats.total_elements),
        static_cast<double>(d.stats.bytes) / 1e6,
        100.0 * Ratio(static_cast<double>(d.stats.bytes), static_cast<double>(d.full_bytes)),
        static_cast<double>(d.full_bytes) / 1e6,
        d.kept ? "kept by the store" : "not kept: no smaller than the image");
  }
}

}  // namespace
}  // namespace sluice::trainer

int main(int argc, char** argv) {
  sluice::trainer::Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      options.timed_steps = 1;
      options.density_steps = 2;
      options.forward_reps = 1;
    } else if (a == "--threads" && i + 1 < argc) {
      torch::set_num_threads(std::atoi(argv[++i]));
    } else if (a == "--blas-threads" && i + 1 < argc) {
      if (!sluice::model::SetOpenBlasThreads(std::atoi(argv[++i]))) {
        std::fprintf(stderr, "--blas-threads: this libtorch has no OpenBLAS to size\n");
        return 2;
      }
    } else if (a == "--help" || a == "-h") {
      std::printf("usage: sluice_bench_trainer [--quick] [--threads T] [--blas-threads B]\n");
      return 0;
    } else {
      std::fprintf(stderr, "unknown flag %s (see --help)\n", a.c_str());
      return 2;
    }
  }
  using sluice::trainer::RunModel;
  const auto start = sluice::bench::BenchClock::now();
  std::vector<sluice::trainer::ModelFigures> models;
  models.push_back(RunModel("tiny", "builtin:tiny?layers=2&d=128&heads=4&vocab=char", options));
  models.push_back(RunModel(
      "small qwen3-shaped",
      "builtin:tiny?layers=4&d=256&heads=8&kv_heads=2&ff=768&vocab=8192&family=qwen3", options));

  std::printf("trainer, CPU, torch threads %d, OpenBLAS threads %d\n", torch::get_num_threads(),
              sluice::model::OpenBlasThreads());
  std::printf("1. training throughput (GRPO, lr 1e-5, AdamW, float32 weights)\n");
  for (const auto& f : models) sluice::trainer::PrintThroughput(f);
  std::printf(
      "2. publishing a version (PublishWeights + WeightStore::Publish, previous version held, "
      "median over the run's versions)\n");
  for (const auto& f : models) sluice::trainer::PrintPublishing(f);
  std::printf("3. delta density per training step (EncodeDelta between consecutive versions)\n");
  for (const auto& f : models) {
    std::printf("  %s\n", f.name.c_str());
    sluice::trainer::PrintDeltas("lr 1e-5", *f.low_bf16);
    sluice::trainer::PrintDeltas("lr 1e-5", *f.low_f32);
    sluice::trainer::PrintDeltas("lr 1e-3", *f.high_bf16);
  }
  std::printf("total %.1f s\n", sluice::bench::Seconds(start));
  return 0;
}
