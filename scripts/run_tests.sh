#!/usr/bin/env bash
# The full check (what .ci/run runs): the Release build with warnings as errors and every test,
# then the CPU tests again under AddressSanitizer+UBSan and the scheduler's under ThreadSanitizer.
#   TESSERA_SKIP_SANITIZERS=1   skip the sanitizer builds
#   TESSERA_JOBS=N              build jobs (default: nproc)
#   TESSERA_CTEST_JOBS=N        tests run at once (default 1: the tests start their own threads)
#   TESSERA_SANITIZER_TIMEOUT=S bound on each sanitizer test stage (default 1800 s)
# Exits nonzero if any stage fails; every stage runs regardless, and a timing table ends the log.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

jobs=${TESSERA_JOBS:-$(nproc)}
ctest_jobs=${TESSERA_CTEST_JOBS:-1}
sanitizer_timeout=${TESSERA_SANITIZER_TIMEOUT:-1800}
summary=()
failed=0
start=$SECONDS

# stage NAME COMMAND...: runs one command, records its status and duration.
stage() {
  local name=$1 t0=$SECONDS rc=0
  shift
  echo "==== [$(date +%H:%M:%S)] $name: $*"
  "$@" || rc=$?
  local status=ok
  [ $rc -eq 0 ] || { status="FAILED ($rc)"; failed=1; }
  summary+=("$(printf '%-24s %-12s %6ds' "$name" "$status" $((SECONDS - t0)))")
  return $rc
}
report() {
  echo "==== summary"
  printf '%s\n' "${summary[@]}"
  printf '%-24s %-12s %6ds\n' total "$([ $failed -eq 0 ] && echo ok || echo FAILED)" $((SECONDS - start))
}
trap report EXIT

stage deps scripts/deps.sh || exit 1

# CUDA when the toolkit is there (no GPU needed to build; GPU tests then skip with code 77).
if [ -x /usr/local/cuda/bin/nvcc ]; then
  cuda=(-DTESSERA_CUDA=ON -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
else
  cuda=(-DTESSERA_CUDA=OFF)
fi

if stage configure cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTESSERA_WERROR=ON \
     -DTESSERA_SANITIZE= "${cuda[@]}" &&
   stage build cmake --build build -j "$jobs"; then
  stage ctest ctest --test-dir build --output-on-failure -j "$ctest_jobs" || true
fi

if [ "${TESSERA_SKIP_SANITIZERS:-0}" != 1 ]; then
  # ASan+UBSan: every test that runs on the CPU (scheduler, trace export, kernels, QR, batched, tools);
  # TSan: the scheduler's tests (oneTBB and OpenBLAS are not instrumented, so TSan on the kernel
  # and QR tests would report their internals).
  asan_tests=() tsan_tests=()
  for f in tests/test_sched_*.cpp tests/test_trace_*.cpp tests/test_kernels_*.cpp tests/test_qr_*.cpp tests/test_batched_*.cpp; do
    [ -e "$f" ] || continue
    asan_tests+=("$(basename "$f" .cpp)")
    case $f in tests/test_sched_*) tsan_tests+=("$(basename "$f" .cpp)") ;; esac
  done
  if [ ${#tsan_tests[@]} -eq 0 ]; then
    echo "run_tests: no tests/test_sched_*.cpp to run under sanitizers" >&2
    summary+=("$(printf '%-24s %-12s' sanitizers 'FAILED (no tests)')")
    failed=1
  fi

  # Errors must fail the run: no recovery after a UBSan report, stop at the first ASan/TSan one.
  export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:detect_stack_use_after_return=1:strict_init_order=1
  export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
  export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:history_size=7
  [ -f tests/tsan.supp ] && TSAN_OPTIONS+=":suppressions=$root/tests/tsan.supp"
  # Sanitizer runtimes want a fixed address-space layout; run without ASLR where that is allowed.
  norandom=()
  if setarch "$(uname -m)" -R true 2>/dev/null; then norandom=(setarch "$(uname -m)" -R); fi

  for kind in asan tsan; do
    [ ${#tsan_tests[@]} -gt 0 ] || break
    case $kind in
      asan) sanitize=address,undefined; flags="-fno-sanitize-recover=all"; targets=("${asan_tests[@]}")
            pattern='^test_(sched_|trace_|kernels_|qr_|batched_)' ;;
      tsan) sanitize=thread; flags=""; targets=("${tsan_tests[@]}"); pattern='^test_sched_' ;;
    esac
    # test_qr_tool runs the tool: build it too.
    [ "$kind" = asan ] && [ -e tests/test_qr_tool.cpp ] && targets+=(tessera_qr_tool)
    [ "$kind" = asan ] && [ -e tests/test_qr_update_tool.cpp ] && targets+=(tessera_qr_update)
    [ "$kind" = asan ] && [ -e tests/test_batched_tool.cpp ] && targets+=(tessera_batched_tool)
    if stage "configure-$kind" cmake -S . -B "build-$kind" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
         -DTESSERA_SANITIZE=$sanitize -DTESSERA_CUDA=OFF -DTESSERA_BUILD_BENCH=OFF \
         "-DCMAKE_CXX_FLAGS=$flags" "-DCMAKE_C_FLAGS=$flags" &&
       stage "build-$kind" cmake --build "build-$kind" -j "$jobs" --target "${targets[@]}"; then
      # A bound on the whole stage: a sanitizer report racing LSan's exit-time leak check can
      # deadlock the sanitizer runtime, and the tests' own TIMEOUT (1200 s each) is long.
      stage "ctest-$kind" timeout -k 30 "$sanitizer_timeout" "${norandom[@]}" \
        ctest --test-dir "build-$kind" -R "$pattern" --output-on-failure --no-tests=error \
        -j "$ctest_jobs" || true
    fi
  done
fi

exit $failed
