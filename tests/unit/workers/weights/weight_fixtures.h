// Test models for the weights tests: a few tensors of different dtypes with random contents, and
// perturbations that change a known set of elements (bitwise) the way a training step does.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "workers/model/model_config.h"
#include "workers/model/safetensors.h"

namespace sluice::weights::fixtures {

struct Tensor {
  std::string name;
  model::DType dtype = model::DType::kF32;
  std::vector<int64_t> shape;
  std::vector<std::byte> data;

  size_t ElementSize() const { return model::DTypeSize(dtype); }
  size_t NumElements() const { return data.size() / ElementSize(); }
};

struct Model {
  std::vector<Tensor> tensors;

  std::vector<model::TensorView> Views() const {
    std::vector<model::TensorView> out;
    for (const Tensor& t : tensors) out.push_back({t.name, t.dtype, t.shape, t.data});
    return out;
  }
  Tensor& Get(const std::string& name) {
    for (Tensor& t : tensors) {
      if (t.name == name) return t;
    }
    std::abort();
  }
};

inline Tensor RandomTensor(std::string name, model::DType dtype, std::vector<int64_t> shape,
                           std::mt19937_64& rng) {
  Tensor t{std::move(name), dtype, std::move(shape), {}};
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  t.data.resize(static_cast<size_t>(n) * t.ElementSize());
  for (std::byte& b : t.data) b = static_cast<std::byte>(rng() & 0xFF);
  return t;
}

// An f32 matrix, a bf16 matrix, an f16 vector and an i64 scalar-sized tensor.
inline Model RandomModel(uint64_t seed) {
  std::mt19937_64 rng(seed);
  Model m;
  m.tensors.push_back(RandomTensor("layers.0.mlp.weight", model::DType::kF32, {64, 33}, rng));
  m.tensors.push_back(RandomTensor("embed.weight", model::DType::kBF16, {128, 17}, rng));
  m.tensors.push_back(RandomTensor("norm.weight", model::DType::kF16, {40}, rng));
  m.tensors.push_back(RandomTensor("step", model::DType::kI64, {1}, rng));
  return m;
}

// Flips a bit pattern of element `i` so it is guaranteed to differ.
inline void ChangeElement(Tensor& t, size_t i, std::mt19937_64& rng) {
  const size_t es = t.ElementSize();
  std::byte* p = t.data.data() + i * es;
  const size_t byte = rng() % es;
  p[byte] ^= static_cast<std::byte>(1 + rng() % 255);
}

// Changes about `fraction` of every tensor's elements, always including the first and last
// element and a run of consecutive ones; returns how many elements changed.
inline uint64_t Perturb(Model& m, double fraction, std::mt19937_64& rng) {
  uint64_t changed = 0;
  for (Tensor& t : m.tensors) {
    const size_t n = t.NumElements();
    std::set<size_t> which = {0, n - 1};
    for (size_t i = n / 2; i < std::min(n, n / 2 + 9); ++i) which.insert(i);
    std::bernoulli_distribution pick(fraction);
    for (size_t i = 0; i < n; ++i) {
      if (pick(rng)) which.insert(i);
    }
    for (size_t i : which) ChangeElement(t, i, rng);
    changed += which.size();
  }
  return changed;
}

inline void PutF32Bits(Tensor& t, size_t i, uint32_t bits) {
  std::memcpy(t.data.data() + i * 4, &bits, 4);
}

// A one-layer llama: vocab 16, hidden `d`, heads 2, ff 16.
inline model::ModelConfig TinyConfig(int64_t d = 8, bool tie = false) {
  Result<model::BuiltinModelSpec> spec = model::ParseBuiltinModel(
      "builtin:tiny?layers=1&heads=2&vocab=16&ff=16&d=" + std::to_string(d) +
      (tie ? "&tie=true" : ""));
  if (!spec.ok()) std::abort();
  return spec->config;
}

// The parameters DecoderModel::NamedParameters would publish for TinyConfig, random contents.
inline Model TinyWeights(model::DType dtype, uint64_t seed, int64_t d = 8, bool tie = false) {
  std::mt19937_64 rng(seed);
  Model m;
  const std::string l = "model.layers.0.";
  m.tensors.push_back(RandomTensor("model.embed_tokens.weight", dtype, {16, d}, rng));
  m.tensors.push_back(RandomTensor(l + "input_layernorm.weight", dtype, {d}, rng));
  for (const char* p : {"q_proj", "k_proj", "v_proj", "o_proj"}) {
    m.tensors.push_back(RandomTensor(l + "self_attn." + p + ".weight", dtype, {d, d}, rng));
  }
  m.tensors.push_back(RandomTensor(l + "post_attention_layernorm.weight", dtype, {d}, rng));
  m.tensors.push_back(RandomTensor(l + "mlp.gate_proj.weight", dtype, {16, d}, rng));
  m.tensors.push_back(RandomTensor(l + "mlp.up_proj.weight", dtype, {16, d}, rng));
  m.tensors.push_back(RandomTensor(l + "mlp.down_proj.weight", dtype, {d, 16}, rng));
  m.tensors.push_back(RandomTensor("model.norm.weight", dtype, {d}, rng));
  if (!tie) m.tensors.push_back(RandomTensor("lm_head.weight", dtype, {16, d}, rng));
  return m;
}

}  // namespace sluice::weights::fixtures
