#!/usr/bin/env bash
# Install what is missing, build everything (library, command, tests, benchmarks), and run the whole
# test suite with CTest. Extra arguments go to ctest, e.g. scripts/test.sh -L unit.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/scripts/setup.sh"
"$here/scripts/build.sh"
cd "${QGOSSIP_BUILD_DIR:-$here/build}"
ctest --output-on-failure --timeout 900 "$@"
