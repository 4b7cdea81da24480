#pragma once
// What the front door (batched.cpp) hands to the CPU and GPU paths: one operation, checked.
#include "tessera/batched/batched.hpp"
#include "tessera/kernels_cpu/batched.hpp"

namespace tessera::batched::detail {

enum class op { lu, inverse, getrs, gesv };

template <class T>
struct job {
  op what = op::lu;
  const char* fn = "";  // the caller's name for messages
  int n = 0, nrhs = 0;
  long long count = 0;
  batch<T> a;           // A, or GETRS's LU
  batch<T> b;           // the inverse (op::inverse) or B (getrs, gesv)
  int* ipiv = nullptr;  // GETRS reads it only
  int* info = nullptr;
};

template <class T>
kernels::batch_ref<T> ref(const batch<T>& m) {
  return {m.data, m.stride, m.pointers, m.ld};
}

// The operation on matrices [first, last) on this thread (LAPACK's algorithms per matrix; the caller holds
// OpenBLAS to one thread).
template <class T>
void cpu_range(const job<T>& j, long long first, long long last);

// The GPU path (gpu.cpp; without CUDA it throws std::logic_error).
template <class T>
void run_gpu(const job<T>& j, const options& o, report& r);

}  // namespace tessera::batched::detail
