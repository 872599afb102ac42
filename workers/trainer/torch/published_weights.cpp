#include "workers/trainer/torch/published_weights.h"

#include <utility>

namespace sluice::trainer {

Result<PublishedWeights> PublishWeights(const model::DecoderModel& model,
                                        const std::string& dtype) {
  torch::Dtype target;
  model::DType wire;
  if (dtype == "float32") {
    target = torch::kFloat32;
    wire = model::DType::kF32;
  } else if (dtype == "float16") {
    target = torch::kFloat16;
    wire = model::DType::kF16;
  } else if (dtype == "bfloat16") {
    target = torch::kBFloat16;
    wire = model::DType::kBF16;
  } else {
    return Status::InvalidArgument("dtype: \"" + dtype +
                                   "\" is not one of float32, float16, bfloat16");
  }
  PublishedWeights out;
  for (const auto& [name, t] : model.NamedParameters()) {
    torch::Tensor c = t.detach().to(target).contiguous();
    model::TensorView v;
    v.name = name;
    v.dtype = wire;
    v.shape = c.sizes().vec();
    v.data = std::span<const std::byte>(static_cast<const std::byte*>(c.data_ptr()),
                                        static_cast<size_t>(c.nbytes()));
    out.bytes += v.data.size();
    out.views.push_back(std::move(v));
    out.storage.push_back(std::move(c));
  }
  return out;
}

}  // namespace sluice::trainer
