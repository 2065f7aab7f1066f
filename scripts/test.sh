#!/usr/bin/env bash
# Install what is missing, build everything (library, command, tests, benchmarks), and run the whole
# test suite with CTest, then the byte-parsing layers' tests under AddressSanitizer + UBSan
# (scripts/test-sanitize.sh). Extra arguments go to the first ctest, e.g. scripts/test.sh -L unit.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/scripts/setup.sh"
"$here/scripts/build.sh"
cd "${QGOSSIP_BUILD_DIR:-$here/build}"
ctest --output-on-failure --timeout 900 "$@"
# The same decoder and wire tests again under AddressSanitizer + UBSan (a Debug build of its own).
"$here/scripts/test-sanitize.sh"
