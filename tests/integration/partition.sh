#!/usr/bin/env bash
# A network partition on a real Slurm of four hosts (tests/integration/slurm_hosts.sh; two ranks on
# each host, a ring of 8): host sp2 (ranks 2 and 3) has its link cut mid-run, its veth into the
# bridge set down as a pulled cable would (docs/failures.md, "A cut path").
#  1. on_peer_failure: stop: every rank on the other hosts stops naming rank 2 or 3 within 6 s of
#     the cut (the round time-out is 20 s: found by the path's silence, not by the time-out; 1.5 to
#     2.5 s on an idle machine, up to 3.8 s with two of these clusters running at once);
#  2. on_peer_failure: continue: the ranks on each side drop the other side's neighbours within
#     6 s; the link comes back; the cut host's ranks rejoin as a restarted node does; every rank
#     finishes, and every copy of every edge is equal.
# Usage: bash tests/integration/partition.sh QGOSSIP_BINARY [stop|continue] [REPEAT]
#   (or QGOSSIP=... in the environment); one case, REPEAT times, measures it (median printed).
# Exit 77 (CTest: skipped) where it cannot run (see slurm_hosts.sh).
test_name=partition
source "$(dirname "${BASH_SOURCE[0]}")/slurm_hosts.sh"
only="${2:-}" repeat="${3:-1}"
[[ -z "$only" || "$only" == stop || "$only" == continue ]] || fail "case '$only': expected stop or continue"
hosts_up
# A failed case shows its nodes' logs but their rejection lines (the story of its cut and rejoin).
story_of=""
fail() {
  [[ -z "$story_of" ]] || grep -v "rejected a message\|suppressed" "$tmp/logs/$story_of"/node-*.log | tail -n 400 >&2
  echo "$test_name: FAILED: $*" >&2
  exit 1
}

outside=(0 1 4 5 6 7)
cable="${prefix}2h"  # sp2's veth into the bridge
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", b - a}'; }
median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{v[NR] = $1} END {print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'; }
training() {  # NAME: every rank has logged a few rows
  local r
  for r in {0..7}; do (($(rows "$tmp/runs/$1/node-$r.csv") >= 3)) || return 1; done
}
start_training() {  # NAME SECONDS: srun in the background (pid in srun_pid), until every rank trains
  step "$1" "$2" 2>"$tmp/srun-$1.txt" &
  srun_pid=$!
  local _
  for _ in $(seq 300); do training "$1" && return 0; sleep 0.1; done
  fail "the ranks of run '$1' did not start training within 30 s"
}
# Seconds from CUT until each of the outside ranks' events files shows EVENT (polled every 0.05 s,
# at most 10 s); prints them.
times_to() {  # NAME CUT EVENT
  local r seen=() at=() end
  end=$(awk -v a="$2" 'BEGIN {printf "%.3f", a + 10}')
  while :; do
    for r in "${!outside[@]}"; do
      [[ -z "${seen[$r]:-}" ]] || continue
      if grep -q "$3" "$tmp/logs/$1/node-${outside[$r]}.events" 2>/dev/null; then seen[$r]=1; at[$r]=$(since "$2" "$(now)"); fi
    done
    ((${#seen[@]} == ${#outside[@]})) && break
    [[ "$(awk -v a="$(now)" -v b="$end" 'BEGIN {print (a < b)}')" == 1 ]] || break
    sleep 0.05
  done
  echo "${at[*]}"
}

# ---- 1. stop ------------------------------------------------------------------------------------
case_stop() {  # RUN: cut, every outside rank stops naming rank 2 or 3; prints the slowest one's seconds
  local name="cut-stop-$1" rc=0 r error t0 times t worst
  write_config "$name" 2000
  start_training "$name" 60
  t0=$(now)
  ip link set "$cable" down
  times=$(times_to "$name" "$t0" '"event":"error"')
  ip link set "$cable" up  # srun hears of sp2's tasks through that link too
  wait "$srun_pid" || rc=$?
  ((rc != 0)) || fail "srun exited 0 after sp2's link was cut"
  for r in "${outside[@]}"; do
    error=$(summary "$tmp/runs/$name/node-$r.json" error)
    [[ "$error" == *"rank 2"* || "$error" == *"rank 3"* ]] || fail "rank $r's error does not name rank 2 or 3: '$error'"
  done
  [[ "$(summary "$tmp/runs/$name/node-1.json" error)$(summary "$tmp/runs/$name/node-4.json" error)" == *"(the path is cut)"* ]] ||
    fail "neither rank 1 nor rank 4 says the path to sp2 is cut: $(summary "$tmp/runs/$name/node-4.json" error)"
  read -r -a t <<<"$times"
  ((${#t[@]} == ${#outside[@]})) || fail "not every outside rank failed within 10 s of the cut (seconds: $times)"
  worst=$(printf '%s\n' "${t[@]}" | sort -g | tail -n1)
  [[ "$(awk -v w="$worst" 'BEGIN {print (w <= 6)}')" == 1 ]] || fail "the last outside rank stopped $worst s after the cut (> 6 s)"
  echo "partition: stop, run $1: outside ranks stopped after ${t[*]} s; rank 4 says: $(summary "$tmp/runs/$name/node-4.json" error)"
  echo "$worst" >>"$tmp/stop-times"
}

if [[ -z "$only" || "$only" == stop ]]; then
  for i in $(seq "$repeat"); do case_stop "$i"; done
  echo "partition: stop: slowest outside rank, median of $repeat: $(median <"$tmp/stop-times" | tr '\n' ' ') s (each: $(tr '\n' ' ' <"$tmp/stop-times"))"
fi

# ---- 2. continue: both sides drop each other, the link comes back, the cut ranks rejoin ---------
# The run is long; once the cut ranks are back and training, SIGUSR1 halts every rank after one
# agreed round (exit 75, as before a time limit), so the test does not depend on the machine's speed.
events_of() {  # NAME RANK EVENT: that rank's events of that kind, one per line
  grep "\"event\":\"$3\"" "$tmp/logs/$1/node-$2.events" 2>/dev/null || true
}
peers_named() {  # NAME RANK: the peers of its peer_left events, sorted, on one line
  events_of "$1" "$2" peer_left | grep -o '"peer":[0-9]*' | cut -d: -f2 | sort -n | tr '\n' ' '
}
case_continue() {  # RUN
  local name="cut-continue-$1" rc=0 t0 times t worst back r left _ rejoined_at rows_then verify
  write_config "$name" 100000 "" "" ", checkpoint_every: 1000000" ", on_peer_failure: continue"
  story_of="$name"
  start_training "$name" 120
  t0=$(now)
  ip link set "$cable" down
  times=$(times_to "$name" "$t0" '"event":"peer_left"')
  read -r -a t <<<"$times"
  ((${#t[@]} == ${#outside[@]})) || fail "not every outside rank dropped a cut rank within 10 s (seconds: $times)"
  for r in "${outside[@]}"; do
    for _ in $(seq 40); do [[ "$(peers_named "$name" "$r")" == "2 3 " ]] && break; sleep 0.05; done
    left=$(peers_named "$name" "$r")
    [[ "$left" == "2 3 " ]] || fail "rank $r dropped '$left', not ranks 2 and 3"
  done
  for r in 2 3; do
    for _ in $(seq 40); do [[ "$(peers_named "$name" "$r")" == "1 4 " ]] && break; sleep 0.05; done
    left=$(peers_named "$name" "$r")
    [[ "$left" == "1 4 " ]] || fail "cut rank $r dropped '$left', not its neighbours across the cut, 1 and 4"
  done
  worst=$(printf '%s\n' "${t[@]}" | sort -g | tail -n1)
  [[ "$(awk -v w="$worst" 'BEGIN {print (w <= 6)}')" == 1 ]] || fail "the last outside rank dropped the cut ranks $worst s after the cut (> 6 s)"
  sleep 1
  ip link set "$cable" up
  back=$(now)
  # Within 30 s: they rejoin once a message from across the cut reaches them, at the next fire of
  # TCP's retransmission timer on a stuck connection (median 1.7 s, at most 16.3 s in 90 runs with
  # two of these clusters at once).
  local until=$(($(date +%s) + 30))
  while (($(date +%s) < until)); do
    [[ -n "$(events_of "$name" 2 rejoined)" && -n "$(events_of "$name" 3 rejoined)" ]] && break
    sleep 0.05
  done
  for r in 2 3; do
    [[ -n "$(events_of "$name" "$r" rejoined)" ]] || fail "cut rank $r did not rejoin within 30 s of the link's return: $(tail -n 5 "$tmp/logs/$name/node-$r.log")"
  done
  rejoined_at=$(events_of "$name" 2 rejoined; events_of "$name" 3 rejoined)
  rejoined_at=$(grep -o '"unix_s":[0-9.]*' <<<"$rejoined_at" | cut -d: -f2 | sort -g | tail -n1)
  rows_then=$(rows "$tmp/runs/$name/node-2.csv")
  for _ in $(seq 100); do (($(rows "$tmp/runs/$name/node-2.csv") > rows_then + 5)) && break; sleep 0.05; done
  scancel --signal=USR1 "$(squeue -h -s --name="qg-$name" -o %i | head -n1)" || fail "scancel --signal=USR1 failed"
  wait "$srun_pid" || rc=$?
  ((rc == 75)) || { cat "$tmp/srun-$name.txt"; fail "srun exited $rc after the halt, expected 75"; }
  for r in "${outside[@]}"; do  # (ranks 2 and 3 may each end without the other: an edge left down)
    [[ -z "$(summary "$tmp/runs/$name/node-$r.json" departed)" ]] ||
      fail "rank $r ends with ranks $(summary "$tmp/runs/$name/node-$r.json" departed) departed; its returns: $(summary "$tmp/runs/$name/node-$r.json" rejoins)"
  done
  verify=$("$qgossip" verify "$tmp/runs/$name" 2>&1) || fail "qgossip verify: $verify"
  [[ "$verify" == *"8 nodes"*"all equal"* ]] || fail "qgossip verify did not check 8 nodes all equal: $verify"
  echo "partition: continue, run $1: the outside ranks dropped ranks 2 and 3 after ${t[*]} s, ranks 2 and 3 dropped 1 and 4; the link back, both rejoined $(since "$back" "$rejoined_at") s later ($(events_of "$name" 2 rejoined | grep -o '"round":[0-9]*,"donor":[0-9]*'), $(events_of "$name" 3 rejoined | grep -o '"round":[0-9]*,"donor":[0-9]*')); halted; $verify"
  echo "$worst" >>"$tmp/continue-times"
}

if [[ -z "$only" || "$only" == continue ]]; then
  for i in $(seq "$repeat"); do case_continue "$i"; done
  echo "partition: continue: slowest outside rank, median of $repeat: $(median <"$tmp/continue-times" | tr '\n' ' ') s (each: $(tr '\n' ' ' <"$tmp/continue-times"))"
fi
