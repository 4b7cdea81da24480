// QR updating on the GPU (tessera/qr/update.hpp, target::gpu: Q, R and Q^T B in device memory):
// the same checks as the CPU test (tests/qr_update_checks.hpp). Skipped without a CUDA device.
#include "gpu_test_util.hpp"
#include "qr_update_checks.hpp"

namespace upd = tessera::testing::update;
using tessera::qr::target;

TEST_CASE("qr update, GPU: every update type, position, size, shape and Q mode (double)") {
  upd::every_update<double>(target::gpu);
}
TEST_CASE("qr update, GPU: every update type, position, size, shape and Q mode (float)") {
  upd::every_update<float>(target::gpu);
}
TEST_CASE("qr update, GPU: 200 random updates keep the residuals small") {
  upd::drift<double>(target::gpu);
  upd::drift<float>(target::gpu);
}
TEST_CASE("qr update, GPU: bad arguments throw and leave the factorization unchanged") {
  upd::bad_arguments<double>(target::gpu);
  upd::bad_arguments<float>(target::gpu);
}
TEST_CASE("qr update, GPU: larger blocks, wide strips") { upd::larger_blocks(target::gpu); }
// In single from 6000 x 2250 the third rank-k update raced on the lanes (W read on lane R while
// lane Q moved Q's columns through the same buffer) once R's rotations took one kernel.
TEST_CASE("qr update, GPU: the sequence that failed the tool's check in single (2026-11-29)") {
  upd::tool_sequence<float>(target::gpu, 6000, 2250);
  upd::tool_sequence<double>(target::gpu, 4000, 1500);
}
TEST_CASE("qr update, GPU: deleting columns without Q at the default panel widths") {
  upd::deletions_without_q<double>(target::gpu);
  upd::deletions_without_q<float>(target::gpu);
}
TEST_CASE("qr update, GPU: adding rows without Q at the default panel width") {
  upd::insertions_without_q<double>(target::gpu);
  upd::insertions_without_q<float>(target::gpu);
}
TEST_CASE("qr update, GPU: adding rows with Q's new columns past 32 MB (lane Q's groups of 8)") {
  upd::insertions_with_large_q<double>(target::gpu);
  upd::insertions_with_large_q<float>(target::gpu);
}
TEST_CASE("qr update, GPU: adding more rows than the persistent kernel takes") {
  upd::insertions_past_the_kernel<double>(target::gpu);
  upd::insertions_past_the_kernel<float>(target::gpu);
}
TEST_CASE("qr update, GPU: deleting 200 to 600 columns with Q (both forms)") {
  upd::deletions_with_wide_panels<double>(target::gpu);
  upd::deletions_with_wide_panels<float>(target::gpu);
}
TEST_CASE("qr update, GPU: deleting more than 32 columns, then the updates that read R below its columns") {
  upd::wide_deletion_then<double>(target::gpu);
  upd::wide_deletion_then<float>(target::gpu);
}

namespace {

// A device copy of a host matrix (same ld), freed at scope end.
template <class T>
struct device_copy {
  T* p = nullptr;
  int r = 0, c = 0, ld = 1;
  explicit device_copy(const upd::mat<T>& m) : r(m.r), c(m.c), ld(m.ld()) {
    tessera::testing::gpu::cuda_ok(cudaMalloc(&p, sizeof(T) * m.a.size()));
    tessera::testing::gpu::cuda_ok(cudaMemcpy(p, m.a.data(), sizeof(T) * m.a.size(), cudaMemcpyHostToDevice));
  }
  ~device_copy() { cudaFree(p); }
  device_copy(const device_copy&) = delete;
  device_copy& operator=(const device_copy&) = delete;
  tessera::qr::matrix_ref<const T> cref() const { return tessera::qr::device<const T>(p, r, c, ld); }
};

template <class T>
upd::mat<T> r_of(const tessera::qr::updatable<T>& u) {
  upd::mat<T> R(u.cols(), u.cols());
  u.copy_r(R.ref());
  return R;
}

// Updates given their new rows and columns in device memory: the same factors as with the same
// data in host memory (the same kernels run on it), within the checks' residuals; a NaN or Inf
// there is refused by name before anything changes, and a CPU factorization refuses device memory.
template <class T>
void device_inputs() {
  upd::problem<T> p;
  auto uh = upd::make<T>(p, 300, 120, 2, tessera::qr::q_mode::full, target::gpu, 0);
  tessera::qr::update_options o;
  o.on = target::gpu;
  auto ud = tessera::qr::updatable<T>::from_matrix(p.A.cref(), p.B.cref(), o);
  auto same_r = [&](const char* what) {
    const auto Rh = r_of(uh), Rd = r_of(ud);
    double diff = 0;
    for (std::size_t i = 0; i < Rh.a.size(); ++i) diff = std::max(diff, std::abs(double(Rh.a[i]) - double(Rd.a[i])));
    INFO(what << ": max |R(host inputs) - R(device inputs)| = " << diff << ", ||R||_F = " << upd::fro(Rh));
    CHECK(diff <= 10 * upd::eps<T>() * upd::fro(Rh));
    upd::check_factors(ud, p, what);
  };
  {
    auto U = upd::random<T>(40, 120), BU = upd::random<T>(40, 2);
    device_copy<T> dU(U), dBU(BU);
    uh.insert_rows(100, U.cref(), BU.cref());
    ud.insert_rows(100, dU.cref(), dBU.cref());
    p.A = upd::rows_insert(p.A, 100, U);
    p.B = upd::rows_insert(p.B, 100, BU);
    same_r("40 rows at 100 from device memory");
  }
  {
    auto U = upd::random<T>(340, 7);
    device_copy<T> dU(U);
    uh.insert_columns(30, U.cref());
    ud.insert_columns(30, dU.cref());
    p.A = upd::cols_insert(p.A, 30, U);
    same_r("7 columns at 30 from device memory");
  }
  {
    auto U = upd::random<T>(340, 3), V = upd::random<T>(127, 3);
    device_copy<T> dU(U), dV(V);
    uh.rank_update(U.cref(), V.cref());
    ud.rank_update(dU.cref(), dV.cref());
    tessera::blas::gemm(CblasNoTrans, CblasTrans, p.A.r, p.A.c, 3, T(1), U.data(), U.ld(), V.data(), V.ld(), T(1),
                        p.A.data(), p.A.ld());
    same_r("a rank-3 update from device memory");
  }
  const auto R0 = r_of(ud);
  auto msg = [](auto&& f) { return tessera::testing::invalid_message(f); };
  auto U = upd::random<T>(5, 127), BU = upd::random<T>(5, 2);
  U(3, 100) = std::nan("");
  {
    device_copy<T> dU(U), dBU(BU);
    const auto m = msg([&] { ud.insert_rows(0, dU.cref(), dBU.cref()); });
    INFO(m);
    CHECK(m.find("u(3, 100)") != std::string::npos);
    CHECK(m.find("NaN") != std::string::npos);
  }
  U(3, 100) = 0;
  BU(4, 1) = T(1) / T(0);
  {
    device_copy<T> dU(U), dBU(BU);
    const auto m = msg([&] { ud.insert_rows(0, dU.cref(), dBU.cref()); });
    INFO(m);
    CHECK(m.find("bu(4, 1)") != std::string::npos);
    CHECK(m.find("Inf") != std::string::npos);
  }
  auto RU = upd::random<T>(340, 2), RV = upd::random<T>(127, 2);
  RV(126, 1) = -T(1) / T(0);
  {
    device_copy<T> dU(RU), dV(RV);
    CHECK(msg([&] { ud.rank_update(dU.cref(), dV.cref()); }).find("v(126, 1)") != std::string::npos);
  }
  CHECK(r_of(ud).a == R0.a);
  upd::check_factors(ud, p, "after the refused device inputs");
  // A CPU factorization takes host memory only.
  upd::problem<T> pc;
  auto uc = upd::make<T>(pc, 30, 12, 1, tessera::qr::q_mode::full, target::cpu, 0);
  auto V = upd::random<T>(3, 12), BV = upd::random<T>(3, 1);
  device_copy<T> dV(V), dBV(BV);
  CHECK(msg([&] { uc.insert_rows(0, dV.cref(), dBV.cref()); }).find("host memory") != std::string::npos);
}

}  // namespace

TEST_CASE("qr update, GPU: new rows and columns in device memory") {
  device_inputs<double>();
  device_inputs<float>();
}
