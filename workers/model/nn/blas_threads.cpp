#include "workers/model/nn/blas_threads.h"

#include <dlfcn.h>

namespace sluice::model {
namespace {

// Looked up in the symbols the process already loaded (libtorch's BLAS), never a library of its
// own: a BLAS this process does not use has no pool to size.
template <typename Function>
Function* Find(const char* name) {
  return reinterpret_cast<Function*>(::dlsym(RTLD_DEFAULT, name));
}

}  // namespace

bool SetOpenBlasThreads(int threads) {
  auto* set = Find<void(int)>("openblas_set_num_threads");
  if (set == nullptr || threads < 1) return false;
  set(threads);
  return true;
}

int OpenBlasThreads() {
  auto* get = Find<int()>("openblas_get_num_threads");
  return get == nullptr ? -1 : get();
}

}  // namespace sluice::model
