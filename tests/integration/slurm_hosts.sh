# A real Slurm of four hosts on this machine, for the tests that need several hosts (sourced, not
# run: slurm_multinode.sh, partition.sh). scripts/slurm-local.sh --nodes 4 makes host i a slurmd in
# network namespace <prefix>i with hostname sp<i>, at A.B.C.i on veth <prefix>ih into one bridge
# (docs/slurm.md). The sourcing script sets `test_name` and calls:
#   hosts_up [private]                         skips (exit 77) where it cannot run: not root, no
#                                              network namespaces, slurm-wlm or munge missing; then
#                                              starts the cluster (stopped and checked at exit;
#                                              private: no shared file system, each host its own
#                                              $tmp/priv, slurm-local.sh --private) and cds into
#                                              $tmp, with SLURM_CONF exported
#   write_config NAME EPOCHS [no-keys [OUTPUT_DIR [", more: train keys" [", more: network keys"]]]]
#                                              $tmp/NAME.yaml, 8 ranks in a ring from port $base;
#                                              the keys made in an allocation of the 4 hosts
#   step NAME SECONDS [srun options]           srun -N 4 -n 8 qgossip run of NAME, logs in logs/NAME/
#   rows FILE, elapsed T0, summary FILE KEY, skip, fail
set -euo pipefail

qgossip="${1:-${QGOSSIP:-}}"
export PATH="$PATH:/usr/sbin:/sbin"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

skip() { echo "$test_name: SKIPPED: $*"; exit 77; }
fail() { echo "$test_name: FAILED: $*" >&2; exit 1; }
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}'; }
rows() { [[ -f "$1" ]] && wc -l <"$1" || echo 0; }
summary() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], ""))' "$1" "$2"; }
# A base port with COUNT ports from it free here (and so in every namespace: they start empty),
# outside the ephemeral range and apart from the ports in AVOID (slurmctld's and slurmd's): the
# kernel's ephemeral picks lie close together, and a node on a host whose slurmd held its port
# could not bind it.
free_ports() {  # COUNT [AVOID...]
  python3 - "$@" <<'PY'
import random, socket, sys
n, avoid = int(sys.argv[1]), {int(p) for p in sys.argv[2:]}
for _ in range(200):
    base = random.randrange(20000, 32000 - n)
    if any(base <= p < base + n for p in avoid):
        continue
    socks = []
    try:
        for p in range(base, base + n):
            socks.append(socket.socket())
            socks[-1].bind(("", p))
    except OSError:
        continue
    finally:
        for s in socks:
            s.close()
    print(base)
    sys.exit(0)
sys.exit("no free port range found")
PY
}

hosts_up() {
  [[ -n "$qgossip" && -x "$qgossip" ]] || fail "no qgossip binary given (argument 1 or QGOSSIP)"
  qgossip="$(realpath "$qgossip")"
  [[ "$(id -u)" -eq 0 ]] || skip "not root: slurmd and network namespaces need root"
  local c
  for c in munged mungekey slurmctld slurmd slurmstepd srun salloc sbatch squeue scontrol sinfo ip nsenter unshare python3; do
    command -v "$c" >/dev/null || skip "no '$c' here: apt-get install slurm-wlm munge iproute2 (scripts/setup.sh does)"
  done
  prefix="qg${test_name:0:1}$(($$ % 10000))"
  ip netns add "${prefix}probe" 2>/dev/null || skip "cannot create a network namespace here ('ip netns add' failed)"
  ip netns del "${prefix}probe"
  while read -r v; do unset "$v"; done < <(compgen -e | grep '^SLURM_' || true)
  tmp=$(mktemp -d "/tmp/qgossip-$test_name.XXXXXX")
  chmod 0755 "$tmp"
  subnet="10.$((216 + ${#test_name} % 20)).$(($$ % 250))"
  slurm_port=$(free_ports 2)
  cluster=(bash "$repo/scripts/slurm-local.sh" --dir "$tmp/slurm" --port "$slurm_port")
  trap hosts_down EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  local t0 private=()
  [[ "${1:-}" != private ]] || private=(--private "$tmp/priv")
  t0=$(date +%s.%N)
  timeout 60 "${cluster[@]}" --nodes 4 --prefix "$prefix" --subnet "$subnet" "${private[@]}" start ||
    fail "scripts/slurm-local.sh --nodes 4 start failed (above)"
  echo "$test_name: 4 hosts up in $(elapsed "$t0") s"
  export SLURM_CONF="$tmp/slurm/slurm.conf"
  cd "$tmp"
}

hosts_down() {
  local rc=$?
  trap - EXIT INT TERM
  cd /
  if ! "${cluster[@]}" stop >"$tmp/stop.txt" 2>&1; then
    cat "$tmp/stop.txt" >&2
    echo "$test_name: FAILED: scripts/slurm-local.sh stop failed (above)" >&2
    rc=1
  fi
  if ip netns list | grep -q "^$prefix[0-9]"; then
    echo "$test_name: FAILED: namespaces left behind: $(ip netns list | grep "^$prefix" | tr '\n' ' ')" >&2
    rc=1
  fi
  rm -rf "$tmp"
  exit "$rc"
}

write_config() {  # NAME EPOCHS [no-keys [OUTPUT_DIR [", more: train keys" [", more: network keys"]]]]
  base=$(free_ports 8 "$slurm_port" "$((slurm_port + 1))")
  cat >"$tmp/$1.yaml" <<EOF
name: $1
seed: 5
topology: {graph: ring, n: 8, nodes: {from: slurm, base_port: $base}}
algorithm: dcd
compressor: {name: qsgd, bits: 4, bucket: 64}
model: {kind: mlp, hidden: [32]}
data:
  dataset: synthetic
  synthetic: {train: 2048, test: 500, dim: 32, classes: 4, noise: 3.0}
train: {epochs: $2, batch: 16, lr: 0.05, log_every: 4, eval_every: 0, eval_examples: 0${5:-}}
network: {round_timeout_s: 20, start_timeout_s: 30, linger_s: 2${6:-}}
output: {dir: ${4:-$tmp/runs}}
EOF
  mkdir -p "$tmp/logs/$1"
  [[ "${3:-}" == no-keys ]] ||  # the keys, made in an allocation of the 4 hosts (train.sbatch makes its own)
    salloc -Q -N 4 -n 8 --overcommit "$qgossip" keys --config "$tmp/$1.yaml" >/dev/null ||
    fail "salloc -N 4 -n 8 qgossip keys --config $1.yaml failed"
}

step() {  # NAME SECONDS [srun options]: srun -N 4 -n 8 of run NAME, logs in logs/NAME/
  local name="$1" seconds="$2"
  shift 2
  timeout "$seconds" srun -N 4 -n 8 --overcommit --kill-on-bad-exit=0 --job-name="qg-$name" "$@" \
    --output="$tmp/logs/$name/node-%t.events" --error="$tmp/logs/$name/node-%t.log" \
    "$qgossip" run --config "$tmp/$name.yaml"
}
