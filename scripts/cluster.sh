#!/usr/bin/env bash
# Runs `qgossip launch` (or any per-rank command, --ranks) inside a one-machine cluster with a real,
# shaped network: one network namespace per node, joined by a bridge, each node's egress limited by
# tc. See docs/cluster.md.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: bash scripts/cluster.sh [OPTIONS] RUN_YAML [qgossip launch options, e.g. --set train.epochs=1]
       bash scripts/cluster.sh [OPTIONS] --ranks N [--log-dir DIR] -- COMMAND [ARGS...]

Starts the run's n nodes (n = its topology size) each in its own network namespace PREFIX<rank>
holding SUBNET.<rank+1>/24 on a veth into a bridge PREFIX-br, shapes each node's egress with tc,
runs `qgossip launch` with the nodes inside their namespaces, and tears everything down afterwards
(also when the launch fails or is interrupted). Exits with the launch's exit code.

With --ranks N it runs COMMAND once per rank r = 0..N-1 instead, inside namespace PREFIX<r>, in the
same shaped network (e.g. a PyTorch trainer: bench/peers/train.py). In each argument {rank}, {n},
{addr} (SUBNET.(r+1)), {master} (rank 0's address, SUBNET.1) and {iface} (PREFIX-n<r>) are
replaced, and each rank gets QG_RANK, QG_NODES, QG_ADDR, QG_MASTER_ADDR, QG_IFACE and QG_LAUNCH_UNIX
(the launch time, Unix seconds) in its environment. When a rank fails the others get SIGTERM; exits
with the first failing rank's exit code (0 when all succeed; 128+signal when interrupted).

Options:
  --rate RATE       egress bandwidth of each node, in tc's units: 10mbit, 500kbit, 1gbit, 2.5mbit
                    (tc tbf on the node's veth). Default: unshaped.
  --latency DELAY   one-way delay added to each node's egress: 50ms, 500us, 1s. tc netem when this
                    kernel has it; otherwise the node's transport emulates it
                    (--set network.emulate.delay_ms). Default: none.
  --pace            with --rate: the nodes pace their own sending at the rate (--set
                    network.pace_mbit=RATE in Mbit/s; docs/cluster.md, "Pacing under tc tbf"), so a
                    round of large messages streams through tbf instead of queueing as a burst.
                    Not with --ranks. Default: unpaced.
  --queue DELAY     tbf's queue: the longest a packet may wait before it is dropped (tc tbf
                    latency). Default 400ms. A node sends a whole round (one copy per neighbour)
                    at once; a queue shorter than a round's bytes at the rate drops part of it.
  --prefix NAME     namespace/interface name prefix, letters and digits starting and ending with a
                    letter (default qg): namespaces qg0, qg1, ..., bridge
                    qg-br, veths qg-h<rank> (bridge side) and qg-n<rank> (node side).
  --subnet A.B.C    the nodes' /24 (default 10.77.0): node r is A.B.C.(r+1). It exists only inside
                    the namespaces, so it cannot clash with the host's addresses.
  --qgossip PATH    the qgossip binary (default: $QGOSSIP, else build/qgossip, else qgossip in PATH)
  --keep            leave namespaces, bridge and qdiscs in place for inspection (prints how to remove them)
  --stats FILE      before teardown, write a JSON record: launch_unix_s (when the launch or the ranks
                    were started), n, rate, shaping, and per rank the veth's tx/rx bytes and packets
                    (counted from the namespace's creation: everything the rank sent and received) and
                    the tbf's sent bytes, drops and overlimits
  --ranks N         run COMMAND (after --) in N namespaces instead of a qgossip launch (see above)
  --log-dir DIR     with --ranks: rank r's stdout and stderr go to DIR/rank-<r>.log (default: this
                    terminal's)
  -h, --help        this text

The shaping is recorded in run.json (--set network.shaping=...). Needs root (CAP_NET_ADMIN and
CAP_SYS_ADMIN), iproute2 (ip, tc) and python3. Refuses to start when any of its namespaces or
interfaces already exists.

Example: sudo bash scripts/cluster.sh --rate 10mbit --latency 50ms configs/demo.yaml --set train.epochs=1
EOF
}

die() {
  echo "cluster.sh: $*" >&2
  exit 2
}

rate="" latency="" queue="400ms" prefix="qg" subnet="10.77.0" keep=0 stats_file="" ranks="" log_dir="" pace=0
qgossip="${QGOSSIP:-}"
while (($# > 0)); do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --rate) rate="${2:?--rate needs a value}"; shift 2 ;;
    --latency) latency="${2:?--latency needs a value}"; shift 2 ;;
    --queue) queue="${2:?--queue needs a value}"; shift 2 ;;
    --prefix) prefix="${2:?--prefix needs a value}"; shift 2 ;;
    --subnet) subnet="${2:?--subnet needs a value}"; shift 2 ;;
    --qgossip) qgossip="${2:?--qgossip needs a value}"; shift 2 ;;
    --keep) keep=1; shift ;;
    --pace) pace=1; shift ;;
    --stats) stats_file="${2:?--stats needs a file}"; shift 2 ;;
    --ranks) ranks="${2:?--ranks needs a number}"; shift 2 ;;
    --log-dir) log_dir="${2:?--log-dir needs a directory}"; shift 2 ;;
    --) shift; break ;;
    -*) die "unknown option '$1' (options go before RUN_YAML; see --help)" ;;
    *) break ;;
  esac
done
(($# > 0)) || { usage >&2; exit 2; }
run_yaml="" launch_args=() rank_command=()
if [[ -n "$ranks" ]]; then
  [[ "$ranks" =~ ^[0-9]+$ ]] || die "--ranks '$ranks': expected a number of ranks"
  rank_command=("$@")
else
  [[ -z "$log_dir" ]] || die "--log-dir goes with --ranks (a qgossip launch writes its own logs)"
  run_yaml="$1"
  shift
  launch_args=("$@")
fi
# Nothing to tear down yet; the real handlers come with the first thing created.
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- checks before touching anything -----------------------------------------------------------

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ -z "$qgossip" ]]; then
  if [[ -x "$repo/build/qgossip" ]]; then qgossip="$repo/build/qgossip"; else qgossip="$(command -v qgossip || true)"; fi
fi
if [[ -z "$ranks" ]]; then
  [[ -n "$qgossip" && -x "$qgossip" ]] || die "no qgossip binary (build it, or pass --qgossip PATH or QGOSSIP=PATH)"
  [[ -f "$run_yaml" ]] || die "no such run YAML: $run_yaml"
else
  command -v "${rank_command[0]}" >/dev/null || die "--ranks: '${rank_command[0]}' is not a command"
  [[ -z "$log_dir" ]] || mkdir -p "$log_dir" || die "--log-dir: cannot create $log_dir"
fi
if [[ -n "$stats_file" ]]; then
  stats_dir=$(dirname "$stats_file")
  [[ -d "$stats_dir" && -w "$stats_dir" ]] || die "--stats: directory $stats_dir does not exist or is not writable"
fi
for tool in ip tc python3; do
  command -v "$tool" >/dev/null || die "'$tool' not found (ip and tc: apt-get install iproute2)"
done
# Ending in a letter keeps names unambiguous: prefix qg1 with rank 0 and prefix qg with rank 10 would both be qg10.
[[ "$prefix" =~ ^[A-Za-z]([A-Za-z0-9]*[A-Za-z])?$ ]] ||
  die "--prefix '$prefix': letters and digits, starting and ending with a letter"
[[ "$subnet" =~ ^([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})$ ]] || die "--subnet '$subnet': expected three octets, e.g. 10.77.0"
for octet in "${BASH_REMATCH[@]:1}"; do ((10#$octet <= 255)) || die "--subnet '$subnet': octet $octet > 255"; done

# Root, or at least the capabilities `ip netns add` (mount) and link/qdisc changes need.
cap_eff=$(awk '/^CapEff:/ {print $2}' /proc/self/status)
if ! (((16#$cap_eff >> 12) & 1 && (16#$cap_eff >> 21) & 1)); then
  die "needs root: creating network namespaces takes CAP_NET_ADMIN and CAP_SYS_ADMIN (run it with sudo)"
fi

# tc's rate units are decimal (kbit = 1000 bit/s). Only bit rates: "mbps" in tc means megaBYTES.
rate_bits=""
if [[ -n "$rate" ]]; then
  [[ "$rate" =~ ^([0-9]+(\.[0-9]+)?)(bit|kbit|mbit|gbit)$ ]] ||
    die "--rate '$rate': expected a number and bit, kbit, mbit or gbit, e.g. 10mbit"
  case "${BASH_REMATCH[3]}" in bit) mult=1 ;; kbit) mult=1e3 ;; mbit) mult=1e6 ;; gbit) mult=1e9 ;; esac
  rate_bits=$(awk -v x="${BASH_REMATCH[1]}" -v m="$mult" 'BEGIN { printf "%.0f", x * m }')
  ((rate_bits >= 8000)) || die "--rate '$rate': below 8kbit tbf cannot pass a full-size packet in a second"
fi
if ((pace)); then
  [[ -n "$rate" ]] || die "--pace needs --rate (the rate to pace at)"
  [[ -z "$ranks" ]] || die "--pace is qgossip's network.pace_mbit; a --ranks command paces itself or not"
fi
latency_us=""
if [[ -n "$latency" ]]; then
  [[ "$latency" =~ ^([0-9]+(\.[0-9]+)?)(us|ms|s)$ ]] || die "--latency '$latency': expected e.g. 50ms, 500us or 1s"
  case "${BASH_REMATCH[3]}" in us) mult=1 ;; ms) mult=1e3 ;; s) mult=1e6 ;; esac
  latency_us=$(awk -v x="${BASH_REMATCH[1]}" -v m="$mult" 'BEGIN { printf "%.0f", x * m }')
fi

if [[ -n "$ranks" ]]; then
  n=$ranks
else
  # The topology after the launch's own --set overrides: its size and every node's address.
  topology_sets=()
  for ((i = 0; i < ${#launch_args[@]}; ++i)); do
    case "${launch_args[i]}" in
      --set) topology_sets+=(--set "${launch_args[i + 1]:-}"); i=$((i + 1)) ;;
      --set=*) topology_sets+=(--set "${launch_args[i]#--set=}") ;;
    esac
  done
  topology_json=$("$qgossip" topology "$run_yaml" --json "${topology_sets[@]}") ||
    die "qgossip topology $run_yaml rejected the topology (see above)"
  # n, then the topology section with node r moved to SUBNET.(r+1) (ports kept).
  readarray -t topo < <(python3 -c '
import json, sys
report = json.loads(sys.argv[1])
t = report["topology"]
for r, node in enumerate(t["nodes"]):
    node["host"] = "%s.%d" % (sys.argv[2], r + 1)
print(report["n"])
print(json.dumps(t, separators=(",", ":")))
' "$topology_json" "$subnet")
  n="${topo[0]:-}"
  cluster_topology="${topo[1]:-}"
  [[ "$n" =~ ^[0-9]+$ && -n "$cluster_topology" ]] || die "could not read the topology of $run_yaml"
fi
((n >= 1 && n <= 253)) || die "$n nodes; one /24 holds at most 253 (SUBNET.1 .. SUBNET.253)"

bridge="${prefix}-br"
ns_name() { echo "${prefix}$1"; }
host_veth() { echo "${prefix}-h$1"; }
node_veth() { echo "${prefix}-n$1"; }
((${#bridge} <= 15 && ${#prefix} + 2 + ${#n} <= 15)) ||
  die "--prefix '$prefix' is too long for interface names (15 characters at most with '-h$((n - 1))')"

existing_ns=$(ip netns list | awk '{print $1}')
for ((r = 0; r < n; ++r)); do
  ns=$(ns_name "$r")
  if grep -qxF "$ns" <<<"$existing_ns"; then
    die "network namespace $ns already exists (another cluster, or one kept with --keep): remove it with 'ip netns del $ns' or pick another --prefix"
  fi
  dev=$(host_veth "$r")
  ! ip link show dev "$dev" >/dev/null 2>&1 || die "interface $dev already exists: pick another --prefix"
done
! ip link show dev "$bridge" >/dev/null 2>&1 || die "bridge $bridge already exists (another cluster?): remove it with 'ip link del $bridge' or pick another --prefix"

# ---- setup; teardown on every exit from here on -------------------------------------------------

created_ns=()
bridge_created=0
launch_pid=""
rank_pids=()
launch_unix=""
signalled=0

# --stats: the launch time, the shaping, and each rank's counters (read before the veths go away).
# shellcheck disable=SC2317  # reached through teardown
write_stats() {
  local r ns dev tx rx txp rxp qdisc
  {
    printf '{"launch_unix_s": %s, "n": %s, "rate": "%s", "rate_bits": %s, "queue": "%s", "shaping": "%s", "ranks": [' \
      "${launch_unix:-null}" "$n" "$rate" "${rate_bits:-null}" "$queue" "${shaping:-}"
    for ((r = 0; r < ${#created_ns[@]}; ++r)); do
      ns=${created_ns[r]}
      dev=$(node_veth "$r")
      read -r tx rx txp rxp < <(ip netns exec "$ns" sh -c "cd /sys/class/net/$dev/statistics 2>/dev/null &&
        echo \$(cat tx_bytes) \$(cat rx_bytes) \$(cat tx_packets) \$(cat rx_packets)" || true)
      qdisc=$(tc -s -n "$ns" qdisc show dev "$dev" 2>/dev/null | awk '/^qdisc tbf/ {tbf = 1}
        tbf && /Sent/ {gsub(/[(),]/, " "); printf "%s %s %s", $2, $7, $9; exit}')
      read -r qsent qdrop qover <<<"${qdisc:-null null null}"
      ((r == 0)) || printf ', '
      printf '{"rank": %d, "namespace": "%s", "tx_bytes": %s, "rx_bytes": %s, "tx_packets": %s, "rx_packets": %s, ' \
        "$r" "$ns" "${tx:-null}" "${rx:-null}" "${txp:-null}" "${rxp:-null}"
      printf '"tbf_sent_bytes": %s, "tbf_dropped": %s, "tbf_overlimits": %s}' "$qsent" "$qdrop" "$qover"
    done
    printf ']}\n'
  } >"$stats_file.tmp" && mv "$stats_file.tmp" "$stats_file" || echo "cluster.sh: could not write --stats $stats_file" >&2
}

# shellcheck disable=SC2317  # reached through trap
teardown() {
  local rc=$?
  # Ignored, not reset: a signal arriving now (a caller stopping a run that is just ending) must not
  # cut the teardown short and leave namespaces behind.
  trap - EXIT
  trap '' INT TERM
  [[ -z "$stats_file" ]] || write_stats
  if ((keep)); then
    if ((${#created_ns[@]} > 0 || bridge_created)); then
      echo "cluster.sh: --keep: left ${created_ns[*]} and bridge $bridge in place. Inspect: ip netns exec $(ns_name 0) tc -s qdisc show" >&2
      echo "cluster.sh: remove with: for ns in ${created_ns[*]}; do ip netns del \$ns; done; ip link del $bridge" >&2
    fi
    exit "$rc"
  fi
  local ns pids r
  for ((r = 0; r < ${#created_ns[@]}; ++r)); do
    ns=${created_ns[r]}
    # Deleting the veth deletes its pair at once; deleting a namespace deletes its devices later, so
    # a cluster started right after this one could still find the old names.
    ip link del "$(host_veth "$r")" 2>/dev/null || true
    # A namespace lives on while processes are in it: stop what this run left there (nodes normally
    # die with the launcher already).
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    if [[ -n "$pids" ]]; then
      # shellcheck disable=SC2086  # one pid per word
      kill -TERM $pids 2>/dev/null || true
      sleep 1
      pids=$(ip netns pids "$ns" 2>/dev/null || true)
      # shellcheck disable=SC2086
      [[ -z "$pids" ]] || kill -KILL $pids 2>/dev/null || true
    fi
    if ip netns list | awk '{print $1}' | grep -qxF "$ns"; then
      ip netns del "$ns" || echo "cluster.sh: could not delete namespace $ns" >&2
    fi
  done
  if ((bridge_created)) && ip link show dev "$bridge" >/dev/null 2>&1; then
    ip link del "$bridge" || echo "cluster.sh: could not delete bridge $bridge" >&2
  fi
  exit "$rc"
}

# shellcheck disable=SC2317  # reached through trap
on_signal() {
  local sig=$1
  signalled=1
  if [[ -n "$launch_pid" ]] && kill -0 "$launch_pid" 2>/dev/null; then
    # The launcher stops its nodes and exits 128+signal; a second signal makes it kill them at once.
    kill "-$sig" "$launch_pid" 2>/dev/null || true
  elif ((${#rank_pids[@]} > 0)); then
    kill "-$sig" "${rank_pids[@]}" 2>/dev/null || true  # the ranks stop; teardown kills what is left
  else
    [[ "$sig" == INT ]] && exit 130
    exit 143
  fi
}
trap teardown EXIT
trap 'on_signal INT' INT
trap 'on_signal TERM' TERM

# Each name is recorded BEFORE it is created: a signal is handled between two commands, and what
# was created must not escape the teardown. (Names were checked free above.)
bridge_created=1
ip link add "$bridge" type bridge
ip link set "$bridge" up

# tbf: burst = 10 ms of traffic at the rate, at least 16 KiB (well above one 1514-byte frame, so
# full-size packets always pass); queue limit = --queue (400 ms) at the rate: a packet that would wait
# longer is dropped. A node's whole round (all its neighbours' copies) arrives at once, so a queue
# shorter than one round's bytes at the rate turns part of every round into TCP loss recovery.
burst_bytes=""
if [[ -n "$rate_bits" ]]; then
  burst_bytes=$((rate_bits / 8 / 100))
  ((burst_bytes >= 16384)) || burst_bytes=16384
  tbf_args=(tbf rate "${rate_bits}bit" burst "$burst_bytes" latency "$queue")
fi

netem="" netem_error=""
for ((r = 0; r < n; ++r)); do
  ns=$(ns_name "$r")
  created_ns+=("$ns")
  ip netns add "$ns"
  ip link add "$(host_veth "$r")" type veth peer name "$(node_veth "$r")" netns "$ns"
  ip link set "$(host_veth "$r")" master "$bridge" up
  ip -n "$ns" link set lo up
  ip -n "$ns" addr add "$subnet.$((r + 1))/24" dev "$(node_veth "$r")"
  ip -n "$ns" link set "$(node_veth "$r")" up
  dev=$(node_veth "$r")
  if [[ -n "$latency_us" ]]; then
    # netem when the kernel has it (detected on the first node, then used on all), tbf below it.
    if [[ -z "$netem" ]]; then
      if netem_error=$(tc -n "$ns" qdisc add dev "$dev" root handle 1: netem delay "${latency_us}us" 2>&1); then
        netem=yes
      else
        netem=no
      fi
    elif [[ "$netem" == yes ]]; then
      tc -n "$ns" qdisc add dev "$dev" root handle 1: netem delay "${latency_us}us"
    fi
  fi
  if [[ -n "$rate_bits" ]]; then
    if [[ "$netem" == yes ]]; then
      tc -n "$ns" qdisc add dev "$dev" parent 1:1 handle 10: "${tbf_args[@]}"
    else
      tc -n "$ns" qdisc add dev "$dev" root handle 10: "${tbf_args[@]}"
    fi
  fi
done

# What run.json records: the mechanism, precisely.
shaping="scripts/cluster.sh: $n network namespaces ${prefix}0..${prefix}$((n - 1)) on bridge $bridge (veth pairs, node r at $subnet.(r+1)/24)"
if [[ -n "$rate_bits" ]]; then
  shaping+="; rate: tc tbf rate ${rate_bits}bit burst ${burst_bytes}b latency $queue on each node's veth egress (--rate $rate)"
else
  shaping+="; rate: unshaped veth"
fi
emulate_sets=()
if ((pace)); then
  emulate_sets+=(--set "network.pace_mbit=$(awk -v b="$rate_bits" 'BEGIN { printf "%.9g", b / 1e6 }')")
fi
delay_ms=$(awk -v us="${latency_us:-0}" 'BEGIN { printf "%.10g", us / 1000 }')
if [[ -z "$latency_us" ]]; then
  shaping+="; latency: none added"
elif [[ "$netem" == yes ]]; then
  shaping+="; latency: ${delay_ms} ms one-way by tc netem delay ${latency_us}us on each node's veth egress, tbf below netem (--latency $latency)"
else
  # A per-rank command has no transport of ours to delay its messages.
  [[ -z "$ranks" ]] || die "--latency with --ranks needs tc netem, which this kernel lacks: ${netem_error//$'\n'/ }"
  shaping+="; latency: ${delay_ms} ms one-way by transport emulation, network.emulate.delay_ms (--latency $latency; no netem in this kernel: ${netem_error//$'\n'/ })"
  emulate_sets+=(--set "network.emulate.delay_ms=$delay_ms")
fi
# It travels as a YAML double-quoted string.
shaping="${shaping//\\//}"
shaping="${shaping//\"/\'}"
echo "cluster.sh: $shaping" >&2

# ---- the launch --------------------------------------------------------------------------------

# With --ranks: COMMAND once per rank in its namespace, placeholders replaced.
if [[ -n "$ranks" ]]; then
  launch_unix=$(date +%s.%N)
  set -m  # each rank its own process group: a Ctrl-C reaches this script alone, which forwards it
  for ((r = 0; r < n; ++r)); do
    argv=()
    for a in "${rank_command[@]}"; do
      a=${a//\{rank\}/$r}
      a=${a//\{n\}/$n}
      a=${a//\{addr\}/$subnet.$((r + 1))}
      a=${a//\{master\}/$subnet.1}
      a=${a//\{iface\}/$(node_veth "$r")}
      argv+=("$a")
    done
    env_args=(QG_RANK="$r" QG_NODES="$n" QG_ADDR="$subnet.$((r + 1))" QG_MASTER_ADDR="$subnet.1"
      QG_IFACE="$(node_veth "$r")" QG_LAUNCH_UNIX="$launch_unix")
    if [[ -n "$log_dir" ]]; then
      ip netns exec "$(ns_name "$r")" env "${env_args[@]}" "${argv[@]}" >"$log_dir/rank-$r.log" 2>&1 &
    else
      ip netns exec "$(ns_name "$r")" env "${env_args[@]}" "${argv[@]}" &
    fi
    rank_pids+=($!)
  done
  set +m
  rc=0
  running=("${rank_pids[@]}")
  # Polled rather than `wait -n`: bash may reap several ranks at once, and a pid it has reaped is
  # "no such job" to wait -n, but `wait PID` still returns its saved status.
  while ((${#running[@]} > 0)); do
    still=()
    for pid in "${running[@]}"; do
      if kill -0 "$pid" 2>/dev/null; then
        still+=("$pid")
        continue
      fi
      code=0
      wait "$pid" || code=$?
      if ((code != 0 && rc == 0)); then
        rc=$code
        for ((r = 0; r < n; ++r)); do [[ "${rank_pids[r]}" != "$pid" ]] || break; done
        ((signalled)) || echo "cluster.sh: rank $r exited $code: stopping the others" >&2
        kill -TERM "${rank_pids[@]}" 2>/dev/null || true
      fi
    done
    running=("${still[@]}")
    ((${#running[@]} == 0)) || sleep 0.2
  done
  exit "$rc"
fi

# Our --set come after the caller's, so they win: the topology is replaced whole (the caller's
# topology overrides are already folded into it).
# set -m: the launcher gets its own process group, so a Ctrl-C on the terminal reaches this script
# alone and is forwarded to the launcher exactly once (on_signal); a second one kills the nodes at once.
set -m
launch_unix=$(date +%s.%N)
"$qgossip" launch "$run_yaml" "${launch_args[@]}" \
  --set "topology=$cluster_topology" "${emulate_sets[@]}" --set "network.shaping=\"$shaping\"" \
  --exec-prefix "ip netns exec ${prefix}{rank}" &
launch_pid=$!
set +m
while :; do
  signalled=0
  wait "$launch_pid" && rc=0 || rc=$?
  # Interrupted by a trapped signal (forwarded to the launcher): wait again for its exit code.
  ((signalled)) && kill -0 "$launch_pid" 2>/dev/null && continue
  break
done
exit "$rc"
