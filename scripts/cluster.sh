#!/usr/bin/env bash
# Runs `qgossip launch` (or any per-rank command, --ranks) inside a one-machine cluster with a real,
# shaped network: one network namespace per node, joined by a bridge, each node's egress limited by
# tc. See docs/cluster.md.
set -euo pipefail

# Internal: the wrapper each node's command runs behind when the scenario caps CPUs (--exec-prefix of
# the launch, and each --ranks command), before `ip netns exec` (which hides /sys/fs/cgroup): joins the
# node's cgroup, then execs the command, so the node and everything it starts are in it from their
# first instruction.
if [[ "${1:-}" == --join-cgroup ]]; then
  echo $$ >"${2:?--join-cgroup needs a cgroup directory}/cgroup.procs" ||
    { echo "cluster.sh: could not join cgroup $2" >&2; exit 1; }
  shift 2
  [[ "${1:-}" != -- ]] || shift
  exec "$@"
fi

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
  --scenario FILE   each node's own rate, delay and CPU share from a scenario file (configs/scenarios/;
                    format: docs/cluster.md, "Scenarios", or python3 scripts/scenario.py --help):
                      default: {rate: 100mbit, delay: 50ms, cpu_share: 0.5}  # every node (keys optional)
                      nodes: {2: {rate: 1mbit}, 3: {cpu_share: 0.2}}       # per rank, over the default
                    rate: tc tbf on the node's veth; delay: as --latency below, per node; cpu_share in
                    (0, 1]: a cgroup v1 cpu quota of cpu_share x (online CPUs / n) CPUs on the node's
                    processes (cpu.cfs_quota_us / cpu.cfs_period_us; then every node gets its own
                    cgroup PREFIX-cpu/<rank>, removed at teardown). Checked before anything is created
                    (exit 2, FILE:LINE:COL). Not with --rate or --latency. With --pace, every node's
                    rate must be the same. Under transport emulation (no netem) every node's delay
                    must be the same, and --ranks refuses a delay. A churn: list
                    ([{rank, at_s, down_s, how: kill|stop}]) goes to qgossip launch --scenario, which kills
                    (then restarts) or stops (then continues) those nodes while they run; so does a
                    hostile: list ([{rank, attack, from_round, ...}]): those ranks send attacks
                    (docs/security.md, "Attacks as experiment input").
  --rate RATE       egress bandwidth of each node, in tc's units: 10mbit, 500kbit, 1gbit, 2.5mbit
                    (tc tbf on the node's veth). Default: unshaped.
  --latency DELAY   one-way delay added to each node's egress: 50ms, 500us, 1s. tc netem when this
                    kernel has it; otherwise the node's transport emulates it
                    (--set network.emulate.delay_ms). Default: none.
  --pace            with --rate (or a scenario with one rate for all): the nodes pace their own sending at the rate (--set
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
CAP_SYS_ADMIN), iproute2 (ip, tc) and python3 (with python3-yaml for --scenario); a cpu_share needs
the cgroup v1 cpu controller mounted. Refuses to start when any of its namespaces, interfaces or
cgroups already exists.

Examples: sudo bash scripts/cluster.sh --rate 10mbit --latency 50ms configs/demo.yaml --set train.epochs=1
          sudo bash scripts/cluster.sh --scenario configs/scenarios/straggler.yaml configs/demo.yaml
EOF
}

die() {
  echo "cluster.sh: $*" >&2
  exit 2
}

rate="" latency="" scenario="" queue="400ms" prefix="qg" subnet="10.77.0" keep=0 stats_file="" ranks="" log_dir="" pace=0
qgossip="${QGOSSIP:-}"
while (($# > 0)); do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --rate) rate="${2:?--rate needs a value}"; shift 2 ;;
    --latency) latency="${2:?--latency needs a value}"; shift 2 ;;
    --scenario) scenario="${2:?--scenario needs a file}"; shift 2 ;;
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
scenario_py="$repo/scripts/scenario.py"
if [[ -n "$scenario" ]]; then
  # One source per setting: a --rate beside a scenario would silently replace (or be replaced by) the
  # scenario's rates, and the run would not be the scenario it records.
  [[ -z "$rate" && -z "$latency" ]] ||
    die "--scenario sets each node's rate and delay itself; put a uniform one in the scenario's default ({rate: 10mbit, delay: 50ms}) instead of --rate/--latency"
  [[ -f "$scenario" ]] || die "--scenario: no such file: $scenario"
  command -v python3 >/dev/null || die "--scenario needs python3 (and python3-yaml) to read the scenario"
  # The file alone (syntax, keys, values): exit 2 with FILE:LINE:COL before anything else.
  python3 "$scenario_py" validate "$scenario" || exit 2
  # Its churn (kill or stop nodes while they run) and its hostile nodes (attacks) are the launcher's
  # to apply.
  if python3 "$scenario_py" has-launch-lists "$scenario"; then
    [[ -z "$ranks" ]] || die "$scenario has a churn: or hostile: list, which qgossip launch applies (--scenario); --ranks runs other programs: remove them"
    launch_args+=(--scenario "$scenario")
  fi
fi

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
  [[ -n "$rate" || -n "$scenario" ]] || die "--pace needs --rate (the rate to pace at)"
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

# Each node's settings, one entry per rank ("" = not shaped in that respect): from the scenario (its
# ranks checked against n, its CPU shares turned into quotas), else --rate and --latency for all.
node_rate_bits=() node_delay_us=() node_quota_us=() node_period_us=() node_cpu_share=()
cpus=$(getconf _NPROCESSORS_ONLN)
if [[ -n "$scenario" ]]; then
  plan=$(python3 "$scenario_py" plan "$scenario" --nodes "$n" --cpus "$cpus") || exit 2
  scenario_text=$(python3 "$scenario_py" describe "$scenario") || exit 2
  while read -r r a b c d e; do
    node_rate_bits[r]=${a#-} node_delay_us[r]=${b#-} node_quota_us[r]=${c#-} node_period_us[r]=${d#-} node_cpu_share[r]=${e#-}
  done <<<"$plan"
else
  for ((r = 0; r < n; ++r)); do node_rate_bits[r]=$rate_bits node_delay_us[r]=$latency_us; done
fi
# The distinct values of a per-rank array, one per line ("" for unset).
distinct() { local -n values=$1; local r; for ((r = 0; r < n; ++r)); do echo "${values[r]-}"; done | sort -u; }
any_rate=$(distinct node_rate_bits | grep -c . || true)
any_delay=$(distinct node_delay_us | grep -c . || true)
any_quota=$(distinct node_quota_us | grep -c . || true)

# Root, or at least the capabilities `ip netns add` (mount) and link/qdisc changes need.
cap_eff=$(awk '/^CapEff:/ {print $2}' /proc/self/status)
if ! (((16#$cap_eff >> 12) & 1 && (16#$cap_eff >> 21) & 1)); then
  needs="creating network namespaces takes CAP_NET_ADMIN and CAP_SYS_ADMIN"
  [[ -z "$scenario" ]] || needs+=", as do the scenario's tc qdiscs and cgroup cpu quotas ($scenario)"
  die "needs root: $needs (run it with sudo)"
fi

if ((pace)) && [[ -n "$scenario" ]]; then
  # network.pace_mbit is one value in every node's config (it is part of the run id).
  [[ $(distinct node_rate_bits | wc -l) == 1 && -n "${node_rate_bits[0]}" ]] ||
    die "--pace with --scenario needs one rate on every node (network.pace_mbit is the same on all nodes); $scenario has: $scenario_text"
  rate_bits=${node_rate_bits[0]}
fi

# Delay: tc netem where the kernel has it, probed in a throwaway network namespace (gone with the
# probe), else the nodes' transport. (A tc BPF program setting skb->tstamp, earliest departure time,
# would need sch_fq to hold packets back; docs/cluster.md, "Scenarios".)
netem="" netem_error=""
if ((any_delay)); then
  if netem_error=$(unshare --net tc qdisc add dev lo root netem delay 1ms 2>&1); then netem=yes; else netem=no; fi
  if [[ "$netem" == no ]]; then
    # A per-rank command has no transport of ours to delay its messages.
    [[ -z "$ranks" ]] || die "a delay with --ranks needs tc netem, which this kernel lacks (${netem_error//$'\n'/ }): the ranks would run without it"
    # network.emulate.delay_ms is one value in every node's config (it is part of the run id).
    [[ $(distinct node_delay_us | wc -l) == 1 ]] ||
      die "$scenario gives nodes different delays; without tc netem (${netem_error//$'\n'/ }) the delay is the transport's network.emulate.delay_ms, one value for all nodes"
  fi
fi

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

# CPU quotas: one cgroup per node, PREFIX-cpu/<rank> in the cgroup v1 cpu hierarchy, under this
# script's own cgroup there.
cgroup_parent=""
if ((any_quota)); then
  cpu_mount=$(awk '$3 == "cgroup" { n = split($4, o, ","); for (i = 1; i <= n; ++i) if (o[i] == "cpu") { print $2; exit } }' /proc/mounts)
  [[ -n "$cpu_mount" ]] || die "$scenario sets a cpu_share, which needs the cgroup v1 cpu controller; none is mounted (see /proc/mounts)"
  own=$(awk -F: '{ n = split($2, c, ","); for (i = 1; i <= n; ++i) if (c[i] == "cpu") { print $3; exit } }' /proc/self/cgroup)
  cgroup_parent="$cpu_mount${own%/}/${prefix}-cpu"
  [[ -w "$(dirname "$cgroup_parent")" ]] || die "cannot create cgroups in $(dirname "$cgroup_parent") (read-only cgroup mount?)"
  [[ ! -e "$cgroup_parent" ]] || die "cgroup $cgroup_parent already exists (another cluster, or one kept with --keep): remove it with 'rmdir $cgroup_parent/* $cgroup_parent' or pick another --prefix"
  # qgossip launch splits --exec-prefix at spaces.
  [[ "$repo$BASH$cgroup_parent" != *[[:space:]]* ]] || die "a cpu_share needs paths without spaces: $repo, $BASH, $cgroup_parent"
fi

# ---- setup; teardown on every exit from here on -------------------------------------------------

created_ns=()
created_cgroups=()  # the parent first, then one per rank
bridge_created=0
launch_pid=""
rank_pids=()
launch_unix=""
signalled=0

# A per-rank array's value for rank $2, or JSON null.
# shellcheck disable=SC2317  # reached through teardown
json_or_null() { local -n of=$1; echo "${of[$2]:-null}"; }
# A cgroup's cpu.stat field ($2) for rank $1, or null.
# shellcheck disable=SC2317  # reached through teardown
cpu_stat() { awk -v k="$2" '$1 == k {print $2; found = 1} END {if (!found) print "null"}' "$cgroup_parent/$1/cpu.stat" 2>/dev/null || echo null; }

# --stats: the launch time, the shaping, and each rank's counters (read before the veths go away).
# shellcheck disable=SC2317  # reached through teardown
write_stats() {
  local r ns dev tx rx txp rxp qdisc scenario_json=null
  if [[ -n "$scenario" ]]; then  # a JSON string: no backslashes or double quotes inside
    scenario_json=${scenario//\\//}
    scenario_json="\"${scenario_json//\"/\'}\""
  fi
  {
    printf '{"launch_unix_s": %s, "n": %s, "rate": "%s", "rate_bits": %s, "queue": "%s", "scenario": %s, "shaping": "%s", "ranks": [' \
      "${launch_unix:-null}" "$n" "$rate" "${rate_bits:-null}" "$queue" "$scenario_json" "${shaping:-}"
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
      printf '"tbf_sent_bytes": %s, "tbf_dropped": %s, "tbf_overlimits": %s, ' "$qsent" "$qdrop" "$qover"
      printf '"rate_bits": %s, "delay_us": %s, "cpu_quota_us": %s, "cpu_period_us": %s, "cpu_nr_throttled": %s, "cpu_throttled_ns": %s}' \
        "$(json_or_null node_rate_bits "$r")" "$(json_or_null node_delay_us "$r")" "$(json_or_null node_quota_us "$r")" \
        "$(json_or_null node_period_us "$r")" "$(cpu_stat "$r" nr_throttled)" "$(cpu_stat "$r" throttled_time)"
    done
    printf ']}\n'
  } >"$stats_file.tmp" && mv "$stats_file.tmp" "$stats_file" || echo "cluster.sh: could not write --stats $stats_file" >&2
}

# Stops what is left in each cgroup this run created (its processes normally died with their
# namespace's), then removes the cgroups, the ranks' before their parent.
# shellcheck disable=SC2317  # reached through teardown
remove_cgroups() {
  local i dir pids
  for ((i = ${#created_cgroups[@]} - 1; i >= 0; --i)); do
    dir=${created_cgroups[i]}
    [[ -d "$dir" ]] || continue
    pids=$(cat "$dir/cgroup.procs" 2>/dev/null || true)
    if [[ -n "$pids" ]]; then
      # shellcheck disable=SC2086  # one pid per word
      kill -TERM $pids 2>/dev/null || true
      sleep 1
      pids=$(cat "$dir/cgroup.procs" 2>/dev/null || true)
      # shellcheck disable=SC2086
      [[ -z "$pids" ]] || kill -KILL $pids 2>/dev/null || true
    fi
    # A process just killed leaves its cgroup when it has exited: give it a moment.
    for _ in {1..30}; do rmdir "$dir" 2>/dev/null && break; sleep 0.1; done
    [[ ! -d "$dir" ]] || echo "cluster.sh: could not remove cgroup $dir" >&2
  done
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
    if ((${#created_cgroups[@]} > 0)); then
      echo "cluster.sh: --keep: left cgroup $cgroup_parent; remove it (once its processes have exited) with: rmdir $cgroup_parent/* $cgroup_parent" >&2
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
  remove_cgroups
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
if ((any_quota)); then
  created_cgroups+=("$cgroup_parent")
  mkdir "$cgroup_parent"
  for ((r = 0; r < n; ++r)); do
    created_cgroups+=("$cgroup_parent/$r")
    mkdir "$cgroup_parent/$r"
    if [[ -n "${node_quota_us[r]}" ]]; then  # else: its own cgroup, uncapped (quota -1)
      echo "${node_period_us[r]}" >"$cgroup_parent/$r/cpu.cfs_period_us"
      echo "${node_quota_us[r]}" >"$cgroup_parent/$r/cpu.cfs_quota_us"
    fi
  done
fi

bridge_created=1
ip link add "$bridge" type bridge
ip link set "$bridge" up

# tbf: burst = 10 ms of traffic at the rate, at least 16 KiB (well above one 1514-byte frame, so
# full-size packets always pass); queue limit = --queue (400 ms) at the rate: a packet that would wait
# longer is dropped. A node's whole round (all its neighbours' copies) arrives at once, so a queue
# shorter than one round's bytes at the rate turns part of every round into TCP loss recovery.
tbf_burst() {
  local b=$(($1 / 8 / 100))
  ((b >= 16384)) || b=16384
  echo "$b"
}

# Node r's egress: netem (its delay, where the kernel has netem) with tbf (its rate) below it.
shape_node() {
  local r=$1 ns dev where=(root handle 10:)
  ns=$(ns_name "$r")
  dev=$(node_veth "$r")
  if [[ -n "${node_delay_us[r]}" && "$netem" == yes ]]; then
    tc -n "$ns" qdisc add dev "$dev" root handle 1: netem delay "${node_delay_us[r]}us"
    where=(parent 1:1 handle 10:)
  fi
  if [[ -n "${node_rate_bits[r]}" ]]; then
    tc -n "$ns" qdisc add dev "$dev" "${where[@]}" tbf rate "${node_rate_bits[r]}bit" \
      burst "$(tbf_burst "${node_rate_bits[r]}")" latency "$queue"
  fi
}

for ((r = 0; r < n; ++r)); do
  ns=$(ns_name "$r")
  created_ns+=("$ns")
  ip netns add "$ns"
  ip link add "$(host_veth "$r")" type veth peer name "$(node_veth "$r")" netns "$ns"
  ip link set "$(host_veth "$r")" master "$bridge" up
  ip -n "$ns" link set lo up
  ip -n "$ns" addr add "$subnet.$((r + 1))/24" dev "$(node_veth "$r")"
  ip -n "$ns" link set "$(node_veth "$r")" up
  shape_node "$r"
done

# ---- what run.json records: the mechanism, precisely -------------------------------------------

# "ranks 0,1,3: A, rank 2: B": the ranks holding each value of the per-rank array $1 ("" shown as $2;
# others followed by $3).
by_rank() {
  local -n of=$1
  local r v word out=""
  local -A holders=()
  local order=()
  for ((r = 0; r < n; ++r)); do
    v=${of[r]:+${of[r]}$3}
    v=${v:-$2}
    [[ -n "${holders[$v]:-}" ]] || order+=("$v")
    holders[$v]+="${holders[$v]:+,}$r"
  done
  for v in "${order[@]}"; do
    word=ranks
    [[ "${holders[$v]}" == *,* ]] || word=rank
    out+="${out:+, }$word ${holders[$v]}: $v"
  done
  echo "$out"
}

# --rate / --latency: one setting for every node, as recorded before scenarios existed.
uniform_shaping() {
  local text="" delay_ms
  if [[ -n "$rate_bits" ]]; then
    text+="rate: tc tbf rate ${rate_bits}bit burst $(tbf_burst "$rate_bits")b latency $queue on each node's veth egress (--rate $rate)"
  else
    text+="rate: unshaped veth"
  fi
  delay_ms=$(awk -v us="${latency_us:-0}" 'BEGIN { printf "%.10g", us / 1000 }')
  if [[ -z "$latency_us" ]]; then
    text+="; latency: none added"
  elif [[ "$netem" == yes ]]; then
    text+="; latency: ${delay_ms} ms one-way by tc netem delay ${latency_us}us on each node's veth egress, tbf below netem (--latency $latency)"
  else
    text+="; latency: ${delay_ms} ms one-way by transport emulation, network.emulate.delay_ms (--latency $latency; no netem in this kernel: ${netem_error//$'\n'/ })"
  fi
  echo "$text"
}

# --scenario: each node's own rate, delay and CPU quota.
scenario_shaping() {
  local text="scenario $scenario ($scenario_text)" r cpu=()
  if ((any_rate)); then
    text+="; rate: tc tbf (burst 10 ms of the rate, at least 16384b; latency $queue) on the veth egress of $(by_rank node_rate_bits unshaped bit)"
  else
    text+="; rate: unshaped veths"
  fi
  if ((!any_delay)); then
    text+="; latency: none added"
  elif [[ "$netem" == yes ]]; then
    text+="; latency: one-way by tc netem delay on the node's veth egress, tbf below netem: $(by_rank node_delay_us none us)"
  else
    text+="; latency: $(awk -v us="${node_delay_us[0]}" 'BEGIN { printf "%.10g", us / 1000 }') ms one-way on every node by transport emulation, network.emulate.delay_ms (no netem in this kernel: ${netem_error//$'\n'/ })"
  fi
  if ((any_quota)); then
    for ((r = 0; r < n; ++r)); do
      # shellcheck disable=SC2034  # read by by_rank through its name
      cpu[r]=${node_quota_us[r]:+${node_quota_us[r]}/${node_period_us[r]}us (cpu_share ${node_cpu_share[r]})}
    done
    text+="; cpu: cgroup v1 cpu quota cpu.cfs_quota_us/cpu.cfs_period_us per node (cgroup $cgroup_parent/<rank>; fair share $cpus CPUs / $n nodes): $(by_rank cpu uncapped "")"
  else
    text+="; cpu: not capped"
  fi
  echo "$text"
}

shaping="scripts/cluster.sh: $n network namespaces ${prefix}0..${prefix}$((n - 1)) on bridge $bridge (veth pairs, node r at $subnet.(r+1)/24); "
if [[ -n "$scenario" ]]; then shaping+=$(scenario_shaping); else shaping+=$(uniform_shaping); fi
emulate_sets=()
if ((pace)); then
  emulate_sets+=(--set "network.pace_mbit=$(awk -v b="$rate_bits" 'BEGIN { printf "%.9g", b / 1e6 }')")
fi
if ((any_delay)) && [[ "$netem" == no ]]; then
  emulate_sets+=(--set "network.emulate.delay_ms=$(awk -v us="${node_delay_us[0]}" 'BEGIN { printf "%.10g", us / 1000 }')")
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
    join=()
    ((!any_quota)) || join=("$BASH" "$repo/scripts/cluster.sh" --join-cgroup "$cgroup_parent/$r" --)
    if [[ -n "$log_dir" ]]; then
      "${join[@]}" ip netns exec "$(ns_name "$r")" env "${env_args[@]}" "${argv[@]}" >"$log_dir/rank-$r.log" 2>&1 &
    else
      "${join[@]}" ip netns exec "$(ns_name "$r")" env "${env_args[@]}" "${argv[@]}" &
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
# Each node joins its cgroup (when the scenario caps CPUs) by execing through this script, before
# `ip netns exec`, which mounts the namespace's own /sys over the cgroup file system.
exec_prefix="ip netns exec ${prefix}{rank}"
((!any_quota)) || exec_prefix="$BASH $repo/scripts/cluster.sh --join-cgroup $cgroup_parent/{rank} -- $exec_prefix"
set -m
launch_unix=$(date +%s.%N)
"$qgossip" launch "$run_yaml" "${launch_args[@]}" \
  --set "topology=$cluster_topology" "${emulate_sets[@]}" --set "network.shaping=\"$shaping\"" \
  --exec-prefix "$exec_prefix" &
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
