#include "tessera/kernels_cpu/blas_threads.hpp"

#include <stdexcept>
#include <string>

// OpenBLAS's own entry points (cblas.h declares them too, but only OpenBLAS's cblas.h).
extern "C" {
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);
}

namespace tessera::blas {

blas_threads::blas_threads(int n) : _saved(get()) { set(n); }
blas_threads::~blas_threads() { openblas_set_num_threads(_saved); }

int blas_threads::get() { return openblas_get_num_threads(); }

void blas_threads::set(int n) {
  if (n < 1)
    throw std::invalid_argument("tessera::blas_threads: n = " + std::to_string(n) +
                                ": must be >= 1");
  openblas_set_num_threads(n);
}

}  // namespace tessera::blas
