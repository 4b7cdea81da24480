// The front door's policy: where the flops run, which algorithm, and its parameters, from the
// measured rules (docs/architecture.md, "Choosing the QR").
#include <algorithm>
#include <string>

#include "detail.hpp"
#include "tessera/qr/factorize.hpp"
#include "tessera/qr/blocked_qr_gpu.hpp"
#include "tessera/qr/geqrf_hybrid.hpp"
#include "tessera/qr/gpu.hpp"

namespace tessera::qr {

const char* name(target t) noexcept {
  switch (t) {
    case target::automatic: return "auto";
    case target::cpu: return "cpu";
    case target::gpu: return "gpu";
    case target::hybrid: return "hybrid";
  }
  return "?";
}

const char* name(algorithm a) noexcept {
  switch (a) {
    case algorithm::automatic: return "auto";
    case algorithm::tile: return "tile";
    case algorithm::blocked: return "blocked";
  }
  return "?";
}

const char* name(memory w) noexcept { return w == memory::device ? "device" : "host"; }

namespace {

// The largest divisor of nb that is at most 32: the tile kernels' inner block.
int tile_ib(int nb) {
  for (int ib = std::min(nb, 32); ib > 1; --ib)
    if (nb % ib == 0) return ib;
  return 1;
}

}  // namespace

namespace detail {

choice choose(int m, int n, const options& o, bool gpu) {
  constexpr const char* func = "choose";
  require_at_least(func, "m", m, 0);
  require_at_least(func, "n", n, 0);
  require_at_least(func, "nb", o.nb, 0);
  require_at_least(func, "ib", o.ib, 0);
  require_at_least(func, "lookahead", o.lookahead, -1);
  require_at_least(func, "single_in_double", o.single_in_double, -1);
  require_at_most(func, "single_in_double", o.single_in_double, 1);
  if (o.algo == algorithm::blocked && o.lookahead == 0)
    invalid(func, "lookahead = 0: the blocked QR needs at least 1");
  choice c;
  c.on = o.on;
  c.algo = o.algo;
  c.full_t = o.full_t;
  std::string why;
  if (o.full_t) {
    if (m < n)
      invalid(func, "full_t with m = " + std::to_string(m) + " < n = " + std::to_string(n) +
                        ": the full T needs m >= n (n reflectors of length m)");
    if (c.algo == algorithm::tile)
      invalid(func, "full_t with algorithm tile: the full T needs one V for all of Q (the blocked QR); the "
                    "tile QR's Q is a product of tile reflectors");
    if (c.on == target::hybrid)
      invalid(func, "full_t with target hybrid: the full T comes from the blocked QR, on the GPU (target gpu) or "
                    "the CPUs (target cpu)");
    c.algo = algorithm::blocked;
  }
  if (c.on == target::automatic) {
    if (!gpu) {
      c.on = target::cpu;
      why = "no CUDA device";
    } else if (c.algo == algorithm::tile) {
      c.on = target::hybrid;
      why = "a CUDA device is present and the tile QR was asked for";
    } else if (m >= n) {
      c.on = target::gpu;
      why = "a CUDA device is present and m >= n: the blocked QR on the GPU is the fastest measured";
    } else {
      c.on = target::hybrid;
      why = "a CUDA device is present but m < n, which the blocked QR does not take";
    }
  } else {
    why = std::string("target ") + name(c.on) + " asked for";
  }
  if (c.algo == algorithm::automatic) c.algo = c.on == target::gpu ? algorithm::blocked : algorithm::tile;
  if (c.algo == algorithm::blocked && c.on == target::hybrid)
    invalid(func, "algorithm blocked with target hybrid: the blocked QR runs every flop on the GPU (target gpu) "
                  "or, by LAPACK, on the CPUs (target cpu)");
  if (c.algo == algorithm::tile && c.on == target::gpu)
    invalid(func, "algorithm tile with target gpu: the tile QR factors its panels on the CPUs; use target hybrid");
  if (c.on != target::cpu && !gpu)
    invalid(func, std::string("target ") + name(c.on) +
                      ": no CUDA device here (or Tessera built without CUDA, or the runtime has no GPU streams)");
  if (c.algo == algorithm::blocked && c.on == target::gpu && m < n)
    invalid(func, "algorithm blocked with m = " + std::to_string(m) + " < n = " + std::to_string(n) +
                      ": the blocked QR on the GPU needs m >= n; use the tile QR (target cpu or hybrid)");

  if (c.algo == algorithm::blocked && c.on == target::cpu) {
    // LAPACK xGEQRT in place (multithreaded BLAS): one copy of A, for matrices whose tiles would
    // not fit beside it; 32 is LAPACK's usual block size for it.
    c.nb = o.nb > 0 ? o.nb : 32;
    c.ib = c.nb;
  } else if (c.algo == algorithm::blocked) {
    c.nb = o.nb > 0 ? o.nb : c.full_t ? default_full_t_nb(n) : default_blocked_nb(n);
    c.ib = o.ib > 0 ? o.ib : std::min(32, c.nb);
    c.lookahead = o.lookahead > 0 ? o.lookahead : default_blocked_lookahead(n);
    c.bulk_columns = o.bulk_columns >= 0 ? o.bulk_columns : default_bulk_columns(n);
    c.chunked_steps = o.chunked_steps >= 0 ? o.chunked_steps : default_chunked_steps(n);
  } else {
    c.nb = o.nb > 0 ? o.nb : c.on == target::hybrid ? default_gpu_tile_size(n) : default_cpu_tile_size(n);
    c.ib = o.ib > 0 ? o.ib : tile_ib(c.nb);
    require_ib(func, c.nb, c.ib);
    if (c.on == target::hybrid) {
      c.lookahead = o.lookahead >= 0 ? o.lookahead : default_lookahead((n + c.nb - 1) / c.nb);
      c.gpu_rows = o.gpu_rows > 0 ? o.gpu_rows : hybrid_options{}.gpu_rows;
    }
  }
  if (o.gpus > 1) {
    const int present = gpu_count();
    if (!o.gpus_on_one_device && static_cast<int>(o.gpus) > present)
      invalid(func, "gpus = " + std::to_string(o.gpus) + " but this machine has " + std::to_string(present) +
                        " CUDA device" + (present == 1 ? "" : "s") +
                        " (gpus_on_one_device maps them all onto device 0, for tests)");
    if (!(c.on == target::gpu && c.algo == algorithm::blocked) && c.on != target::hybrid)
      invalid(func, "gpus = " + std::to_string(o.gpus) + " with target " + name(c.on) + ", algorithm " + name(c.algo) +
                        ": several GPUs split the blocked QR on the GPU (target gpu, algorithm blocked) or the "
                        "tile hybrid's GPU columns (target hybrid)");
    if (c.full_t) invalid(func, "gpus = " + std::to_string(o.gpus) + " with full_t: the full T runs on one GPU");
    c.gpus = o.gpus;
    c.gpus_on_one_device = o.gpus_on_one_device;
  }
  c.reason = "target " + std::string(name(c.on)) + ", algorithm " + name(c.algo) + (c.full_t ? " with the full T" : "") +
             (c.gpus > 1 ? " on " + std::to_string(c.gpus) + " GPUs" + (c.gpus_on_one_device ? " (all CUDA device 0)" : "") : "") +
             ": " + why;
  return c;
}

}  // namespace detail

choice choose(int m, int n, const options& o) { return detail::choose(m, n, o, gpu_available()); }

int default_cpu_tile_size(int) noexcept { return 256; }

runtime_options runtime_options_for(const choice& c, unsigned threads) {
  if (c.on == target::cpu) return runtime_options{.workers = threads};
  runtime_options o = gpu_runtime_options(threads);
  if (c.gpus > 1)
    for (unsigned g = 0; g < c.gpus; ++g) o.gpus.push_back(c.gpus_on_one_device ? 0 : static_cast<int>(g));
  return o;
}

}  // namespace tessera::qr
