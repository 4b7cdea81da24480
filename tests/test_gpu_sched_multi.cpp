// The scheduler's GPU backend with several logical GPUs (runtime_options::gpus): placement, copies
// between GPUs (direct, and through pinned host memory), hazards across GPUs, errors from GPU 1,
// traces. Logical GPU i is CUDA device i mod (devices present): on a one-GPU machine all are device
// 0, so the paths run there; on several GPUs the copies are real peer copies. Skips where there is
// no CUDA device.
#include <doctest/doctest.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "tessera/sched.hpp"
#include "tessera/sched/cuda.hpp"
#include "tessera/sched/detail/testing.hpp"
#include "test_util.hpp"

namespace {
const bool skip_without_device = tessera::testing::skip_unless(tessera::runtime::gpu_available());

void cuda_ok(cudaError_t e) {
  if (e != cudaSuccess) throw std::runtime_error(cudaGetErrorString(e));
}

// x := alpha * x on the task's GPU.
void gpu_scale(tessera::task_context& ctx, tessera::handle h, int n, double alpha) {
  if (cublasDscal(tessera::blas_of(ctx), n, &alpha, tessera::device_ptr<double>(ctx, h), 1) != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error("cublasDscal failed");
}

// y := y + alpha * x on the task's GPU.
void gpu_axpy(tessera::task_context& ctx, tessera::handle x, tessera::handle y, int n, double alpha) {
  if (cublasDaxpy(tessera::blas_of(ctx), n, &alpha, tessera::device_ptr<double>(ctx, x), 1,
                  tessera::device_ptr<double>(ctx, y), 1) != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error("cublasDaxpy failed");
}

// x := v everywhere, without reading x (a write-only access): from a host vector the body keeps.
void gpu_fill(tessera::task_context& ctx, tessera::handle h, const std::vector<double>& v) {
  cuda_ok(cudaMemcpyAsync(tessera::device_ptr<double>(ctx, h), v.data(), v.size() * sizeof(double),
                          cudaMemcpyHostToDevice, tessera::stream_of(ctx)));
  cuda_ok(cudaStreamSynchronize(tessera::stream_of(ctx)));  // v may go once the body returns
}

// CUDA devices for `count` logical GPUs: i mod the devices present.
std::vector<int> devices(int count) {
  int present = 1;
  cuda_ok(cudaGetDeviceCount(&present));
  std::vector<int> ids;
  for (int i = 0; i < count; ++i) ids.push_back(i % present);
  return ids;
}

// Two workers and `count` logical GPUs of `streams` streams each.
tessera::runtime_options on_gpus(int count, unsigned streams, bool through_host = false) {
  tessera::runtime_options o{.workers = 2, .gpu_streams = streams};
  o.gpus = devices(count);
  o.gpu_copies_through_host = through_host;
  return o;
}

// The ways several logical GPUs are tested here: two and three, copies direct or through the host.
std::vector<tessera::runtime_options> configs() {
  tessera::runtime_options two{.workers = 3, .gpu_streams = 2};
  two.gpus = devices(2);
  tessera::runtime_options staged = two;
  staged.gpu_copies_through_host = true;
  tessera::runtime_options three{.workers = 2, .gpu_streams = 1, .gpu_urgent_priority = 2};
  three.gpus = devices(3);
  tessera::runtime_options three_staged = three;
  three_staged.gpu_copies_through_host = true;
  return {two, staged, three, three_staged};
}
}  // namespace

TEST_CASE("two logical GPUs: RAW across GPUs copies the datum between them, checked by content") {
  (void)skip_without_device;
  constexpr int n = 3000;
  for (bool through_host : {false, true}) {
    CAPTURE(through_host);
    const tessera::runtime_options o = on_gpus(2, 2, through_host);
    tessera::runtime rt(o);
    REQUIRE(rt.gpus() == 2);
    std::vector<double> x(n), y(n, 1.0);
    for (int i = 0; i < n; ++i) x[i] = i;
    auto hx = rt.register_data(x.data(), n * sizeof(double));
    auto hy = rt.register_data(y.data(), n * sizeof(double));
    unsigned ran_on[2] = {9, 9};
    rt.task([&, hx](tessera::task_context& ctx) { ran_on[0] = ctx.gpu(); gpu_scale(ctx, hx, n, 2.0); })
        .gpu(0).read_write(hx).submit();
    // On GPU 1: y += 3 x, reading GPU 0's x.
    rt.task([&, hx, hy](tessera::task_context& ctx) { ran_on[1] = ctx.gpu(); gpu_axpy(ctx, hx, hy, n, 3.0); })
        .gpu(1).read(hx).read_write(hy).submit();
    rt.task([] {}).read(hy).read(hx).submit();
    rt.wait_all();
    CHECK(ran_on[0] == 0);
    CHECK(ran_on[1] == 1);
    for (int i = 0; i < n; ++i) REQUIRE(y[i] == 1.0 + 6.0 * i);
    for (int i = 0; i < n; ++i) REQUIRE(x[i] == 2.0 * i);
    const auto st = rt.transfers();
    CHECK(st.peer_copies == 1);  // x, GPU 0 -> GPU 1; y came from the host
    CHECK(st.peer_bytes == n * sizeof(double));
    int peer = 1;  // the same device, or peer access between the two
    if (o.gpus[0] != o.gpus[1]) cuda_ok(cudaDeviceCanAccessPeer(&peer, o.gpus[1], o.gpus[0]));
    CHECK(st.staged_peer_copies == (through_host || !peer ? 1u : 0u));
    CHECK(st.h2d_copies == 2);  // x to GPU 0, y to GPU 1
  }
}

TEST_CASE("two logical GPUs: WAR and WAW across GPUs") {
  constexpr int n = 2000;
  for (const auto& o : configs()) {
    CAPTURE(o.gpus.size());
    CAPTURE(o.gpu_copies_through_host);
    tessera::runtime rt(o);
    std::vector<double> x(n, 1.0), y(n, 0.0), z(n, 0.0), a(n, 5.0), b(n, 7.0);
    auto hx = rt.register_data(x.data(), n * sizeof(double));
    auto hy = rt.register_data(y.data(), n * sizeof(double));
    auto hz = rt.register_data(z.data(), n * sizeof(double));
    // WAR: GPU 1 reads x (x = 1), then GPU 0 overwrites it; GPU 1's read must see the old x.
    rt.task([hx, hy](tessera::task_context& ctx) { gpu_axpy(ctx, hx, hy, n, 1.0); }).gpu(1).read(hx).read_write(hy).submit();
    rt.task([hx, &a](tessera::task_context& ctx) { gpu_fill(ctx, hx, a); }).gpu(0).write(hx).submit();
    // GPU 1 reads x again: it gets GPU 0's new x, not its own stale copy.
    rt.task([hx, hz](tessera::task_context& ctx) { gpu_axpy(ctx, hx, hz, n, 1.0); }).gpu(1).read(hx).read_write(hz).submit();
    // WAW: GPU 1 overwrites x after GPU 0 did; the last writer's value wins everywhere.
    rt.task([hx, &b](tessera::task_context& ctx) { gpu_fill(ctx, hx, b); }).gpu(1).write(hx).submit();
    rt.task([hx](tessera::task_context& ctx) { gpu_scale(ctx, hx, n, 2.0); }).gpu(0).read_write(hx).submit();
    rt.task([] {}).read(hx).read(hy).read(hz).submit();
    rt.wait_all();
    for (int i = 0; i < n; ++i) {
      REQUIRE(y[i] == 1.0);
      REQUIRE(z[i] == 5.0);
      REQUIRE(x[i] == 14.0);
    }
  }
}

TEST_CASE("several logical GPUs: random CPU/GPU programs equal sequential execution") {
  const auto seed = tessera::testing::seed();
  std::mt19937_64 rng(seed);
  constexpr int len = 64, data = 6;
  const auto all = configs();
  for (int program = 0; program < 120; ++program) {
    CAPTURE(program);
    const auto& o = all[program % all.size()];
    tessera::runtime rt(o);
    const unsigned gpus = rt.gpus();
    std::vector<std::vector<double>> v(data, std::vector<double>(len)), ref(data, std::vector<double>(len));
    std::vector<tessera::handle> h(data);
    for (int d = 0; d < data; ++d) {
      for (int i = 0; i < len; ++i) v[d][i] = ref[d][i] = d + i * 0.001;
      h[d] = rt.register_data(v[d].data(), len * sizeof(double));
    }
    const int tasks = 5 + static_cast<int>(rng() % 50);
    for (int t = 0; t < tasks; ++t) {
      const int d = static_cast<int>(rng() % data), s = static_cast<int>(rng() % data);
      const double alpha = 1.0 + static_cast<double>(rng() % 3) * 0.5;
      const unsigned kind = static_cast<unsigned>(rng() % 3);
      // Each GPU task names a GPU, or (one in gpus + 1) lets the runtime place it.
      const unsigned where = static_cast<unsigned>(rng() % (gpus + 1));
      auto on = [&](tessera::task_builder& b) -> tessera::task_builder& {
        return where < gpus ? b.gpu(where) : b.on(tessera::device::gpu);
      };
      if (kind == 0) {  // GPU: v[d] *= alpha
        for (auto& e : ref[d]) e *= alpha;
        auto b = rt.task([hd = h[d], alpha](tessera::task_context& ctx) { gpu_scale(ctx, hd, len, alpha); });
        on(b).read_write(h[d]).priority(static_cast<int>(rng() % 4)).submit();
      } else if (kind == 1 && d != s) {  // GPU: v[d] += alpha v[s]
        for (int i = 0; i < len; ++i) ref[d][i] += alpha * ref[s][i];
        auto b = rt.task([hs = h[s], hd = h[d], alpha](tessera::task_context& ctx) { gpu_axpy(ctx, hs, hd, len, alpha); });
        on(b).read(h[s]).read_write(h[d]).submit();
      } else if (d != s) {  // CPU: v[d] += v[s]
        for (int i = 0; i < len; ++i) ref[d][i] += ref[s][i];
        rt.task([&v, d, s] { for (int i = 0; i < len; ++i) v[d][i] += v[s][i]; }).read(h[s]).read_write(h[d]).submit();
      }
    }
    for (int d = 0; d < data; ++d) rt.task([] {}).read(h[d]).submit();
    rt.wait_all();
    bool same = true;
    for (int d = 0; d < data; ++d)
      for (int i = 0; i < len; ++i) same = same && std::abs(v[d][i] - ref[d][i]) <= 1e-12 * std::abs(ref[d][i]);
    CHECK_MESSAGE(same, "program " << program << " (TESSERA_SEED=" << seed << ")");
  }
}

TEST_CASE("placement: a GPU task that names no GPU runs where most of its data was last written") {
  tessera::runtime rt(on_gpus(3, 1));
  std::vector<double> big(1000, 1.0), small(10, 1.0);
  auto hb = rt.register_data(big.data(), big.size() * sizeof(double));
  auto hs = rt.register_data(small.data(), small.size() * sizeof(double));
  unsigned seen[3] = {9, 9, 9};
  rt.task([&](tessera::task_context& ctx) { seen[0] = ctx.gpu(); }).on(tessera::device::gpu).read(hb).submit();
  rt.task([hb](tessera::task_context& ctx) { gpu_scale(ctx, hb, 1000, 2.0); }).gpu(2).read_write(hb).submit();
  rt.task([hs](tessera::task_context& ctx) { gpu_scale(ctx, hs, 10, 2.0); }).gpu(1).read_write(hs).submit();
  rt.task([&](tessera::task_context& ctx) { seen[1] = ctx.gpu(); }).on(tessera::device::gpu).read(hs).read_write(hb).submit();
  rt.task([&] {}).write(hb).submit();  // a CPU writer: hb is nowhere on a GPU any more
  rt.task([&](tessera::task_context& ctx) { seen[2] = ctx.gpu(); }).on(tessera::device::gpu).read(hs).read(hb).submit();
  rt.wait_all();
  CHECK(seen[0] == 0);  // nothing written on a GPU yet
  CHECK(seen[1] == 2);  // 8000 bytes last written on GPU 2 against 80 on GPU 1
  CHECK(seen[2] == 1);  // only hs is on a GPU
  CHECK_THROWS_AS(rt.task([] {}).gpu(3), std::invalid_argument);
  rt.wait_all();
}

TEST_CASE("errors from a task on GPU 1 reach the caller; the runtime stays usable") {
  for (const auto& o : configs()) {
    tessera::runtime rt(o);
    std::vector<double> x(100, 1.0);
    auto hx = rt.register_data(x.data(), x.size() * sizeof(double));
    rt.task([hx](tessera::task_context& ctx) { gpu_scale(ctx, hx, 100, 2.0); }).gpu(0).read_write(hx).submit();
    rt.task([] { throw std::runtime_error("body on GPU 1 failed"); }).gpu(1).read_write(hx).label("bad").submit();
    bool later_ran = false;
    rt.task([&] { later_ran = true; }).gpu(1).read(hx).submit();
    CHECK_THROWS_WITH(rt.wait_all(), "body on GPU 1 failed");
    CHECK_FALSE(later_ran);  // its sequence was cancelled
    // A CUDA call that fails inside a body on GPU 1, unnoticed by the body: named by the runtime.
    rt.task([](tessera::task_context& ctx) {
        void* p = nullptr;  // 2^60 bytes: fails at once, and leaves the device usable
        (void)cudaMallocAsync(&p, std::size_t(1) << 60, tessera::stream_of(ctx));
      })
        .gpu(1).read(hx).label("bad_copy").submit();
    CHECK_THROWS_WITH(rt.wait_all(), doctest::Contains("bad_copy"));
    // An injected launch failure on GPU 1.
    tessera::detail::testing::fail_gpu_launches(1);
    rt.task([hx](tessera::task_context& ctx) { gpu_scale(ctx, hx, 100, 2.0); }).gpu(1).read_write(hx).label("injected").submit();
    CHECK_THROWS_WITH(rt.wait_all(), doctest::Contains("injected"));
    // Usable afterwards: GPU 1 scales GPU 0's result.
    rt.task([hx](tessera::task_context& ctx) { gpu_scale(ctx, hx, 100, 3.0); }).gpu(1).read_write(hx).submit();
    rt.task([] {}).read(hx).submit();
    rt.wait_all();
    for (double e : x) REQUIRE(e == 6.0);
  }
}

TEST_CASE("device-only data lives on its GPU: other GPUs read copies, a write elsewhere fails") {
  tessera::runtime rt(on_gpus(2, 1));
  constexpr int n = 256;
  tessera::device_buffer buf = rt.allocate_device(n * sizeof(double), 1);
  std::vector<double> init(n), out(n, 0.0);
  for (int i = 0; i < n; ++i) init[i] = i;
  cuda_ok(cudaMemcpy(buf.get<double>(), init.data(), n * sizeof(double), cudaMemcpyHostToDevice));
  auto hd = rt.register_device_data(buf.get<double>(), n * sizeof(double), 1, n * sizeof(double), 1);
  auto ho = rt.register_data(out.data(), n * sizeof(double));
  const double* where = nullptr;
  rt.task([&, hd](tessera::task_context& ctx) { where = tessera::device_ptr<double>(ctx, hd); gpu_scale(ctx, hd, n, 2.0); })
      .gpu(1).read_write(hd).submit();
  rt.task([hd, ho](tessera::task_context& ctx) { gpu_axpy(ctx, hd, ho, n, 1.0); }).gpu(0).read(hd).read_write(ho).submit();
  rt.task([] {}).read(ho).submit();
  rt.wait_all();
  CHECK(where == buf.get<double>());  // in place on its own GPU
  for (int i = 0; i < n; ++i) REQUIRE(out[i] == 2.0 * i);  // GPU 0 read a copy of GPU 1's datum
  CHECK(rt.transfers().peer_copies == 1);
  rt.task([hd](tessera::task_context& ctx) { gpu_scale(ctx, hd, n, 2.0); }).gpu(0).read_write(hd).label("elsewhere").submit();
  CHECK_THROWS_WITH_AS(rt.wait_all(), doctest::Contains("lives on GPU 1"), std::invalid_argument);
  std::vector<double> back(n);
  cuda_ok(cudaMemcpy(back.data(), buf.get<double>(), n * sizeof(double), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) REQUIRE(back[i] == 2.0 * i);  // the failed task wrote nothing
}

TEST_CASE("data placed on GPU 1 is used there in place") {
  tessera::runtime rt(on_gpus(2, 1));
  constexpr int n = 128;
  tessera::device_buffer buf = rt.allocate_device(n * sizeof(double), 1);
  std::vector<double> x(n, 3.0);
  auto hx = rt.register_data(x.data(), n * sizeof(double));
  rt.place_on_device(hx, buf.get<double>(), n * sizeof(double), 1);
  const double* where = nullptr;
  rt.task([&, hx](tessera::task_context& ctx) { where = tessera::device_ptr<double>(ctx, hx); gpu_scale(ctx, hx, n, 2.0); })
      .gpu(1).read_write(hx).submit();
  rt.task([] {}).read(hx).submit();
  rt.wait_all();
  CHECK(where == buf.get<double>());
  for (double e : x) REQUIRE(e == 6.0);
  CHECK_THROWS_AS(rt.place_on_device(hx, buf.get<double>(), n * sizeof(double), 2), std::invalid_argument);
  CHECK_THROWS_AS(rt.allocate_device(64, 2), std::invalid_argument);
}

TEST_CASE("traces name each GPU's streams and show copies between GPUs as events of their own") {
  for (bool through_host : {false, true}) {
    tessera::runtime_options o{.workers = 2, .trace = true, .gpu_streams = 2};
    o.gpus = devices(2);
    o.gpu_copies_through_host = through_host;
    tessera::runtime rt(o);
    std::vector<double> x(4096, 1.0);
    auto hx = rt.register_data(x.data(), x.size() * sizeof(double));
    rt.task([hx](tessera::task_context& ctx) { gpu_scale(ctx, hx, 4096, 2.0); }).gpu(0).read_write(hx).label("on0").submit();
    rt.task([hx](tessera::task_context& ctx) { gpu_scale(ctx, hx, 4096, 2.0); }).gpu(1).read_write(hx).label("on1").submit();
    rt.task([] {}).read(hx).submit();
    rt.wait_all();
    const auto& tr = rt.trace();
    auto track_of = [&](const std::string& name) {
      for (std::size_t i = 0; i < tr.tracks.size(); ++i)
        if (tr.tracks[i] == name) return static_cast<int>(i);
      return -1;
    };
    const std::string gpu0 = "GPU 0 (CUDA device 0) ", gpu1 = "GPU 1 (CUDA device " + std::to_string(o.gpus[1]) + ") ";
    const int s0 = track_of(gpu0 + "stream 0"), s1 = track_of(gpu1 + "stream 0");
    const int peer_in = track_of(gpu1 + "peer copies in");
    REQUIRE(s0 >= 0);
    REQUIRE(s1 >= 0);
    REQUIRE(peer_in >= 0);
    CHECK(track_of(gpu0 + "copy H2D") >= 0);
    CHECK(track_of(gpu1 + "copy D2H") >= 0);
    int on0 = -1, on1 = -1, peer = 0;
    double peer_end = 0, on1_start = 0;
    for (const auto& t : tr.tasks) {
      if (t.label == "on0") on0 = t.track;
      if (t.label == "on1") on1 = t.track, on1_start = t.start_us;
      if (t.copy && t.label.rfind("peer 0->1", 0) == 0 && t.track == peer_in) ++peer, peer_end = t.end_us;
    }
    CHECK(on0 >= s0);
    CHECK(on0 < s1);
    CHECK(on1 >= s1);
    CHECK(peer == 1);
    CHECK(peer_end <= on1_start + 1.0);  // the copy came before the task that needed it (1 us slack)
  }
}

TEST_CASE("runtime_options::gpus is checked: a CUDA device that is not there") {
  tessera::runtime_options o{.workers = 1, .gpu_streams = 1};
  o.gpus = {0, 4096};
  CHECK_THROWS_WITH_AS(tessera::runtime{o}, doctest::Contains("CUDA device 4096"), std::invalid_argument);
}
