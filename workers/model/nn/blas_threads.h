// The BLAS library's own thread pool, beside libtorch's intra-op threads.
//
// Debian's libtorch 1.13 hands its CPU matrix products to OpenBLAS (libopenblas0-pthread), which
// keeps a pool of its own threads, sized to the machine's cores and not by torch::set_num_threads.
// Between calls its idle workers spin on sched_yield: in the demo's trainer on 2 cores that spin
// was a third of the process's CPU, taken from the step and from the rollout replicas beside it,
// and one BLAS thread made the learning run 13% faster (docs/trainer.md, "CPU threads"). The
// workers therefore size the pool from a flag (--blas-threads, default 1).
//
// OpenBLAS is looked up at run time (dlsym), so the same code runs against a libtorch built with
// another BLAS (MKL follows torch::set_num_threads), where these calls do nothing.
//
// Thread safety: call at start-up, before the first matrix product.
#pragma once

namespace sluice::model {

// Sets the OpenBLAS pool to `threads` threads (>= 1). Returns false, changing nothing, when the
// process has no OpenBLAS.
bool SetOpenBlasThreads(int threads);

// The OpenBLAS pool's size, or -1 when the process has no OpenBLAS.
int OpenBlasThreads();

}  // namespace sluice::model
