// PublishedWeights: the form in which a trainer publishes a weight version: the model's
// parameters under their HF names (DecoderModel::NamedParameters), converted to the Policy's
// spec.dtype, as TensorViews that WeightStore::Publish or WeightSnapshot::Build copy.
//
// Ownership: a PublishedWeights owns the converted tensors its views point into; the views are
// valid while it lives (and the model is not needed afterwards).
//
// Thread safety: build it on the thread that drives the trainer (between steps).
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

#include "common/status.h"
#include "workers/model/nn/decoder_model.h"
#include "workers/model/safetensors.h"

namespace sluice::trainer {

struct PublishedWeights {
  std::vector<torch::Tensor> storage;    // Contiguous copies in the published dtype.
  std::vector<model::TensorView> views;  // One per parameter, pointing into storage.
  size_t bytes = 0;                      // Sum of the views' sizes, in bytes.
};

// `dtype` is the Policy's spec.dtype: "float32", "float16" or "bfloat16". InvalidArgument naming
// "dtype" for anything else.
Result<PublishedWeights> PublishWeights(const model::DecoderModel& model, const std::string& dtype);

}  // namespace sluice::trainer
