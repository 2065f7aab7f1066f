#!/usr/bin/env bash
# One rank's task that comes back: runs `QGOSSIP run ARGS...` and, when that process dies of a
# signal or fails at run time (exit 1), starts it again (the same command, the same environment) up
# to QGOSSIP_TASK_RESTARTS times (default 3), 1 s later each time; the new process rejoins the
# running graph through its neighbours (network.on_peer_failure: continue; docs/failures.md,
# "Rejoining"). Meant for one task of `srun` (docs/slurm.md): the task keeps its SLURM_* variables,
# so the restarted rank takes the same rank and hosts. Exit 0 after a run ends well; otherwise the
# last attempt's exit code (2, a refusal or a config error, is never retried; 128 + N for a signal).
# A signal to this script itself (scancel of the step) ends it and its run, without a restart.
#
# Usage: scripts/qgossip-task.sh QGOSSIP run --config RUN.yaml [--set ...]
#   e.g. srun -n 8 scripts/qgossip-task.sh build/qgossip run --config RUN.yaml
set -uo pipefail
(($# >= 2)) || { echo "usage: qgossip-task.sh QGOSSIP run --config RUN.yaml [...]" >&2; exit 2; }
restarts="${QGOSSIP_TASK_RESTARTS:-3}"
[[ "$restarts" =~ ^[0-9]+$ ]] || { echo "qgossip-task.sh: QGOSSIP_TASK_RESTARTS='$restarts' is not a count" >&2; exit 2; }
child=0
stop() {  # the step is being ended: pass it on, and do not restart
  trap - TERM INT
  ((child > 0)) && kill -TERM "$child" 2>/dev/null
  wait "$child" 2>/dev/null
  exit 143
}
trap stop TERM INT
attempt=0
while :; do
  "$@" &
  child=$!
  wait "$child"
  rc=$?
  ((rc == 0 || rc == 2 || attempt >= restarts)) && exit "$rc"
  ((rc == 1 || rc > 128)) || exit "$rc"  # another exit (3: diverged) is the run's own end
  attempt=$((attempt + 1))
  echo "qgossip-task.sh: rank ${SLURM_PROCID:-?}: '$1 $2' ended with $rc; starting it again in 1 s (restart $attempt of $restarts)" >&2
  sleep 1
done
