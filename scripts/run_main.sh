#!/usr/bin/env bash
# Builds what is needed and runs tessera_qr on its default problem (a random 2048 x 2048 double
# matrix: on the GPU when there is one, else on the CPUs, saying so), checking the result
# (--check: ||A - QR|| and ||I - Q^T Q||).
# Extra arguments go to tessera_qr: scripts/run_main.sh --m 4096 --n 4096 --device hybrid
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

scripts/deps.sh
if [ ! -f build/CMakeCache.txt ]; then
  if [ -x /usr/local/cuda/bin/nvcc ]; then
    cuda=(-DTESSERA_CUDA=ON -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
  else
    cuda=(-DTESSERA_CUDA=OFF)
  fi
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${cuda[@]}"
fi
# Only the tool itself when the build is Ninja's (its outputs are targets); else everything.
if [ -f build/build.ninja ]; then
  cmake --build build -j "$(nproc)" --target bin/tessera_qr
else
  cmake --build build -j "$(nproc)"
fi
check=(--check)
for a in "$@"; do [ "$a" = --check ] && check=(); done
exec build/bin/tessera_qr "${check[@]}" "$@"
