#pragma once
// Tile QR (PLASMA's flat tree, inner blocking): A = QR by GEQRT on the diagonal tile, TSQRT down
// the panel, ORMQR across the top row and TSMQR on the trailing tiles, each a task whose accesses
// say which tiles it touches; the runtime finds the parallelism.
#include "tessera/qr/tile_matrix.hpp"
#include "tessera/sched/runtime.hpp"

namespace tessera::qr {

struct geqrf_options {
  // GEQRT leaves V and R in one tile: ORMQRs read V while TSQRTs update R, a false WAR hazard that
  // would hold the panel until the row updates finish. A copy of V in a tile of its own lets both
  // run at once, for one tile copy per step (the panel chain's gain: docs/architecture.md).
  bool split_diagonal = true;
};

template <class T>
class qr_factors;

// Inserts the factorization of the tiles in f.a() (any shape). Make OpenBLAS single-threaded
// (blas_threads) while it runs on several workers. Errors (a NaN or Inf in A) reach wait_all().
template <class T>
void geqrf_async(runtime& rt, qr_factors<T>& f, const geqrf_options& options = {});

// The result of geqrf on tiles: R on and above the diagonal of a, V (Householder vectors) below it
// (per tile), the ib x nb block reflector factors T in t (mt x nt tiles). Owns its storage and its
// handles on the runtime it was made for; not to be used with another runtime.
template <class T>
class qr_factors {
 public:
  // Allocates the tiles of an m x n matrix (nb x nb) and of T (ib x nb), registers their handles.
  // Throws std::invalid_argument unless m, n, nb, ib >= 1 and ib divides nb.
  qr_factors(runtime& rt, int m, int n, int nb, int ib, tile_allocator alloc = {});

  int m() const noexcept { return _a.m(); }
  int n() const noexcept { return _a.n(); }
  int nb() const noexcept { return _a.nb(); }
  int ib() const noexcept { return _t.mb(); }
  int mt() const noexcept { return _a.mt(); }
  int nt() const noexcept { return _a.nt(); }
  int kt() const noexcept { return _a.mt() < _a.nt() ? _a.mt() : _a.nt(); }   // panel steps

  tile_matrix<T>& a() noexcept { return _a; }
  const tile_matrix<T>& a() const noexcept { return _a; }
  tile_matrix<T>& t() noexcept { return _t; }
  const tile_matrix<T>& t() const noexcept { return _t; }
  const tile_handles& ha() const noexcept { return _ha; }
  const tile_handles& ht() const noexcept { return _ht; }
  const runtime* owner() const noexcept { return _rt; }

  // For the factorization loops (geqrf_options::split_diagonal): one tile per panel step holding a
  // copy of the diagonal tile's V, tile (k, 0), and its handles. Allocated on first use.
  tile_matrix<T>& v_copies();
  const tile_handles& hv();

 private:
  runtime* _rt;
  tile_matrix<T> _a, _t;
  tile_matrix<T> _v;
  tile_handles _ha, _ht, _hv;
};

extern template class qr_factors<float>;
extern template class qr_factors<double>;

// Factors the m x n column-major a (lda): converts it to nb x nb tiles, factors, waits. OpenBLAS
// runs single-threaded meanwhile. Throws std::invalid_argument for bad sizes, lda < m, or a NaN or
// Inf in a. a is not modified.
template <class T>
qr_factors<T> geqrf(runtime& rt, int m, int n, const T* a, int lda, int nb, int ib,
                    const geqrf_options& options = {});

// Tile size of the tile QR on the CPUs when none is given: 256 (docs/architecture.md).
int default_cpu_tile_size(int n) noexcept;

}  // namespace tessera::qr
