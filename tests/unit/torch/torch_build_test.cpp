// Checks that libtorch builds and runs with Sluice's flags through sluice_use_torch() (the
// shared precompiled header). The model and trainer issues build on exactly this path.
#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {

TEST(TorchBuildTest, TensorMathAndAutogradWork) {
  torch::manual_seed(0);
  torch::Tensor w = torch::tensor({1.0, -2.0, 3.0}, torch::requires_grad());
  torch::Tensor x = torch::tensor({0.5, 0.25, 2.0});
  torch::Tensor loss = (w * x).sum().pow(2);  // (0.5 - 0.5 + 6)^2 = 36
  loss.backward();
  EXPECT_DOUBLE_EQ(loss.item<double>(), 36.0);
  // d/dw (w.x)^2 = 2 (w.x) x = 12 x
  torch::Tensor expected = torch::tensor({6.0, 3.0, 24.0});
  EXPECT_TRUE(torch::allclose(w.grad(), expected)) << w.grad();
}

}  // namespace
