// The rotations of a strip gathered into small orthogonal blocks (tessera/kernels_cpu/givens.hpp),
// so that R, Q^T b and Q are updated by GEMMs instead of one memory-bound pass per rotation.
#include "tessera/kernels_cpu/givens.hpp"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "detail.hpp"

namespace tessera::kernels {

namespace {

template <class T>
void one_block(const givens_plan& plan, int t, const T* cs, T* S) {
  const int bw = plan.bw(), r0 = plan.row0(t), n = plan.rows(t);
  const int lo = plan.u_lo(t), hi = plan.u_hi(t);
  std::fill(S, S + std::size_t(bw) * bw, T(0));
  for (int i = 0; i < bw; ++i) S[std::size_t(i) * bw + i] = T(1);
  // S = B^T: row r of B is column r of S, contiguous, so a rotation of B's rows (r, r + 1) is an
  // AXPY-like pass over two contiguous columns of S.
  for (int j = 0; j < plan.p; ++j) {
    const int top = std::min(hi - 1, plan.umax(j));
    for (int u = top; u >= lo; --u) {
      const int i = u + j;
      const T c = cs[2 * (std::size_t(j) * plan.L + i)], s = cs[2 * (std::size_t(j) * plan.L + i) + 1];
      if (s == T(0) && c == T(1)) continue;
      T* x = S + std::size_t(i - 1 - r0) * bw;
      detail::rotate_pair(n, c, s, x, x + bw);
    }
  }
}

}  // namespace

template <class T>
void givens_blocks(const givens_plan& plan, const T* cs, T* S, unsigned threads) {
  const int nblocks = plan.blocks();
  if (nblocks == 0) return;
  const std::size_t stride = std::size_t(plan.bw()) * plan.bw();
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = std::min<unsigned>(threads, unsigned(nblocks));
  if (threads <= 1) {
    for (int t = 0; t < nblocks; ++t) one_block(plan, t, cs, S + t * stride);
    return;
  }
  std::atomic<int> next{0};
  std::vector<std::thread> pool;
  for (unsigned w = 0; w < threads; ++w)
    pool.emplace_back([&] {
      for (int t = next++; t < nblocks; t = next++) one_block(plan, t, cs, S + t * stride);
    });
  for (auto& th : pool) th.join();
}

template void givens_blocks<float>(const givens_plan&, const float*, float*, unsigned);
template void givens_blocks<double>(const givens_plan&, const double*, double*, unsigned);

}  // namespace tessera::kernels
