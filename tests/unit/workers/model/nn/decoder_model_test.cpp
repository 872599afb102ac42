// The libtorch decoder model: HF-directory round trips, packed forward, chunked log-probs and
// their gradients, attention against a naive per-head reference, causality and isolation.
#include "workers/model/nn/decoder_model.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "workers/model/safetensors.h"

namespace sluice::model {
namespace {

ModelConfig TinyConfig(Architecture arch) {
  ModelConfig c;
  c.architecture = arch;
  c.vocab_size = 300;
  c.hidden_size = 64;
  c.intermediate_size = 128;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 16;
  c.head_dim_explicit = true;
  c.rope_theta = 10000.0;
  c.rms_norm_eps = 1e-6;
  c.max_position_embeddings = 256;
  c.torch_dtype = "float32";
  switch (arch) {
    case Architecture::kLlama:
      c.attention_bias = true;  // q, k, v and o biases.
      break;
    case Architecture::kQwen2:
      c.attention_bias = true;  // q, k, v biases only.
      c.tie_word_embeddings = true;
      break;
    case Architecture::kQwen3:
      c.qk_norm = true;
      c.tie_word_embeddings = true;
      break;
  }
  return c;
}

// A model whose every weight is random (biases and norm weights too, so a wrong mapping or a
// skipped term shows).
DecoderModel RandomModel(Architecture arch, uint64_t seed = 1) {
  Result<DecoderModel> m = DecoderModel::CreateRandom(TinyConfig(arch), seed);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  torch::NoGradGuard no_grad;
  torch::manual_seed(static_cast<uint64_t>(seed) + 100);
  for (auto& [name, t] : m->NamedParameters()) {
    torch::Tensor r = torch::randn_like(t) * (name.find("norm") != std::string::npos ? 0.1 : 0.2);
    if (name.find("norm") != std::string::npos) r += 1.0;
    t.copy_(r);
  }
  return std::move(m).value();
}

std::string TempDir(const std::string& name) {
  std::string dir = (std::filesystem::temp_directory_path() /
                     ("sluice_nn_" + name + "_" + std::to_string(::getpid())))
                        .string();
  std::filesystem::remove_all(dir);
  return dir;
}

double MaxDiff(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.numel() == 0) return 0.0;
  return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
}

torch::Tensor Cu(const std::vector<int64_t>& lengths) {
  std::vector<int64_t> cu{0};
  for (int64_t l : lengths) cu.push_back(cu.back() + l);
  return torch::tensor(cu, torch::kInt64);
}

torch::Tensor RandomTokens(int64_t n, int64_t vocab, uint64_t seed) {
  torch::manual_seed(seed);
  return torch::randint(vocab, {n}, torch::TensorOptions().dtype(torch::kInt64));
}

class DecoderModelArchTest : public ::testing::TestWithParam<Architecture> {};

INSTANTIATE_TEST_SUITE_P(Families, DecoderModelArchTest,
                         ::testing::Values(Architecture::kLlama, Architecture::kQwen2,
                                           Architecture::kQwen3),
                         [](const auto& info) { return std::string(ModelTypeName(info.param)); });

TEST_P(DecoderModelArchTest, SaveLoadRoundTripIsBitwise) {
  DecoderModel model = RandomModel(GetParam());
  const std::string dir = TempDir(std::string(ModelTypeName(GetParam())));
  ASSERT_TRUE(model.SaveHf(dir).ok());
  ASSERT_TRUE(std::filesystem::exists(dir + "/config.json"));
  Result<DecoderModel> loaded = DecoderModel::LoadHf(dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ModelConfig expected = model.config();
  expected.model_type = std::string(ModelTypeName(GetParam()));
  expected.architectures = {std::string(ArchitectureClassName(GetParam()))};
  EXPECT_EQ(loaded->config(), expected);
  auto a = model.NamedParameters();
  auto b = loaded->NamedParameters();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    EXPECT_TRUE(torch::equal(a[i].second, b[i].second)) << a[i].first;
  }
  EXPECT_EQ(loaded->config().tie_word_embeddings,
            loaded->weights().lm_head.is_same(loaded->weights().embed_tokens));
  int64_t count = 0;
  for (auto& [name, t] : b) count += t.numel();
  EXPECT_EQ(count, model.config().NumParameters());

  // The same weights loaded as bf16 are the float32 ones rounded.
  Result<DecoderModel> bf16 = DecoderModel::LoadHf(dir, {.dtype = torch::kBFloat16});
  ASSERT_TRUE(bf16.ok()) << bf16.status().ToString();
  auto c = bf16->NamedParameters();
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(c[i].second.scalar_type(), torch::kBFloat16);
    EXPECT_TRUE(torch::equal(c[i].second, a[i].second.to(torch::kBFloat16))) << a[i].first;
  }
  // And a bf16 model saved and reloaded is bitwise the same too.
  const std::string dir16 = dir + "_bf16";
  ASSERT_TRUE(bf16->SaveHf(dir16).ok());
  Result<DecoderModel> bf16_again = DecoderModel::LoadHf(dir16, {.dtype = torch::kBFloat16});
  ASSERT_TRUE(bf16_again.ok()) << bf16_again.status().ToString();
  EXPECT_EQ(bf16_again->config().torch_dtype, "bfloat16");
  auto d = bf16_again->NamedParameters();
  for (size_t i = 0; i < c.size(); ++i) EXPECT_TRUE(torch::equal(c[i].second, d[i].second));
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(dir16);
}

TEST_P(DecoderModelArchTest, ShardedExportLoadsBackAndLayoutsReplaceEachOther) {
  DecoderModel model = RandomModel(GetParam());
  const std::string dir = TempDir(std::string(ModelTypeName(GetParam())) + "_sharded");
  const std::string tokenizer = dir + "_tokenizer.json";
  { std::ofstream(tokenizer) << "{\"model\": {}}\n"; }
  DecoderModel::SaveHfOptions options;
  options.max_shard_bytes = 64 << 10;  // The tiny model has ~600 KB of weights: several shards.
  options.extra_files = {tokenizer};
  ASSERT_TRUE(model.SaveHf(dir, options).ok());
  EXPECT_TRUE(std::filesystem::exists(dir + "/model.safetensors.index.json"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/model.safetensors"));
  EXPECT_TRUE(
      std::filesystem::exists(dir + "/" + std::filesystem::path(tokenizer).filename().string()));
  int shards = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    shards += e.path().filename().string().rfind("model-", 0) == 0;
  }
  EXPECT_GT(shards, 2);
  auto check = [&](const std::string& what) {
    Result<DecoderModel> loaded = DecoderModel::LoadHf(dir);
    ASSERT_TRUE(loaded.ok()) << what << ": " << loaded.status().ToString();
    auto a = model.NamedParameters();
    auto b = loaded->NamedParameters();
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i)
      EXPECT_TRUE(torch::equal(a[i].second, b[i].second)) << what;
  };
  check("sharded");
  // Back to one file: the index and shards go, so they cannot shadow the new weights.
  ASSERT_TRUE(model.SaveHf(dir).ok());
  EXPECT_FALSE(std::filesystem::exists(dir + "/model.safetensors.index.json"));
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    EXPECT_NE(e.path().filename().string().rfind("model-", 0), 0u) << e.path();
  }
  check("single file");
  options.extra_files = {dir + "/no-such-file.json"};
  EXPECT_EQ(model.SaveHf(dir, options).code(), StatusCode::kNotFound);
  std::filesystem::remove_all(dir);
  std::filesystem::remove(tokenizer);
}

TEST_P(DecoderModelArchTest, PackedForwardEqualsSeparateSequences) {
  DecoderModel model = RandomModel(GetParam());
  const std::vector<int64_t> lengths = {7, 1, 12};
  torch::Tensor tokens = RandomTokens(20, 300, 5);
  Result<torch::Tensor> packed = model.Forward(tokens, Cu(lengths));
  ASSERT_TRUE(packed.ok()) << packed.status().ToString();
  EXPECT_EQ(packed->sizes(), (std::vector<int64_t>{20, 64}));
  int64_t start = 0;
  for (int64_t len : lengths) {
    Result<torch::Tensor> alone = model.Forward(tokens.slice(0, start, start + len), Cu({len}));
    ASSERT_TRUE(alone.ok());
    EXPECT_LT(MaxDiff(*alone, packed->slice(0, start, start + len)), 1e-5);
    start += len;
  }
}

TEST_P(DecoderModelArchTest, ChunkedLogProbsMatchNaiveAndGradients) {
  DecoderModel model = RandomModel(GetParam());
  model.SetRequiresGrad(true);
  torch::Tensor tokens = RandomTokens(23, 300, 6);
  torch::Tensor targets = RandomTokens(23, 300, 7);
  torch::Tensor cu = Cu({10, 13});
  torch::manual_seed(9);
  torch::Tensor w_lp = torch::randn({23});
  torch::Tensor w_ent = torch::randn({23});

  // Naive: the full [T, vocab] log-softmax.
  torch::Tensor hidden = *model.Forward(tokens, cu);
  torch::Tensor logp = torch::log_softmax(model.Logits(hidden), -1);
  torch::Tensor naive_lp = logp.gather(1, targets.unsqueeze(1)).squeeze(1);
  torch::Tensor naive_ent = -(logp.exp() * logp).sum(-1);
  ((naive_lp * w_lp).sum() + (naive_ent * w_ent).sum()).backward();
  std::map<std::string, torch::Tensor> naive_grads;
  for (auto& [name, t] : model.NamedParameters()) {
    naive_grads[name] = t.grad().clone();
    t.mutable_grad().zero_();
  }

  for (int64_t chunk : {1, 4, 23, 0}) {
    torch::Tensor h = *model.Forward(tokens, cu);
    Result<TokenLogProbsResult> r = model.TokenLogProbs(h, targets, chunk);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_LT(MaxDiff(r->log_probs, naive_lp), 1e-5) << chunk;
    EXPECT_LT(MaxDiff(r->entropy, naive_ent), 1e-5) << chunk;
    ((r->log_probs * w_lp).sum() + (r->entropy * w_ent).sum()).backward();
    for (auto& [name, t] : model.NamedParameters()) {
      const double scale = naive_grads[name].abs().max().item<double>() + 1e-3;
      EXPECT_LT(MaxDiff(t.grad(), naive_grads[name]) / scale, 1e-4) << name << " chunk " << chunk;
      t.mutable_grad().zero_();
    }
  }
}

// A naive reference of one layer's attention sub-block, in double: per sequence, per head, per
// query position, with rotary applied channel pair by channel pair.
torch::Tensor NaiveAttention(const DecoderModel& model, int64_t layer, const torch::Tensor& x,
                             const std::vector<int64_t>& cu) {
  const ModelConfig& c = model.config();
  const DecoderLayerWeights& l = model.weights().layers[static_cast<size_t>(layer)];
  auto dbl = [](const torch::Tensor& t) { return t.detach().to(torch::kFloat64); };
  const int64_t hd = c.head_dim;
  const int64_t half = hd / 2;
  const int64_t group = c.num_attention_heads / c.num_key_value_heads;
  const std::vector<double> inv = RopeInvFrequenciesF64(c);
  auto rms = [&](torch::Tensor v, const torch::Tensor& w) {
    return v / std::sqrt((v * v).mean().item<double>() + c.rms_norm_eps) * dbl(w);
  };
  auto rope = [&](torch::Tensor v, int64_t pos) {
    torch::Tensor out = v.clone();
    for (int64_t i = 0; i < half; ++i) {
      const double a = static_cast<double>(pos) * inv[static_cast<size_t>(i)];
      const double x1 = v[i].item<double>();
      const double x2 = v[i + half].item<double>();
      out[i] = x1 * std::cos(a) - x2 * std::sin(a);
      out[i + half] = x2 * std::cos(a) + x1 * std::sin(a);
    }
    return out;
  };
  auto proj = [&](const torch::Tensor& w, const torch::Tensor& b, const torch::Tensor& in,
                  int64_t head) {
    torch::Tensor r = torch::mv(dbl(w).slice(0, head * hd, (head + 1) * hd), in);
    if (b.defined()) r += dbl(b).slice(0, head * hd, (head + 1) * hd);
    return r;
  };
  torch::Tensor xd = dbl(x);
  torch::Tensor attn = torch::zeros({x.size(0), c.q_width()}, torch::kFloat64);
  for (size_t s = 0; s + 1 < cu.size(); ++s) {
    for (int64_t h = 0; h < c.num_attention_heads; ++h) {
      const int64_t kvh = h / group;
      for (int64_t i = cu[s]; i < cu[s + 1]; ++i) {
        torch::Tensor q = proj(l.q_proj, l.q_bias, xd[i], h);
        if (c.qk_norm) q = rms(q, l.q_norm);
        q = rope(q, i - cu[s]);
        std::vector<double> scores;
        std::vector<torch::Tensor> values;
        for (int64_t j = cu[s]; j <= i; ++j) {
          torch::Tensor k = proj(l.k_proj, l.k_bias, xd[j], kvh);
          if (c.qk_norm) k = rms(k, l.k_norm);
          k = rope(k, j - cu[s]);
          scores.push_back(torch::dot(q, k).item<double>() / std::sqrt(static_cast<double>(hd)));
          values.push_back(proj(l.v_proj, l.v_bias, xd[j], kvh));
        }
        double mx = scores[0];
        for (double v : scores) mx = std::max(mx, v);
        double z = 0;
        for (double v : scores) z += std::exp(v - mx);
        torch::Tensor out = torch::zeros({hd}, torch::kFloat64);
        for (size_t j = 0; j < scores.size(); ++j)
          out += values[j] * (std::exp(scores[j] - mx) / z);
        attn[i].slice(0, h * hd, (h + 1) * hd).copy_(out);
      }
    }
  }
  torch::Tensor o = torch::matmul(attn, dbl(l.o_proj).t());
  if (l.o_bias.defined()) o += dbl(l.o_bias);
  return o;
}

TEST_P(DecoderModelArchTest, AttentionMatchesNaivePerHeadReference) {
  DecoderModel model = RandomModel(GetParam());
  torch::NoGradGuard no_grad;
  const std::vector<int64_t> cu = {0, 6, 11};
  torch::manual_seed(11);
  torch::Tensor x = torch::randn({11, 64});
  for (int64_t layer : {0, 1}) {
    torch::Tensor got = model.AttentionBlock(layer, x, cu);
    torch::Tensor want = NaiveAttention(model, layer, x, cu);
    EXPECT_LT(MaxDiff(got, want), 1e-5) << "layer " << layer;
  }
}

TEST_P(DecoderModelArchTest, LaterTokensDoNotChangeEarlierLogProbs) {
  DecoderModel model = RandomModel(GetParam());
  torch::NoGradGuard no_grad;
  torch::Tensor tokens = RandomTokens(16, 300, 12);
  torch::Tensor targets = RandomTokens(16, 300, 13);
  torch::Tensor cu = Cu({16});
  auto lp = [&](const torch::Tensor& toks) {
    return model.TokenLogProbs(*model.Forward(toks, cu), targets, 5)->log_probs;
  };
  torch::Tensor base = lp(tokens);
  torch::Tensor changed = tokens.clone();
  changed[10] = (changed[10].item<int64_t>() + 1) % 300;
  torch::Tensor after = lp(changed);
  EXPECT_LT(MaxDiff(base.slice(0, 0, 10), after.slice(0, 0, 10)), 1e-6);
  EXPECT_GT(MaxDiff(base.slice(0, 10), after.slice(0, 10)), 1e-4);
}

TEST_P(DecoderModelArchTest, PackedSequencesAreIsolated) {
  DecoderModel model = RandomModel(GetParam());
  torch::NoGradGuard no_grad;
  torch::Tensor tokens = RandomTokens(18, 300, 14);
  torch::Tensor cu = Cu({5, 6, 7});
  torch::Tensor base = *model.Forward(tokens, cu);
  torch::Tensor changed = tokens.clone();
  changed.slice(0, 5, 11).copy_(RandomTokens(6, 300, 15));
  torch::Tensor after = *model.Forward(changed, cu);
  EXPECT_LT(MaxDiff(base.slice(0, 0, 5), after.slice(0, 0, 5)), 1e-6);
  EXPECT_LT(MaxDiff(base.slice(0, 11), after.slice(0, 11)), 1e-6);
  EXPECT_GT(MaxDiff(base.slice(0, 5, 11), after.slice(0, 5, 11)), 1e-4);
  // Positions restart: the third sequence alone, at the start, gives the same states.
  torch::Tensor alone = *model.Forward(tokens.slice(0, 11), Cu({7}));
  EXPECT_LT(MaxDiff(alone, base.slice(0, 11)), 1e-5);
}

TEST_P(DecoderModelArchTest, Bfloat16ForwardAndBackwardRun) {
  DecoderModel model = RandomModel(GetParam());
  const std::string dir = TempDir(std::string(ModelTypeName(GetParam())) + "_bf16run");
  ASSERT_TRUE(model.SaveHf(dir).ok());
  Result<DecoderModel> bf16 = DecoderModel::LoadHf(dir, {.dtype = torch::kBFloat16});
  ASSERT_TRUE(bf16.ok());
  std::filesystem::remove_all(dir);
  bf16->SetRequiresGrad(true);
  torch::Tensor tokens = RandomTokens(12, 300, 21);
  torch::Tensor targets = RandomTokens(12, 300, 22);
  Result<torch::Tensor> h = bf16->Forward(tokens, Cu({5, 7}));
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->scalar_type(), torch::kBFloat16);
  Result<TokenLogProbsResult> r = bf16->TokenLogProbs(*h, targets, 4);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->log_probs.scalar_type(), torch::kFloat32);
  torch::NoGradGuard no_grad_for_reference;
  torch::Tensor want =
      model.TokenLogProbs(*model.Forward(tokens, Cu({5, 7})), targets, 4)->log_probs;
  EXPECT_LT(MaxDiff(r->log_probs, want), 0.3);
}

TEST_P(DecoderModelArchTest, Bfloat16Gradients) {
  Result<DecoderModel> m =
      DecoderModel::CreateRandom(TinyConfig(GetParam()), 3, {.dtype = torch::kBFloat16});
  ASSERT_TRUE(m.ok());
  m->SetRequiresGrad(true);
  torch::Tensor h = *m->Forward(RandomTokens(9, 300, 23), Cu({9}));
  Result<TokenLogProbsResult> r = m->TokenLogProbs(h, RandomTokens(9, 300, 24), 2);
  ASSERT_TRUE(r.ok());
  (r->log_probs.sum() + r->entropy.sum()).backward();
  for (auto& [name, t] : m->NamedParameters()) {
    ASSERT_TRUE(t.grad().defined()) << name;
    EXPECT_EQ(t.grad().scalar_type(), torch::kBFloat16) << name;
    EXPECT_TRUE(torch::isfinite(t.grad()).all().item<bool>()) << name;
  }
}

TEST(DecoderModelTest, BuiltinInitIsDeterministic) {
  const std::string uri = "builtin:tiny?layers=1&d=32&heads=2&vocab=64&family=qwen3&seed=7";
  Result<DecoderModel> a = DecoderModel::FromBuiltin(uri);
  Result<DecoderModel> b = DecoderModel::FromBuiltin(uri);
  Result<DecoderModel> other =
      DecoderModel::FromBuiltin("builtin:tiny?layers=1&d=32&heads=2&vocab=64&family=qwen3&seed=8");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok() && other.ok());
  auto pa = a->NamedParameters();
  auto pb = b->NamedParameters();
  auto po = other->NamedParameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_TRUE(torch::equal(pa[i].second, pb[i].second)) << pa[i].first;
  }
  EXPECT_FALSE(torch::equal(pa[0].second, po[0].second));
  const torch::Tensor& embed = a->weights().embed_tokens;
  EXPECT_NEAR(embed.std().item<double>(), 0.02, 0.002);
  EXPECT_TRUE(torch::equal(a->weights().norm, torch::ones({32})));
}

// Writes a checkpoint of `model`'s tensors, edited by `edit`, next to its config.json.
template <typename Edit>
std::string WriteEdited(const DecoderModel& model, const std::string& name, Edit edit) {
  const std::string dir = TempDir(name);
  EXPECT_TRUE(model.SaveHf(dir).ok());
  std::map<std::string, torch::Tensor> tensors;
  for (auto& [n, t] : model.NamedParameters()) tensors[n] = t.detach().contiguous();
  edit(tensors);
  std::vector<TensorView> views;
  for (auto& [n, t] : tensors) {
    TensorView v;
    v.name = n;
    v.dtype = DType::kF32;
    v.shape.assign(t.sizes().begin(), t.sizes().end());
    v.data = {static_cast<const std::byte*>(t.data_ptr()), static_cast<size_t>(t.nbytes())};
    views.push_back(v);
  }
  EXPECT_TRUE(WriteSafetensors(dir + "/model.safetensors", views).ok());
  return dir;
}

TEST(DecoderModelTest, LoadErrorsNameTheTensor) {
  DecoderModel model = RandomModel(Architecture::kLlama);
  const std::string k = "model.layers.1.self_attn.k_proj.weight";
  struct Case {
    std::string name;
    std::function<void(std::map<std::string, torch::Tensor>&)> edit;
    std::string needle;
  };
  std::vector<Case> cases = {
      {"missing", [&](auto& m) { m.erase(k); }, "missing tensor " + k},
      {"shape",
       [&](auto& m) {
         m[k] = torch::zeros({16, 64});
       },
       "[16, 64], expected [32, 64]"},
      {"extra", [&](auto& m) { m["model.layers.2.mlp.up_proj.weight"] = torch::zeros({2}); },
       "unexpected tensor model.layers.2.mlp.up_proj.weight"},
  };
  for (const Case& c : cases) {
    const std::string dir = WriteEdited(model, c.name, c.edit);
    Result<DecoderModel> r = DecoderModel::LoadHf(dir);
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
    EXPECT_NE(r.status().message().find(c.needle), std::string::npos) << r.status().ToString();
    std::filesystem::remove_all(dir);
  }
  // Old checkpoints' rotary buffers are tolerated.
  const std::string dir = WriteEdited(model, "inv_freq", [](auto& m) {
    m["model.layers.0.self_attn.rotary_emb.inv_freq"] = torch::ones({8});
  });
  EXPECT_TRUE(DecoderModel::LoadHf(dir).ok());
  std::filesystem::remove_all(dir);
}

TEST(DecoderModelTest, TiedLmHeadInCheckpointMustMatchEmbedding) {
  DecoderModel model = RandomModel(Architecture::kQwen3);
  const std::string same = WriteEdited(model, "tied_same", [](auto& m) {
    m["lm_head.weight"] = m["model.embed_tokens.weight"].clone();
  });
  EXPECT_TRUE(DecoderModel::LoadHf(same).ok());
  const std::string differ = WriteEdited(model, "tied_differ", [](auto& m) {
    m["lm_head.weight"] = m["model.embed_tokens.weight"] + 1;
  });
  Result<DecoderModel> r = DecoderModel::LoadHf(differ);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().field(), "lm_head.weight");
  std::filesystem::remove_all(same);
  std::filesystem::remove_all(differ);
}

TEST(DecoderModelTest, ForwardRejectsMalformedInput) {
  DecoderModel model = RandomModel(Architecture::kLlama);
  torch::Tensor tokens = RandomTokens(6, 300, 1);
  EXPECT_FALSE(model.Forward(tokens, Cu({5})).ok());
  EXPECT_FALSE(model.Forward(tokens, torch::tensor({0, 4, 2, 6}, torch::kInt64)).ok());
  EXPECT_FALSE(model.Forward(tokens.to(torch::kInt32), Cu({6})).ok());
  EXPECT_FALSE(model.Forward(torch::tensor({1, 300}, torch::kInt64), Cu({2})).ok());
  // Empty sequences are fine.
  Result<torch::Tensor> h = model.Forward(tokens, Cu({0, 6, 0}));
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_LT(MaxDiff(*h, *model.Forward(tokens, Cu({6}))), 1e-6);
  EXPECT_FALSE(model.TokenLogProbs(*h, torch::tensor({1, 2}, torch::kInt64), 2).ok());
}

}  // namespace
}  // namespace sluice::model
