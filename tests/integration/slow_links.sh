#!/usr/bin/env bash
# A run on links slower than a round of messages: 8 nodes in network namespaces (scripts/cluster.sh),
# each node's egress at 0.5 Mbit/s (tc tbf, unpaced: bursts queue and drop in tbf), the demo's
# message size (an MLP 784-128-10, 4-bit QSGD in buckets of 128: 54 kB per neighbour, 1.7 s of link
# time per round), default heartbeats (1 s). Every node must finish (no live peer declared lost
# while its data is queued: links issue, item 1), every copy equal to its owner, and no node may
# linger at exit: each leaves once its neighbours have finished.
# Then the same run as an all-gather (each node sends its code to all 7 others) with two nodes at
# 1 Mbit/s and the rest at 100 Mbit/s (the two-slow-links scenario): 7 connections through one tbf
# whose queue drops parts of every burst, so PINGs, PONGs and acknowledgements wait seconds in
# retransmission; no live node may be declared lost (before the fix: the demo's all-gather so shaped
# exited 1 in 6 of 6 runs).
# Last, asynchronous gossip (CHOCO, τ unbounded) with the same two slow nodes: a round whose uplink
# is still busy with earlier messages sends nothing and goes on (docs/algorithms.md, "A busy
# uplink"), so the slow nodes run at their neighbours' pace, not their link's, and every copy stays
# equal. Sending all 16 rounds' messages (54 kB to each of 2 neighbours) takes a 1 Mbit/s uplink at
# least 13.9 s, and before this (2357938) the slow nodes ended at 15.8-16.2 s (3 runs); now at 2.0-2.1 s (3
# runs): the check asks for under 8 s after round 1, which only skipping allows (a slow node that sent
# on a link to a neighbour that had finished, before a8f5206, took 8-10 s: one run in four under load).
# Usage: bash tests/integration/slow_links.sh QGOSSIP_BINARY. Exit 77 (skipped) without root.
set -euo pipefail

qgossip="${1:-${QGOSSIP:-}}"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cluster="$repo/scripts/cluster.sh"

skip() { echo "slow_links: SKIPPED: $*"; exit 77; }
fail() { echo "slow_links: FAILED: $*" >&2; exit 1; }

[[ -n "$qgossip" && -x "$qgossip" ]] || fail "no qgossip binary given (argument 1 or QGOSSIP)"
command -v ip >/dev/null && command -v tc >/dev/null || skip "no 'ip'/'tc' (apt-get install iproute2)"
cap_eff=$(awk '/^CapEff:/ {print $2}' /proc/self/status)
(((16#$cap_eff >> 12) & 1 && (16#$cap_eff >> 21) & 1)) ||
  skip "not root: network namespaces need CAP_NET_ADMIN and CAP_SYS_ADMIN"
prefix="qgs$$x"
subnet="10.214.$(($$ % 250))"
ip netns add "${prefix}probe" 2>/dev/null || skip "cannot create a network namespace here"
ip netns del "${prefix}probe"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# 1024 examples per node, batches of 64, 16 local steps: one round per epoch, 6 rounds.
cat >"$tmp/slow.yaml" <<EOF
name: slow
seed: 4
topology: {graph: ring, n: 8}
algorithm: {name: choco, consensus_step: 0.8}
compressor: {name: qsgd, bits: 4, bucket: 128, norm: max}
model: {kind: mlp, hidden: [128]}
data:
  dataset: synthetic
  synthetic: {train: 8192, test: 500, dim: 784, classes: 10, noise: 2.0}
train: {epochs: 6, batch: 64, lr: 0.1, local_steps: 16, log_every: 1, eval_every: 0}
network: {start_timeout_s: 60, round_timeout_s: 60}
output: {dir: $tmp/runs}
EOF

# run_cluster WHAT RUN_NAME LOG_PATTERN CLUSTER_OPTIONS... -- RUN_OPTIONS...: one cluster.sh run of
# slow.yaml; fails unless it exits 0, verify reports every copy equal, and no node log matches
# LOG_PATTERN.
run_cluster() {
  local what=$1 name=$2 pattern=$3 rc=0 shaping=()
  shift 3
  while (($# > 0)) && [[ "$1" != "--" ]]; do shaping+=("$1"); shift; done
  (($# > 0)) && shift
  timeout 300 bash "$cluster" --prefix "$prefix" --subnet "$subnet" --qgossip "$qgossip" "${shaping[@]}" \
    "$tmp/slow.yaml" --set name="$name" "$@" --plain --no-plot >"$tmp/out-$name.txt" 2>&1 || rc=$?
  cat "$tmp/out-$name.txt"
  ((rc == 0)) || fail "$what: cluster.sh exited $rc"
  grep -q "verify: .*all equal" "$tmp/out-$name.txt" || fail "$what: verify did not report every copy equal"
  if grep -h "$pattern" "$tmp/runs/$name"/node-*.log; then
    fail "$what: a live node was declared lost, or a node did not leave cleanly (above)"
  fi
}

start=$(date +%s.%N)
run_cluster "0.5 Mbit/s" slow "left the run\|peer_lost\|heartbeat\|warning: after the last round" --rate 500kbit --
end=$(date +%s.%N)
python3 - "$tmp/runs/slow" "$end" <<'EOF' || fail "the run's summaries are not as expected (above)"
import json, sys
d, end = sys.argv[1], float(sys.argv[2])
ok = True
last = 0.0
for r in range(8):
    s = json.load(open(f"{d}/node-{r}.json"))
    if s["status"] != "ok" or s["rounds"] != 6:
        print(f"node-{r}.json: status {s['status']!r}, {s['rounds']} rounds: {s.get('error')}"); ok = False
    last = max(last, s["end_unix_s"])
# The namespaces' teardown and the launcher's verify come after the last node: a few seconds at
# most, never the 10 s linger a node used to wait at exit.
print(f"the command ended {end - last:.2f} s after the last node's summary")
if end - last > 8:
    print("too long after the last node"); ok = False
sys.exit(0 if ok else 1)
EOF
# The all-gather under two slow nodes.
cat >"$tmp/two-slow.yaml" <<EOF
default: {rate: 100mbit}
nodes:
  2: {rate: 1mbit}
  6: {rate: 1mbit}
EOF
run_cluster "all-gather, two slow nodes" slowag "left the run\|peer_lost\|heartbeat" \
  --scenario "$tmp/two-slow.yaml" -- --set algorithm=allgather --set train.local_steps=2 --set train.epochs=2
run_cluster "asynchronous, two slow nodes" slowasync "left the run\|peer_lost\|heartbeat" \
  --scenario "$tmp/two-slow.yaml" -- --set train.max_staleness=unbounded --set train.local_steps=2 \
  --set train.epochs=2
python3 - "$tmp/runs/slowasync" <<'EOF' || fail "asynchronous, two slow nodes: the slow nodes' summaries (above)"
import csv, json, sys
ok = True
for r in (2, 6):
    s = json.load(open(f"{sys.argv[1]}/node-{r}.json"))
    # From the end of round 1 (the CSV's first row) to the node's end: its start-up (data, keys,
    # neighbours), which a loaded machine stretches to seconds, is no part of what skipping saves.
    first = float(next(csv.DictReader(open(f"{sys.argv[1]}/node-{r}.csv")))["wall_s"])
    run_s = s["wall_s"] - first
    print(f"node {r}: {s['rounds']} rounds in {s['wall_s']:.1f} s ({run_s:.1f} s after round 1), "
          f"{s['rounds_unsent']} of them sent nothing")
    if s["status"] != "ok" or run_s >= 8 or s["rounds_unsent"] < 1:
        ok = False
sys.exit(0 if ok else 1)
EOF
end=$(date +%s.%N)
echo "slow_links: ok ($(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.1f", b - a}') s)"
