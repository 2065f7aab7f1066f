#!/usr/bin/env bash
# qgossip on a real Slurm of four hosts, all on this machine (tests/integration/slurm_hosts.sh). Two
# tasks on each host:
#  1. `qgossip keys` in an allocation of the 4 hosts, then `srun -N 4 -n 8 qgossip run`: every copy
#     equal, run.json listing sp1..sp4 (two ranks each) as the step's hosts, the bytes across hosts;
#  2. `srun --distribution=cyclic`: refused by every task (exit 2, saying so);
#  3. rank 3, on sp2, SIGKILLed mid-run (its pid from `scontrol listpids JOB.0 sp2`): srun ends, and
#     the ranks on the other hosts exit naming rank 3 at tcp://sp2:<port>;
#  4. `sbatch -N 4 configs/slurm/train.sbatch`: the job makes the keys, runs, completes, copies equal;
#  5. no shared file system (each host its own folder at $tmp/priv: slurm-local.sh --private): the
#     batch job makes each host's keys on that host (no host holds another's secret key), one rank is
#     killed once every host has a checkpoint, the job requeues, agrees on the round to resume from
#     by asking every task (`qgossip checkpoints`), and ends with every model bit for bit as a job
#     that was never killed;
#  6. SIGUSR1 to the run's tasks (Slurm's --signal before a time limit): every rank stops after one
#     agreed round with its checkpoint (exit 75), the job requeues, resumes, and ends bit for bit.
# Usage: bash tests/integration/slurm_multinode.sh QGOSSIP_BINARY   (or QGOSSIP=... in the environment)
# Exit 77 (CTest: skipped) where it cannot run: not root, no network namespaces, or slurm-wlm / munge
# not installed (scripts/setup.sh installs them).
test_name=slurm_multinode
source "$(dirname "${BASH_SOURCE[0]}")/slurm_hosts.sh"
hosts_up private

# ---- 1. keys, then 8 ranks on 4 hosts ------------------------------------------------------------
write_config whole 4
t0=$(date +%s.%N)
rc=0
step whole 60 2>"$tmp/srun-whole.txt" || rc=$?
((rc == 0)) || { cat "$tmp/srun-whole.txt"; tail -n 3 "$tmp/logs/whole"/node-*.log; fail "srun -N 4 -n 8 exited $rc"; }
verify=$("$qgossip" verify "$tmp/runs/whole" 2>&1) || fail "qgossip verify: $verify"
[[ "$verify" == *"all equal"* ]] || fail "qgossip verify did not say 'all equal': $verify"
placed=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["config_yaml"])' "$tmp/runs/whole/run.json" |
  grep -o 'host: sp[0-9]*' | cut -d' ' -f2 | tr '\n' ' ')
[[ "$placed" == "sp1 sp1 sp2 sp2 sp3 sp3 sp4 sp4 " ]] || fail "run.json's hosts are '$placed', not two ranks on each of sp1..sp4"
grep -q "listening on tcp://\*:$((base + 3))\$" "$tmp/logs/whole/node-3.log" || fail "rank 3 did not listen on port $((base + 3))"
echo "slurm_multinode: 8 ranks on sp1..sp4 in $(elapsed "$t0") s; $verify"

# ---- 2. --distribution=cyclic is refused -------------------------------------------------------
rc=0
step whole 30 --distribution=cyclic 2>"$tmp/srun-cyclic.txt" || rc=$?
((rc == 2)) || { cat "$tmp/srun-cyclic.txt"; fail "srun --distribution=cyclic exited $rc, expected 2"; }
grep -q "cyclic" "$tmp/logs/whole/node-0.log" || fail "rank 0 did not say why it refused: $(tail -n 2 "$tmp/logs/whole/node-0.log")"
echo "slurm_multinode: --distribution=cyclic refused: $(grep -m1 -o 'SLURM_DISTRIBUTION=cyclic[^;]*' "$tmp/logs/whole/node-0.log" || true)"

# ---- 3. rank 3 killed on sp2 ---------------------------------------------------------------------
write_config killed 2000
rc=0
step killed 60 2>"$tmp/srun-killed.txt" &
srun_pid=$!
training() { local r; for r in {0..7}; do (($(rows "$tmp/runs/killed/node-$r.csv") >= 3)) || return 1; done; }
for _ in $(seq 300); do training && break; sleep 0.1; done
training || fail "the ranks of run 'killed' did not start training within 30 s"
job=$(squeue -h --name=qg-killed -o %A | head -n1)
pid=$(scontrol listpids "$job.0" sp2 2>/dev/null | awk 'NR > 1 && $5 == 3 {print $1}')
[[ -n "$pid" ]] || fail "no task 3 in step $job.0 on sp2 ($(scontrol listpids "$job.0" sp2 2>&1 | tr '\n' ';'))"
t0=$(date +%s.%N)
kill -KILL "$pid"
wait "$srun_pid" || rc=$?
took=$(elapsed "$t0")
((rc != 0)) || fail "srun exited 0 after rank 3 was killed"
for r in 0 1 4 5 6 7; do  # the ranks on the other hosts
  error=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("error", ""))' "$tmp/runs/killed/node-$r.json")
  [[ "$error" == *"rank 3"* ]] || fail "rank $r's error does not name rank 3: '$error'"
done
grep -q "tcp://sp2:$((base + 3))" "$tmp/runs/killed/node-4.json" || fail "rank 4 does not name tcp://sp2:$((base + 3)): $(cat "$tmp/runs/killed/node-4.json")"
echo "slurm_multinode: rank 3 killed on sp2 (pid $pid): srun ended $took s later; rank 4 says: $(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["error"])' "$tmp/runs/killed/node-4.json")"

# ---- 4. sbatch -N 4 train.sbatch ---------------------------------------------------------------
write_config batch 2 no-keys
t0=$(date +%s.%N)
job=$(QGOSSIP="$qgossip" sbatch --parsable -N 4 -n 8 "$repo/configs/slurm/train.sbatch" "$tmp/batch.yaml") ||
  fail "sbatch -N 4 configs/slurm/train.sbatch failed"
job=${job%%;*}
over() { [[ -z "$(squeue -h -j "$job" -o %A 2>/dev/null)" ]]; }
for _ in $(seq 600); do over && break; sleep 0.1; done
over || fail "job $job still queued or running after 60 s: $(cat "$tmp/slurm-$job.out" 2>&1)"
info=$(scontrol -o show job "$job")
[[ " $info " == *" JobState=COMPLETED "* ]] || { cat "$tmp/slurm-$job.out"; fail "job $job did not complete: $(grep -o 'JobState=[^ ]*' <<<"$info")"; }
verify=$("$qgossip" verify "$tmp/runs/batch" 2>&1) || fail "qgossip verify of the batch job: $verify"
[[ "$verify" == *"all equal"* ]] || fail "the batch job: qgossip verify did not say 'all equal': $verify"
echo "slurm_multinode: sbatch -N 4 train.sbatch job $job completed in $(elapsed "$t0") s; $verify"

# ---- 5. no shared file system: keys made on each host, killed, requeued, resumed, bit for bit -----
# The hosts' own folders, as this machine sees them: host i's $tmp/priv is $tmp/slurm/private/sp<i>.
own() { echo "$tmp/slurm/private/sp$1/runs/$2"; }
gather() {  # NAME: every host's summaries of run NAME in one folder, for qgossip verify
  local i
  mkdir -p "$tmp/gathered/$1"
  for i in 1 2 3 4; do cp "$(own "$i" "$1")"/node-*.json "$tmp/gathered/$1/"; done
  cp "$(own 1 "$1")/run.json" "$tmp/gathered/$1/"
}
same_models() {  # NAME HOW: every rank's model of gathered run NAME is the never-stopped run ref's
  local r a b
  for r in {0..7}; do
    a=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["model_hash"])' "$tmp/gathered/ref/node-$r.json")
    b=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["model_hash"])' "$tmp/gathered/$1/node-$r.json")
    [[ "$a" == "$b" ]] || fail "rank $r: model $b $2, $a never stopped"
  done
}
batch() {  # NAME: sbatch -N 4 train.sbatch of run NAME; prints the job id
  local job
  job=$(QGOSSIP="$qgossip" sbatch --parsable -N 4 -n 8 "$repo/configs/slurm/train.sbatch" "$tmp/$1.yaml") ||
    fail "sbatch -N 4 train.sbatch $1.yaml failed"
  echo "${job%%;*}"
}
done_within() {  # JOB SECONDS
  local end=$(($(date +%s) + $2))
  until [[ -z "$(squeue -h -j "$1" -o %A 2>/dev/null)" ]]; do
    (($(date +%s) < end)) || fail "job $1 still queued or running after $2 s: $(cat "$tmp/slurm-$1.out" 2>&1)"
    sleep 0.1
  done
  [[ " $(scontrol -o show job "$1") " == *" JobState=COMPLETED "* ]] || { cat "$tmp/slurm-$1.out"; fail "job $1 did not complete"; }
}
checkpointed() { local i; for i in 1 2 3 4; do compgen -G "$(own "$i" cut)/checkpoints/node-*/ckpt-*.bin" >/dev/null || return 1; done; }
t0=$(date +%s.%N)
write_config ref 150 no-keys "$tmp/priv/runs" ", checkpoint_every: 100"
write_config cut 150 no-keys "$tmp/priv/runs" ", checkpoint_every: 100"
ref=$(batch ref)
done_within "$ref" 60
for i in 1 2 3 4; do  # host i holds the secret keys of its own ranks only, and every public key
  secrets=$(cd "$(own "$i" ref)/keys" && ls node-*.key | tr '\n' ' ') || fail "sp$i has no keys folder $(own "$i" ref)/keys"
  [[ "$secrets" == "node-$((2 * i - 2)).key node-$((2 * i - 1)).key " ]] || fail "sp$i holds the secret keys $secrets"
  (($(ls "$(own "$i" ref)/keys"/node-*.pub | wc -l) == 8)) || fail "sp$i does not hold the 8 public keys"
done
[[ ! -e "$tmp/priv/runs/ref" ]] || fail "the job wrote into this machine's $tmp/priv, which no host shares"
cut=$(batch cut)
for _ in $(seq 600); do checkpointed && break; sleep 0.1; done
checkpointed || fail "not every host of job $cut wrote a checkpoint within 60 s: $(cat "$tmp/slurm-$cut.out")"
# The run's step (the job's first steps made and spread the keys, one task per host).
run_step=$(squeue -h -s -j "$cut" -o '%i %j' | awk '$2 == "qgossip" {print $1}' | tail -n1)
pid=$(scontrol listpids "$run_step" sp3 2>/dev/null | awk 'NR > 1 && $5 == 5 {print $1}' || true)
[[ -n "$pid" ]] || fail "job $cut: no task 5 of step '$run_step' on sp3 to kill: $(cat "$tmp/slurm-$cut.out")"
kill -KILL "$pid"
done_within "$cut" 120
grep -q "^requeueing" "$tmp/slurm-$cut.out" || { cat "$tmp/slurm-$cut.out"; fail "job $cut did not requeue"; }
resumed=$(grep -o "resuming from round [0-9]*" "$tmp/slurm-$cut.out" | tail -n1)
[[ -n "$resumed" && "$resumed" != *" 0" ]] || { cat "$tmp/slurm-$cut.out"; fail "job $cut did not resume from a checkpoint round"; }
gather ref
gather cut
same_models cut "after the kill and resume"
verify=$("$qgossip" verify "$tmp/gathered/cut" 2>&1) || fail "qgossip verify of the resumed job: $verify"
[[ "$verify" == *"all equal"* ]] || fail "the resumed job: qgossip verify did not say 'all equal': $verify"
echo "slurm_multinode: no shared file system: keys made on each host, rank 5 killed on sp3, requeued, $resumed; every model bit for bit as the job never killed, in $(elapsed "$t0") s; $verify"

# ---- 6. SIGUSR1 (what --signal=USR1@120 sends before a time limit): every rank stops after one
# agreed round, checkpointed (exit 75); the job requeues and resumes from that round -------------
t0=$(date +%s.%N)
write_config halt 150 no-keys "$tmp/priv/runs" ", checkpoint_every: 100"
job=$(batch halt)
training_here() { local i; for i in 1 2 3 4; do (($(rows "$(own "$i" halt)/node-$((2 * i - 1)).csv") >= 20)) || return 1; done; }
for _ in $(seq 600); do training_here && break; sleep 0.1; done
training_here || fail "job $job did not get going within 60 s: $(cat "$tmp/slurm-$job.out")"
run_step=$(squeue -h -s -j "$job" -o '%i %j' | awk '$2 == "qgossip" {print $1}' | tail -n1)
scancel --signal=USR1 "$run_step" || fail "scancel --signal=USR1 $run_step failed"
done_within "$job" 120
grep -q "srun exited 75" "$tmp/slurm-$job.out" || { cat "$tmp/slurm-$job.out"; fail "job $job's step did not exit 75 (halted)"; }
halted=$(grep -o "resuming from round [0-9]*" "$tmp/slurm-$job.out" | tail -n1)
[[ -n "$halted" ]] || { cat "$tmp/slurm-$job.out"; fail "job $job did not resume after halting"; }
gather halt
same_models halt "after halting and resuming"
echo "slurm_multinode: SIGUSR1 to step $run_step: every rank halted (exit 75), requeued, $halted; every model bit for bit as never stopped, in $(elapsed "$t0") s"
