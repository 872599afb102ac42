// The CPU thread flags of the workers that run libtorch (sluice-trainer, sluice-rollout), declared
// once so that both programs offer the same names, defaults and help:
//
//   --threads       libtorch's intra-op threads; 0: its default.
//   --blas-threads  OpenBLAS's own pool (model/nn/blas_threads.h); default 1, 0: OpenBLAS's.
//
// Thread safety: pure functions.
#pragma once

#include "common/config/option.h"

namespace sluice::model {

config::Option TorchThreadsOption();
config::Option BlasThreadsOption();

}  // namespace sluice::model
