#!/usr/bin/env bash
# The sanitizer CI configuration: a Debug build with AddressSanitizer and UndefinedBehaviorSanitizer on
# every target (QGOSSIP_SANITIZE in the root CMakeLists), in its own build directory, running the unit
# tests of the byte-parsing layers. The decoders' corruption tests (truncated, oversized, random and bit-flipped payloads) run
# here, so an out-of-bounds read or undefined behaviour fails the build instead of passing silently.
# CPU only (no CUDA under ASan), no benchmarks. Test cases in the doctest suite "statistics" (means and
# variances over thousands of valid decodes) run only in the normal build (tests/CMakeLists.txt).
#   scripts/test-sanitize.sh                # configure, build, ctest the core/kernels/compress/gossip tests
#   scripts/test-sanitize.sh -R compress    # extra arguments go to ctest
# Build dir: $QGOSSIP_SANITIZE_BUILD_DIR, default build-sanitize/. Parallel jobs: $QGOSSIP_JOBS (nproc).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${QGOSSIP_SANITIZE_BUILD_DIR:-$here/build-sanitize}
jobs=${QGOSSIP_JOBS:-$(nproc)}
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DQGOSSIP_SANITIZE=address,undefined \
  -DQGOSSIP_CUDA=OFF -DQGOSSIP_BENCH=OFF >/dev/null
# The layers that parse untrusted bytes (wire headers, codec payloads) and their kernels: what the
# corruption tests exercise. The rest of the suite runs in the normal build.
cmake --build "$build" --parallel "$jobs" --target test_core test_kernels test_compress test_gossip
# Any report is fatal (the build adds -fno-sanitize-recover=all); leaks count too.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:detect_stack_use_after_return=1:strict_init_order=1:check_initialization_order=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd "$build"
ctest --output-on-failure --timeout 900 -R '^(core|kernels|compress|gossip)$' "$@"
