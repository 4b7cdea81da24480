#pragma once
// Kernels run one per worker, so BLAS inside them must not spawn threads of its own: a scope that
// sets OpenBLAS's thread count and restores the previous one when it ends.
namespace tessera::blas {

class blas_threads {
 public:
  explicit blas_threads(int n);   // n >= 1
  ~blas_threads();
  blas_threads(const blas_threads&) = delete;
  blas_threads& operator=(const blas_threads&) = delete;

  static int get();               // OpenBLAS's current thread count
  static void set(int n);

 private:
  int _saved;
};

}  // namespace tessera::blas
