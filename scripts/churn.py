#!/usr/bin/env python3
"""Nodes that come and go, measured (docs/failures.md, "Rejoining").

Runs a qgossip config twice on this machine's loopback, one `qgossip run` process per rank: once
undisturbed, once with churn: CYCLES times, a random rank (seeded; one down at a time) is killed
with SIGKILL, stays down a random 2-5 s, and is started again with the same command, which rejoins
the running graph through its neighbours. Reported, from the nodes' own event lines (stdout, with
unix_s): for each cycle, the time from the restart until both ring neighbours mix the node again
(their peer_joined events); whether any process hung; each run's mean final test accuracy; and
`qgossip verify` of the churned run (every copy equal, none departed).

  python3 scripts/churn.py --build build --config configs/demo.yaml --set train.epochs=150 \\
      --cycles 20 --out runs/churn

The config is run with network.on_peer_failure: continue (forced). Exit 0 when every cycle's
restarted node was mixed again by its neighbours and the churned run ended with every node ok and
every copy equal; 1 otherwise; 2 for bad arguments.
"""
import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--build", default="build", help="the build directory holding qgossip (default: build)")
    p.add_argument("--config", default="configs/demo.yaml", help="the run YAML (default: configs/demo.yaml)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config overrides, as for qgossip")
    p.add_argument("--cycles", type=int, default=20, help="kill/restart cycles (default: 20)")
    p.add_argument("--down", type=float, nargs=2, default=[2.0, 5.0], metavar=("MIN_S", "MAX_S"),
                   help="how long a killed node stays down, uniformly at random (default: 2 5)")
    p.add_argument("--seed", type=int, default=1, help="the churn's random seed (default: 1)")
    p.add_argument("--out", default="runs/churn", help="where both runs write (default: runs/churn)")
    p.add_argument("--skip-undisturbed", action="store_true", help="run only the churned run")
    a = p.parse_args()
    if a.cycles < 0 or not 0 < a.down[0] <= a.down[1]:
        p.error("--cycles must be >= 0 and 0 < MIN_S <= MAX_S")
    return a


def node_command(qgossip, args, name, rank):
    sets = [f"--set={s}" for s in args.set] + [f"--set=name={name}", f"--set=output.dir={args.out}",
                                               "--set=network.on_peer_failure=continue"]
    return [qgossip, "run", "--config", args.config, "--rank", str(rank)] + sets


def start(qgossip, args, name, rank, log_dir, tag=""):
    log = open(log_dir / f"node-{rank}{tag}.out", "w")
    return subprocess.Popen(node_command(qgossip, args, name, rank), stdout=log, stderr=subprocess.STDOUT), log


def events(log_dir, kind, peer, after):
    """unix_s of every `kind` event about `peer` in the stdout logs, later than `after`."""
    out = []
    for path in log_dir.glob("node-*.out"):
        for line in path.read_text(errors="replace").splitlines():
            if f'"event":"{kind}"' not in line:
                continue
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("peer") == peer and e.get("unix_s", 0) > after:
                out.append(e["unix_s"])
    return out


def wait_for(predicate, timeout):
    end = time.time() + timeout
    while time.time() < end:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def csv_rows(run_dir, rank):
    path = run_dir / f"node-{rank}.csv"
    return path.read_text().count("\n") - 1 if path.exists() else 0


def run(qgossip, args, name, n, cycles):
    run_dir = Path(args.out) / name
    log_dir = Path(args.out) / f"{name}-logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    procs = [start(qgossip, args, name, r, log_dir) for r in range(n)]
    wait_for(lambda: all(csv_rows(run_dir, r) >= 2 for r in range(n)), 120)
    rng = random.Random(args.seed)
    delays, hung = [], []
    for cycle in range(1, cycles + 1):
        if any(p.poll() is not None for p, _ in procs):
            print(f"churn: the run ended before cycle {cycle}", flush=True)
            break
        victim = rng.randrange(n)
        down = rng.uniform(*args.down)
        left, right = (victim - 1) % n, (victim + 1) % n
        procs[victim][0].send_signal(signal.SIGKILL)
        procs[victim][0].wait()
        time.sleep(down)
        procs[victim] = start(qgossip, args, name, victim, log_dir, f"-restart{cycle}")
        restarted = time.time()
        ok = wait_for(lambda: len(events(log_dir, "peer_joined", victim, restarted)) >= 2, 30)
        delay = max(events(log_dir, "peer_joined", victim, restarted)) - restarted if ok else None
        delays.append(delay)
        print(f"churn: cycle {cycle}: rank {victim} killed, down {down:.1f} s, restarted; "
              + (f"mixed again by ranks {left} and {right} {delay:.2f} s after its restart" if ok
                 else "NOT mixed again within 30 s"), flush=True)
    for rank, (p, log) in enumerate(procs):
        try:
            p.wait(timeout=600)
        except subprocess.TimeoutExpired:
            hung.append(rank)
            p.kill()
            p.wait()
        log.close()
    return run_dir, delays, hung


def mean_accuracy(run_dir, n):
    accs = [json.loads((run_dir / f"node-{r}.json").read_text()).get("test_acc") for r in range(n)]
    return sum(accs) / n if all(a is not None for a in accs) else None


def main():
    args = parse_args()
    qgossip = str(Path(args.build) / "qgossip")
    topo = subprocess.run([qgossip, "topology", args.config, "--json"] + [f"--set={s}" for s in args.set],
                          capture_output=True, text=True)
    if topo.returncode != 0:
        sys.exit(f"churn: {topo.stderr.strip()}")
    n = json.loads(topo.stdout)["n"]
    name = Path(args.config).stem
    for run_name in (f"{name}-still", f"{name}-churn"):
        subprocess.run([qgossip, "keys", "--config", args.config, f"--set=name={run_name}",
                        f"--set=output.dir={args.out}"] + [f"--set={s}" for s in args.set],
                       check=True, stdout=subprocess.DEVNULL)
    report = {"config": args.config, "set": args.set, "cycles": args.cycles, "down_s": args.down, "seed": args.seed}
    if not args.skip_undisturbed:
        still_dir, _, still_hung = run(qgossip, args, f"{name}-still", n, 0)
        report["undisturbed_mean_acc"] = mean_accuracy(still_dir, n)
        report["undisturbed_hung"] = still_hung
    churn_dir, delays, hung = run(qgossip, args, f"{name}-churn", n, args.cycles)
    verify = subprocess.run([qgossip, "verify", str(churn_dir)], capture_output=True, text=True)
    summaries = [json.loads((churn_dir / f"node-{r}.json").read_text()) for r in range(n)]
    measured = [d for d in delays if d is not None]
    report.update({
        "mixed_again_s": delays,
        "mixed_again_median_s": statistics.median(measured) if measured else None,
        "mixed_again_max_s": max(measured) if measured else None,
        "hung": hung,
        "churned_mean_acc": mean_accuracy(churn_dir, n),
        "statuses": [s.get("status") for s in summaries],
        "departed": [s.get("departed") for s in summaries],
        "verify": verify.stdout.strip(),
        "verify_exit": verify.returncode,
    })
    (Path(args.out) / "churn.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "mixed_again_s"}, indent=2))
    good = (len(measured) == len(delays) and not hung and verify.returncode == 0 and
            all(s == "ok" for s in report["statuses"]))
    sys.exit(0 if good else 1)


if __name__ == "__main__":
    main()
