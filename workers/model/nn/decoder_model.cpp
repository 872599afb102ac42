#include "workers/model/nn/decoder_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "common/file/atomic_file.h"
#include "workers/model/safetensors.h"

namespace sluice::model {
namespace {

std::string LayerPrefix(int64_t i) { return "model.layers." + std::to_string(i) + "."; }

// Every parameter slot of the weights with its HF name; undefined slots included.
std::vector<std::pair<std::string, torch::Tensor*>> Slots(DecoderWeights& w, bool tied) {
  std::vector<std::pair<std::string, torch::Tensor*>> out;
  out.emplace_back("model.embed_tokens.weight", &w.embed_tokens);
  for (size_t i = 0; i < w.layers.size(); ++i) {
    DecoderLayerWeights& l = w.layers[i];
    const std::string p = LayerPrefix(static_cast<int64_t>(i));
    out.emplace_back(p + "input_layernorm.weight", &l.input_layernorm);
    out.emplace_back(p + "self_attn.q_proj.weight", &l.q_proj);
    out.emplace_back(p + "self_attn.q_proj.bias", &l.q_bias);
    out.emplace_back(p + "self_attn.k_proj.weight", &l.k_proj);
    out.emplace_back(p + "self_attn.k_proj.bias", &l.k_bias);
    out.emplace_back(p + "self_attn.v_proj.weight", &l.v_proj);
    out.emplace_back(p + "self_attn.v_proj.bias", &l.v_bias);
    out.emplace_back(p + "self_attn.o_proj.weight", &l.o_proj);
    out.emplace_back(p + "self_attn.o_proj.bias", &l.o_bias);
    out.emplace_back(p + "self_attn.q_norm.weight", &l.q_norm);
    out.emplace_back(p + "self_attn.k_norm.weight", &l.k_norm);
    out.emplace_back(p + "post_attention_layernorm.weight", &l.post_attention_layernorm);
    out.emplace_back(p + "mlp.gate_proj.weight", &l.gate_proj);
    out.emplace_back(p + "mlp.up_proj.weight", &l.up_proj);
    out.emplace_back(p + "mlp.down_proj.weight", &l.down_proj);
  }
  out.emplace_back("model.norm.weight", &w.norm);
  if (!tied) out.emplace_back("lm_head.weight", &w.lm_head);
  return out;
}

// The expected HF name -> shape of every tensor a config's checkpoint holds.
std::map<std::string, std::vector<int64_t>> ExpectedShapes(const ModelConfig& c) {
  std::map<std::string, std::vector<int64_t>> out;
  const int64_t d = c.hidden_size;
  out["model.embed_tokens.weight"] = {c.vocab_size, d};
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = LayerPrefix(i);
    out[p + "input_layernorm.weight"] = {d};
    out[p + "self_attn.q_proj.weight"] = {c.q_width(), d};
    out[p + "self_attn.k_proj.weight"] = {c.kv_width(), d};
    out[p + "self_attn.v_proj.weight"] = {c.kv_width(), d};
    out[p + "self_attn.o_proj.weight"] = {d, c.q_width()};
    if (c.qkv_bias()) {
      out[p + "self_attn.q_proj.bias"] = {c.q_width()};
      out[p + "self_attn.k_proj.bias"] = {c.kv_width()};
      out[p + "self_attn.v_proj.bias"] = {c.kv_width()};
    }
    if (c.o_bias()) out[p + "self_attn.o_proj.bias"] = {d};
    if (c.qk_norm) {
      out[p + "self_attn.q_norm.weight"] = {c.head_dim};
      out[p + "self_attn.k_norm.weight"] = {c.head_dim};
    }
    out[p + "post_attention_layernorm.weight"] = {d};
    out[p + "mlp.gate_proj.weight"] = {c.intermediate_size, d};
    out[p + "mlp.up_proj.weight"] = {c.intermediate_size, d};
    out[p + "mlp.down_proj.weight"] = {d, c.intermediate_size};
  }
  out["model.norm.weight"] = {d};
  if (!c.tie_word_embeddings) out["lm_head.weight"] = {c.vocab_size, d};
  return out;
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

Result<torch::Tensor> ViewToTensor(const TensorView& view) {
  torch::Dtype src;
  switch (view.dtype) {
    case DType::kF32:
      src = torch::kFloat32;
      break;
    case DType::kF16:
      src = torch::kFloat16;
      break;
    case DType::kBF16:
      src = torch::kBFloat16;
      break;
    case DType::kF64:
      src = torch::kFloat64;
      break;
    default:
      return Status::InvalidArgument("tensor " + view.name + " has dtype " +
                                     std::string(DTypeName(view.dtype)) +
                                     "; weights must be F32, F16, BF16 or F64");
  }
  torch::Tensor t = torch::empty(view.shape, torch::TensorOptions().dtype(src));
  if (static_cast<size_t>(t.nbytes()) != view.data.size()) {
    return Status::InvalidArgument("tensor " + view.name + " has " +
                                   std::to_string(view.data.size()) + " bytes, expected " +
                                   std::to_string(t.nbytes()));
  }
  if (!view.data.empty()) std::memcpy(t.data_ptr(), view.data.data(), view.data.size());
  return t;
}

Result<DType> SafetensorsDType(torch::Dtype dtype) {
  if (dtype == torch::kFloat32) return DType::kF32;
  if (dtype == torch::kFloat16) return DType::kF16;
  if (dtype == torch::kBFloat16) return DType::kBF16;
  if (dtype == torch::kFloat64) return DType::kF64;
  return Status::InvalidArgument("unsupported weight dtype");
}

std::string HfDtypeName(torch::Dtype dtype) {
  if (dtype == torch::kFloat16) return "float16";
  if (dtype == torch::kBFloat16) return "bfloat16";
  return "float32";
}

Status CheckDtype(torch::Dtype dtype) {
  if (dtype == torch::kFloat32 || dtype == torch::kBFloat16 || dtype == torch::kFloat16) {
    return Status::Ok();
  }
  return Status::InvalidArgument("model dtype must be float32, bfloat16 or float16", "dtype");
}

// log p(target) and entropy for rows [T, d] in chunks; backward recomputes each chunk.
class ChunkedLogProbs : public torch::autograd::Function<ChunkedLogProbs> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                torch::Tensor hidden, torch::Tensor weight,
                                                torch::Tensor targets, int64_t chunk) {
    ctx->save_for_backward({hidden, weight, targets});
    ctx->saved_data["chunk"] = chunk;
    torch::NoGradGuard no_grad;
    const int64_t t = hidden.size(0);
    torch::Tensor w32 = weight.to(torch::kFloat32);
    torch::Tensor log_probs = torch::empty({t}, hidden.options().dtype(torch::kFloat32));
    torch::Tensor entropy = torch::empty({t}, hidden.options().dtype(torch::kFloat32));
    for (int64_t s = 0; s < t; s += chunk) {
      const int64_t e = std::min(t, s + chunk);
      torch::Tensor logits = torch::matmul(hidden.slice(0, s, e).to(torch::kFloat32), w32.t());
      torch::Tensor logp = torch::log_softmax(logits, -1);
      logits = torch::Tensor();
      log_probs.slice(0, s, e).copy_(
          logp.gather(1, targets.slice(0, s, e).unsqueeze(1)).squeeze(1));
      entropy.slice(0, s, e).copy_(-(logp.exp() * logp).sum(-1));
    }
    return {log_probs, entropy};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    torch::Tensor hidden = saved[0];
    torch::Tensor weight = saved[1];
    torch::Tensor targets = saved[2];
    const int64_t chunk = ctx->saved_data["chunk"].toInt();
    torch::Tensor g_lp = grads[0];
    torch::Tensor g_ent = grads[1];
    const int64_t t = hidden.size(0);
    torch::Tensor w32 = weight.to(torch::kFloat32);
    torch::Tensor grad_hidden = torch::zeros({t, hidden.size(1)}, w32.options());
    torch::Tensor grad_weight = torch::zeros_like(w32);
    for (int64_t s = 0; s < t; s += chunk) {
      const int64_t e = std::min(t, s + chunk);
      torch::Tensor h = hidden.slice(0, s, e).to(torch::kFloat32);
      torch::Tensor logp = torch::log_softmax(torch::matmul(h, w32.t()), -1);
      torch::Tensor p = logp.exp();
      // d logp[target] / d logits = onehot(target) - p.
      // d H / d logits_j = -p_j (logp_j + H), with H = -sum p logp.
      torch::Tensor grad_logits = torch::zeros_like(logp);
      if (g_lp.defined()) {
        torch::Tensor g = g_lp.slice(0, s, e).to(torch::kFloat32).unsqueeze(1);
        grad_logits.sub_(p * g);
        grad_logits.scatter_add_(1, targets.slice(0, s, e).unsqueeze(1), g);
      }
      if (g_ent.defined()) {
        torch::Tensor ent = -(p * logp).sum(-1, /*keepdim=*/true);
        torch::Tensor g = g_ent.slice(0, s, e).to(torch::kFloat32).unsqueeze(1);
        grad_logits.sub_(p * (logp + ent) * g);
      }
      grad_hidden.slice(0, s, e).copy_(torch::matmul(grad_logits, w32));
      grad_weight.add_(torch::matmul(grad_logits.t(), h));
    }
    return {grad_hidden.to(hidden.scalar_type()), grad_weight.to(weight.scalar_type()),
            torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

DecoderModel::DecoderModel(ModelConfig config, DecoderWeights weights, torch::Dtype dtype)
    : config_(std::move(config)), weights_(std::move(weights)), dtype_(dtype) {
  const std::vector<float> inv = RopeInvFrequencies(config_);
  inv_freq_ = torch::tensor(inv, torch::TensorOptions().dtype(torch::kFloat32))
                  .to(weights_.embed_tokens.device());
  rope_scale_ = RopeAttentionScale(config_);
}

DecoderWeights DecoderModel::InitWeights(const ModelConfig& c, uint64_t seed,
                                         const ModelLoadOptions& options) {
  torch::NoGradGuard no_grad;
  auto gen = at::detail::createCPUGenerator(seed);
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
  auto normal = [&](std::vector<int64_t> shape) {
    return torch::normal(0.0, 0.02, shape, gen, f32);
  };
  auto ones = [&](int64_t n) { return torch::ones({n}, f32); };
  auto zeros = [&](int64_t n) { return torch::zeros({n}, f32); };
  const int64_t d = c.hidden_size;
  DecoderWeights w;
  w.embed_tokens = normal({c.vocab_size, d});
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    DecoderLayerWeights l;
    l.input_layernorm = ones(d);
    l.q_proj = normal({c.q_width(), d});
    l.k_proj = normal({c.kv_width(), d});
    l.v_proj = normal({c.kv_width(), d});
    l.o_proj = normal({d, c.q_width()});
    if (c.qkv_bias()) {
      l.q_bias = zeros(c.q_width());
      l.k_bias = zeros(c.kv_width());
      l.v_bias = zeros(c.kv_width());
    }
    if (c.o_bias()) l.o_bias = zeros(d);
    if (c.qk_norm) {
      l.q_norm = ones(c.head_dim);
      l.k_norm = ones(c.head_dim);
    }
    l.post_attention_layernorm = ones(d);
    l.gate_proj = normal({c.intermediate_size, d});
    l.up_proj = normal({c.intermediate_size, d});
    l.down_proj = normal({d, c.intermediate_size});
    w.layers.push_back(std::move(l));
  }
  w.norm = ones(d);
  if (!c.tie_word_embeddings) w.lm_head = normal({c.vocab_size, d});
  for (auto& [name, slot] : Slots(w, c.tie_word_embeddings)) {
    if (slot->defined()) *slot = slot->to(options.device, options.dtype).contiguous();
  }
  if (c.tie_word_embeddings) w.lm_head = w.embed_tokens;
  return w;
}

Result<DecoderModel> DecoderModel::CreateRandom(const ModelConfig& config, uint64_t seed,
                                                const ModelLoadOptions& options) {
  SLUICE_RETURN_IF_ERROR(ValidateModelConfig(config));
  SLUICE_RETURN_IF_ERROR(CheckDtype(options.dtype));
  try {
    return DecoderModel(config, InitWeights(config, seed, options), options.dtype);
  } catch (const std::exception& e) {
    return Status::Internal(std::string("initialising the model: ") + e.what());
  }
}

Result<DecoderModel> DecoderModel::FromBuiltin(std::string_view uri,
                                               const ModelLoadOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(BuiltinModelSpec spec, ParseBuiltinModel(uri));
  return CreateRandom(spec.config, spec.seed, options);
}

Result<DecoderModel> DecoderModel::LoadHf(const std::string& dir, const ModelLoadOptions& options) {
  SLUICE_RETURN_IF_ERROR(CheckDtype(options.dtype));
  SLUICE_ASSIGN_OR_RETURN(ModelConfig config, LoadHfConfig(dir));
  SLUICE_ASSIGN_OR_RETURN(ShardedCheckpoint ckpt, ShardedCheckpoint::Open(dir));
  const std::map<std::string, std::vector<int64_t>> expected = ExpectedShapes(config);
  const std::string ctx = "loading " + dir;
  try {
    torch::NoGradGuard no_grad;
    // Unexpected tensors first, so a checkpoint of another shape says so.
    for (const std::string& name : ckpt.tensor_names()) {
      if (expected.contains(name)) continue;
      if (name.ends_with(".rotary_emb.inv_freq")) continue;
      if (name == "lm_head.weight" && config.tie_word_embeddings) continue;  // Checked below.
      return Status::InvalidArgument("unexpected tensor " + name + " in the checkpoint", name)
          .WithContext(ctx);
    }
    std::map<std::string, torch::Tensor> loaded;
    for (const auto& [name, shape] : expected) {
      const TensorView* view = ckpt.Find(name);
      if (view == nullptr) {
        return Status::InvalidArgument("missing tensor " + name, name).WithContext(ctx);
      }
      if (view->shape != shape) {
        return Status::InvalidArgument("tensor " + name + " has shape " + ShapeString(view->shape) +
                                           ", expected " + ShapeString(shape),
                                       name)
            .WithContext(ctx);
      }
      Result<torch::Tensor> t = ViewToTensor(*view);
      if (!t.ok()) return t.status().WithContext(ctx);
      loaded[name] = std::move(t).value();
    }
    if (config.tie_word_embeddings) {
      if (const TensorView* head = ckpt.Find("lm_head.weight"); head != nullptr) {
        Result<torch::Tensor> t = ViewToTensor(*head);
        if (!t.ok()) return t.status().WithContext(ctx);
        const torch::Tensor& embed = loaded["model.embed_tokens.weight"];
        if (t->sizes() != embed.sizes() || t->scalar_type() != embed.scalar_type() ||
            !torch::equal(*t, embed)) {
          return Status::InvalidArgument(
                     "tensor lm_head.weight differs from model.embed_tokens.weight in a model "
                     "with tie_word_embeddings",
                     "lm_head.weight")
              .WithContext(ctx);
        }
      }
    }
    DecoderWeights w;
    w.layers.resize(static_cast<size_t>(config.num_hidden_layers));
    for (auto& [name, slot] : Slots(w, config.tie_word_embeddings)) {
      auto it = loaded.find(name);
      if (it == loaded.end()) continue;  // A slot this family does not use.
      *slot = it->second.to(options.device, options.dtype).contiguous();
    }
    if (config.tie_word_embeddings) w.lm_head = w.embed_tokens;
    return DecoderModel(std::move(config), std::move(w), options.dtype);
  } catch (const std::exception& e) {
    return Status::Internal(std::string("building tensors: ") + e.what()).WithContext(ctx);
  }
}

Status DecoderModel::SaveHf(const std::string& dir, const SaveHfOptions& options) const {
  std::error_code ec;
  for (const std::string& f : options.extra_files) {
    if (!std::filesystem::is_regular_file(f, ec)) {
      return Status::NotFound("extra file " + f + " does not exist");
    }
  }
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::Internal("creating " + dir + ": " + ec.message());
  SLUICE_ASSIGN_OR_RETURN(DType st_dtype, SafetensorsDType(dtype_));
  std::vector<std::pair<std::string, torch::Tensor>> params = NamedParameters();
  std::vector<torch::Tensor> host;  // Keeps the bytes alive while writing.
  std::vector<TensorView> views;
  host.reserve(params.size());
  views.reserve(params.size());
  try {
    for (auto& [name, t] : params) {
      host.push_back(t.detach().to(torch::kCPU).contiguous());
      const torch::Tensor& h = host.back();
      TensorView v;
      v.name = name;
      v.dtype = st_dtype;
      v.shape.assign(h.sizes().begin(), h.sizes().end());
      v.data = std::span<const std::byte>(static_cast<const std::byte*>(h.data_ptr()),
                                          static_cast<size_t>(h.nbytes()));
      views.push_back(std::move(v));
    }
  } catch (const std::exception& e) {
    return Status::Internal(std::string("copying weights: ") + e.what());
  }
  uint64_t total = 0;
  for (const TensorView& v : views) total += v.data.size();
  const std::string single = dir + "/model.safetensors";
  const std::string index = dir + "/" + std::string(ShardedCheckpoint::kIndexFileName);
  if (options.max_shard_bytes > 0 && total > options.max_shard_bytes) {
    SLUICE_RETURN_IF_ERROR(
        WriteSharded(dir, views, options.max_shard_bytes, {{"format", "pt"}}).WithContext(dir));
    std::filesystem::remove(single, ec);
  } else {
    SLUICE_RETURN_IF_ERROR(WriteSafetensors(single, views, {{"format", "pt"}}).WithContext(dir));
    // A sharded export's index would shadow the new file: remove it and its shards.
    if (std::filesystem::exists(index, ec)) {
      std::ifstream in(index);
      nlohmann::json doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
      if (doc.is_object() && doc.contains("weight_map") && doc["weight_map"].is_object()) {
        for (const auto& [name, file] : doc["weight_map"].items()) {
          if (file.is_string()) std::filesystem::remove(dir + "/" + file.get<std::string>(), ec);
        }
      }
    }
    std::filesystem::remove(index, ec);
  }
  for (const std::string& f : options.extra_files) {
    const std::string to = dir + "/" + std::filesystem::path(f).filename().string();
    std::filesystem::copy_file(f, to, std::filesystem::copy_options::overwrite_existing, ec);
    if (ec) return Status::Internal("copying " + f + " to " + to + ": " + ec.message());
  }
  ModelConfig c = config_;
  c.torch_dtype = HfDtypeName(dtype_);
  return file::WriteFileAtomic(dir + "/config.json", ToHfConfig(c).dump(2) + "\n");
}

std::vector<std::pair<std::string, torch::Tensor>> DecoderModel::NamedParameters() const {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  auto& w = const_cast<DecoderWeights&>(weights_);
  for (auto& [name, slot] : Slots(w, config_.tie_word_embeddings)) {
    if (slot->defined()) out.emplace_back(name, *slot);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

std::vector<torch::Tensor> DecoderModel::Parameters() const {
  std::vector<torch::Tensor> out;
  for (auto& [name, t] : NamedParameters()) out.push_back(t);
  return out;
}

void DecoderModel::SetRequiresGrad(bool requires_grad) {
  for (auto& [name, slot] : Slots(weights_, config_.tie_word_embeddings)) {
    if (slot->defined()) slot->set_requires_grad(requires_grad);
  }
}

torch::Tensor DecoderModel::Embed(const torch::Tensor& tokens) const {
  return torch::embedding(weights_.embed_tokens, tokens);
}

torch::Tensor DecoderModel::RmsNorm(const torch::Tensor& x, const torch::Tensor& weight) const {
  torch::Tensor x32 = x.to(torch::kFloat32);
  torch::Tensor normed =
      x32 * torch::rsqrt(x32.pow(2).mean(-1, /*keepdim=*/true) + config_.rms_norm_eps);
  return weight * normed.to(x.scalar_type());
}

std::pair<torch::Tensor, torch::Tensor> DecoderModel::RotaryCosSin(
    const torch::Tensor& positions) const {
  torch::Tensor angles = torch::outer(positions.to(inv_freq_.device(), torch::kFloat32), inv_freq_);
  torch::Tensor full = torch::cat({angles, angles}, -1);
  return {full.cos() * rope_scale_, full.sin() * rope_scale_};
}

torch::Tensor DecoderModel::ApplyRotary(const torch::Tensor& x, const torch::Tensor& cos,
                                        const torch::Tensor& sin) const {
  const int64_t half = x.size(-1) / 2;
  torch::Tensor x1 = x.slice(-1, 0, half);
  torch::Tensor x2 = x.slice(-1, half);
  torch::Tensor rotated = torch::cat({-x2, x1}, -1);
  torch::Tensor c = cos.unsqueeze(1);  // [T, 1, hd]: broadcast over heads.
  torch::Tensor s = sin.unsqueeze(1);
  return (x.to(torch::kFloat32) * c + rotated.to(torch::kFloat32) * s).to(x.scalar_type());
}

DecoderModel::Qkv DecoderModel::ProjectQkv(int64_t layer, const torch::Tensor& x,
                                           const torch::Tensor& positions) const {
  const DecoderLayerWeights& l = weights_.layers[static_cast<size_t>(layer)];
  const int64_t t = x.size(0);
  const int64_t hd = config_.head_dim;
  torch::Tensor q = torch::linear(x, l.q_proj, l.q_bias).view({t, config_.num_attention_heads, hd});
  torch::Tensor k = torch::linear(x, l.k_proj, l.k_bias).view({t, config_.num_key_value_heads, hd});
  torch::Tensor v = torch::linear(x, l.v_proj, l.v_bias).view({t, config_.num_key_value_heads, hd});
  if (config_.qk_norm) {
    q = RmsNorm(q, l.q_norm);
    k = RmsNorm(k, l.k_norm);
  }
  auto [cos, sin] = RotaryCosSin(positions);
  return {ApplyRotary(q, cos, sin), ApplyRotary(k, cos, sin), v};
}

torch::Tensor DecoderModel::CausalAttention(const torch::Tensor& q, const torch::Tensor& k,
                                            const torch::Tensor& v) const {
  const int64_t len = q.size(0);
  const int64_t keys = k.size(0);
  const int64_t heads = q.size(1);
  const int64_t group = heads / k.size(1);
  // [heads, L, hd] and [heads, S, hd], each kv head repeated for its group of query heads.
  torch::Tensor qh = q.transpose(0, 1);
  torch::Tensor kh = k.transpose(0, 1).repeat_interleave(group, 0);
  torch::Tensor vh = v.transpose(0, 1).repeat_interleave(group, 0);
  const double scale = 1.0 / std::sqrt(static_cast<double>(config_.head_dim));
  torch::Tensor scores = torch::matmul(qh, kh.transpose(1, 2)).to(torch::kFloat32) * scale;
  // Query i (absolute key position keys - len + i) sees keys 0 .. keys - len + i.
  torch::Tensor mask = torch::ones({len, keys}, torch::TensorOptions().dtype(torch::kBool))
                           .triu(keys - len + 1)
                           .to(q.device());
  scores = scores.masked_fill(mask, -std::numeric_limits<float>::infinity());
  torch::Tensor probs = torch::softmax(scores, -1).to(q.scalar_type());
  return torch::matmul(probs, vh).transpose(0, 1).reshape({len, heads * q.size(2)});
}

torch::Tensor DecoderModel::ProjectOutput(int64_t layer, const torch::Tensor& attn) const {
  const DecoderLayerWeights& l = weights_.layers[static_cast<size_t>(layer)];
  return torch::linear(attn, l.o_proj, l.o_bias);
}

torch::Tensor DecoderModel::Mlp(int64_t layer, const torch::Tensor& x) const {
  const DecoderLayerWeights& l = weights_.layers[static_cast<size_t>(layer)];
  return torch::linear(torch::silu(torch::linear(x, l.gate_proj)) * torch::linear(x, l.up_proj),
                       l.down_proj);
}

torch::Tensor DecoderModel::AttentionBlock(int64_t layer, const torch::Tensor& x,
                                           const std::vector<int64_t>& cu_seqlens) const {
  std::vector<int64_t> pos;
  pos.reserve(static_cast<size_t>(x.size(0)));
  for (size_t b = 0; b + 1 < cu_seqlens.size(); ++b) {
    for (int64_t i = cu_seqlens[b]; i < cu_seqlens[b + 1]; ++i) pos.push_back(i - cu_seqlens[b]);
  }
  torch::Tensor positions = torch::tensor(pos, torch::TensorOptions().dtype(torch::kInt64));
  Qkv qkv = ProjectQkv(layer, x, positions);
  std::vector<torch::Tensor> outs;
  for (size_t b = 0; b + 1 < cu_seqlens.size(); ++b) {
    const int64_t s = cu_seqlens[b];
    const int64_t e = cu_seqlens[b + 1];
    if (e == s) continue;
    outs.push_back(
        CausalAttention(qkv.q.slice(0, s, e), qkv.k.slice(0, s, e), qkv.v.slice(0, s, e)));
  }
  torch::Tensor attn =
      outs.empty() ? torch::zeros({0, config_.q_width()}, x.options()) : torch::cat(outs, 0);
  return ProjectOutput(layer, attn);
}

Result<torch::Tensor> DecoderModel::Forward(const torch::Tensor& tokens,
                                            const torch::Tensor& cu_seqlens) const {
  if (!tokens.defined() || tokens.dim() != 1 || tokens.scalar_type() != torch::kInt64) {
    return Status::InvalidArgument("tokens must be a 1-D int64 tensor", "tokens");
  }
  if (!cu_seqlens.defined() || cu_seqlens.dim() != 1 || cu_seqlens.size(0) < 1 ||
      (cu_seqlens.scalar_type() != torch::kInt64 && cu_seqlens.scalar_type() != torch::kInt32)) {
    return Status::InvalidArgument("cu_seqlens must be a non-empty 1-D int32/int64 tensor",
                                   "cu_seqlens");
  }
  torch::Tensor cu_host = cu_seqlens.to(torch::kCPU, torch::kInt64).contiguous();
  std::vector<int64_t> cu(cu_host.data_ptr<int64_t>(),
                          cu_host.data_ptr<int64_t>() + cu_host.numel());
  const int64_t t = tokens.size(0);
  if (cu.front() != 0 || cu.back() != t) {
    return Status::InvalidArgument(
        "cu_seqlens must start at 0 and end at the token count " + std::to_string(t), "cu_seqlens");
  }
  for (size_t i = 1; i < cu.size(); ++i) {
    if (cu[i] < cu[i - 1]) {
      return Status::InvalidArgument("cu_seqlens must be non-decreasing", "cu_seqlens");
    }
  }
  if (t > 0) {
    const int64_t lo = tokens.min().item<int64_t>();
    const int64_t hi = tokens.max().item<int64_t>();
    if (lo < 0 || hi >= config_.vocab_size) {
      return Status::InvalidArgument(
          "token id outside [0, " + std::to_string(config_.vocab_size) + ")", "tokens");
    }
  }
  try {
    torch::Tensor x = Embed(tokens.to(device()));
    for (int64_t i = 0; i < config_.num_hidden_layers; ++i) {
      const DecoderLayerWeights& l = weights_.layers[static_cast<size_t>(i)];
      x = x + AttentionBlock(i, RmsNorm(x, l.input_layernorm), cu);
      x = x + Mlp(i, RmsNorm(x, l.post_attention_layernorm));
    }
    return RmsNorm(x, weights_.norm);
  } catch (const std::exception& e) {
    return Status::Internal(std::string("forward: ") + e.what());
  }
}

torch::Tensor DecoderModel::Logits(const torch::Tensor& hidden) const {
  return torch::matmul(hidden.to(torch::kFloat32), weights_.lm_head.to(torch::kFloat32).t());
}

Result<TokenLogProbsResult> DecoderModel::TokenLogProbs(const torch::Tensor& hidden,
                                                        const torch::Tensor& targets,
                                                        int64_t chunk) const {
  if (!hidden.defined() || hidden.dim() != 2 || hidden.size(1) != config_.hidden_size) {
    return Status::InvalidArgument("hidden must be [T, hidden_size]", "hidden");
  }
  if (!targets.defined() || targets.dim() != 1 || targets.size(0) != hidden.size(0) ||
      targets.scalar_type() != torch::kInt64) {
    return Status::InvalidArgument("targets must be int64 [T] matching hidden", "targets");
  }
  const int64_t t = hidden.size(0);
  if (t > 0) {
    const int64_t lo = targets.min().item<int64_t>();
    const int64_t hi = targets.max().item<int64_t>();
    if (lo < 0 || hi >= config_.vocab_size) {
      return Status::InvalidArgument("target id outside the vocabulary", "targets");
    }
  }
  if (chunk <= 0 || chunk > t) chunk = std::max<int64_t>(t, 1);
  try {
    torch::autograd::variable_list out =
        ChunkedLogProbs::apply(hidden, weights_.lm_head, targets.to(hidden.device()), chunk);
    return TokenLogProbsResult{out[0], out[1]};
  } catch (const std::exception& e) {
    return Status::Internal(std::string("token log-probs: ") + e.what());
  }
}

}  // namespace sluice::model
