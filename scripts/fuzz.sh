#!/usr/bin/env bash
# Fuzzes the byte parsers: the libFuzzer targets of fuzz/ (the wire header, every codec's decoder, the notices)
# under AddressSanitizer + UBSan, each for a bounded time, starting from a seed corpus of real
# payloads that fuzz/make_corpus writes. Its own clang build (QGOSSIP_FUZZ=ON), of the fuzz targets
# and the layer libraries they link only (no tests, benchmarks, torch or CUDA).
#   scripts/fuzz.sh                               # 20 s per target
#   scripts/fuzz.sh 300                           # 300 s per target
#   QGOSSIP_FUZZ_RUNS=1000000 scripts/fuzz.sh 0   # 10^6 executions per target, no time limit
#   QGOSSIP_FUZZ_TARGETS=codec_decode_fuzz scripts/fuzz.sh
# Any crash, sanitizer report, leak, timeout (-timeout, s per input) or memory blow-up (-rss_limit_mb)
# fails: the input is saved under <build>/artifacts/<target>/ (replay: <build>/fuzz/<target> FILE)
# and the report printed. The last line reads "fuzz: ok (...)" or "fuzz: FAILED (...)".
# Build dir: $QGOSSIP_FUZZ_BUILD_DIR (default build-fuzz/); compiler: $QGOSSIP_FUZZ_CXX (clang++);
# parallel build jobs: $QGOSSIP_JOBS (nproc). Needs clang and libclang-rt-14-dev (scripts/setup.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${QGOSSIP_FUZZ_BUILD_DIR:-$here/build-fuzz}
seconds=${1:-20}
runs=${QGOSSIP_FUZZ_RUNS:--1}
jobs=${QGOSSIP_JOBS:-$(nproc)}
cxx=${QGOSSIP_FUZZ_CXX:-clang++}
read -r -a targets <<<"${QGOSSIP_FUZZ_TARGETS:-wire_header_fuzz codec_decode_fuzz notice_fuzz join_state_fuzz}"

if ! command -v "$cxx" >/dev/null; then
  echo "fuzz: FAILED ($cxx not found: scripts/setup.sh installs clang and libclang-rt-14-dev)"
  exit 1
fi
start=$(date +%s)
if ! cmake -S "$here" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
       -DQGOSSIP_FUZZ=ON -DQGOSSIP_TESTS=OFF -DQGOSSIP_BENCH=OFF -DQGOSSIP_TORCH=OFF -DQGOSSIP_CUDA=OFF >/dev/null ||
   ! cmake --build "$build" --parallel "$jobs" --target "${targets[@]}" make_corpus; then
  echo "fuzz: FAILED (configuring or building $build)"
  exit 1
fi
built=$(date +%s)
echo "fuzz: built in $((built - start)) s"

# Seeds are rewritten each time (deterministic); what the fuzzers add stays in corpus/<target>.
rm -rf "$build/seeds"
"$build/fuzz/make_corpus" "$build/seeds" || { echo "fuzz: FAILED (make_corpus)"; exit 1; }
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
summary=""
failed=""
for t in "${targets[@]}"; do
  name=${t%_fuzz}
  mkdir -p "$build/corpus/$name" "$build/artifacts/$t" "$build/logs"
  log="$build/logs/$t.log"
  rc=0
  "$build/fuzz/$t" -max_total_time="$seconds" -runs="$runs" -rss_limit_mb=2048 -timeout=10 \
    -print_final_stats=1 -artifact_prefix="$build/artifacts/$t/" \
    "$build/corpus/$name" "$build/seeds/$name" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
  corpus=$(find "$build/corpus/$name" -type f | wc -l)
  if ((rc != 0)); then
    echo "fuzz: $t FAILED (exit $rc) after ${execs:-?} executions; the report ($log):"
    # The sanitizer's report and the input, without libFuzzer's progress lines and ASan's shadow map.
    grep -v -e '^#[0-9]' -e '^\s*NEW_FUNC' -e '^INFO:' -e '^=*>* *0x[0-9a-f]*:' -e '^Shadow byte' \
      -e '^  [A-Z][a-zA-Z -]*: *[0-9a-f ]*$' "$log" | head -80
    failed+=" $t"
  else
    echo "fuzz: $t: ${execs:-?} executions in ${secs:-?} s, no crash (corpus: $corpus inputs)"
  fi
  summary+="$t ${execs:-?} executions, "
done
if [ -n "$failed" ]; then
  echo "fuzz: FAILED (failed:$failed; ${summary}total $(($(date +%s) - start)) s)"
  exit 1
fi
echo "fuzz: ok (${summary}build $((built - start)) s, total $(($(date +%s) - start)) s)"
