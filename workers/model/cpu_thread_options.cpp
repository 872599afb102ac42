#include "workers/model/cpu_thread_options.h"

namespace sluice::model {

config::Option TorchThreadsOption() {
  return config::Option::Int("threads", 0, "Intra-op CPU threads for libtorch; 0: its default.")
      .Min(0);
}

config::Option BlasThreadsOption() {
  return config::Option::Int(
             "blas-threads", 1,
             "Threads of OpenBLAS's own pool, which libtorch's CPU matrix products use; 0: "
             "OpenBLAS's default (one per core). Its idle threads spin and take CPU from the "
             "processes beside them: 1 suits workers sharing cores, more a worker with cores of "
             "its own (docs/trainer.md, \"CPU threads\").")
      .Min(0);
}

}  // namespace sluice::model
