#pragma once
// Moving matrices between host and device memory for the front door, which accepts either and
// runs where the factors are: column-major copies and a staging buffer in the memory wanted.
#include <cstddef>
#include <vector>

#include "tessera/qr/factorize.hpp"
#include "tessera/sched/memory.hpp"

namespace tessera::qr::detail {

// dst := src, both m x n column-major, each in its own memory. Waits for the copy.
template <class T>
void copy_matrix(int m, int n, const T* src, int lds, memory from, T* dst, int ldd, memory to);

// The m x n identity (ones on the diagonal, zeros elsewhere) into a.
template <class T>
void set_identity(matrix_ref<T> a);

// Zeros below (above) the diagonal of a.
template <class T>
void zero_below_diagonal(matrix_ref<T> a);
template <class T>
void zero_above_diagonal(matrix_ref<T> a);

// A view of c in the memory `want`: c itself when it is there already, else a copy of it
// (copy_in) in a buffer of its own that finish() copies back (copy_out). Names c's argument in errors.
template <class T>
class staged {
 public:
  // rt allocates a device buffer when one is needed.
  staged(runtime& rt, matrix_ref<T> c, memory want, bool copy_in);
  // An input only: copied in when it is elsewhere, never written (finish() does nothing).
  staged(runtime& rt, matrix_ref<const T> c, memory want);
  matrix_ref<T> view() const noexcept { return _view; }
  void finish();  // copies the buffer back into c when c was staged

 private:
  matrix_ref<T> _user, _view;
  bool _read_only = false;
  std::vector<T> _host;
  device_buffer _device;
};

// Page-locks a host range while a GPU factorization copies it (cudaHostRegister), so that the
// runtime's copies of it are asynchronous: from pageable memory each is staged by the driver and
// holds the runtime's GPU thread until it is done. Memory already page-locked, and memory CUDA
// will not register, are left as they are. Does nothing without CUDA.
class host_registration {
 public:
  host_registration(const void* p, std::size_t bytes) noexcept;
  ~host_registration();
  host_registration(const host_registration&) = delete;
  host_registration& operator=(const host_registration&) = delete;
  bool registered() const noexcept { return _p != nullptr; }

 private:
  void* _p = nullptr;
};

}  // namespace tessera::qr::detail
