#!/usr/bin/env bash
# Smoke test of scripts/cluster.sh: two nodes in two network namespaces with tc-shaped veths run a
# few rounds; the run succeeds, records its shaping, and leaves no namespace or bridge behind; a
# launch that fails and one that is stopped by a signal are torn down too.
# Usage: bash tests/integration/netns_smoke.sh QGOSSIP_BINARY   (or QGOSSIP=... in the environment)
# Exit 77 (CTest: skipped) when this machine cannot create network namespaces.
set -euo pipefail

qgossip="${1:-${QGOSSIP:-}}"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cluster="$repo/scripts/cluster.sh"

skip() {
  echo "netns_smoke: SKIPPED: $*"
  exit 77
}
fail() {
  echo "netns_smoke: FAILED: $*" >&2
  exit 1
}

[[ -n "$qgossip" && -x "$qgossip" ]] || fail "no qgossip binary given (argument 1 or QGOSSIP)"
command -v ip >/dev/null || skip "no 'ip' command (apt-get install iproute2)"
command -v tc >/dev/null || skip "no 'tc' command (apt-get install iproute2)"
command -v python3 >/dev/null || skip "no python3 (cluster.sh reads the topology's JSON with it)"
cap_eff=$(awk '/^CapEff:/ {print $2}' /proc/self/status)
(((16#$cap_eff >> 12) & 1 && (16#$cap_eff >> 21) & 1)) ||
  skip "not root: network namespaces need CAP_NET_ADMIN and CAP_SYS_ADMIN"

# Names of our own, so that a user's cluster (default prefix qg, subnet 10.77.0) is never touched.
prefix="qgt$$x"
subnet="10.213.$(($$ % 250))"
probe="${prefix}probe"
ip netns add "$probe" 2>/dev/null || skip "cannot create a network namespace here ('ip netns add' failed)"
ip netns del "$probe"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

leftovers() {
  local left
  left=$(ip netns list | awk '{print $1}' | grep "^${prefix}[0-9]" || true)
  [[ -z "$left" ]] || fail "namespaces left behind ($1): $left"
  ! ip link show dev "${prefix}-br" >/dev/null 2>&1 || fail "bridge ${prefix}-br left behind ($1)"
}

# 2 nodes x 256 examples / batch 32 = 8 rounds per epoch, 2 epochs.
cat >"$tmp/smoke.yaml" <<EOF
name: smoke
seed: 3
topology: {graph: ring, n: 2}
algorithm: dcd
compressor: {name: qsgd, bits: 8, bucket: 128}
model: {kind: softmax}
data:
  dataset: synthetic
  synthetic: {train: 512, test: 128, dim: 16, classes: 4, noise: 1.0}
train: {epochs: 2, batch: 32, lr: 0.1, log_every: 4, eval_every: 1}
network: {start_timeout_s: 10, round_timeout_s: 10, linger_s: 2}
output: {dir: $tmp/runs}
EOF

# ---- a shaped run succeeds -------------------------------------------------------------------
start=$SECONDS
rc=0
timeout 50 bash "$cluster" --rate 20mbit --prefix "$prefix" --subnet "$subnet" --qgossip "$qgossip" \
  "$tmp/smoke.yaml" --plain --no-plot >"$tmp/out.txt" 2>&1 || rc=$?
cat "$tmp/out.txt"
((rc == 0)) || fail "cluster.sh exited $rc"
# Issue 31, item 6: --rate alone (no scenario) opened with "line 236: values[r]: unbound variable".
! grep -nE "unbound variable|\.sh: line [0-9]+: " "$tmp/out.txt" || fail "cluster.sh printed a bash error (above)"
leftovers "after a successful run"
dir="$tmp/runs/smoke"
python3 - "$dir" "$subnet" <<'EOF' || fail "the run's files are not as expected (above)"
import json, sys
d, subnet = sys.argv[1], sys.argv[2]
ok = True
for r in (0, 1):
    s = json.load(open(f"{d}/node-{r}.json"))
    if s["status"] != "ok":
        print(f"node-{r}.json: status {s['status']!r}: {s.get('error')}"); ok = False
    if s["rounds"] < 8 or s["bytes_sent"] <= 0:
        print(f"node-{r}.json: {s['rounds']} rounds, {s['bytes_sent']} bytes sent"); ok = False
run = json.load(open(f"{d}/run.json"))
text = json.dumps(run)
for want in ("tc tbf rate 20000000bit", f"{subnet}.1", f"{subnet}.2"):
    if want not in text:
        print(f"run.json does not mention {want!r}"); ok = False
sys.exit(0 if ok else 1)
EOF
echo "netns_smoke: shaped run ok ($((SECONDS - start)) s)"

# ---- the same shaped cluster runs a Python program's nodes (qgossip launch --exec, docs/python.md) --
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  rc=0
  timeout 60 bash "$cluster" --rate 20mbit --prefix "$prefix" --subnet "$subnet" --qgossip "$qgossip" \
    "$tmp/smoke.yaml" --plain --no-plot --set name=python --set train.local_steps=4 \
    --exec "/usr/bin/python3 $repo/tests/integration/python_loop.py 32 16" >"$tmp/out.txt" 2>&1 || rc=$?
  ((rc == 0)) || { cat "$tmp/out.txt"; fail "Python nodes in the namespaces: cluster.sh exited $rc"; }
  grep -q "all equal" "$tmp/out.txt" || { cat "$tmp/out.txt"; fail "Python nodes: qgossip verify did not say all equal"; }
  grep -q "$subnet.2" "$tmp/runs/python/run.json" || fail "Python nodes: run.json does not name the namespaces' addresses"
  leftovers "after the Python nodes"
  echo "netns_smoke: Python nodes in the shaped namespaces ok"
else
  fail "/usr/bin/python3 has no torch (scripts/setup.sh installs python3-torch)"
fi

# ---- a launch whose nodes fail is torn down and its exit code passed on ---------------------------
rc=0
timeout 30 bash "$cluster" --rate 20mbit --prefix "$prefix" --subnet "$subnet" --qgossip "$qgossip" \
  "$tmp/smoke.yaml" --plain --no-plot --set name=failed --set data.dataset=fashion-mnist \
  --set data.dir="$tmp/no-such-dir" >"$tmp/out.txt" 2>&1 || rc=$?
((rc == 2)) || { cat "$tmp/out.txt"; fail "nodes without data: cluster.sh exited $rc, expected the launch's 2 (bad input)"; }
leftovers "after a failed launch"

# ---- a run stopped by SIGTERM is torn down -----------------------------------------------------
timeout 40 bash "$cluster" --prefix "$prefix" --subnet "$subnet" --qgossip "$qgossip" \
  "$tmp/smoke.yaml" --plain --no-plot --set train.epochs=100000 --set name=stopped >"$tmp/out.txt" 2>&1 &
pid=$!
rows() { [[ -f "$1" ]] && wc -l <"$1" || echo 0; }
for _ in $(seq 100); do  # until both nodes have logged rounds (header + rows; up to 20 s)
  (($(rows "$tmp/runs/stopped/node-0.csv") > 2 && $(rows "$tmp/runs/stopped/node-1.csv") > 2)) && break
  sleep 0.2
done
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
((rc == 143)) || { cat "$tmp/out.txt"; fail "stopped by SIGTERM: cluster.sh exited $rc, expected 143"; }
leftovers "after SIGTERM"
echo "netns_smoke: ok ($((SECONDS - start)) s)"
