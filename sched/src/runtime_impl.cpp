// The runtime core's life: construction (workers, oneTBB arena, logger, GPU backend) and the
// destruction that waits for every task and reports errors nobody waited for.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "runtime_impl.hpp"

namespace tessera::detail {

namespace {

std::shared_ptr<spdlog::logger> make_logger() {
  if (auto existing = spdlog::get("tessera")) return existing;
  auto logger = spdlog::stderr_color_mt("tessera");
  // Quiet by default; TESSERA_LOG=debug shows insertions and hazards.
  logger->set_level(spdlog::level::warn);
  if (const char* env = std::getenv("TESSERA_LOG")) logger->set_level(spdlog::level::from_str(env));
  return logger;
}

// oneTBB caps its pool at the hardware concurrency and takes the minimum of all active
// global_control objects, so one process-wide control that only grows lets a runtime ask for more
// workers than cores (tests, oversubscribed GPU-feeding threads).
void allow_parallelism(unsigned threads) {
  static std::mutex mutex;
  static std::unique_ptr<tbb::global_control> control;
  std::lock_guard lock(mutex);
  const auto current = tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism);
  if (current >= threads) return;
  auto larger = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism, threads);
  control = std::move(larger);
}

}  // namespace

namespace {
// runtime_options::workers, checked before anything is sized by it.
unsigned checked_workers(unsigned asked) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  if (asked == 0) return cores;
  const unsigned bound = std::max(max_workers_floor, 4 * cores);
  if (asked > bound)
    throw std::invalid_argument("tessera::runtime: runtime_options::workers is " + std::to_string(asked) +
                                ", above the bound of " + std::to_string(bound) +
                                " (4 per hardware thread, at least " + std::to_string(max_workers_floor) + ")");
  return asked;
}
}  // namespace

runtime_impl::runtime_impl(const runtime_options& options)
    : workers(checked_workers(options.workers)),
      window(options.window ? options.window : 1),
      log(make_logger()),
      log_debug(log->should_log(spdlog::level::debug)),
      help_backlog(64 * std::size_t(workers)),
      max_runners(workers - 1) {
  // The inserting thread is worker 0 and helps when it waits; oneTBB supplies workers - 1 threads.
  if (workers > 1) {
    allow_parallelism(workers);
    arena = std::make_unique<tbb::task_arena>(static_cast<int>(workers), 1);
    arena->initialize();
  }
  if (options.inline_below_ns)
    inline_below_ticks = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(options.inline_below_ns * ticks_per_ns()));
  if (const char* env = std::getenv("TESSERA_LINGER_US")) linger_us = static_cast<unsigned>(std::strtoul(env, nullptr, 10));
  if (options.gpu_streams > 0) {
    gpu = gpu_backend::create(*this, options);
    gpu_count = gpu->gpus();
  }
  // One more worker state for the GPU thread, which runs GPU task bodies.
  for (unsigned w = 0; w < workers + (gpu ? 1 : 0); ++w) worker_states.push_back(std::make_unique<worker_state>());
  if (options.trace) enable_trace(true);
  log->debug("runtime: {} workers, window {}", workers, window);
}

runtime_impl::~runtime_impl() {
  try {
    if (open_builder) submit(open_builder);
    help_until([&] { return in_flight() == 0; });
  } catch (...) {
  }
  gpu.reset();
  // Runners spin a little after the last task; none may touch this state once it is gone.
  while (live_runners.load(std::memory_order_acquire) != 0) std::this_thread::yield();
  if (arena) arena->terminate();
  std::lock_guard lock(errors_mutex);
  for (auto* s : failed) {
    try {
      std::rethrow_exception(s->error);
    } catch (const std::exception& e) {
      log->error("runtime destroyed with an unreported task error: {}", e.what());
    } catch (...) {
      log->error("runtime destroyed with an unreported task error");
    }
  }
}

}  // namespace tessera::detail
