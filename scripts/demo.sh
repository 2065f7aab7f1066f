#!/usr/bin/env bash
# The main job: install what is missing, build, and train the demo (8 nodes on a ring, ECD-PSGD with
# 8-bit QSGD, an MLP on Fashion-MNIST) with a live progress line. Logs go to runs/demo/, the plot to
# runs/demo/convergence.png. Usage: scripts/demo.sh [CONFIG.yaml] [--set key=value ...]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/scripts/setup.sh"
"$here/scripts/build.sh" qgossip
config="$here/configs/demo.yaml"
if [[ $# -gt 0 && "$1" != --* ]]; then config=$1; shift; fi
cd "$here"
exec "${QGOSSIP_BUILD_DIR:-$here/build}/qgossip" launch "$config" "$@"
