// The functor oneTBB runs on a worker, alone in this file: oneTBB (not built for TSan) hands it to
// the worker in code TSan does not see, so the worker's read of its capture looks unordered to TSan.
// tests/tsan.supp silences races whose topmost frame is in this file, which holds that read only.
#include "runtime_impl.hpp"

namespace tessera::detail {

void runner_entry::operator()() const { rt->runner_main(); }

}  // namespace tessera::detail
