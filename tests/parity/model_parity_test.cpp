// Sluice's model against transformers, the reference implementation of the families it loads:
// random Llama, Qwen2 and Qwen3 models built by transformers from configs (hf_reference.py
// MODELS: biases, tied and untied heads, GQA, q/k norms, head_dim != hidden / heads, llama3 and
// yarn rope scaling, v5's rope_parameters) must give Sluice the logits transformers computes, and
// the directories Sluice writes (DecoderModel::SaveHf, and the trainer's export:
// PublishWeights -> WeightSnapshot -> ExportHfDirectory) must load in transformers with the
// logits Sluice computes.
//
// Tolerance (float32 on both sides): |sluice - transformers| <= kAbsTolerance + kRelTolerance *
// |transformers| for every logit. The two compute the same math in a different order (Sluice
// attends sequence by sequence and does RMSNorm in float32 explicitly), so they agree to float32
// rounding: at most 3.7e-6 measured here (2026-11-30, transformers 5.24.0, torch 2.15.0). The
// bound is ten times that, and stays far below what a mistake moves: scaling one layer's k_proj
// by 1.001 moves the logits by 6e-4 to 2.6e-3. bfloat16 exports: transformers and Sluice both
// read the bf16 file, so the comparison is the same float32 math on the rounded weights, held to
// the same bound; the rounding itself moves logits by 0.011 to 0.030 against the float32 model
// here, and the test bounds it by kBf16ExportShift as the documented size of that loss.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tests/parity/python_reference.h"
#include "workers/model/model_config.h"
#include "workers/model/nn/decoder_model.h"
#include "workers/trainer/torch/published_weights.h"
#include "workers/weights/hf_export.h"
#include "workers/weights/weight_snapshot.h"

namespace sluice::parity {
namespace {

using model::DecoderModel;
using nlohmann::json;

constexpr double kAbsTolerance = 3e-5;
constexpr double kRelTolerance = 1e-5;
constexpr double kBf16ExportShift = 0.1;

// Sluice's logits [n, vocab] for one sequence through the training forward.
torch::Tensor SluiceLogits(const DecoderModel& model, const std::vector<int64_t>& ids) {
  torch::NoGradGuard no_grad;
  const torch::Tensor tokens = torch::tensor(ids, torch::kInt64);
  const torch::Tensor cu =
      torch::tensor(std::vector<int64_t>{0, static_cast<int64_t>(ids.size())}, torch::kInt64);
  auto hidden = model.Forward(tokens, cu);
  EXPECT_TRUE(hidden.ok()) << hidden.status().ToString();
  if (!hidden.ok()) return {};
  return model.Logits(*hidden);
}

torch::Tensor JsonLogits(const json& rows) {
  std::vector<torch::Tensor> out;
  for (const json& row : rows) out.push_back(torch::tensor(row.get<std::vector<double>>()));
  return torch::stack(out).to(torch::kFloat32);
}

// The largest excess of |a - b| over the tolerance at b (<= 0 when every logit is within it),
// and the largest |a - b|, for the failure message.
struct Comparison {
  double worst_excess = 0;
  double max_abs_diff = 0;
};
Comparison Compare(const torch::Tensor& sluice, const torch::Tensor& reference) {
  const torch::Tensor diff = (sluice - reference).abs().to(torch::kFloat64);
  const torch::Tensor bound = kAbsTolerance + kRelTolerance * reference.abs().to(torch::kFloat64);
  return {(diff - bound).max().item<double>(), diff.max().item<double>()};
}

// Weights far from CreateRandom's init (norm weights 1, biases 0), so that a norm, bias or scale
// mistake shows in the logits: the same recipe as hf_reference.py's randomize().
void Perturb(DecoderModel& model, uint64_t seed) {
  torch::NoGradGuard no_grad;
  auto generator = at::detail::createCPUGenerator(seed);
  for (auto& [name, tensor] : model.NamedParameters()) {
    const torch::Tensor noise =
        at::normal(0.0, 1.0, tensor.sizes(), generator, torch::TensorOptions(torch::kFloat32));
    const bool norm = name.size() >= 11 && name.compare(name.size() - 11, 11, "norm.weight") == 0;
    const bool bias = name.size() >= 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
    tensor.copy_(norm ? 1.0 + 0.3 * noise : (bias ? 0.2 * noise : 0.1 * noise));
  }
}

class TransformersModelParityTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    scratch_ = new ScratchDir;
    run_ = RunReference({"models", scratch_->path().string()});
  }
  static void TearDownTestSuite() {
    delete scratch_;
    scratch_ = nullptr;
  }

  std::filesystem::path ReferenceDir() const { return scratch_->path() / GetParam(); }

  static inline ScratchDir* scratch_ = nullptr;
  static inline ReferenceRun run_;
};

TEST_P(TransformersModelParityTest, SluiceComputesTheLogitsOfTransformersModels) {
  ASSERT_TRUE(run_.ok) << run_.output;
  auto model = DecoderModel::LoadHf(ReferenceDir().string());
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const json reference = ReadJsonFile(ReferenceDir() / "reference.json");
  ASSERT_FALSE(reference.is_discarded());
  const auto sequences = reference.at("sequences").get<std::vector<std::vector<int64_t>>>();
  ASSERT_EQ(sequences.size(), reference.at("logits").size());

  std::vector<int64_t> packed;
  std::vector<int64_t> cu{0};
  for (size_t i = 0; i < sequences.size(); ++i) {
    const torch::Tensor expected = JsonLogits(reference["logits"][i]);
    const torch::Tensor got = SluiceLogits(*model, sequences[i]);
    ASSERT_EQ(got.sizes(), expected.sizes()) << "sequence " << i;
    const Comparison c = Compare(got, expected);
    EXPECT_LE(c.worst_excess, 0.0) << GetParam() << " sequence " << i << " (" << sequences[i].size()
                                   << " tokens): max |diff| " << c.max_abs_diff;
    packed.insert(packed.end(), sequences[i].begin(), sequences[i].end());
    cu.push_back(static_cast<int64_t>(packed.size()));
  }

  // The same sequences packed into one training forward: positions restart per sequence and no
  // token sees another sequence.
  torch::NoGradGuard no_grad;
  auto hidden =
      model->Forward(torch::tensor(packed, torch::kInt64), torch::tensor(cu, torch::kInt64));
  ASSERT_TRUE(hidden.ok()) << hidden.status().ToString();
  const torch::Tensor logits = model->Logits(*hidden);
  for (size_t i = 0; i < sequences.size(); ++i) {
    const Comparison c =
        Compare(logits.slice(0, cu[i], cu[i + 1]), JsonLogits(reference["logits"][i]));
    EXPECT_LE(c.worst_excess, 0.0)
        << GetParam() << " packed sequence " << i << ": max |diff| " << c.max_abs_diff;
  }
}

TEST_P(TransformersModelParityTest, TransformersComputesTheLogitsOfSluiceExports) {
  ASSERT_TRUE(run_.ok) << run_.output;
  // The reference model's config, so every family option is exported; Sluice's own weights.
  auto config = model::LoadHfConfig(ReferenceDir().string());
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  auto model = DecoderModel::CreateRandom(*config, 11);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  Perturb(*model, 12);
  const std::vector<std::vector<int64_t>> sequences{
      {5, 17, 3, 99, 250, 42, 7, 7, 7, 0, 1, 2, 160, 33, 18, 230}, {77}};

  const std::filesystem::path out = scratch_->path() / ("exports-" + GetParam());
  const std::string saved = (out / "save-hf").string();
  ASSERT_TRUE(model->SaveHf(saved).ok());
  std::vector<std::string> exported;  // The trainer's export path, float32 then bfloat16.
  for (const std::string dtype : {"float32", "bfloat16"}) {
    auto published = trainer::PublishWeights(*model, dtype);
    ASSERT_TRUE(published.ok()) << published.status().ToString();
    auto snapshot = weights::WeightSnapshot::Build(published->views, 3);
    ASSERT_TRUE(snapshot.ok()) << snapshot.status().ToString();
    const std::string dir = (out / ("export-" + dtype)).string();
    auto e = weights::ExportHfDirectory(*snapshot, model->config(), {}, dir);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    exported.push_back(dir);
  }

  json request = {{"models", json::array()}};
  for (const std::string& dir : {saved, exported[0], exported[1]}) {
    request["models"].push_back({{"dir", dir}, {"sequences", sequences}});
  }
  ASSERT_TRUE(WriteJsonFile(out / "request.json", request));
  const ReferenceRun run =
      RunReference({"logits", (out / "request.json").string(), (out / "response.json").string()});
  ASSERT_TRUE(run.ok) << run.output;
  const json response = ReadJsonFile(out / "response.json");
  ASSERT_FALSE(response.is_discarded());
  ASSERT_EQ(response.at("models").size(), 3u);

  // The bf16 export as Sluice reads it back (float32 math on the rounded weights).
  auto bf16 = DecoderModel::LoadHf(exported[1]);
  ASSERT_TRUE(bf16.ok()) << bf16.status().ToString();
  for (size_t s = 0; s < sequences.size(); ++s) {
    const torch::Tensor own = SluiceLogits(*model, sequences[s]);
    for (size_t m = 0; m < 3; ++m) {
      const torch::Tensor theirs = JsonLogits(response["models"][m]["logits"][s]);
      const torch::Tensor expected = m == 2 ? SluiceLogits(*bf16, sequences[s]) : own;
      ASSERT_EQ(expected.sizes(), theirs.sizes()) << request["models"][m]["dir"];
      const Comparison c = Compare(expected, theirs);
      EXPECT_LE(c.worst_excess, 0.0) << GetParam() << " " << request["models"][m]["dir"]
                                     << " sequence " << s << ": max |diff| " << c.max_abs_diff;
      if (m == 2) {
        const double shift = (theirs - own).abs().max().item<double>();
        EXPECT_LT(shift, kBf16ExportShift) << "bf16 rounding moved the logits by " << shift;
        EXPECT_GT(shift, 0.0) << "the bf16 export is not rounded";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Families, TransformersModelParityTest,
                         ::testing::Values("llama", "qwen2", "qwen3"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace sluice::parity
