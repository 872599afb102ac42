// Test models for the weights tests: a few tensors of different dtypes with random contents, and
// perturbations that change a known set of elements (bitwise) the way a training step does.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

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

}  // namespace sluice::weights::fixtures
