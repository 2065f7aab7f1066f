#!/usr/bin/env bash
# Install what is missing, build everything (library, command, tests, benchmarks), and run the whole
# test suite with CTest, then the byte-parsing layers' tests under AddressSanitizer + UBSan
# (scripts/test-sanitize.sh), then the libFuzzer targets of fuzz/ for $QGOSSIP_FUZZ_SECONDS (20) s
# each (scripts/fuzz.sh; 0 skips them). Extra arguments go to the first ctest, e.g. scripts/test.sh -L unit.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/scripts/setup.sh"
"$here/scripts/build.sh"
cd "${QGOSSIP_BUILD_DIR:-$here/build}"
ctest --output-on-failure --timeout 900 "$@"
# The same decoder and wire tests again under AddressSanitizer + UBSan (a Debug build of its own).
"$here/scripts/test-sanitize.sh"
# The wire header and every codec's decoder under libFuzzer + ASan + UBSan (a clang build of its own).
fuzz_seconds=${QGOSSIP_FUZZ_SECONDS:-20}
if [ "$fuzz_seconds" != 0 ]; then
  "$here/scripts/fuzz.sh" "$fuzz_seconds"
fi
