// The Givens sweeps of a strip (tessera/kernels_cpu/givens.hpp), one rotation at a time.
#include "tessera/kernels_cpu/givens.hpp"

#include <algorithm>
#include "detail.hpp"

namespace tessera::kernels {

template <class T>
void givens_generate(const givens_plan& plan, T* X, int ldx, T* cs) {
  const int L = plan.L, p = plan.p;
  auto x = [&](int i, int j) -> T& { return X[std::size_t(i) + std::size_t(j) * std::size_t(ldx)]; };
  for (int j = 0; j < p; ++j) {
    const int top = std::min(L - 1, plan.base + j);
    for (int i = top; i > j; --i) {
      T c, s, r;
      detail::make_rotation(x(i - 1, j), x(i, j), c, s, r);
      x(i - 1, j) = r;
      x(i, j) = 0;
      cs[2 * (std::size_t(j) * L + i)] = c;
      cs[2 * (std::size_t(j) * L + i) + 1] = s;
      for (int jj = j + 1; jj < p; ++jj) {
        const T u = x(i - 1, jj), v = x(i, jj);
        x(i - 1, jj) = c * u + s * v;
        x(i, jj) = -s * u + c * v;
      }
    }
  }
}

template void givens_generate<float>(const givens_plan&, float*, int, float*);
template void givens_generate<double>(const givens_plan&, double*, int, double*);

}  // namespace tessera::kernels
