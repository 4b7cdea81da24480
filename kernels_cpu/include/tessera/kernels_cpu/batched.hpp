#pragma once
// Batched LU (GETRF), inverse (GETRF + GETRI), GETRS and GESV of many small matrices on the CPU:
// LAPACK's algorithms on each matrix of a range [first, last) of the batch, on the calling thread
// (the unblocked GETF2 and GETRI steps written out, a LAPACK call costing more than the work at
// these orders; GETRS is LAPACK's). The caller
// spreads ranges over cores (tessera::batched does, as tasks on the runtime) and keeps BLAS
// single-threaded inside them. These are the reference the GPU kernels are compared with.
//
// Conventions are LAPACK's per matrix: ipiv holds n 1-based pivots per matrix (matrix b's at
// ipiv + b*n), info one value per matrix (0, or the first k with U(k,k) exactly zero); a singular
// matrix does not stop the batch. For such a matrix the inverse is left as GETRF's factors (GETRI
// stops at the zero pivot) and GESV leaves B unchanged.
namespace tessera::kernels {

// Where the matrices of a batch are: matrix b at ptrs[b] when ptrs is set (array of pointers),
// else at data + b * stride; column-major with leading dimension ld. The GPU kernels take the same
// description of device memory (tessera/kernels_gpu/gpu_batched.hpp).
template <class T>
struct batch_ref {
  T* data = nullptr;
  long long stride = 0;
  T* const* ptrs = nullptr;
  int ld = 0;
  T* matrix(long long b) const { return ptrs ? ptrs[b] : data + b * stride; }
};

// In place: A = P L U for matrices first..last-1.
template <class T>
void cpu_batched_getrf(int n, batch_ref<T> a, int* ipiv, int* info, long long first, long long last);

// ainv := A^-1 (ainv may be a: in place).
template <class T>
void cpu_batched_inverse(int n, batch_ref<T> a, batch_ref<T> ainv, int* info, long long first,
                         long long last);

// B := A^-1 B (n x nrhs each) from GETRF's factors and pivots.
template <class T>
void cpu_batched_getrs(int n, int nrhs, batch_ref<T> lu, const int* ipiv, batch_ref<T> b,
                       long long first, long long last);

// A := its LU factors, B := A^-1 B (LAPACK's GESV).
template <class T>
void cpu_batched_gesv(int n, int nrhs, batch_ref<T> a, int* ipiv, batch_ref<T> b, int* info,
                      long long first, long long last);

}  // namespace tessera::kernels
