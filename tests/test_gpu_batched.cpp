// tessera::batched on the GPU: the register-resident kernels on device-resident batches (every
// order 1..32, both precisions, strided, pointer and packed layouts, counts that leave the last block partly idle), the
// streamed path for host-resident batches (small chunks forced by a memory cap, equal bit for bit
// to the device-resident run), singular and non-finite matrices, and out-of-memory. The same cases
// as test_batched_cpu.cpp; pivots and info are compared with LAPACK's on each matrix.
#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>

#include "batched_cases.hpp"
#include "gpu_test_util.hpp"

#include "tessera/kernels_gpu/gpu_batched.hpp"
#include "tessera/sched/memory.hpp"

namespace tb = tessera::testing::batched;
namespace bt = tessera::batched;
using tessera::testing::gpu::cuda_ok;

namespace {

tb::place device_place() {
  tb::place p;
  p.where = bt::memory::device;
  p.name = "gpu, device-resident";
  p.alloc = [](std::size_t bytes) {
    void* q = nullptr;
    cuda_ok(cudaMalloc(&q, std::max<std::size_t>(bytes, 1)));
    return q;
  };
  p.release = [](void* q) { cudaFree(q); };
  p.upload = [](void* d, const void* s, std::size_t b) { cuda_ok(cudaMemcpy(d, s, b, cudaMemcpyHostToDevice)); };
  p.download = [](void* d, const void* s, std::size_t b) { cuda_ok(cudaMemcpy(d, s, b, cudaMemcpyDeviceToHost)); };
  return p;
}

// Host-resident, streamed through the GPU with a cap that allows `per_chunk` matrices a chunk.
tb::place streamed_place(int n, int nrhs, std::size_t es, long long per_chunk) {
  tb::place p;
  p.where = bt::memory::host;
  p.opts.on = bt::target::gpu;
  p.opts.depth = 3;
  p.opts.threads = 4;
  p.opts.cpu_share = 0;  // every matrix through the GPU (the CPUs' share has its own cases)
  // The library gives each of a chunk's (at most 4) sections up to 256 bytes of alignment.
  p.opts.device_memory_cap = 3 * (std::size_t(per_chunk) * bt::staging_bytes_per_matrix(n, nrhs, es) + 1024);
  p.name = "gpu, streamed";
  return p;
}

// n elements of page-locked host memory.
template <class T>
struct pinned_array {
  T* p = nullptr;
  explicit pinned_array(std::size_t n) {
    cuda_ok(cudaMallocHost(reinterpret_cast<void**>(&p), sizeof(T) * std::max<std::size_t>(n, 1)));
  }
  ~pinned_array() { cudaFreeHost(p); }
  pinned_array(const pinned_array&) = delete;
  pinned_array& operator=(const pinned_array&) = delete;
};

}  // namespace

TEST_CASE_TEMPLATE("batched on the GPU, device-resident: every n, both layouts, against LAPACK", T, float, double) {
  const tb::place p = device_place();
  for (int n = 1; n <= bt::max_n; ++n) {
    // Not a multiple of the matrices a block takes, so the last block is partly idle.
    const long long count = 2LL * tessera::kernels::gpu_batched_per_block<T>(n) + 3;
    for (tb::layout lay : {tb::layout::strided, tb::layout::pointers, tb::layout::packed}) {
      tb::lu_case<T>(p, lay, n, count, false);
      tb::inverse_case<T>(p, lay, n, count, lay != tb::layout::strided);
      tb::solve_case<T>(p, lay, n, 1 + n % 3, count, false);
    }
    // Many right-hand sides (the column kernels, more columns than a group has lanes).
    tb::solve_case<T>(p, tb::layout::pointers, n, 40, count, false);
  }
}

// The substitution's last pivot below the safe minimum, by the row kernels (one right-hand side)
// and the column kernels (40).
TEST_CASE_TEMPLATE("batched on the GPU: solves whose last pivot is below the safe minimum", T, float, double) {
  const tb::place p = device_place();
  for (int n : {1, 2, 5, 12, 17, 32})
    for (int nrhs : {1, 40}) tb::solve_tiny_pivot_case<T>(p, n, nrhs, 37);
}

TEST_CASE_TEMPLATE("batched on the GPU: singular matrices get LAPACK's info, the batch goes on", T, float, double) {
  const tb::place p = device_place();
  for (int n = 1; n <= bt::max_n; ++n) tb::singular_case<T>(p, n);
}

// Every entry below the safe minimum / 8, so that 1 / pivot overflows: the multipliers must be
// LAPACK's quotients x / pivot (xGETF2), not x times an infinite reciprocal. Each LU path: a thread
// (n = 2), shuffles (5, 17, 32), shared memory (12).
TEST_CASE_TEMPLATE("batched on the GPU: pivots below the safe minimum divide, as LAPACK's GETF2", T, float, double) {
  const tb::place p = device_place();
  for (int n : {2, 5, 12, 17, 32}) tb::lu_case<T>(p, tb::layout::strided, n, 37, false, std::numeric_limits<T>::min() / 8);
}

// Entries near the ends of the range (2^+-1000 in double, 2^+-100 in float), so that a matrix's
// inverse is as far from one as the matrix: each inverse kernel (a thread, sub-warp groups, rows,
// half rows, the tensor-core blocks with a partial last block) keeps its residual. A blocked update
// that formed the pivot rows as C + (D^-1 - I) C would lose them to cancellation here.
TEST_CASE_TEMPLATE("batched on the GPU: inverses of matrices scaled near the ends of the range", T, float, double) {
  const tb::place p = device_place();
  const int e = std::is_same_v<T, double> ? 1000 : 100;
  for (int sign : {-1, 1})
    for (int n : {2, 5, 12, 17, 20, 24, 25, 26, 31, 32})
      tb::inverse_case<T>(p, tb::layout::strided, n, 37, sign > 0, T(std::ldexp(1.0, sign * e)));
}

TEST_CASE_TEMPLATE("batched on the GPU: NaN and Inf finish and stay in their matrix", T, float, double) {
  const tb::place p = device_place();
  for (int n : {1, 2, 4, 13, 16, 31, 32}) tb::non_finite_case<T>(p, n);
}

TEST_CASE("batched on the GPU: counts 0 and 1") {
  const tb::place p = device_place();
  for (int n : {1, 7, 32}) {
    tb::lu_case<double>(p, tb::layout::strided, n, 0, true);
    tb::lu_case<double>(p, tb::layout::pointers, n, 1, true);
    tb::inverse_case<float>(p, tb::layout::strided, n, 1, false);
    tb::solve_case<double>(p, tb::layout::strided, n, 2, 1, true);
  }
}

TEST_CASE_TEMPLATE("batched on the GPU, host-resident: streamed in chunks, each operation and layout", T, float, double) {
  for (int n : {1, 5, 8, 16, 23, 32})
    for (tb::layout lay : {tb::layout::strided, tb::layout::pointers, tb::layout::packed}) {
      const tb::place p = streamed_place(n, 2, sizeof(T), 7);
      tb::lu_case<T>(p, lay, n, 100, false);
      tb::inverse_case<T>(p, lay, n, 100, lay == tb::layout::strided);
      tb::solve_case<T>(p, lay, n, 2, 100, false);
    }
  for (int n : {3, 32}) tb::singular_case<T>(streamed_place(n, 2, sizeof(T), 5), n);
}

// The device-resident inverse and LU of a batch (one launch each): what every streamed path must
// equal bit for bit (packed, as placed::get returns them).
template <class T>
struct in_memory {
  std::vector<T> lu, inv;
  std::vector<int> piv, info, info_inv;
  in_memory(const std::vector<T>& a0, int n, long long count, tb::layout l) {
    const tb::place dp = device_place();
    tb::placed<T> da(dp, n, n, count, l), dx(dp, n, n, count, l);
    da.put(a0);
    tb::ints dpiv(dp, std::size_t(count * n)), dinfo(dp, std::size_t(count)), dinfo2(dp, std::size_t(count));
    bt::inverse(da.batch(), dx.batch(), dinfo2.data(), dp.opts);
    bt::lu(da.batch(), dpiv.data(), dinfo.data(), dp.opts);
    lu = da.get();
    inv = dx.get();
    piv = dpiv.get();
    info = dinfo.get();
    info_inv = dinfo2.get();
  }
};

// The inverse and LU of a0 through host place hp, checked against ref; their reports.
template <class T>
std::pair<bt::report, bt::report> check_streamed(const tb::place& hp, const std::vector<T>& a0, int n, long long count,
                                                 tb::layout l, const in_memory<T>& ref) {
  tb::placed<T> ha(hp, n, n, count, l), hx(hp, n, n, count, l);
  ha.put(a0);
  tb::ints hpiv(hp, std::size_t(count * n)), hinfo(hp, std::size_t(count)), hinfo2(hp, std::size_t(count));
  const bt::report ri = bt::inverse(ha.batch(), hx.batch(), hinfo2.data(), hp.opts);
  const bt::report rl = bt::lu(ha.batch(), hpiv.data(), hinfo.data(), hp.opts);
  CHECK(ha.get() == ref.lu);
  CHECK(hx.get() == ref.inv);
  CHECK(hpiv.get() == ref.piv);
  CHECK(hinfo.get() == ref.info);
  CHECK(hinfo2.get() == ref.info_inv);
  return {ri, rl};
}

TEST_CASE_TEMPLATE("batched on the GPU: a chunked batch equals the in-memory one bit for bit", T, float, double) {
  for (int n : {4, 17, 32}) {
    CAPTURE(n);
    const long long count = 1000;
    const auto a0 = tb::random_batch<T>(n, n, count, 9000u + std::uint64_t(n));
    const in_memory<T> ref(a0, n, count, tb::layout::strided);
    // Host-resident, through the GPU in chunks of 13 matrices.
    const auto [ri, rl] = check_streamed(streamed_place(n, 0, sizeof(T), 13), a0, n, count, tb::layout::strided, ref);
    CHECK(rl.chunks >= count / 13);
    CHECK(ri.chunks >= count / 13);
    CHECK(rl.matrices_per_chunk <= 13);
    CHECK(rl.h2d_bytes >= std::size_t(count) * n * n * sizeof(T));
  }
}

// Packed matrices lie back to back, so a chunk is packed and unpacked in one copy each way: that
// path, with chunks sized by options::chunk_bytes (not the memory cap) and a last partial chunk.
TEST_CASE_TEMPLATE("batched on the GPU: packed batch in chunks of chunk_bytes equals the in-memory one", T, float,
                   double) {
  for (int n : {2, 7, 32}) {
    CAPTURE(n);
    const long long count = 777;
    const auto a0 = tb::random_batch<T>(n, n, count, 7100u + std::uint64_t(n));
    const in_memory<T> ref(a0, n, count, tb::layout::packed);
    tb::place hp;
    hp.where = bt::memory::host;
    hp.opts.on = bt::target::gpu;
    hp.opts.depth = 4;
    hp.opts.threads = 4;
    hp.opts.cpu_share = 0;
    const long long per = 19;
    hp.opts.chunk_bytes = std::size_t(per) * bt::staging_bytes_per_matrix(n, 0, sizeof(T));
    const auto [ri, rl] = check_streamed(hp, a0, n, count, tb::layout::packed, ref);
    CHECK(rl.matrices_per_chunk == per);
    CHECK(ri.matrices_per_chunk == per);
    CHECK(rl.chunks == (count + per - 1) / per);
    CHECK_FALSE(rl.copied_in_place);  // pageable
  }
}

// A packed batch in pinned memory is copied straight between it and the GPU (no staging of the
// matrices): LU, the inverse in place and out of place, equal bit for bit to the device-resident
// run; an output in pageable memory takes the staged path, equal too.
TEST_CASE_TEMPLATE("batched on the GPU: a packed batch in pinned memory streams in place, equal to the in-memory one", T,
                   float, double) {
  using pinned = pinned_array<T>;
  for (int n : {3, 17, 32}) {
    CAPTURE(n);
    const long long count = 1001, per = 37;
    const std::size_t elems = std::size_t(count) * std::size_t(n) * std::size_t(n);
    const auto a0 = tb::random_batch<T>(n, n, count, 6100u + std::uint64_t(n));
    const in_memory<T> ref(a0, n, count, tb::layout::packed);
    const std::vector<T>&inv = ref.inv, &lu = ref.lu;
    bt::options o;
    o.on = bt::target::gpu;
    o.depth = 4;
    o.threads = 2;
    o.cpu_share = 0;
    o.chunk_bytes = std::size_t(per) * bt::staging_bytes_per_matrix(n, 0, sizeof(T));
    // The batch as the tests lay it out: matrix b's column j at a0[(b * n + j) * n ...] (packed).
    pinned a(elems), x(elems);
    std::vector<int> piv(std::size_t(count * n)), info(std::size_t(count), -1), info2(std::size_t(count), -1);
    std::copy(a0.begin(), a0.end(), a.p);
    const bt::report ri = bt::inverse(bt::strided(a.p, n, count), bt::strided(x.p, n, count), info2.data(), o);
    CHECK(ri.copied_in_place);
    CHECK(ri.chunks == (count + per - 1) / per);
    CHECK(std::equal(x.p, x.p + elems, inv.begin()));
    CHECK(std::equal(a.p, a.p + elems, a0.begin()));  // the input is left as it was
    CHECK(info2 == ref.info_inv);
    const bt::report rl = bt::lu(bt::strided(a.p, n, count), piv.data(), info.data(), o);
    CHECK(rl.copied_in_place);
    CHECK(rl.h2d_bytes >= elems * sizeof(T));
    CHECK(std::equal(a.p, a.p + elems, lu.begin()));
    CHECK(piv == ref.piv);
    CHECK(info == ref.info);
    // In place.
    std::copy(a0.begin(), a0.end(), a.p);
    CHECK(bt::inverse(bt::strided(a.p, n, count), bt::strided(a.p, n, count), info2.data(), o).copied_in_place);
    CHECK(std::equal(a.p, a.p + elems, inv.begin()));
    // The output in pageable memory: staged, the same numbers.
    std::copy(a0.begin(), a0.end(), a.p);
    std::vector<T> y(elems);
    const bt::report rs = bt::inverse(bt::strided(a.p, n, count), bt::strided(y.data(), n, count), info2.data(), o);
    CHECK_FALSE(rs.copied_in_place);
    CHECK(y == inv);
  }
}

// The CPUs' share (options::cpu_share): the batch's last matrices by LAPACK in the caller's memory
// while the rest streams through the GPU; each part equal bit for bit to its own path's run (the
// device-resident kernels; the CPU path), staged and in place, fixed, all and measured shares.
TEST_CASE_TEMPLATE("batched on the GPU: the CPUs' share of a host batch equals each path's own run", T, float, double) {
  for (int n : {5, 17, 32}) {
    CAPTURE(n);
    const long long count = 1500;
    const std::size_t nn = std::size_t(n) * std::size_t(n), elems = std::size_t(count) * nn;
    const auto a0 = tb::random_batch<T>(n, n, count, 5300u + std::uint64_t(n));
    const in_memory<T> gpu(a0, n, count, tb::layout::packed);
    std::vector<T> clu(a0), cinv(elems);
    std::vector<int> cpiv(static_cast<std::size_t>(count * n)), cinfo(static_cast<std::size_t>(count)),
        cinfo2(static_cast<std::size_t>(count));
    bt::options cpu;
    cpu.on = bt::target::cpu;
    cpu.threads = 2;
    bt::inverse(bt::strided(clu.data(), n, count), bt::strided(cinv.data(), n, count), cinfo2.data(), cpu);
    bt::lu(bt::strided(clu.data(), n, count), cpiv.data(), cinfo.data(), cpu);
    for (bool pin : {false, true})
      for (double share : {0.37, 1.0, -1.0}) {
        CAPTURE(pin);
        CAPTURE(share);
        bt::options o;
        o.on = bt::target::gpu;
        o.depth = 4;
        o.threads = 4;
        o.cpu_share = share;
        o.chunk_bytes = std::size_t(37) * bt::staging_bytes_per_matrix(n, 0, sizeof(T));
        pinned_array<T> pa(pin ? elems : 0), px(pin ? elems : 0);
        std::vector<T> va(pin ? 0 : elems), vx(pin ? 0 : elems);
        T* a = pin ? pa.p : va.data();
        T* x = pin ? px.p : vx.data();
        std::copy(a0.begin(), a0.end(), a);
        std::vector<int> piv(std::size_t(count * n)), info(std::size_t(count), -1), info2(std::size_t(count), -1);
        // The part [0, split) is the GPU's, [split, count) the CPUs'; pivots n a matrix.
        auto same = [&](const T* got, const std::vector<T>& g, const std::vector<T>& c, long long split) {
          const std::size_t at = std::size_t(split) * nn;
          return std::equal(got, got + at, g.begin()) && std::equal(got + at, got + elems, c.begin() + std::ptrdiff_t(at));
        };
        auto same_ints = [](const std::vector<int>& got, const std::vector<int>& g, const std::vector<int>& c,
                            std::size_t at) {
          return std::equal(got.begin(), got.begin() + std::ptrdiff_t(at), g.begin()) &&
                 std::equal(got.begin() + std::ptrdiff_t(at), got.end(), c.begin() + std::ptrdiff_t(at));
        };
        const bt::report ri = bt::inverse(bt::strided(a, n, count), bt::strided(x, n, count), info2.data(), o);
        CHECK(ri.copied_in_place == pin);
        if (share > 0) CHECK(ri.cpu_matrices == std::llround(share * double(count)));
        CHECK(ri.cpu_matrices <= count);
        CHECK(ri.chunks == (count - ri.cpu_matrices + 36) / 37);
        const long long si = count - ri.cpu_matrices;
        CHECK(same(x, gpu.inv, cinv, si));
        CHECK(same_ints(info2, gpu.info_inv, cinfo2, std::size_t(si)));
        CHECK(std::equal(a, a + elems, a0.begin()));
        const bt::report rl = bt::lu(bt::strided(a, n, count), piv.data(), info.data(), o);
        const long long sl = count - rl.cpu_matrices;
        CHECK(same(a, gpu.lu, clu, sl));
        CHECK(same_ints(piv, gpu.piv, cpiv, std::size_t(sl * n)));
        CHECK(same_ints(info, gpu.info, cinfo, std::size_t(sl)));
      }
  }
}

TEST_CASE("batched on the GPU: a memory cap too small for one matrix a chunk is refused before allocating") {
  std::vector<double> a(32 * 32 * 4);
  std::vector<int> ipiv(32 * 4), info(4);
  bt::options o;
  o.on = bt::target::gpu;
  o.device_memory_cap = 1000;
  CHECK_THROWS_AS(bt::lu(bt::strided(a.data(), 32, 4), ipiv.data(), info.data(), o), tessera::out_of_memory);
  // The same batch with room for it runs.
  o.device_memory_cap = 0;
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = double((i * 7919) % 17) - 8 + (i % 33 == 0 ? 40 : 0);
  CHECK_NOTHROW(bt::lu(bt::strided(a.data(), 32, 4), ipiv.data(), info.data(), o));
}

TEST_CASE("batched GPU kernels: bad arguments name the argument") {
  using tessera::testing::invalid_message;
  tessera::kernels::gpu_batch<double> a{nullptr, 0, nullptr, 4};
  int* p = nullptr;
  CHECK(invalid_message([&] { tessera::kernels::gpu_batched_getrf(33, a, p, p, 1, nullptr); }) ==
        "tessera::kernels::gpu_batched_getrf: n = 33: must be <= gpu_batched_max_n (= 32)");
  CHECK(invalid_message([&] { tessera::kernels::gpu_batched_getrf(4, a, p, p, 1, nullptr); }) ==
        "tessera::kernels::gpu_batched_getrf: a is null");
  CHECK(invalid_message([&] { tessera::kernels::gpu_batched_inverse(4, a, a, p, -1, nullptr); }) ==
        "tessera::kernels::gpu_batched_inverse: count = -1: must be >= 0");
}
