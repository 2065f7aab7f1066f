#!/usr/bin/env bash
# A Slurm cluster of one machine (Debian 12's slurm-wlm 22.05 and munge), to run and test
# `srun qgossip run --config RUN.yaml` without a real cluster (docs/slurm.md).
#
# Usage: scripts/slurm-local.sh [--dir DIR] [--port P] [--nodes N [--prefix NAME] [--subnet A.B.C]]
#                               start|stop|status|env
#        scripts/slurm-local.sh [...] run [--] COMMAND [ARG...]
#   start   start munged, slurmctld and slurmd for DIR and wait until the node is idle; a no-op when
#           they already run and are healthy; a partial cluster (one daemon dead) is stopped first
#   stop    cancel the cluster's jobs (KillWait 5 s), SIGKILL whatever of their steps is left, then end
#           slurmd, slurmctld and munged (SIGTERM, SIGKILL after 10 s); a no-op when nothing runs
#   status  the daemons, the node's state and the jobs; exit 0 healthy, 3 stopped, 1 partial or unhealthy
#   env     print `export SLURM_CONF=DIR/slurm.conf` (for `eval "$(scripts/slurm-local.sh env)"`)
#   run     start, run COMMAND with SLURM_CONF set, and stop on its exit (also on SIGINT/SIGTERM, which
#           are passed to COMMAND first) unless the cluster was already running; exits with COMMAND's code
# Options (or the environment):
#   --dir DIR   QGOSSIP_SLURM_DIR, default /var/lib/qgossip-slurm: everything this cluster writes
#   --port P    QGOSSIP_SLURM_PORT, default 6917: slurmctld's port; slurmd takes P + 1
#   --nodes N   a cluster of N hosts on this machine (2..16; default: one, this machine): host i
#               (sp1..spN) is a slurmd in network namespace PREFIX<i> with a UTS namespace of its own
#               (hostname sp<i>) and a mount namespace whose /etc/hosts names every host, at
#               A.B.C.<i> on a veth into bridge PREFIX-br (A.B.C.254: slurmctld, here). Tasks run in
#               their host's namespaces, so a run's bytes between hosts cross the veths. The file
#               system is this machine's for every host. Only start takes these options; stop,
#               status and run find them in DIR (multi.env).
#   --prefix NAME  the namespaces' and bridge's names (letters and digits, default qgs); names that
#               exist already are refused
#   --subnet A.B.C the hosts' /24 (default 10.78.0); it exists only inside the bridge
#   --private PATH no shared file system under PATH (an absolute folder): each host sees a folder of
#               its own there (DIR/private/sp<i>, bind-mounted over PATH in its mount namespace), as
#               hosts with local disks do; this machine keeps its own PATH
# Needs root (slurmd starts tasks as the submitting user; munged runs as the user `munge`) and the
# packages slurm-wlm and munge (scripts/setup.sh installs them). Exit 0 ok, 1 an error (said why).
#
# Choices, each for a reason:
# - Nothing of a system Slurm or munge is used or touched: no /etc/slurm, no /etc/munge, no /run/munge,
#   no systemd unit. The cluster has its own slurm.conf (DIR/slurm.conf, passed as SLURM_CONF to every
#   Slurm command and with -f to the daemons), its own munged with its own key and socket
#   (DIR/munge/, named to Slurm by AuthInfo=socket=...), and ports of its own (6917/6918, not Slurm's
#   6817/6818), so that it runs beside a real Slurm on the same machine. Two clusters with different
#   --dir and --port run side by side (the integration test uses a temporary one).
# - Layout of DIR: slurm.conf; munge/ (munge.key, munged.sock, munged.pid, munged.log, munged.seed,
#   owned by munge; munged wants the directory 0755 and the key 0600); state/ (StateSaveLocation);
#   spool/ (SlurmdSpoolDir: the steps' sockets); log/slurmctld.log, log/slurmd.log; run/*.pid; lock.
# - --nodes N: the daemons of one host each as above, started with nsenter --net (not `ip netns
#   exec`, whose fresh /sys hides /sys/fs/cgroup, without which slurmd does not start) and unshare
#   --uts --mount; Debian's slurmd is built for several per machine (its spool, pid and log paths
#   take %n). `scontrol listpids JOB.STEP sp2` lists a host's tasks.
# - One node, named after this host (`hostname -s`, so that a step's node list resolves to this
#   machine), at 127.0.0.1, declaring the CPUs it really has: the CPUs, boards, sockets, cores and
#   threads that `slurmd -C` reports. A larger count than the real one marks the node invalid; run more
#   tasks than CPUs with `srun -n 8 --overcommit`. No RealMemory (1 MB): memory is not a resource here.
# - ClusterName=qgossip-local; one partition, `local`, default, no time limit.
# - MpiDefault=none, written out although it is 22.05's default too: steps never load the PMIx plugin,
#   which fails here without libpmix (`srun --mpi=pmix` says "can not load PMIx library"). The daemons
#   still log that error once at start, probing their plugins: harmless.
# - ProctrackType=proctrack/linuxproc, TaskPlugin=task/none: no cgroups, so that it also runs in
#   containers without a writable cgroup tree (the price: no CPU binding, and processes are tracked
#   by parentage, which a task that daemonizes escapes).
# - SelectType=select/cons_tres with CR_CPU: jobs share the node CPU by CPU (an sbatch beside an srun).
# - SlurmUser=root: one user fewer to set up; the daemons hold no state worth isolating.
# - No accounting (accounting_storage/none, jobacct_gather/none): no slurmdbd, no database; `sacct`
#   has nothing to show.
# - ReturnToService=2: a node that was down (e.g. after a stop with running jobs) is idle again as soon
#   as its slurmd registers. KillWait=5: scancel's SIGKILL follows its SIGTERM after 5 s, not 30.
# - AuthInfo cred_expire=10 (default 120 s): a step's launch credential lives 10 s, plenty where the
#   controller and the node are one machine, and a requeued job waits that long (not 2 minutes)
#   before it starts again. SchedulerParameters=sched_interval=2,bf_interval=2 (defaults 60 s and
#   30 s): a job whose begin time has come (a requeued one) starts within 2 s, not up to a minute
#   later; a scheduler pass over one node's queue costs nothing.
# - PropagatePrioProcess=0 (the default): tasks take the nice value of slurmd, which takes that of the
#   caller of `start`: `nice -n 10 scripts/slurm-local.sh start` makes every task nice 10.
# - Job state is kept across stop/start (StateSaveLocation); `rm -rf DIR` after a stop forgets it.
set -euo pipefail
export PATH="$PATH:/usr/sbin:/sbin"  # the daemons live there, outside some users' PATH

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; }

dir="${QGOSSIP_SLURM_DIR:-/var/lib/qgossip-slurm}"
port="${QGOSSIP_SLURM_PORT:-6917}"
nodes=0 prefix="" subnet="" private=""
cmd=""
while (($#)); do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --dir) [[ $# -ge 2 ]] || { echo "slurm-local: --dir needs a directory" >&2; exit 1; }; dir="$2"; shift 2 ;;
    --port) [[ $# -ge 2 ]] || { echo "slurm-local: --port needs a number" >&2; exit 1; }; port="$2"; shift 2 ;;
    --nodes | --prefix | --subnet | --private) [[ $# -ge 2 ]] || { echo "slurm-local: $1 needs a value" >&2; exit 1; }
      case "$1" in --nodes) nodes="$2" ;; --prefix) prefix="$2" ;; --subnet) subnet="$2" ;; *) private="$2" ;; esac
      shift 2 ;;
    start | stop | status | env) [[ -z "$cmd" ]] || { echo "slurm-local: two commands: $cmd and $1" >&2; exit 1; }
      cmd="$1"; shift ;;
    run) cmd=run; shift; [[ "${1:-}" != "--" ]] || shift; break ;;
    *) echo "slurm-local: unknown argument '$1' (see --help)" >&2; exit 1 ;;
  esac
done
[[ -n "$cmd" ]] || { usage >&2; exit 1; }
[[ "$cmd" != run || $# -gt 0 ]] || { echo "slurm-local: run needs a command" >&2; exit 1; }
if ! [[ "$port" =~ ^[0-9]+$ ]] || ((port < 1024 || port > 65534)); then
  echo "slurm-local: --port $port: a port in 1024..65534 (slurmd takes port + 1)" >&2
  exit 1
fi
[[ "$dir" == /* ]] || dir="$PWD/$dir"
if [[ "$nodes$prefix$subnet$private" != 0 ]]; then
  [[ "$cmd" == start || "$cmd" == run ]] || { echo "slurm-local: --nodes, --prefix and --subnet go with start or run ($cmd reads them from $dir/multi.env)" >&2; exit 1; }
  [[ "$nodes" =~ ^[0-9]+$ ]] && ((nodes >= 2 && nodes <= 16)) || { echo "slurm-local: --nodes $nodes: 2..16 hosts" >&2; exit 1; }
  prefix="${prefix:-qgs}" subnet="${subnet:-10.78.0}"
  [[ "$prefix" =~ ^[a-z][a-z0-9]{0,7}$ ]] || { echo "slurm-local: --prefix $prefix: 1-8 lowercase letters and digits, a letter first" >&2; exit 1; }
  [[ "$subnet" =~ ^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$ ]] || { echo "slurm-local: --subnet $subnet: three numbers, A.B.C" >&2; exit 1; }
  [[ -z "$private" || ("$private" == /* && "$private" != *[[:space:]\']*) ]] || { echo "slurm-local: --private $private: an absolute path without spaces or quotes" >&2; exit 1; }
elif [[ -s "$dir/multi.env" ]]; then
  # shellcheck disable=SC1091  # written by start: nodes=, prefix=, subnet=
  source "$dir/multi.env"
fi

conf="$dir/slurm.conf"
export SLURM_CONF="$conf"
munge_sock="$dir/munge/munged.sock"
node="$(hostname -s)"
hosts=()  # --nodes: the hosts' names
for ((i = 1; i <= nodes; ++i)); do hosts+=("sp$i"); done

say() { echo "slurm-local: $*"; }
die() { echo "slurm-local: error: $*" >&2; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN {printf "%.1f", b - a}'; }

# The pid in FILE when that process is alive and is NAME (a pid file can outlive its daemon, and the
# pid be reused); nothing otherwise.
live_pid() {
  local file="$1" name="$2" pid
  [[ -s "$file" ]] || return 0
  pid=$(tr -dc 0-9 <"$file")
  [[ -n "$pid" && "$(cat "/proc/$pid/comm" 2>/dev/null)" == "$name" ]] && echo "$pid"
  return 0
}
munged_pid() { live_pid "$dir/munge/munged.pid" munged; }
slurmctld_pid() { live_pid "$dir/run/slurmctld.pid" slurmctld; }
# slurmd's pid (--nodes: every host's that runs, one per line).
slurmd_pid() {
  if ((nodes == 0)); then live_pid "$dir/run/slurmd.pid" slurmd; return; fi
  local h
  for h in "${hosts[@]}"; do live_pid "$dir/run/slurmd-$h.pid" slurmd; done
}
slurmd_all() { ((nodes == 0)) && [[ -n "$(slurmd_pid)" ]] || (($(slurmd_pid | wc -l) == nodes)); }

# The node's state as sinfo prints it (idle, mix, alloc, down*, inval, ...), empty when unknown;
# --nodes: each host's, as "sp1:idle sp2:idle ...".
node_state() {
  if ((nodes == 0)); then timeout 10 sinfo -h -n "$node" -o '%t' 2>/dev/null | head -n1 || true; return; fi
  timeout 10 sinfo -h -N -o '%N:%t' 2>/dev/null | sort -u | tr '\n' ' ' | sed 's/ $//' || true
}
ctld_up() { timeout 10 scontrol ping 2>/dev/null | grep -q 'is UP'; }
munge_works() { munge -n -S "$munge_sock" 2>/dev/null | unmunge -S "$munge_sock" >/dev/null 2>&1; }

# A node that takes jobs: idle, partly or wholly allocated, or completing a job (no '*': responding);
# --nodes: every host.
node_ready() {
  local s ready=0
  for s in $(node_state); do
    case "${s#*:}" in idle | mix | alloc | comp) ((++ready)) ;; *) return 1 ;; esac
  done
  ((ready == (nodes == 0 ? 1 : nodes)))
}
healthy() {
  [[ -n "$(munged_pid)" && -n "$(slurmctld_pid)" ]] && slurmd_all || return 1
  munge_works && ctld_up && node_ready
}
any_running() { [[ -n "$(munged_pid)$(slurmctld_pid)$(slurmd_pid)" ]]; }

need_root_and_packages() {
  [[ "$(id -u)" -eq 0 ]] || die "needs root: slurmd starts every task as the user who submitted it (run with sudo)"
  local missing=() c
  for c in munged mungekey munge unmunge slurmctld slurmd slurmstepd srun sinfo scontrol squeue scancel; do
    command -v "$c" >/dev/null || missing+=("$c")
  done
  ((${#missing[@]} == 0)) || die "missing ${missing[*]}: apt-get install slurm-wlm munge (scripts/setup.sh does)"
  id munge >/dev/null 2>&1 || die "no user 'munge' (the munge package creates it: apt-get install --reinstall munge)"
}

take_lock() {
  mkdir -p "$dir"
  exec 9>"$dir/lock"
  flock -w 120 9 || die "another slurm-local.sh holds $dir/lock for more than 120 s"
}

# The node line: what slurmd -C reports for this machine (CPUs, boards, sockets, cores, threads);
# --nodes: every host has them all.
node_line() {
  local hw field out=""
  hw=$(slurmd -C 2>/dev/null | head -n1) || true
  for field in CPUs Boards SocketsPerBoard CoresPerSocket ThreadsPerCore; do
    [[ " $hw " =~ \ $field=([0-9]+)\  ]] || die "slurmd -C printed no $field= ('$hw'): cannot tell this machine's CPUs"
    out+=" $field=${BASH_REMATCH[1]}"
  done
  if ((nodes == 0)); then
    echo "NodeName=$node NodeAddr=127.0.0.1$out State=UNKNOWN"
  else
    echo "NodeName=sp[1-$nodes] NodeAddr=$subnet.[1-$nodes]$out State=UNKNOWN"
  fi
}

# --nodes: the hosts' network (bridge PREFIX-br at A.B.C.254; host i in namespace PREFIX<i> at
# A.B.C.i on veth PREFIX<i>h) and the /etc/hosts they all see (DIR/hosts).
multi_up() {
  local i ns existing
  existing=$(ip netns list 2>/dev/null | awk '{print $1}')
  for ((i = 1; i <= nodes; ++i)); do
    ns="$prefix$i"
    ! grep -qxF "$ns" <<<"$existing" || die "network namespace $ns exists (another cluster?): 'ip netns del $ns', or another --prefix"
    ! ip link show dev "${ns}h" >/dev/null 2>&1 || die "interface ${ns}h exists: pick another --prefix"
  done
  ! ip link show dev "$prefix-br" >/dev/null 2>&1 || die "bridge $prefix-br exists (another cluster?): 'ip link del $prefix-br', or another --prefix"
  printf 'nodes=%s\nprefix=%s\nsubnet=%s\nprivate=%s\n' "$nodes" "$prefix" "$subnet" "$private" >"$dir/multi.env"  # for stop, from here on
  ip link add "$prefix-br" type bridge || die "cannot create bridge $prefix-br (network namespaces need root and CAP_NET_ADMIN)"
  ip addr add "$subnet.254/24" dev "$prefix-br"
  ip link set "$prefix-br" up
  printf '127.0.0.1 localhost\n%s.254 %s\n' "$subnet" "$node" >"$dir/hosts.tmp"
  for ((i = 1; i <= nodes; ++i)); do
    ns="$prefix$i"
    ip netns add "$ns" || die "cannot create network namespace $ns"
    ip link add "${ns}h" type veth peer name eth0 netns "$ns"
    ip link set "${ns}h" master "$prefix-br" up
    ip -n "$ns" addr add "$subnet.$i/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    echo "$subnet.$i sp$i" >>"$dir/hosts.tmp"
    mkdir -p "$dir/spool/sp$i"
  done
  mv "$dir/hosts.tmp" "$dir/hosts"
}

# --nodes: every process left in the hosts' namespaces (a step's slurmstepd and tasks) SIGKILLed,
# then the namespaces, veths and bridge deleted, and multi.env with them.
multi_down() {
  local i ns pids
  for ((i = 1; i <= nodes; ++i)); do
    ns="$prefix$i"
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [[ -z "$pids" ]] || { say "killing what is left in $ns: $(tr '\n' ' ' <<<"$pids")"; kill -KILL $pids 2>/dev/null || true; }
    ip netns del "$ns" 2>/dev/null || true
    ip link del "${ns}h" 2>/dev/null || true
  done
  ip link del "$prefix-br" 2>/dev/null || true
  rm -f "$dir/multi.env"
}

# --nodes: one slurmd per host, in the host's network namespace, with its own hostname and hosts file
# (and --private: its own folder at that path).
start_hosts() {
  local h i own
  [[ -z "$private" ]] || mkdir -p "$private"
  for ((i = 1; i <= nodes; ++i)); do
    h="sp$i" own=""
    if [[ -n "$private" ]]; then
      mkdir -p "$dir/private/$h"
      own=" && mount --bind '$dir/private/$h' '$private'"
    fi
    nsenter --net="/var/run/netns/$prefix$i" unshare --uts --mount \
      sh -c "hostname $h && mount --bind '$dir/hosts' /etc/hosts$own && exec slurmd -f '$conf' -N $h" 9>&- ||
      die "slurmd of $h did not start$(tail_of "$dir/log/slurmd-$h.log")"
  done
}

write_conf() {
  local tmp="$conf.tmp"
  local ctl_addr=127.0.0.1 per_host="" partition_nodes="$node"
  if ((nodes > 0)); then
    ctl_addr="$subnet.254" per_host="-%n" partition_nodes="sp[1-$nodes]"
  fi
  cat >"$tmp" <<EOF
# Written by scripts/slurm-local.sh (docs/slurm.md); rewritten at every start.
ClusterName=qgossip-local
SlurmctldHost=$node($ctl_addr)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$munge_sock,cred_expire=10
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2,bf_interval=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool${per_host:+/%n}
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd$per_host.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd$per_host.log
SlurmctldDebug=info
SlurmdDebug=info
ReturnToService=2
KillWait=5
InactiveLimit=0
MailProg=/bin/true
$(node_line)
PartitionName=local Nodes=$partition_nodes Default=YES MaxTime=INFINITE State=UP
EOF
  mv "$tmp" "$conf"
}

# Polls CONDITION (a command) every 0.2 s for up to SECONDS; returns its last status.
wait_for() {
  local seconds="$1" end
  shift
  end=$(($(date +%s) + seconds))
  until "$@"; do
    (($(date +%s) < end)) || return 1
    sleep 0.2
  done
}

# The last lines of a log, indented, for an error message.
tail_of() { [[ -f "$1" ]] && { echo "  last lines of $1:"; tail -n "${2:-8}" "$1" | sed 's/^/    /'; }; return 0; }

# Ends the processes PID... (NAME, for messages): SIGTERM to all, then SIGKILL to those still there
# after 10 s.
gone() { ! kill -0 "$@" 2>/dev/null; }
all_gone() { local p; for p; do gone "$p" || return 1; done; }
end_processes() {
  local name="$1" p
  shift
  (($#)) || return 0
  kill -TERM "$@" 2>/dev/null || true
  wait_for 10 all_gone "$@" && return 0
  for p; do
    gone "$p" && continue
    say "$name: pid $p still runs 10 s after SIGTERM: SIGKILL"
    kill -KILL "$p" 2>/dev/null || true
  done
  wait_for 5 all_gone "$@" || die "$name: pids $* survive SIGKILL"
}

do_stop() {
  local t0 pids=() jobs=()
  t0=$(now)
  if ! any_running; then
    say "not running ($dir)"
    rm -f "$dir/munge/munged.pid" "$dir/run/slurmctld.pid" "$dir/run/slurmd"*.pid 2>/dev/null || true
    ((nodes == 0)) || multi_down
    return 0
  fi
  if [[ -n "$(slurmctld_pid)" ]] && ctld_up; then
    mapfile -t jobs < <(timeout 10 squeue -h -o '%A' 2>/dev/null || true)
    if ((${#jobs[@]} > 0)); then
      say "cancelling jobs ${jobs[*]}"
      timeout 10 scancel "${jobs[@]}" 2>/dev/null || true
      # KillWait (5 s) between the tasks' SIGTERM and SIGKILL, then the steps' end.
      no_jobs() { [[ -z "$(timeout 10 squeue -h -o %A 2>/dev/null)" ]]; }
      wait_for 15 no_jobs ||
        say "jobs still listed 15 s after scancel: $(timeout 10 squeue -h -o '%A %T' | tr '\n' ' ')"
    fi
  fi
  # Whatever of a step still runs on the node (its slurmstepd and slurmd may be gone): SIGKILL.
  # (--nodes: multi_down kills what is left in the hosts' namespaces.)
  ((nodes > 0)) ||
    mapfile -t pids < <(timeout 10 scontrol listpids 2>/dev/null | awk 'NR > 1 && $1 ~ /^[0-9]+$/ {print $1}' || true)
  if ((${#pids[@]} > 0)); then
    say "killing the steps' processes left: ${pids[*]}"
    kill -KILL "${pids[@]}" 2>/dev/null || true
  fi
  # slurmd and slurmctld together (each takes 1-2 s to end), then munged, which both use to the end.
  # shellcheck disable=SC2046  # each expands to one pid or nothing
  end_processes "slurmd and slurmctld" $(slurmd_pid) $(slurmctld_pid)
  # shellcheck disable=SC2046
  end_processes munged $(munged_pid)
  rm -f "$dir/munge/munged.pid" "$dir/run/slurmctld.pid" "$dir/run/slurmd"*.pid "$munge_sock"
  ((nodes == 0)) || multi_down
  say "stopped ($dir, $(since "$t0") s)"
}

do_start() {
  local t0 state
  t0=$(now)
  need_root_and_packages
  if healthy; then
    say "already running ($dir), node $node $(node_state)"
    return 0
  fi
  if any_running; then
    local m c d
    m=$(munged_pid); c=$(slurmctld_pid); d=$(slurmd_pid)
    say "a partial or unhealthy cluster in $dir (munged ${m:-not running}, slurmctld ${c:-not running}, slurmd ${d:-not running}, node '$(node_state)'): stopping it first"
    do_stop
  fi
  [[ ${#munge_sock} -lt 100 ]] || die "--dir $dir is too long: a Unix socket path ($munge_sock) must be under 108 bytes"
  mkdir -p "$dir/state" "$dir/spool" "$dir/log" "$dir/run" "$dir/munge"
  chmod 0755 "$dir" "$dir/munge"
  ((nodes == 0)) || multi_up
  write_conf

  # munged, as the user munge, with a key of its own (made once, kept across restarts).
  if [[ ! -s "$dir/munge/munge.key" ]]; then
    mungekey --create --keyfile="$dir/munge/munge.key" --bits=1024 ||
      die "mungekey could not create $dir/munge/munge.key"
  fi
  chown -R munge:munge "$dir/munge"
  chmod 0600 "$dir/munge/munge.key"
  rm -f "$munge_sock"
  # The daemons must not inherit the lock's descriptor (9>&-): they would hold the lock for ever.
  runuser -u munge -- munged --socket="$munge_sock" --key-file="$dir/munge/munge.key" \
    --log-file="$dir/munge/munged.log" --pid-file="$dir/munge/munged.pid" --seed-file="$dir/munge/munged.seed" 9>&- ||
    die "munged did not start$(tail_of "$dir/munge/munged.log")"
  wait_for 10 munge_works || die "munged runs but does not answer on $munge_sock$(tail_of "$dir/munge/munged.log")"

  slurmctld -f "$conf" 9>&- || die "slurmctld did not start$(tail_of "$dir/log/slurmctld.log")"
  wait_for 20 ctld_up || die "slurmctld does not answer 'scontrol ping' after 20 s$(tail_of "$dir/log/slurmctld.log")"

  if ((nodes == 0)); then
    slurmd -f "$conf" -N "$node" 9>&- || die "slurmd did not start$(tail_of "$dir/log/slurmd.log")"
  else
    start_hosts
  fi
  if ! wait_for 30 node_ready; then
    state=$(node_state)
    die "node(s) '${state:-unknown}' 30 s after slurmd started, not idle; reason: $(timeout 10 sinfo -h -R -o '%E' 2>/dev/null | head -n1)$(tail_of "$dir/log/slurmd${hosts:+-sp1}.log")$(tail_of "$dir/log/slurmctld.log")"
  fi
  local where="node $node"
  ((nodes == 0)) || where="$nodes hosts sp1..sp$nodes at $subnet.1-$nodes (namespaces $prefix<i>, bridge $prefix-br)"
  say "started in $(since "$t0") s: cluster qgossip-local, $where ($(sed -n 's/^NodeName=[^ ]* NodeAddr=[^ ]* CPUs=\([0-9]*\).*/\1 CPUs/p' "$conf") each, idle), ports $port/$((port + 1)), state and logs in $dir"
  say "use it with: export SLURM_CONF=$conf"
}

do_status() {
  local m c d state jobs
  m=$(munged_pid); c=$(slurmctld_pid); d=$(slurmd_pid | tr '\n' ' ' | sed 's/ $//')
  echo "dir:       $dir (SLURM_CONF=$conf)"
  echo "munged:    ${m:-not running}"
  echo "slurmctld: ${c:-not running}"
  echo "slurmd:    ${d:-not running}"
  if [[ -z "$m$c$d" ]]; then
    echo "state:     stopped"
    return 3
  fi
  if [[ -n "$c" ]] && ctld_up; then
    state=$(node_state)
    jobs=$(timeout 10 squeue -h -o '%A' 2>/dev/null | wc -l || true)
    if ((nodes == 0)); then echo "node:      $node ${state:-unknown}"; else echo "hosts:     ${state:-unknown}"; fi
    echo "jobs:      $jobs"
  fi
  if healthy; then
    echo "state:     healthy"
    return 0
  fi
  echo "state:     unhealthy (a daemon is not running or not answering; 'start' restarts it; logs in $dir/log)"
  return 1
}

case "$cmd" in
  start) need_root_and_packages; take_lock; do_start ;;
  stop) [[ -d "$dir" ]] || { say "not running (no $dir)"; exit 0; }
    [[ "$(id -u)" -eq 0 ]] || die "needs root to stop daemons that root started"
    take_lock; do_stop ;;
  status) [[ -d "$dir" ]] || { echo "state:     stopped (no $dir)"; exit 3; }
    do_status ;;
  env) echo "export SLURM_CONF=$conf" ;;
  run)
    need_root_and_packages
    take_lock
    was_running=0
    healthy && was_running=1
    do_start
    flock -u 9
    child=""
    # shellcheck disable=SC2317  # called by the EXIT trap
    finish() {
      local rc=$?
      trap - EXIT INT TERM
      [[ -z "$child" ]] || { kill -TERM "$child" 2>/dev/null && wait "$child" 2>/dev/null; } || true
      if ((was_running == 0)); then take_lock; do_stop; fi
      exit "$rc"
    }
    trap finish EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    rc=0
    "$@" <&0 9>&- &  # in the background so that a signal reaches finish() at once; stdin kept
    child=$!
    wait "$child" || rc=$?
    child=""
    exit "$rc"
    ;;
esac
