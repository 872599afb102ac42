// SetOpenBlasThreads on the BLAS this libtorch uses: on Debian's (OpenBLAS) it sizes the pool; on
// a libtorch without OpenBLAS it reports that and changes nothing.
#include "workers/model/nn/blas_threads.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace sluice::model {
namespace {

TEST(BlasThreadsTest, SizesTheOpenBlasPoolWhenLibtorchUsesOpenBlas) {
  // A matrix product first, so the BLAS is loaded and initialised as in the workers.
  const torch::Tensor a = torch::ones({64, 64});
  EXPECT_EQ(torch::mm(a, a)[0][0].item<float>(), 64.0f);
  const int before = OpenBlasThreads();
  if (before == -1) {
    EXPECT_FALSE(SetOpenBlasThreads(1)) << "no OpenBLAS, yet setting its threads succeeded";
    EXPECT_EQ(OpenBlasThreads(), -1);
    return;
  }
  EXPECT_GE(before, 1);
  ASSERT_TRUE(SetOpenBlasThreads(1));
  EXPECT_EQ(OpenBlasThreads(), 1);
  EXPECT_EQ(torch::mm(a, a)[63][63].item<float>(), 64.0f);
  ASSERT_TRUE(SetOpenBlasThreads(2));
  EXPECT_EQ(OpenBlasThreads(), 2);
  EXPECT_FALSE(SetOpenBlasThreads(0)) << "0 threads is no pool";
  EXPECT_EQ(OpenBlasThreads(), 2);
}

}  // namespace
}  // namespace sluice::model
