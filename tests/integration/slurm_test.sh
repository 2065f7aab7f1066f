#!/usr/bin/env bash
# qgossip under a real Slurm of one machine (scripts/slurm-local.sh: munged, slurmctld, slurmd of a
# temporary cluster of its own, torn down at exit). Every run's topology takes its hosts from the
# step (`nodes: {from: slurm, base_port: P}`: rank r on the node of task r, port P + r):
#  1. `srun -n 8 --overcommit qgossip run --config RUN.yaml`: every task takes its rank from
#     SLURM_PROCID and its host from the step (this machine's node name, as run.json records), the
#     run finishes and `qgossip verify` finds every copy equal; `srun -n 4` of the same 8-node run
#     is refused by every task at once (exit 2, naming both counts); the demo itself
#     (configs/demo.yaml, its hosts from the step) ends with every copy equal; and a Python
#     program's 8 nodes (`srun -n 8 /usr/bin/python3 tests/integration/python_loop.py`, the module's Node() taking its rank
#     from SLURM_PROCID) end with every copy equal (docs/python.md), and the same program's 4 nodes
#     of 2 tasks each (topology.group_size: 2; docs/python.md, "Groups") with every member checked;
#  2. one task of a running step SIGKILLed (scancel signals a whole job or step, never one task: its
#     pid comes from `scontrol listpids JOB.STEP`): every other rank exits 1 by itself, naming it
#     (network.on_peer_failure: stop), and srun reports it;
#  3. configs/slurm/train.sbatch under sbatch: it makes the run's CURVE keys (none are made
#     beforehand); one rank killed once every node has a checkpoint, the job requeues itself, keeps
#     the keys, resumes from the checkpoints (`qgossip run --resume`) and completes, every copy equal;
#  4. network.on_peer_failure: continue, each task behind scripts/qgossip-task.sh: one task's
#     qgossip process SIGKILLed mid-run is started again by its task and rejoins; srun exits 0 and
#     every copy is equal, none departed.
# Usage: bash tests/integration/slurm_test.sh QGOSSIP_BINARY   (or QGOSSIP=... in the environment)
# Exit 77 (CTest: skipped) when Slurm cannot run here: not root, or slurm-wlm / munge not installed
# (scripts/setup.sh installs them). Once they are there, a cluster that does not start is a failure.
set -euo pipefail

qgossip="${1:-${QGOSSIP:-}}"
export PATH="$PATH:/usr/sbin:/sbin"  # munged, slurmctld and slurmd live there
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

skip() { echo "slurm_test: SKIPPED: $*"; exit 77; }
fail() { echo "slurm_test: FAILED: $*" >&2; exit 1; }
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}'; }

[[ -n "$qgossip" && -x "$qgossip" ]] || fail "no qgossip binary given (argument 1 or QGOSSIP)"
qgossip="$(realpath "$qgossip")"
[[ "$(id -u)" -eq 0 ]] || skip "not root: slurmd starts tasks as their user and must run as root"
for c in munged mungekey slurmctld slurmd slurmstepd srun salloc sbatch squeue scontrol sinfo getent python3; do
  command -v "$c" >/dev/null || skip "no '$c' here: apt-get install slurm-wlm munge (scripts/setup.sh does)"
done
# Inside someone's Slurm job, srun would join that job's allocation on that cluster: forget it.
while read -r v; do unset "$v"; done < <(compgen -e | grep '^SLURM_' || true)

# A base port with COUNT free ports from it, outside the ephemeral range.
free_ports() {
  python3 - "$1" <<'EOF'
import random, socket, sys
n = int(sys.argv[1])
for _ in range(200):
    base = random.randrange(20000, 32000 - n)
    socks, ok = [], True
    try:
        for p in range(base, base + n):
            s = socket.socket()
            socks.append(s)
            s.bind(("", p))
    except OSError:
        ok = False
    for s in socks:
        s.close()
    if ok:
        print(base)
        sys.exit(0)
sys.exit("no range of free ports found")
EOF
}

tmp=$(mktemp -d /tmp/qgossip-slurm-test.XXXXXX)
chmod 0755 "$tmp"
cluster=(bash "$repo/scripts/slurm-local.sh" --dir "$tmp/slurm" --port "$(free_ports 2)")
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  local t0
  t0=$(date +%s.%N)
  if ! "${cluster[@]}" stop >"$tmp/stop.txt" 2>&1; then
    cat "$tmp/stop.txt" >&2
    echo "slurm_test: FAILED: scripts/slurm-local.sh stop failed (above); processes may be left" >&2
    rc=1
  fi
  local took
  took=$(elapsed "$t0")
  rm -rf "$tmp"
  ((rc != 0)) || echo "slurm_test: cluster stopped in $took s"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

t0=$(date +%s.%N)
timeout 90 "${cluster[@]}" start || fail "scripts/slurm-local.sh start failed (above)"
echo "slurm_test: cluster started in $(elapsed "$t0") s"
export SLURM_CONF="$tmp/slurm/slurm.conf"
cd "$tmp"
# The cluster's one node, which every step's node list names: a rank listens on it and its
# neighbours connect to it, so it must resolve here (slurm-local.sh names it `hostname -s`).
node=$(sinfo -h -N -o %N | head -n1)
[[ -n "$node" ]] || fail "sinfo lists no node"
getent hosts "$node" >/dev/null ||
  fail "the node name '$node' does not resolve: nodes: {from: slurm} gives every rank that host; add it to /etc/hosts (127.0.0.1 $node)"

# The run's YAML: 8 ranks in a ring, 256 synthetic examples each (16 rounds per epoch), on the
# step's hosts from port $base (set here, for the checks). Its CURVE keys are made inside a job
# (`salloc`: outside one the topology has no hosts) unless KEYS is "none" (train.sbatch makes them).
write_config() {  # NAME EPOCHS [", more: train keys"] [KEYS]
  local name="$1" epochs="$2" train_more="${3:-}" keys="${4:-salloc}"
  base=$(free_ports 8)
  local placement="nodes: {from: slurm, base_port: $base}"
  cat >"$tmp/$name.yaml" <<EOF
name: $name
seed: 5
topology: {graph: ring, n: 8, $placement}
algorithm: dcd
compressor: {name: qsgd, bits: 4, bucket: 64}
model: {kind: mlp, hidden: [32]}
data:
  dataset: synthetic
  synthetic: {train: 2048, test: 500, dim: 32, classes: 4, noise: 3.0}
train: {epochs: $epochs, batch: 16, lr: 0.05, log_every: 4, eval_every: 0, eval_examples: 0$train_more}
network: {round_timeout_s: 20, start_timeout_s: 30, linger_s: 2}
output: {dir: $tmp/runs}
EOF
  if [[ "$keys" == salloc ]]; then
    salloc -Q -n 8 --overcommit "$qgossip" keys --config "$tmp/$name.yaml" >/dev/null ||
      fail "salloc -n 8 qgossip keys --config $name.yaml failed"
  fi
  mkdir -p "$tmp/logs/$name"
}

# srun of one run (ended by SIGTERM after SECONDS), each task's stdout and stderr in
# logs/NAME/node-<task>.{events,log}.
srun_run() {  # NAME SECONDS
  local name="$1"
  timeout "$2" srun -n 8 --overcommit --kill-on-bad-exit=0 --job-name="qg-$name" \
    --output="$tmp/logs/$name/node-%t.events" --error="$tmp/logs/$name/node-%t.log" \
    "$qgossip" run --config "$tmp/$name.yaml"
}
show_logs() {  # NAME: the last lines of every rank's log, for a failure
  local f
  for f in "$tmp/logs/$1"/node-*.log; do echo "--- $f"; tail -n 3 "$f"; done
}
rows() { [[ -f "$1" ]] && wc -l <"$1" || echo 0; }
# True when every rank of run NAME has logged rows after its CSV header (the run is under way).
all_training() {
  local r
  for r in {0..7}; do (($(rows "$tmp/runs/$1/node-$r.csv") >= 3)) || return 1; done
}
# True when every rank of run NAME has written a checkpoint.
all_checkpointed() {
  local r
  for r in {0..7}; do compgen -G "$tmp/runs/$1/checkpoints/node-$r/ckpt-*.bin" >/dev/null || return 1; done
}
wait_until() {  # SECONDS CONDITION...: polls every 0.1 s
  local end=$(($(date +%s) + $1))
  shift
  until "$@"; do
    (($(date +%s) < end)) || return 1
    sleep 0.1
  done
}
# The pid of global task RANK of step JOB.STEP on this node (scontrol listpids: PID JOBID STEPID
# LOCALID GLOBALID), empty when it is not there.
task_pid() { scontrol listpids "$1" 2>/dev/null | awk -v r="$2" 'NR > 1 && $5 == r {print $1}'; }
job_of() { squeue -h --name="$1" -o '%A' | head -n1; }
summary_field() {  # RUN RANK FIELD
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], ""))' \
    "$tmp/runs/$1/node-$2.json" "$3"
}

# ---- 1. srun: 8 ranks from SLURM_PROCID, every copy equal -------------------------------------
write_config whole 4
t0=$(date +%s.%N)
rc=0
srun_run whole 60 2>"$tmp/srun-whole.txt" || rc=$?
cat "$tmp/srun-whole.txt"
((rc == 0)) || { show_logs whole; fail "srun of 8 ranks exited $rc (above)"; }
for r in {0..7}; do  # task r ran rank r: its log opens with "[node r]"
  head -n1 "$tmp/logs/whole/node-$r.log" | grep -q "^\[node $r\]" ||
    fail "task $r's log does not open as rank $r's: $(head -n1 "$tmp/logs/whole/node-$r.log")"
done
verify=$("$qgossip" verify "$tmp/runs/whole" 2>&1) || fail "qgossip verify: $verify"
echo "slurm_test: srun of 8 ranks ok in $(elapsed "$t0") s; $verify"
[[ "$verify" == *"all equal"* ]] || fail "qgossip verify did not say 'all equal'"
# Where each rank ran, as run.json's resolved config records it: rank r on the node, port base + r.
hosts=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["config_yaml"])' "$tmp/runs/whole/run.json" |
  grep -A8 '^  nodes:')
expected="  nodes:  # {from: slurm, base_port: $base}, resolved from SLURM_STEP_NODELIST=$node, SLURM_STEP_TASKS_PER_NODE=8"
for r in {0..7}; do expected+=$'\n'"    - {host: $node, port: $((base + r)), gpu: -1}"; done
[[ "$hosts" == "$expected" ]] || fail "run.json's nodes are not the step's:"$'\n'"$hosts"$'\n'"expected:"$'\n'"$expected"
grep -q "listening on tcp://\*:$((base + 5))\$" "$tmp/logs/whole/node-5.log" ||
  fail "rank 5 did not listen on port $((base + 5)): $(grep -m1 listening "$tmp/logs/whole/node-5.log")"
echo "slurm_test: run.json: 8 ranks on $node (SLURM_STEP_NODELIST=$node), ports $base-$((base + 7))"

# ---- 1p. a Python program's nodes under srun: the same YAML, ranks and hosts from the step --------
write_config python 1
t0=$(date +%s.%N)
rc=0
QGOSSIP_CONFIG="$tmp/python.yaml" PYTHONPATH="$(dirname "$qgossip")/python" \
  timeout 120 srun -n 8 --overcommit --kill-on-bad-exit=0 --job-name=qg-python \
  --output="$tmp/logs/python/node-%t.events" --error="$tmp/logs/python/node-%t.log" \
  /usr/bin/python3 "$repo/tests/integration/python_loop.py" 24 32 2>"$tmp/srun-python.txt" || rc=$?
((rc == 0)) || { cat "$tmp/srun-python.txt"; show_logs python; fail "srun of 8 Python ranks exited $rc (above)"; }
verify=$("$qgossip" verify "$tmp/runs/python" 2>&1) || fail "qgossip verify of the Python ranks: $verify"
[[ "$verify" == *"all equal"* ]] || fail "Python ranks: qgossip verify did not say 'all equal': $verify"
[[ "$(summary_field python 7 rounds)" == 24 ]] || fail "Python rank 7 ran $(summary_field python 7 rounds) rounds, not 24"
echo "slurm_test: srun of 8 Python ranks ok in $(elapsed "$t0") s; $verify"

# ---- 1g. the same program's nodes as groups: srun -n 8 of topology.n 4, topology.group_size 2 ------
# Consecutive tasks are a node (tasks 2r and 2r+1: node r, its speaker task 2r); each group trains
# with DDP over node.group, and every member ends with its node's model (verify checks the members).
write_config python-groups 1 "" none
sed -i -e "s/^topology: {graph: ring, n: 8, /topology: {graph: ring, n: 4, group_size: 2, /" \
  -e "s/^model: .*/model: {kind: external}/" "$tmp/python-groups.yaml"
salloc -Q -n 8 --overcommit "$qgossip" keys --config "$tmp/python-groups.yaml" >/dev/null ||
  fail "salloc -n 8 qgossip keys --config python-groups.yaml failed"
t0=$(date +%s.%N)
rc=0
QGOSSIP_CONFIG="$tmp/python-groups.yaml" PYTHONPATH="$(dirname "$qgossip")/python" MASTER_PORT="$(free_ports 1)" \
  timeout 120 srun -n 8 --overcommit --kill-on-bad-exit=0 --job-name=qg-python-groups \
  --output="$tmp/logs/python-groups/node-%t.events" --error="$tmp/logs/python-groups/node-%t.log" \
  /usr/bin/python3 "$repo/tests/integration/python_loop.py" 24 32 2>"$tmp/srun-python-groups.txt" || rc=$?
((rc == 0)) || { cat "$tmp/srun-python-groups.txt"; show_logs python-groups; fail "srun of 4 groups of 2 exited $rc (above)"; }
verify=$("$qgossip" verify "$tmp/runs/python-groups" 2>&1) || fail "qgossip verify of the groups: $verify"
[[ "$verify" == *"all equal"* && "$verify" == *"8 members of the nodes' process groups"* ]] ||
  fail "groups: qgossip verify did not check 8 members, all equal: $verify"
[[ "$(summary_field python-groups 3 rounds)" == 24 ]] || fail "group 3 ran $(summary_field python-groups 3 rounds) rounds, not 24"
echo "slurm_test: srun of 4 Python groups of 2 tasks ok in $(elapsed "$t0") s; $verify"

# ---- 1a. the demo itself (configs/demo.yaml, Fashion-MNIST) under srun, hosts from the step -------
demo_base=$(free_ports 8)
demo_sets=(--set "topology={graph: ring, n: 8, weights: uniform, nodes: {from: slurm, base_port: $demo_base}}"
           --set name=demo --set "output.dir=$tmp/runs")
salloc -Q -n 8 --overcommit "$qgossip" keys --config "$repo/configs/demo.yaml" "${demo_sets[@]}" >/dev/null ||
  fail "salloc -n 8 qgossip keys --config configs/demo.yaml failed"
mkdir -p "$tmp/logs/demo"
t0=$(date +%s.%N)
rc=0
timeout 300 srun -n 8 --overcommit --kill-on-bad-exit=0 --job-name=qg-demo \
  --output="$tmp/logs/demo/node-%t.events" --error="$tmp/logs/demo/node-%t.log" \
  "$qgossip" run --config "$repo/configs/demo.yaml" "${demo_sets[@]}" 2>"$tmp/srun-demo.txt" || rc=$?
((rc == 0)) || { cat "$tmp/srun-demo.txt"; show_logs demo; fail "srun of the demo exited $rc (above)"; }
verify=$("$qgossip" verify "$tmp/runs/demo" 2>&1) || fail "qgossip verify of the demo: $verify"
[[ "$verify" == *"all equal"* ]] || fail "qgossip verify of the demo did not say 'all equal': $verify"
echo "slurm_test: srun of the demo (configs/demo.yaml, 8 ranks) ok in $(elapsed "$t0") s, mean accuracy $(python3 -c '
import json, sys
a = [json.load(open(f"{sys.argv[1]}/node-{r}.json"))["test_acc"] for r in range(8)]
print(f"{sum(a) / 8:.4f}")' "$tmp/runs/demo"); $verify"

# ---- 1b. a step of 4 tasks for the 8 ranks: refused by every task at once ------------------------
t0=$(date +%s.%N)
rc=0
timeout 60 srun -n 4 --overcommit --kill-on-bad-exit=0 "$qgossip" run --config "$tmp/whole.yaml" \
  >"$tmp/srun-four.txt" 2>&1 || rc=$?
((rc == 2)) || { cat "$tmp/srun-four.txt"; fail "srun -n 4 of an 8-node run exited $rc, not 2 (above)"; }
refusal="the step runs 4 tasks (SLURM_STEP_NUM_TASKS=4) but the topology has n = 8 nodes"
(($(grep -c "$refusal" "$tmp/srun-four.txt") == 4)) ||
  { cat "$tmp/srun-four.txt"; fail "not every one of the 4 tasks said '$refusal' (above)"; }
echo "slurm_test: srun -n 4 of the 8-node run: refused by the 4 tasks in $(elapsed "$t0") s (exit 2): $refusal"

# ---- 2. one task of the step SIGKILLed: the 7 others exit 1 naming it ----------------------------
write_config killed 100000
victim=3
srun_run killed 120 2>"$tmp/srun-killed.txt" &
srun_pid=$!
step_listed() { [[ -n "$(job_of qg-killed)" ]]; }
wait_until 30 step_listed || fail "the job qg-killed did not appear in squeue within 30 s"
job=$(job_of qg-killed)
wait_until 30 all_training killed || { show_logs killed; fail "the 8 ranks did not all log rows within 30 s"; }
pid=$(task_pid "$job.0" "$victim")
[[ -n "$pid" ]] || fail "scontrol listpids $job.0 lists no task $victim: $(scontrol listpids "$job.0" 2>&1)"
t0=$(date +%s.%N)
kill -KILL "$pid"
srun_ended() { ! kill -0 "$srun_pid" 2>/dev/null; }
wait_until 30 srun_ended || { show_logs killed; fail "srun still runs 30 s after task $victim was SIGKILLed"; }
took=$(elapsed "$t0")
rc=0
wait "$srun_pid" || rc=$?
cat "$tmp/srun-killed.txt"
((rc != 0)) || fail "srun exited 0 although task $victim was killed"
grep -q "task $victim: Killed" "$tmp/srun-killed.txt" || fail "srun does not report task $victim killed (above)"
# srun groups the tasks that ended alike, in one line or several as they ended ("tasks 0-1,5-7: ...",
# "tasks 2,4: ..."): every other task must be in one of them.
exited_1=$(sed -n 's/.*tasks\{0,1\} \([0-9,-]*\): Exited with exit code 1.*/\1/p' "$tmp/srun-killed.txt" | tr ',' '\n' |
  awk -F- '{ for (t = $1; t <= ($2 == "" ? $1 : $2); ++t) print t }' | sort -n | tr '\n' ' ')
[[ "$exited_1" == "0 1 2 4 5 6 7 " ]] ||
  { show_logs killed; fail "srun does not report every other task exiting 1 (above; got: $exited_1)"; }
for r in 0 1 2 4 5 6 7; do
  status=$(summary_field killed "$r" status)
  error=$(summary_field killed "$r" error)
  [[ "$status" == failed && "$error" == *"rank $victim"* ]] ||
    fail "rank $r: status '$status', error '$error': expected failed, naming rank $victim"
done
echo "slurm_test: task $victim of step $job.0 SIGKILLed (pid $pid): srun ended $took s later (exit $rc), the 7 others exited 1 naming rank $victim"
echo "slurm_test:   e.g. rank 2: $(summary_field killed 2 error)"

# ---- 3. train.sbatch: killed once, requeued, resumed from the checkpoints, completed -----------
write_config batch 300 ", checkpoint_every: 200" none
t0=$(date +%s.%N)
job=$(QGOSSIP="$qgossip" sbatch --parsable "$repo/configs/slurm/train.sbatch" "$tmp/batch.yaml") ||
  fail "sbatch configs/slurm/train.sbatch failed"
job=${job%%;*}
wait_until 60 all_checkpointed batch || fail "not every rank of job $job wrote a checkpoint within 60 s: $(cat "$tmp/slurm-$job.out" 2>&1)"
pid=$(task_pid "$job.0" "$victim")
[[ -n "$pid" ]] || fail "job $job: no task $victim in step $job.0 to kill (the run ended already?): $(cat "$tmp/slurm-$job.out")"
kill -KILL "$pid"
job_over() { [[ -z "$(squeue -h -j "$job" -o %A 2>/dev/null)" ]]; }
# The requeued job waits cred_expire (10 s, scripts/slurm-local.sh) before it starts again.
wait_until 120 job_over || fail "job $job is still queued or running after 120 s: $(squeue -j "$job" 2>&1); $(cat "$tmp/slurm-$job.out")"
took=$(elapsed "$t0")
cat "$tmp/slurm-$job.out"
info=$(scontrol -o show job "$job")
[[ " $info " == *" JobState=COMPLETED "* && " $info " == *" ExitCode=0:0 "* ]] ||
  fail "job $job did not complete: $(grep -o 'JobState=[^ ]*\|ExitCode=[^ ]*\|Reason=[^ ]*' <<<"$info" | tr '\n' ' ')"
[[ " $info " == *" Restarts=1 "* ]] || fail "job $job was not requeued once: $(grep -o 'Restarts=[^ ]*' <<<"$info")"
grep -q "^requeueing" "$tmp/slurm-$job.out" || fail "train.sbatch did not say it requeued (above)"
made=$(grep -o '[0-9]* of 8 CURVE keypairs were missing' "$tmp/slurm-$job.out" | cut -d' ' -f1 | tr '\n' ' ')
[[ "$made" == "8 0 " ]] || fail "train.sbatch did not make the 8 keys at its first start and keep them at its second (made: $made)"
resumed=$(grep -h "resuming from" "$tmp/slurm-$job/node-0.log" || true)
[[ -n "$resumed" ]] || { tail -n 5 "$tmp/slurm-$job/node-0.log"; fail "rank 0 did not resume from a checkpoint (above)"; }
verify=$("$qgossip" verify "$tmp/runs/batch" 2>&1) || fail "qgossip verify: $verify"
[[ "$verify" == *"all equal"* ]] || fail "qgossip verify did not say 'all equal': $verify"
echo "slurm_test: train.sbatch job $job: killed, requeued, ${resumed#*] }, completed in $took s; $verify"

# ---- 4. continue: one task's process SIGKILLed mid-run, started again by its task, rejoins -------
# Each task runs scripts/qgossip-task.sh, which starts the rank's process again when it dies; the
# new process keeps the task's SLURM_* variables (same rank, same hosts) and rejoins the graph.
write_config rejoin 2000  # about 20 s here
sed -i 's/^network: {/network: {on_peer_failure: continue, /' "$tmp/rejoin.yaml"
t0=$(date +%s.%N)
timeout 150 srun -n 8 --overcommit --kill-on-bad-exit=0 --job-name=qg-rejoin \
  --output="$tmp/logs/rejoin/node-%t.events" --error="$tmp/logs/rejoin/node-%t.log" \
  bash "$repo/scripts/qgossip-task.sh" "$qgossip" run --config "$tmp/rejoin.yaml" 2>"$tmp/srun-rejoin.txt" &
srun_pid=$!
rejoin_listed() { [[ -n "$(job_of qg-rejoin)" ]]; }
wait_until 30 rejoin_listed || fail "the job qg-rejoin did not appear in squeue within 30 s"
job=$(job_of qg-rejoin)
wait_until 30 all_training rejoin || { show_logs rejoin; fail "the 8 ranks did not all log rows within 30 s"; }
# The rank's qgossip process (not its task's wrapper): SLURM_PROCID=victim in its environment.
node_pid=""
for p in $(pgrep -f -- "run --config $tmp/rejoin.yaml"); do
  grep -q qgossip-task.sh "/proc/$p/cmdline" 2>/dev/null && continue
  tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "SLURM_PROCID=$victim" && node_pid=$p
done
[[ -n "$node_pid" ]] || fail "no qgossip process of task $victim in step $job.0"
kill -KILL "$node_pid"
rejoined() { grep -q "rejoined the run at round" "$tmp/logs/rejoin/node-$victim.log"; }
wait_until 60 rejoined || { show_logs rejoin; fail "rank $victim did not rejoin within 60 s of its restart"; }
rc=0
wait "$srun_pid" || rc=$?
took=$(elapsed "$t0")
((rc == 0)) || { cat "$tmp/srun-rejoin.txt"; show_logs rejoin; fail "srun of the rejoin run exited $rc (above)"; }
verify=$("$qgossip" verify "$tmp/runs/rejoin" 2>&1) || fail "qgossip verify: $verify"
[[ "$verify" == *"all equal"* && "$verify" != *"left the run"* ]] || fail "qgossip verify: $verify"
echo "slurm_test: task $victim's process SIGKILLed, started again by its task: $(grep -o 'rejoined the run at round [0-9]* from rank [0-9]*' "$tmp/logs/rejoin/node-$victim.log" | head -n1); srun exit 0 after $took s; $verify"
echo "slurm_test: ok"
