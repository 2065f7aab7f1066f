#!/usr/bin/env bash
# Prints the model and copy hashes of deterministic runs, one line per node, so that a change meant to
# keep behaviour (a refactor) can be checked bit for bit: run it before and after and diff the two.
#   demo      configs/demo.yaml as scripts/demo.sh runs it (8 nodes, CHOCO-SGD 3-bit, H = 16)
#   hostile   the hostile grid's cheap cell (tests/integration/hostile_test.cpp): a ring of 16,
#             configs/choco-8bit-h1.yaml for one epoch, clean, and rank 5's noise attack with robust
#             mixing off and on
#   python    tests/python/test_cli_parity.py's demo case: the CLI's and the Python loop's models
# Every run is synchronous and seeded, so its hashes do not depend on timing.
# Usage: scripts/behaviour_hashes.sh [OUT_DIR]   (OUT_DIR: where the runs go; default a temporary one)
# Needs the build (scripts/build.sh); prints to stdout, the runs' own output to OUT_DIR/*.out.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${QGOSSIP_BUILD_DIR:-$here/build}
out=${1:-$(mktemp -d)}
mkdir -p "$out"
py=/usr/bin/python3

hashes() {  # hashes LABEL RUN_DIR: "LABEL node R model_hash copy_...=..." per node
  "$py" - "$1" "$2" <<'EOF'
import glob, json, os, re, sys
label, run = sys.argv[1], sys.argv[2]
files = sorted(glob.glob(os.path.join(run, "node-*.json")), key=lambda p: int(re.findall(r"\d+", os.path.basename(p))[0]))
if not files:
    sys.exit(f"{label}: no node summaries in {run}")
for f in files:
    s = json.load(open(f))
    copies = " ".join(f"{k}={s[k]}" for k in sorted(s) if k.startswith("copy_"))
    print(f"{label} node {s['rank']} {s['status']} rounds {s['rounds']} model {s['model_hash']} {copies}")
EOF
}

launch() {  # launch LABEL CONFIG [ARGS...]
  local label=$1 config=$2
  shift 2
  "$build/qgossip" launch "$config" --plain --no-plot --set "output.dir=$out/$label" --set "name=$label" "$@" \
    >"$out/$label.out" 2>&1 || { echo "$label: qgossip launch failed (see $out/$label.out)" >&2; exit 1; }
  hashes "$label" "$out/$label/$label"
}

launch demo "$here/configs/demo.yaml"

port=$(( 40000 + RANDOM % 20000 ))
printf 'hostile:\n  - {rank: 5, attack: noise}\n' >"$out/noise.yaml"
ring16=(--set train.epochs=1 --set "topology={graph: ring, n: 16, base_port: $port}"
        --set network.on_peer_failure=continue)
launch hostile-clean "$here/configs/choco-8bit-h1.yaml" "${ring16[@]}"
launch hostile-off "$here/configs/choco-8bit-h1.yaml" "${ring16[@]}" --scenario "$out/noise.yaml"
launch hostile-on "$here/configs/choco-8bit-h1.yaml" "${ring16[@]}" --scenario "$out/noise.yaml" \
  --set algorithm.robust.clip=auto

# The parity test's demo case, its runs kept under OUT_DIR/python.
QGOSSIP_BUILD="$build" "$py" -m pytest -q -p no:cacheprovider --basetemp="$out/python" \
  "$here/tests/python/test_cli_parity.py" -k demo_recipe >"$out/python.out" 2>&1 ||
  { echo "python: the parity test failed (see $out/python.out)" >&2; exit 1; }
for way in cli py; do
  hashes "python-$way" "$(dirname "$(find "$out/python" -path "*/$way/parity/node-0.json" | head -1)")"
done
