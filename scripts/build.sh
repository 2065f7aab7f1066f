#!/usr/bin/env bash
# Configures and builds qgossip into build/ (or $QGOSSIP_BUILD_DIR). Extra arguments go to cmake's
# configure step, e.g. scripts/build.sh -DQGOSSIP_CUDA=OFF. Usage: scripts/build.sh [TARGET...]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${QGOSSIP_BUILD_DIR:-$here/build}
targets=()
cmake_args=()
for a in "$@"; do
  case "$a" in -D*) cmake_args+=("$a") ;; *) targets+=("$a") ;; esac
done
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${cmake_args[@]}" >/dev/null
if ((${#targets[@]})); then
  cmake --build "$build" --parallel "$(nproc)" --target "${targets[@]}"
else
  cmake --build "$build" --parallel "$(nproc)"
fi
