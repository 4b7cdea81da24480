// The scheduler's GPU backend: GPU tasks on streams, dependencies both ways, copies of the datum
// that moved, traces. Skips where there is no CUDA device.
#include <doctest/doctest.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tessera/sched.hpp"
#include "tessera/sched/cuda.hpp"
#include "tessera/sched/detail/testing.hpp"
#include "test_util.hpp"

namespace {
const bool skip_without_device = tessera::testing::skip_unless(tessera::runtime::gpu_available());

// x := alpha * x on the GPU, through the task's cuBLAS handle (bound to its stream).
void gpu_scale(tessera::task_context& ctx, tessera::handle h, int n, double alpha) {
  double* d = tessera::device_ptr<double>(ctx, h);
  if (cublasDscal(tessera::blas_of(ctx), n, &alpha, d, 1) != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error("cublasDscal failed");
}

void cuda_ok(cudaError_t e) {
  if (e != cudaSuccess) throw std::runtime_error(cudaGetErrorString(e));
}

// Bytes the device's default memory pool has handed out and not taken back.
std::uint64_t pool_in_use() {
  cudaMemPool_t pool;
  std::uint64_t used = 0;
  cuda_ok(cudaDeviceGetDefaultMemPool(&pool, 0));
  cuda_ok(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
  return used;
}
}  // namespace

TEST_CASE("CPU -> GPU -> CPU chains see each other's writes, and only the moving data travels") {
  (void)skip_without_device;
  constexpr int n = 1000;
  for (unsigned workers : {1u, 3u}) {
    tessera::runtime rt({.workers = workers, .gpu_streams = 2});
    std::vector<double> x(n, 0), y(n, 0);
    auto hx = rt.register_data(x.data(), n * sizeof(double));
    auto hy = rt.register_data(y.data(), n * sizeof(double));
    rt.task([&] { for (int i = 0; i < n; ++i) x[i] = i; }).write(hx).submit();
    rt.task([hx](tessera::task_context& ctx) { gpu_scale(ctx, hx, n, 2.0); }).on(tessera::device::gpu).read_write(hx).submit();
    rt.task([hx](tessera::task_context& ctx) { gpu_scale(ctx, hx, n, 3.0); }).on(tessera::device::gpu).read_write(hx).submit();
    double seen = -1;
    rt.task([&] { seen = x[7]; for (int i = 0; i < n; ++i) y[i] = x[i] + 1; }).read(hx).write(hy).submit();
    rt.task([hy](tessera::task_context& ctx) { gpu_scale(ctx, hy, n, -1.0); }).on(tessera::device::gpu).read_write(hy).submit();
    rt.task([&] {}).read(hy).submit();  // brings y home
    rt.wait_all();
    CHECK(seen == doctest::Approx(42.0));
    for (int i = 0; i < n; ++i) REQUIRE(y[i] == doctest::Approx(-(6.0 * i + 1)));
    const auto st = rt.transfers();
    CHECK(st.h2d_copies == 2);  // x once, y once
    CHECK(st.d2h_copies == 2);  // x for the CPU reader, y at the end
    CHECK(st.h2d_bytes == 2 * n * sizeof(double));
  }
}

TEST_CASE("random CPU/GPU programs equal sequential execution") {
  const auto seed = tessera::testing::seed();
  std::mt19937_64 rng(seed);
  constexpr int len = 64, data = 6;
  // Launch at once, two in flight per stream (the default), one in flight plus an urgent stream.
  const tessera::runtime_options configs[] = {
      {.workers = 3, .gpu_streams = 3, .gpu_stream_depth = 0},
      {.workers = 3, .gpu_streams = 3},
      {.workers = 2, .gpu_streams = 1, .gpu_stream_depth = 1, .gpu_urgent_priority = 2}};
  for (int program = 0; program < 90; ++program) {
    CAPTURE(program);
    tessera::runtime rt(configs[program % 3]);
    std::vector<std::vector<double>> v(data, std::vector<double>(len)), ref(data, std::vector<double>(len));
    std::vector<tessera::handle> h(data);
    for (int d = 0; d < data; ++d) {
      for (int i = 0; i < len; ++i) v[d][i] = ref[d][i] = d + i * 0.001;
      h[d] = rt.register_data(v[d].data(), len * sizeof(double));
    }
    const int tasks = 5 + static_cast<int>(rng() % 40);
    for (int t = 0; t < tasks; ++t) {
      const int d = static_cast<int>(rng() % data), s = static_cast<int>(rng() % data);
      const double alpha = 1.0 + static_cast<double>(rng() % 3) * 0.5;
      if (rng() % 2) {  // GPU: v[d] *= alpha
        for (auto& e : ref[d]) e *= alpha;
        rt.task([hd = h[d], alpha](tessera::task_context& ctx) { gpu_scale(ctx, hd, len, alpha); })
            .on(tessera::device::gpu)
            .read_write(h[d])
            .priority(static_cast<int>(rng() % 4))
            .submit();
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

TEST_CASE("strided data placed inside one device matrix") {
  // A 6x4 column-major host tile (ld 8) placed at rows 2.. of a 16 x 4 device matrix.
  tessera::runtime rt({.workers = 2, .gpu_streams = 1});
  std::vector<double> host(8 * 4, -7.0);
  for (int j = 0; j < 4; ++j)
    for (int i = 0; i < 6; ++i) host[i + j * 8] = i + 10 * j;
  double* dmat = nullptr;
  REQUIRE(cudaMalloc(&dmat, 16 * 4 * sizeof(double)) == cudaSuccess);
  REQUIRE(cudaMemset(dmat, 0, 16 * 4 * sizeof(double)) == cudaSuccess);
  auto h = rt.register_data(host.data(), 6 * sizeof(double), 4, 8 * sizeof(double));
  rt.place_on_device(h, dmat + 2, 16 * sizeof(double));
  rt.task([h](tessera::task_context& ctx) {
      double* d = tessera::device_ptr<double>(ctx, h);
      const int ld = static_cast<int>(ctx.device_pitch(h) / sizeof(double));
      const double two = 2.0;
      for (int j = 0; j < 4; ++j) cublasDscal(tessera::blas_of(ctx), 6, &two, d + j * ld, 1);
    })
      .on(tessera::device::gpu)
      .read_write(h)
      .submit();
  rt.task([] {}).read(h).submit();
  rt.wait_all();
  std::vector<double> back(16 * 4);
  REQUIRE(cudaMemcpy(back.data(), dmat, back.size() * sizeof(double), cudaMemcpyDeviceToHost) == cudaSuccess);
  for (int j = 0; j < 4; ++j) {
    for (int i = 0; i < 6; ++i) {
      CHECK(host[i + j * 8] == 2.0 * (i + 10 * j));
      CHECK(back[2 + i + j * 16] == 2.0 * (i + 10 * j));
    }
    CHECK(host[6 + j * 8] == -7.0);  // the pitch gap is not touched
    CHECK(back[j * 16] == 0.0);
  }
  cudaFree(dmat);
}

TEST_CASE("GPU errors reach wait_all: a throwing GPU body, out of device memory; the runtime stays usable") {
  tessera::runtime rt({.workers = 2, .gpu_streams = 1});
  std::vector<char> small(16);
  auto h = rt.register_data(small.data(), 16);
  rt.task([] { throw std::runtime_error("gpu body failed"); }).on(tessera::device::gpu).write(h).submit();
  CHECK_THROWS_WITH(rt.wait_all(), "gpu body failed");
  // A datum that claims 2^50 bytes: the pool cannot hold it.
  auto huge = rt.register_data(small.data(), std::size_t(1) << 40, 1024, std::size_t(1) << 40);
  bool ran = false;
  rt.task([&] { ran = true; }).on(tessera::device::gpu).write(huge).submit();
  CHECK_THROWS_WITH_AS(rt.wait_all(), doctest::Contains("out of device memory"), std::runtime_error);
  CHECK_FALSE(ran);
  double x = 1;
  auto hx = rt.register_data(&x, sizeof x);
  rt.task([hx](tessera::task_context& ctx) { gpu_scale(ctx, hx, 1, 5.0); }).on(tessera::device::gpu).read_write(hx).submit();
  rt.task([] {}).read(hx).submit();
  rt.wait_all();
  CHECK(x == 5.0);
}

TEST_CASE("traces show GPU streams and copy engines as tracks") {
  tessera::runtime rt({.workers = 2, .trace = true, .gpu_streams = 2});
  std::vector<double> x(4096, 1.0);
  auto hx = rt.register_data(x.data(), x.size() * sizeof(double));
  rt.task([] {}).write(hx).label("cpu").submit();
  rt.task([hx](tessera::task_context& ctx) { gpu_scale(ctx, hx, 4096, 2.0); }).on(tessera::device::gpu).read_write(hx).label("gpu").submit();
  rt.task([] {}).read(hx).label("cpu").submit();
  rt.wait_all();
  const auto& tr = rt.trace();
  int gpu_tasks = 0, copies = 0;
  for (const auto& t : tr.tasks) {
    REQUIRE(t.track < static_cast<int>(tr.tracks.size()));
    if (t.label == "gpu") ++gpu_tasks;
    if (t.label.rfind("H2D", 0) == 0 || t.label.rfind("D2H", 0) == 0) ++copies;
    CHECK(t.end_us >= t.start_us);
  }
  CHECK(gpu_tasks == 1);
  CHECK(copies == 2);
  CHECK(tr.tracks.size() == 2 + 2 + 2);
}

namespace {
// Holds a GPU stream until released: a host function on the stream spins on a flag.
struct stream_gate {
  std::atomic<bool> open{false};
  void hold(tessera::task_context& ctx) {
    auto spin = [](void* p) {
      auto* flag = static_cast<std::atomic<bool>*>(p);
      while (!flag->load(std::memory_order_acquire)) std::this_thread::yield();
    };
    if (cudaLaunchHostFunc(tessera::stream_of(ctx), spin, &open) != cudaSuccess)
      throw std::runtime_error("cudaLaunchHostFunc failed");
  }
};
}  // namespace

TEST_CASE("a GPU task waits for its inputs' copies in the runtime, not in a stream") {
  (void)skip_without_device;
  // One stream, one task in flight. Launched at once, the first task would hold the stream until
  // its 256 MiB input arrived (pinned, so the copy runs asynchronously: milliseconds), and the
  // second, which needs nothing, would wait behind it.
  tessera::runtime rt({.workers = 2, .gpu_streams = 1, .gpu_stream_depth = 1});
  const std::size_t bytes = std::size_t(256) << 20;
  void* big = nullptr;
  REQUIRE(cudaMallocHost(&big, bytes) == cudaSuccess);
  std::memset(big, 1, bytes);
  const auto hbig = rt.register_data(big, bytes);
  std::vector<char> launched;  // GPU task bodies run on the GPU thread, one at a time
  rt.task([&](tessera::task_context&) { launched.push_back('a'); }).on(tessera::device::gpu).read(hbig).submit();
  rt.task([&](tessera::task_context&) { launched.push_back('b'); }).on(tessera::device::gpu).submit();
  rt.wait_all();
  CHECK(launched == std::vector<char>{'b', 'a'});
  CHECK(rt.transfers().h2d_bytes == bytes);
  rt.release_device(hbig);
  cudaFreeHost(big);
}

TEST_CASE("GPU tasks wait for a stream in priority order; urgent ones get a stream of their own") {
  (void)skip_without_device;
  SUBCASE("one stream, one in flight: highest priority first, then insertion order") {
    for (const unsigned depth : {1u, 0u}) {
      CAPTURE(depth);
      tessera::runtime rt({.workers = 2, .gpu_streams = 1, .gpu_stream_depth = depth});
      stream_gate gate;
      std::vector<int> launched;  // GPU task bodies run on the GPU thread, one at a time
      rt.task([&](tessera::task_context& ctx) { gate.hold(ctx); }).on(tessera::device::gpu).priority(100).submit();
      const int priorities[] = {0, 5, 1, 5, 0, 9};
      for (int i = 0; i < 6; ++i)
        rt.task([&launched, i](tessera::task_context&) { launched.push_back(i); })
            .on(tessera::device::gpu)
            .priority(priorities[i])
            .submit();
      // All six are ready at once; with no limit they launch as soon as the GPU thread sees them.
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      const std::size_t before_release = launched.size();
      gate.open = true;
      rt.wait_all();
      if (depth == 1) {
        CHECK(before_release == 0);
        CHECK(launched == std::vector<int>{5, 1, 3, 2, 0, 4});
      } else {
        CHECK(before_release == 6);
      }
    }
  }
  SUBCASE("an urgent task runs while the regular stream is held") {
    tessera::runtime rt({.workers = 2, .trace = true, .gpu_streams = 1, .gpu_stream_depth = 1, .gpu_urgent_priority = 10});
    stream_gate gate;
    std::vector<double> x(256, 1.0);
    auto hx = rt.register_data(x.data(), x.size() * sizeof(double));
    void* held = nullptr;
    void* urgent = nullptr;
    std::atomic<bool> urgent_done{false};
    rt.task([&](tessera::task_context& ctx) { held = ctx.stream(); gate.hold(ctx); }).on(tessera::device::gpu).priority(9).submit();
    rt.task([&](tessera::task_context&) {}).on(tessera::device::gpu).priority(9).label("regular").submit();
    rt.task([&, hx](tessera::task_context& ctx) { urgent = ctx.stream(); gpu_scale(ctx, hx, 256, 3.0); })
        .on(tessera::device::gpu)
        .read_write(hx)
        .priority(10)
        .label("urgent")
        .submit();
    rt.task([&] { urgent_done = x[0] == 3.0; }).read(hx).submit();
    for (int i = 0; i < 2000 && !urgent_done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const bool done_while_held = urgent_done;
    gate.open = true;
    rt.wait_all();
    CHECK(done_while_held);
    CHECK(urgent != nullptr);
    CHECK(urgent != held);
    const auto& tr = rt.trace();
    REQUIRE(tr.tracks.size() == 2 + 2 + 2);
    CHECK(tr.tracks[3] == "GPU stream 1 (urgent)");
  }
}

TEST_CASE("urgent stream on reserved SMs (gpu_urgent_sms)") {
  (void)skip_without_device;
  SUBCASE("urgent, regular and CPU tasks equal sequential execution; urgent ones on the urgent track") {
    // No depth limit: urgent tasks then always take the urgent stream (with a limit they may spill
    // onto a regular one when it is full), so the trace must show every one of them there.
    std::optional<tessera::runtime> maybe_rt;
    try {
      maybe_rt.emplace(tessera::runtime_options{.workers = 3, .trace = true, .gpu_streams = 2, .gpu_stream_depth = 0,
                                                .gpu_urgent_priority = 100, .gpu_urgent_sms = 16});
    } catch (const std::runtime_error& e) {
      MESSAGE("no SM partition on this device/driver: " << e.what());
      return;
    }
    tessera::runtime& rt = *maybe_rt;
    const auto seed = tessera::testing::seed();
    std::mt19937_64 rng(seed);
    constexpr int len = 256, data = 4;
    // SM counts the streams' cuBLAS handles were given (GPU task bodies run one at a time).
    int urgent_sm_target = -1, regular_sm_target = -1;
    int urgent_submitted = 0, regular_submitted = 0;
    for (int program = 0; program < 10; ++program) {
      CAPTURE(program);
      std::vector<std::vector<double>> v(data, std::vector<double>(len)), ref(data, std::vector<double>(len));
      std::vector<tessera::handle> h(data);
      for (int d = 0; d < data; ++d) {
        for (int i = 0; i < len; ++i) v[d][i] = ref[d][i] = d * len + i;
        h[d] = rt.register_data(v[d].data(), len * sizeof(double));
      }
      // Powers of two and small integers: every step is exact, the device's and the host's alike.
      const int tasks = 10 + static_cast<int>(rng() % 40);
      for (int t = 0; t < tasks; ++t) {
        const int d = static_cast<int>(rng() % data), s = static_cast<int>(rng() % data);
        const double alpha = rng() % 2 ? 2.0 : 0.5;
        switch (rng() % 4) {
          case 0: {  // urgent GPU: v[d] *= alpha
            for (auto& e : ref[d]) e *= alpha;
            rt.task([&urgent_sm_target, hd = h[d], alpha](tessera::task_context& ctx) {
                  cublasGetSmCountTarget(tessera::blas_of(ctx), &urgent_sm_target);
                  gpu_scale(ctx, hd, len, alpha);
                })
                .on(tessera::device::gpu)
                .read_write(h[d])
                .priority(100 + static_cast<int>(rng() % 3))
                .label("urgent")
                .submit();
            ++urgent_submitted;
            break;
          }
          case 1: {  // regular GPU: v[d] *= alpha, or v[d] = v[s] by a copy on the task's stream
            if (d == s) {
              for (auto& e : ref[d]) e *= alpha;
              rt.task([&regular_sm_target, hd = h[d], alpha](tessera::task_context& ctx) {
                    cublasGetSmCountTarget(tessera::blas_of(ctx), &regular_sm_target);
                    gpu_scale(ctx, hd, len, alpha);
                  })
                  .on(tessera::device::gpu)
                  .read_write(h[d])
                  .priority(static_cast<int>(rng() % 4))
                  .label("regular")
                  .submit();
            } else {
              ref[d] = ref[s];
              rt.task([hd = h[d], hs = h[s]](tessera::task_context& ctx) {
                    if (cudaMemcpyAsync(tessera::device_ptr<double>(ctx, hd), tessera::device_ptr<double>(ctx, hs),
                                        len * sizeof(double), cudaMemcpyDeviceToDevice,
                                        tessera::stream_of(ctx)) != cudaSuccess)
                      throw std::runtime_error("cudaMemcpyAsync failed");
                  })
                  .on(tessera::device::gpu)
                  .read(h[s])
                  .write(h[d])
                  .priority(static_cast<int>(rng() % 4))
                  .label("regular")
                  .submit();
            }
            ++regular_submitted;
            break;
          }
          case 2: {  // CPU: v[d] += k
            const double k = 1.0 + static_cast<double>(rng() % 3);
            for (auto& e : ref[d]) e += k;
            rt.task([&v, d, k] { for (auto& e : v[d]) e += k; }).read_write(h[d]).label("cpu").submit();
            break;
          }
          default:  // CPU: v[d] += v[s]
            if (d == s) break;
            for (int i = 0; i < len; ++i) ref[d][i] += ref[s][i];
            rt.task([&v, d, s] { for (int i = 0; i < len; ++i) v[d][i] += v[s][i]; })
                .read(h[s])
                .read_write(h[d])
                .label("cpu")
                .submit();
        }
      }
      for (int d = 0; d < data; ++d) rt.task([] {}).read(h[d]).label("cpu").submit();  // brings v home
      rt.wait_all();
      CHECK_MESSAGE(v == ref, "program " << program << " (TESSERA_SEED=" << seed << ")");
    }
    REQUIRE(urgent_submitted > 0);
    REQUIRE(regular_submitted > 0);
    // The urgent stream's cuBLAS handle sizes its grids for the reserved SMs (16, or the
    // device's next split granularity), the regular streams' for the rest.
    int device_sms = 0;
    REQUIRE(cudaDeviceGetAttribute(&device_sms, cudaDevAttrMultiProcessorCount, 0) == cudaSuccess);
    CHECK(urgent_sm_target >= 16);
    CHECK(regular_sm_target > 0);
    CHECK(urgent_sm_target + regular_sm_target <= device_sms);
    // Tracks: 3 workers, 2 regular streams, the urgent stream, 2 copy engines.
    const auto& tr = rt.trace();
    REQUIRE(tr.tracks.size() == 3 + 2 + 1 + 2);
    int urgent_track = -1;
    for (std::size_t i = 0; i < tr.tracks.size(); ++i)
      if (tr.tracks[i].find("(urgent)") != std::string::npos) {
        CHECK(urgent_track == -1);
        urgent_track = static_cast<int>(i);
      }
    REQUIRE(urgent_track >= 0);
    int urgent_traced = 0, regular_traced = 0;
    for (const auto& t : tr.tasks) {
      if (t.copy) {
        CHECK(t.track != urgent_track);
        continue;
      }
      CAPTURE(t.id);
      CAPTURE(t.label);
      if (t.label == "urgent") {
        ++urgent_traced;
        CHECK(t.where == tessera::device::gpu);
        CHECK(t.priority >= 100);
        CHECK(t.track == urgent_track);
      } else {
        if (t.label == "regular") ++regular_traced;
        CHECK(t.track != urgent_track);
      }
    }
    CHECK(urgent_traced == urgent_submitted);
    CHECK(regular_traced == regular_submitted);
  }
  SUBCASE("more SMs than the device has: an error that says so") {
    CHECK_THROWS_WITH_AS(tessera::runtime({.workers = 2, .gpu_streams = 2, .gpu_urgent_priority = 100, .gpu_urgent_sms = 100000}),
                         doctest::Contains("SM partition"), std::runtime_error);
  }
}

TEST_CASE("GPU task scratch: per-stream device workspace, grown to the largest request") {
  constexpr int n = 4096;
  tessera::runtime rt({.workers = 2, .gpu_streams = 2});
  std::vector<double> x(n);
  for (int i = 0; i < n; ++i) x[i] = i;
  auto hx = rt.register_data(x.data(), n * sizeof(double));
  std::vector<void*> seen;  // the GPU thread runs the bodies one at a time
  for (int k = 1; k <= 6; ++k) {
    const int m = n / 8 * k;  // growing requests
    rt.task([hx, m, &seen](tessera::task_context& ctx) {
        double* d = tessera::device_ptr<double>(ctx, hx);
        auto* tmp = static_cast<double*>(ctx.scratch(0));
        seen.push_back(ctx.scratch(0));
        seen.push_back(ctx.scratch(1));
        cudaPointerAttributes attr{};
        cuda_ok(cudaPointerGetAttributes(&attr, tmp));
        if (attr.type != cudaMemoryTypeDevice) throw std::runtime_error("scratch is not device memory");
        // x := 2 x through the scratch: copy out, scale there, copy back.
        cuda_ok(cudaMemcpyAsync(tmp, d, m * sizeof(double), cudaMemcpyDeviceToDevice, tessera::stream_of(ctx)));
        const double two = 2.0;
        if (cublasDscal(tessera::blas_of(ctx), m, &two, tmp, 1) != CUBLAS_STATUS_SUCCESS)
          throw std::runtime_error("cublasDscal failed");
        cuda_ok(cudaMemcpyAsync(d, tmp, m * sizeof(double), cudaMemcpyDeviceToDevice, tessera::stream_of(ctx)));
      })
        .on(tessera::device::gpu)
        .scratch(m * sizeof(double) + 8)  // not a multiple of 256: the next piece is aligned past it
        .scratch(100)
        .read_write(hx)
        .label("scaled through scratch")
        .submit();
  }
  rt.task([] {}).read(hx).submit();
  rt.wait_all();
  for (int i = 0; i < n; ++i) {
    int times = 0;
    for (int k = 1; k <= 6; ++k) times += i < n / 8 * k;
    REQUIRE(x[i] == doctest::Approx(i * double(1 << times)));
  }
  REQUIRE(seen.size() == 12);
  for (std::size_t k = 0; k < seen.size(); k += 2) {
    CHECK(reinterpret_cast<std::uintptr_t>(seen[k]) % 256 == 0);
    CHECK(reinterpret_cast<std::uintptr_t>(seen[k + 1]) % 256 == 0);
    CHECK(static_cast<char*>(seen[k + 1]) - static_cast<char*>(seen[k]) >= static_cast<std::ptrdiff_t>(n / 8 * (k / 2 + 1) * sizeof(double) + 8));
  }
}

TEST_CASE("device_buffer and pinned_buffer: RAII memory through the runtime, clear errors when it cannot be had") {
  const std::uint64_t before = pool_in_use();
  tessera::device_buffer outlives;  // kept past its runtime
  {
    tessera::runtime rt({.workers = 2, .gpu_streams = 2});
    constexpr int n = 1 << 16;
    tessera::device_buffer d = rt.allocate_device(n * sizeof(double));
    tessera::pinned_buffer p = rt.allocate_pinned(n * sizeof(double));
    REQUIRE(d);
    REQUIRE(p);
    CHECK(d.bytes() == n * sizeof(double));
    for (int i = 0; i < n; ++i) p.get<double>()[i] = i;
    // Moves leave the source empty; the memory stays.
    tessera::device_buffer d2 = std::move(d);
    CHECK_FALSE(d);
    CHECK(d2.get<double>() != nullptr);
    auto h = rt.register_device_data(d2.data(), n * sizeof(double), 1, n * sizeof(double));
    rt.task([&p, h](tessera::task_context& ctx) {
        cuda_ok(cudaMemcpyAsync(tessera::device_ptr<double>(ctx, h), p.get<double>(), n * sizeof(double),
                                cudaMemcpyHostToDevice, tessera::stream_of(ctx)));
      })
        .on(tessera::device::gpu)
        .write(h)
        .submit();
    rt.task([h](tessera::task_context& ctx) { gpu_scale(ctx, h, n, 3.0); }).on(tessera::device::gpu).read_write(h).submit();
    rt.task([&p, h](tessera::task_context& ctx) {
        cuda_ok(cudaMemcpyAsync(p.get<double>(), tessera::device_ptr<double>(ctx, h), n * sizeof(double),
                                cudaMemcpyDeviceToHost, tessera::stream_of(ctx)));
      })
        .on(tessera::device::gpu)
        .read(h)
        .submit();
    rt.wait_all();
    for (int i = 0; i < n; ++i) REQUIRE(p.get<double>()[i] == 3.0 * i);
    CHECK(rt.transfers().h2d_copies == 0);  // device-only data is never copied by the runtime
    CHECK(rt.transfers().d2h_copies == 0);
    // Freed while the runtime lives (stream-ordered), and one kept past it (freed at once then).
    d2.reset();
    p = tessera::pinned_buffer{};
    outlives = rt.allocate_device(1 << 20);

    const std::size_t huge = std::size_t(1) << 52;
    const std::string want_device = std::to_string(huge) + " bytes of device memory";
    const std::string want_pinned = std::to_string(huge) + " bytes of pinned host memory";
    CHECK_THROWS_WITH_AS(rt.allocate_device(huge), doctest::Contains(want_device.c_str()), std::runtime_error);
    CHECK_THROWS_WITH_AS(rt.allocate_device(huge), doctest::Contains("bytes free of"), std::runtime_error);
    CHECK_THROWS_WITH_AS(rt.allocate_pinned(huge), doctest::Contains(want_pinned.c_str()), std::runtime_error);
    tessera::detail::testing::fail_allocations(1);
    CHECK_THROWS_WITH_AS(rt.allocate_device(64), doctest::Contains("64 bytes of device memory"), std::runtime_error);
    CHECK(rt.allocate_device(64).bytes() == 64);  // the next one works
  }
  CHECK(outlives.bytes() == (1 << 20));
  outlives.reset();  // freed without the runtime, which has waited for its work
  cuda_ok(cudaDeviceSynchronize());
  CHECK(pool_in_use() == before);
}

TEST_CASE("large pinned blocks (mapped, then registered with CUDA): copies both ways, reuse, freed after the runtime") {
  // From 32 MiB pinned_host.cpp maps and registers instead of calling cudaMallocHost.
  constexpr std::size_t n = (std::size_t(48) << 20) / sizeof(double);
  tessera::pinned_buffer outlives;
  {
    tessera::runtime rt({.workers = 2, .gpu_streams = 2});
    tessera::pinned_buffer p = rt.allocate_pinned(n * sizeof(double));
    REQUIRE(p);
    cudaPointerAttributes attr{};
    cuda_ok(cudaPointerGetAttributes(&attr, p.data()));
    CHECK(attr.type == cudaMemoryTypeHost);  // page-locked: copies from it are asynchronous
    const std::vector<double> want = tessera::testing::random_matrix<double>(static_cast<int>(n), 1, static_cast<int>(n), 48);
    std::copy(want.begin(), want.end(), p.get<double>());
    // The runtime moves the registered host data to the GPU and home again around a GPU task.
    auto h = rt.register_data(p.data(), n * sizeof(double));
    rt.task([h](tessera::task_context& ctx) { gpu_scale(ctx, h, static_cast<int>(n), -2.0); })
      .on(tessera::device::gpu)
      .read_write(h)
      .submit();
    rt.task([](tessera::task_context&) {}).read(h).submit();  // a CPU reader brings it home
    rt.wait_all();
    for (std::size_t i = 0; i < n; ++i) REQUIRE(p.get<double>()[i] == -2.0 * want[i]);
    CHECK(rt.transfers().h2d_bytes == n * sizeof(double));
    CHECK(rt.transfers().d2h_bytes == n * sizeof(double));
    rt.release_device(h);
    void* first = p.data();
    p = tessera::pinned_buffer{};
    rt.wait_all();
    // Freed blocks wait in the runtime's cache; the next one of the same size may be the same.
    tessera::pinned_buffer again = rt.allocate_pinned(n * sizeof(double));
    REQUIRE(again);
    again.get<double>()[n - 1] = 1.5;
    CHECK(again.get<double>()[n - 1] == 1.5);
    INFO("reused: ", again.data() == first);
    outlives = rt.allocate_pinned(n * sizeof(double) + 1);  // not a multiple of any page
    outlives.get<unsigned char>()[n * sizeof(double)] = 7;
  }
  CHECK(outlives.get<unsigned char>()[n * sizeof(double)] == 7);
  outlives.reset();  // unregistered and unmapped without the runtime
  // Without a runtime (the tile hybrid's tiles): both kinds, large and small, page-locked.
  for (std::size_t bytes : {std::size_t(40) << 20, std::size_t(1000)}) {
    CAPTURE(bytes);
    void* p = nullptr;
    REQUIRE(tessera::pinned_host_alloc(&p, bytes) == cudaSuccess);
    REQUIRE(p != nullptr);
    cudaPointerAttributes attr{};
    cuda_ok(cudaPointerGetAttributes(&attr, p));
    CHECK(attr.type == cudaMemoryTypeHost);
    static_cast<unsigned char*>(p)[bytes - 1] = 9;
    void* d = nullptr;
    cuda_ok(cudaMalloc(&d, bytes));
    cuda_ok(cudaMemcpy(d, p, bytes, cudaMemcpyHostToDevice));
    static_cast<unsigned char*>(p)[bytes - 1] = 0;
    cuda_ok(cudaMemcpy(p, d, bytes, cudaMemcpyDeviceToHost));
    CHECK(static_cast<unsigned char*>(p)[bytes - 1] == 9);
    cuda_ok(cudaFree(d));
    tessera::pinned_host_free(p);
  }
}

TEST_CASE("device-only data: GPU tasks use it in place, CPU tasks are refused") {
  constexpr int n = 1000;
  tessera::runtime rt({.workers = 2, .gpu_streams = 2});
  double* dmat = nullptr;
  cuda_ok(cudaMalloc(&dmat, 2 * n * sizeof(double)));  // a user's matrix: two columns, ld 2n/2
  std::vector<double> init(2 * n);
  for (int i = 0; i < 2 * n; ++i) init[i] = i;
  cuda_ok(cudaMemcpy(dmat, init.data(), init.size() * sizeof(double), cudaMemcpyHostToDevice));
  auto col0 = rt.register_device_data(dmat, n * sizeof(double), 1, n * sizeof(double));
  auto col1 = rt.register_device_data(dmat + n, n * sizeof(double), 1, n * sizeof(double));
  CHECK(col0.data() == nullptr);
  for (int k = 0; k < 3; ++k) {
    rt.task([col0](tessera::task_context& ctx) { gpu_scale(ctx, col0, n, 2.0); }).on(tessera::device::gpu).read_write(col0).submit();
    rt.task([col0, col1](tessera::task_context& ctx) {
        if (tessera::device_ptr<double>(ctx, col1) != tessera::device_ptr<double>(ctx, col0) + n)
          throw std::runtime_error("device-only data was moved");
        const double one = 1.0;
        cublasDaxpy(tessera::blas_of(ctx), n, &one, tessera::device_ptr<double>(ctx, col0), 1,
                    tessera::device_ptr<double>(ctx, col1), 1);
      })
        .on(tessera::device::gpu)
        .read(col0)
        .read_write(col1)
        .submit();
  }
  // A CPU task may not touch it: refused at add, and the builder stays usable.
  bool cpu_ran = false;
  {
    auto b = rt.task([&] { cpu_ran = true; });
    CHECK_THROWS_WITH_AS(b.read(col0), doctest::Contains("only in device memory"), std::invalid_argument);
    b.submit();
  }
  {
    auto b = rt.task([] {});
    b.on(tessera::device::gpu).read(col1);
    CHECK_THROWS_AS(b.on(tessera::device::cpu), std::invalid_argument);
    b.submit();
  }
  rt.wait_all();
  CHECK(cpu_ran);
  rt.release_device(col0);  // a no-op for device-only data
  std::vector<double> back(2 * n);
  cuda_ok(cudaMemcpy(back.data(), dmat, back.size() * sizeof(double), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    REQUIRE(back[i] == 8.0 * i);
    REQUIRE(back[n + i] == (n + i) + 2.0 * i + 4.0 * i + 8.0 * i);
  }
  const auto st = rt.transfers();
  CHECK(st.h2d_copies == 0);
  CHECK(st.d2h_copies == 0);
  cudaFree(dmat);
}

TEST_CASE("injected failures: a failed scratch allocation or launch cancels the sequence, names the task, leaks nothing") {
  const std::uint64_t before = pool_in_use();
  {
    tessera::runtime rt({.workers = 2, .gpu_streams = 2});
    constexpr int n = 512;
    std::vector<double> x(n, 1.0);
    auto hx = rt.register_data(x.data(), n * sizeof(double));
    // x's device copy first, so that the injected failure hits the scratch.
    rt.task([hx](tessera::task_context& ctx) { gpu_scale(ctx, hx, n, 1.0); }).on(tessera::device::gpu).read_write(hx).submit();
    rt.wait_all();
    for (int attempt = 0; attempt < 2; ++attempt) {
      auto seq = rt.make_sequence();
      std::atomic<int> ran{0};
      if (attempt == 0) tessera::detail::testing::fail_allocations(1);
      else tessera::detail::testing::fail_gpu_launches(1);
      rt.task([&ran](tessera::task_context& ctx) {
          (void)ctx.scratch(0);
          ++ran;
        })
          .on(tessera::device::gpu)
          .scratch(12345)
          .read_write(hx)
          .label("needs scratch")
          .in(seq)
          .submit();
      for (int i = 0; i < 10; ++i)
        rt.task([&ran, hx](tessera::task_context& ctx) { gpu_scale(ctx, hx, n, 2.0); ++ran; })
            .on(tessera::device::gpu)
            .read_write(hx)
            .in(seq)
            .submit();
      const char* want = attempt == 0 ? "12544 bytes of scratch" : "injected launch failure";
      CHECK_THROWS_WITH_AS(rt.wait(seq), doctest::Contains(want), std::runtime_error);
      try {
        rt.wait(seq);
      } catch (...) {
        FAIL("the error is reported once");
      }
      CHECK(ran.load() == 0);
      // The next run on the same runtime works.
      rt.task([hx](tessera::task_context& ctx) { (void)ctx.scratch(0); gpu_scale(ctx, hx, n, 2.0); })
          .on(tessera::device::gpu)
          .scratch(12345)
          .read_write(hx)
          .submit();
      rt.task([] {}).read(hx).submit();
      rt.wait_all();
      CHECK(x[0] == (attempt == 0 ? 2.0 : 4.0));
    }
    // The message names the task (a request larger than any before: an allocation).
    tessera::detail::testing::fail_allocations(1);
    rt.task([](tessera::task_context& ctx) { (void)ctx.scratch(0); }).on(tessera::device::gpu).scratch(1 << 20).label("named one").submit();
    CHECK_THROWS_WITH_AS(rt.wait_all(), doctest::Contains("'named one'"), std::runtime_error);
    // A CUDA call in a body that fails without the body noticing.
    rt.task([](tessera::task_context& ctx) {
        static double a = 0, b = 0;  // a direction CUDA rejects at the call
        (void)cudaMemcpyAsync(&a, &b, 8, static_cast<cudaMemcpyKind>(7), tessera::stream_of(ctx));
      })
        .on(tessera::device::gpu)
        .label("sloppy body")
        .submit();
    CHECK_THROWS_WITH_AS(rt.wait_all(), doctest::Contains("'sloppy body'"), std::runtime_error);
    rt.task([hx](tessera::task_context& ctx) { gpu_scale(ctx, hx, n, 0.5); }).on(tessera::device::gpu).read_write(hx).submit();
    rt.task([] {}).read(hx).submit();
    rt.wait_all();
    CHECK(x[0] == 2.0);
  }
  cuda_ok(cudaDeviceSynchronize());
  CHECK(pool_in_use() == before);  // scratch, device copies: all back in the pool
}

TEST_CASE("a GPU task body may not wait or insert: std::logic_error at the wait, the runtime stays usable") {
  tessera::runtime rt({.workers = 2, .gpu_streams = 1});
  rt.task([&] { rt.wait_all(); }).on(tessera::device::gpu).submit();
  CHECK_THROWS_WITH_AS(rt.wait_all(), doctest::Contains("inside a task body"), std::logic_error);
  rt.task([&] { rt.task([] {}).submit(); }).on(tessera::device::gpu).submit();
  CHECK_THROWS_AS(rt.wait_all(), std::logic_error);
  double x = 1;
  auto hx = rt.register_data(&x, sizeof x);
  rt.task([hx](tessera::task_context& ctx) { gpu_scale(ctx, hx, 1, 3.0); }).on(tessera::device::gpu).read_write(hx).submit();
  rt.task([] {}).read(hx).submit();
  rt.wait_all();
  CHECK(x == 3.0);
}
