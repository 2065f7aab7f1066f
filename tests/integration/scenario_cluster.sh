#!/usr/bin/env bash
# scripts/cluster.sh --scenario end to end (docs/cluster.md, "Scenarios"):
#  1. four qgossip nodes under a scenario with per-node rates, a delay and one CPU share: while they
#     run, the capped node's cgroup holds the expected cpu.cfs_quota_us / cpu.cfs_period_us (and the
#     others are uncapped), each veth's tbf has its node's rate, and the delay is real: a ping between
#     two namespaces takes 2 x delay where the kernel delays packets (netem), else the kernel adds
#     nothing and the nodes' rounds take the delay (transport emulation); run.json and --stats record
#     the mechanisms;
#  2. --ranks: each rank in its own cgroup, and a busy rank at a tiny share is held to its quota;
#  3. refusals before anything is created; 4. a SIGTERM mid-run; after each, nothing left behind
#     (namespaces, bridge, cgroups).
# Usage: bash tests/integration/scenario_cluster.sh QGOSSIP_BINARY   (or QGOSSIP=... in the environment)
# Exit 77 (CTest: skipped) without root, network namespaces, the cgroup v1 cpu controller or ping.
set -euo pipefail

qgossip="${1:-${QGOSSIP:-}}"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cluster="$repo/scripts/cluster.sh"
skip() { echo "scenario_cluster: SKIPPED: $*"; exit 77; }
bg=""  # a cluster.sh running in the background: stopped (and so torn down) when a check fails
fail() {
  echo "scenario_cluster: FAILED: $*" >&2
  [[ -z "$bg" ]] || { kill -TERM "$bg" 2>/dev/null; wait "$bg" 2>/dev/null; }
  exit 1
}

[[ -n "$qgossip" && -x "$qgossip" ]] || fail "no qgossip binary given (argument 1 or QGOSSIP)"
{ command -v ip && command -v tc; } >/dev/null || skip "no ip/tc (apt-get install iproute2)"
python3 -c 'import yaml' 2>/dev/null || skip "no python3 with PyYAML (apt-get install python3-yaml)"
command -v ping >/dev/null || skip "no ping (apt-get install iputils-ping; scripts/setup.sh installs it)"
cap_eff=$(awk '/^CapEff:/ {print $2}' /proc/self/status)
(((16#$cap_eff >> 12) & 1 && (16#$cap_eff >> 21) & 1)) || skip "not root: network namespaces need CAP_NET_ADMIN and CAP_SYS_ADMIN"
cpu_mount=$(awk '$3 == "cgroup" { n = split($4, o, ","); for (i = 1; i <= n; ++i) if (o[i] == "cpu") { print $2; exit } }' /proc/mounts)
[[ -n "$cpu_mount" ]] || skip "no cgroup v1 cpu controller mounted"
own=$(awk -F: '{ n = split($2, c, ","); for (i = 1; i <= n; ++i) if (c[i] == "cpu") { print $3; exit } }' /proc/self/cgroup)

# Names of our own, so that a user's cluster (default prefix qg, subnet 10.77.0) is never touched.
prefix="qgs$$x"
subnet="10.215.$(($$ % 250))"
cgroups="$cpu_mount${own%/}/${prefix}-cpu"
ip netns add "${prefix}probe" 2>/dev/null || skip "cannot create a network namespace here ('ip netns add' failed)"
ip netns del "${prefix}probe"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cpus=$(getconf _NPROCESSORS_ONLN)

leftovers() {
  ! ip netns list | awk '{print $1}' | grep -q "^${prefix}[0-9]" || fail "namespaces left behind ($1)"
  ! ip link show dev "${prefix}-br" >/dev/null 2>&1 || fail "bridge ${prefix}-br left behind ($1)"
  [[ ! -e "$cgroups" ]] || fail "cgroup $cgroups left behind ($1)"
}
# The minimum of N pings from namespace $1 to address $2, in ms.
ping_min_ms() {
  ip netns exec "$1" ping -n -q -c "${3:-10}" -i 0.05 -W 2 "$2" | awk -F'[/ ]' '/^rtt/ {print $7}'
}

# ---- 1. a qgossip run under a scenario ---------------------------------------------------------
delay_ms=20
share=0.5
cat >"$tmp/scenario.yaml" <<EOF
default: {rate: 20mbit, delay: ${delay_ms}ms}
nodes:
  1: {cpu_share: $share}
  2: {rate: 2mbit}
EOF
want_quota=$(awk -v s="$share" -v c="$cpus" 'BEGIN { printf "%.0f", s * c / 4 * 100000 }')
want_rates=(20000000 20000000 2000000 20000000)
# 4 nodes x 512 examples / batch 32 = 4 rounds per epoch; 30 epochs: 120 rounds, >= 2.4 s at 20 ms each.
cat >"$tmp/run.yaml" <<EOF
name: scen
seed: 3
topology: {graph: ring, n: 4}
algorithm: dcd
compressor: {name: qsgd, bits: 8, bucket: 128}
model: {kind: softmax}
data:
  dataset: synthetic
  synthetic: {train: 512, test: 128, dim: 16, classes: 4, noise: 1.0}
train: {epochs: 30, batch: 32, lr: 0.1, log_every: 1, eval_every: 10}
network: {start_timeout_s: 20, round_timeout_s: 20, linger_s: 2}
output: {dir: $tmp/runs}
EOF
start=$SECONDS
timeout 90 bash "$cluster" --scenario "$tmp/scenario.yaml" --prefix "$prefix" --subnet "$subnet" \
  --qgossip "$qgossip" --stats "$tmp/stats.json" "$tmp/run.yaml" --plain --no-plot >"$tmp/out.txt" 2>&1 &
bg=$!
# While it runs: rank 1's node is in its cgroup (up to 20 s for the start). The first process there
# may still be the wrapper that joins the cgroup and then execs the node (under load, for a while):
# wait for the node itself.
rank1_node() {
  local p
  for p in $(cat "$cgroups/1/cgroup.procs" 2>/dev/null); do
    tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q -- " run --config .* --rank 1 " && { echo "$p"; return 0; }
  done
  return 1
}
node1=""
for _ in $(seq 100); do
  node1=$(rank1_node) && break
  sleep 0.2
done
[[ -n "$(cat "$cgroups/1/cgroup.procs" 2>/dev/null)" ]] || { cat "$tmp/out.txt"; fail "no process in $cgroups/1"; }
[[ -n "$node1" ]] || fail "no process in $cgroups/1 is rank 1's node: $(cat "$cgroups/1/cgroup.procs" | tr '\n' ' ')"
quota=$(cat "$cgroups/1/cpu.cfs_quota_us") period=$(cat "$cgroups/1/cpu.cfs_period_us")
[[ "$quota/$period" == "$want_quota/100000" ]] ||
  fail "rank 1: cpu.cfs_quota_us/period $quota/$period, expected $want_quota/100000 ($share x $cpus CPUs / 4 nodes)"
for r in 0 2 3; do
  [[ $(cat "$cgroups/$r/cpu.cfs_quota_us") == -1 ]] || fail "rank $r is capped; the scenario caps only rank 1"
done
for r in 0 1 2 3; do
  got=$(tc -j -n "$prefix$r" qdisc show dev "$prefix-n$r" |
    python3 -c 'import json, sys; print(*[q["options"]["rate"] * 8 for q in json.load(sys.stdin) if q["kind"] == "tbf"])')
  [[ "$got" == "${want_rates[r]}" ]] || fail "rank $r: tbf rate $got bit/s, expected ${want_rates[r]}"
done
rtt=$(ping_min_ms "${prefix}0" "$subnet.2")
rc=0
wait "$bg" || rc=$?
bg=""
((rc == 0)) || { cat "$tmp/out.txt"; fail "cluster.sh exited $rc"; }
leftovers "after the qgossip run"
shaping=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["network_shaping"])' "$tmp/runs/scen/run.json")
for want in "scenario $tmp/scenario.yaml" "rank 1: $want_quota/100000us (cpu_share $share)" \
  "ranks 0,2,3: uncapped" "rank 2: 2000000bit" "ranks 0,1,3: 20000000bit"; do
  [[ "$shaping" == *"$want"* ]] || fail "run.json's network_shaping lacks '$want': $shaping"
done
python3 - "$tmp/stats.json" "$want_quota" <<'EOF' || fail "--stats is not as expected (above)"
import json, sys
stats, quota = json.load(open(sys.argv[1])), int(sys.argv[2])
got = [(r["cpu_quota_us"], r["cpu_period_us"], r["rate_bits"], r["delay_us"]) for r in stats["ranks"]]
want = [(None, None, 20000000, 20000), (quota, 100000, 20000000, 20000), (None, None, 2000000, 20000),
        (None, None, 20000000, 20000)]
if got != want or not stats["scenario"].endswith("scenario.yaml"):
    sys.exit(f"stats: {got} != {want}, scenario {stats['scenario']}")
EOF
# The delay: netem delays both egresses (20 ms each way, so 40 ms a round trip; the minimum of 10 pings
# drops the queueing behind the run's own traffic, and the veths and bridge add ~0.05 ms: 5 ms of
# slack is for timers on a loaded host). Transport emulation leaves the kernel path as it is (a ping
# well under one delay) and delays every message: a synchronous round then takes at least the one-way
# delay on average (it waits for its neighbours' messages, each delay_ms on the way; 0.75 of it allows
# for the first rounds' start-up offsets), where unshaped rounds of this run take ~2 ms.
if [[ "$shaping" == *"by tc netem delay"* ]]; then
  awk -v r="$rtt" -v d="$delay_ms" 'BEGIN { exit !(r >= 2 * d && r <= 2 * d + 5) }' ||
    fail "netem: ping min RTT $rtt ms, expected 2 x $delay_ms ms (+5)"
  echo "scenario_cluster: delay by netem: ping min RTT $rtt ms for 2 x $delay_ms ms"
else
  [[ "$shaping" == *"${delay_ms} ms one-way on every node by transport emulation, network.emulate.delay_ms"* ]] ||
    fail "run.json records no delay mechanism: $shaping"
  awk -v r="$rtt" -v d="$delay_ms" 'BEGIN { exit !(r < d) }' || fail "ping min RTT $rtt ms: the kernel delays, yet run.json says transport emulation"
  python3 - "$tmp/runs/scen" "$delay_ms" <<'EOF' || fail "the rounds do not show the delay (above)"
import csv, sys
d, delay = sys.argv[1], float(sys.argv[2]) / 1000
for r in range(4):
    rows = list(csv.DictReader(open(f"{d}/node-{r}.csv")))
    first, last = rows[1], rows[-1]
    per_round = (float(last["wall_s"]) - float(first["wall_s"])) / (int(last["iteration"]) - int(first["iteration"]))
    print(f"rank {r}: {per_round * 1000:.1f} ms per round")
    if per_round < 0.75 * delay:
        sys.exit(f"rank {r}: {per_round * 1000:.1f} ms per round, expected >= 0.75 x {delay * 1000:g} ms")
EOF
  echo "scenario_cluster: delay by transport emulation (ping min RTT $rtt ms: no kernel delay)"
fi
echo "scenario_cluster: qgossip run ok ($((SECONDS - start)) s)"

# ---- 2. --ranks: every rank in its cgroup; a busy rank held to its quota ---------------------------
# 2 ranks; rank 1 at 0.025 of a fair share of CPUs/2: 2.5 % of one CPU on 2 cores. It spins for 2 s
# and reports the CPU time it got; uncapped it would get its share of a loaded machine (tens of %).
tiny=0.025
want_fraction=$(awk -v s="$tiny" -v c="$cpus" 'BEGIN { printf "%.6f", s * c / 2 }')
printf 'nodes:\n  1: {cpu_share: %s}\n' "$tiny" >"$tmp/tiny.yaml"
cat >"$tmp/spin.py" <<'EOF'
import sys, time
out = sys.argv[1]
t0, c0 = time.monotonic(), time.process_time()
while time.monotonic() - t0 < 2:
    pass
fraction = (time.process_time() - c0) / (time.monotonic() - t0)
cgroup = [line.split(":")[2].strip() for line in open("/proc/self/cgroup") if "cpu" in line.split(":")[1].split(",")]
open(out, "w").write(f"{fraction:.6f} {cgroup[0]}\n")
EOF
timeout 60 bash "$cluster" --scenario "$tmp/tiny.yaml" --prefix "$prefix" --subnet "$subnet" --stats "$tmp/rstats.json" \
  --ranks 2 -- python3 "$tmp/spin.py" "$tmp/spin-{rank}.txt" >"$tmp/out.txt" 2>&1 || { cat "$tmp/out.txt"; fail "--ranks run failed"; }
leftovers "after --ranks"
for r in 0 1; do
  read -r fraction path <"$tmp/spin-$r.txt"
  [[ "$path" == "${own%/}/${prefix}-cpu/$r" || "$path" == "/${prefix}-cpu/$r" ]] || fail "rank $r ran in cgroup $path"
  echo "scenario_cluster: --ranks rank $r got $fraction of a CPU"
done
# CFS bandwidth control holds a group to quota per period; 1.5x + 1 % covers the tick at which it notices.
read -r fraction _ <"$tmp/spin-1.txt"
awk -v f="$fraction" -v w="$want_fraction" 'BEGIN { exit !(f <= 1.5 * w + 0.01) }' ||
  fail "rank 1 got $fraction of a CPU under a quota of $want_fraction"
throttled=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["ranks"][1]["cpu_nr_throttled"])' "$tmp/rstats.json")
((throttled > 0)) || fail "rank 1 was never throttled (cpu.stat nr_throttled $throttled)"
echo "scenario_cluster: --ranks ok (rank 1 throttled $throttled times, quota $want_fraction of a CPU)"

# ---- 3. refusals, before anything exists -------------------------------------------------------
refused() {  # refused WHAT EXPECTED_TEXT cluster.sh-arguments...
  local what=$1 text=$2 rc=0
  shift 2
  timeout 60 bash "$cluster" --prefix "$prefix" --subnet "$subnet" "$@" >"$tmp/out.txt" 2>&1 || rc=$?
  ((rc == 2)) || { cat "$tmp/out.txt"; fail "$what: exit $rc, expected 2"; }
  grep -qF -- "$text" "$tmp/out.txt" || { cat "$tmp/out.txt"; fail "$what: no '$text' in the message"; }
  leftovers "$what"
}
printf 'default: {rate: 10mbit}\nnodes:\n  4: {rate: 1mbit}\n' >"$tmp/rank4.yaml"
refused "a rank beyond the topology" "rank4.yaml:3:3: rank 4 does not exist in this run" \
  --scenario "$tmp/rank4.yaml" --qgossip "$qgossip" "$tmp/run.yaml"
printf 'default: {rate: 10mbit}\nnodes:\n  1: {rate: 1mbit}\n' >"$tmp/tworates.yaml"
refused "--pace with two rates" "--pace with --scenario needs one rate on every node" \
  --scenario "$tmp/tworates.yaml" --pace --qgossip "$qgossip" "$tmp/run.yaml"
if [[ "$shaping" != *"by tc netem delay"* ]]; then
  printf 'default: {delay: 5ms}\nnodes:\n  1: {delay: 10ms}\n' >"$tmp/twodelays.yaml"
  refused "two delays without netem" "gives nodes different delays; without tc netem" \
    --scenario "$tmp/twodelays.yaml" --qgossip "$qgossip" "$tmp/run.yaml"
  refused "a delay for --ranks without netem" "a delay with --ranks needs tc netem" \
    --scenario "$tmp/scenario.yaml" --ranks 4 -- true
fi
echo "scenario_cluster: refusals ok"

# ---- 4. SIGTERM mid-run: cgroups removed too -----------------------------------------------------
timeout 60 bash "$cluster" --scenario "$tmp/tiny.yaml" --prefix "$prefix" --subnet "$subnet" --ranks 2 -- sleep 50 >"$tmp/out.txt" 2>&1 &
bg=$!
for _ in $(seq 50); do [[ -n "$(cat "$cgroups/1/cgroup.procs" 2>/dev/null)" ]] && break; sleep 0.2; done
kill -TERM "$bg"
rc=0
wait "$bg" || rc=$?
bg=""
((rc == 143)) || { cat "$tmp/out.txt"; fail "SIGTERM: cluster.sh exited $rc, expected 143"; }
leftovers "after SIGTERM"
echo "scenario_cluster: ok ($((SECONDS - start)) s)"
