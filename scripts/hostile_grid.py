#!/usr/bin/python3
"""The hostile-node grid (docs/security.md, "Measured"; issue 30): 16 nodes train while one rank (or
two adjacent ones) sends an attack, with robust mixing off and on, and the worst honest node's final
test accuracy is compared with the clean run's.

Usage: scripts/hostile_grid.py [--build DIR] [--out DIR] [--recipes demo,h1] [--topologies ring,ring2,torus]
                               [--data iid,dirichlet] [--attacks flip,...] [--robust off,on,screen]
                               [--seeds 1,2,3] [--codec-check]
                               [--base-port P] [--timeout S] [--dry-run] [--report-only]

Cells: recipe x topology x data x (clean or an attack) x robust x seed.
  recipes     demo: configs/demo.yaml (CHOCO-SGD, 3-bit QSGD, H = 16, outer Nesterov);
              h1: configs/choco-8bit-h1.yaml (CHOCO-SGD, 8-bit QSGD, H = 1)
  topologies  ring: a ring of 16, rank 5 hostile; ring2: the same ring, ranks 5 and 6 hostile;
              torus: a 4x4 torus, rank 5 hostile
  data        iid, or dirichlet (data.partition dirichlet, data.alpha 1)
  robust      off; on: algorithm.robust {clip: auto, tolerate: 1}; screen: the same with the loss
              screen, {clip: auto, tolerate: 1, screen: 1.0} (default: off,on). Without off, the clean
              run without defence (every gap's reference) is still run.
--codec-check adds, for the demo recipe on the torus with iid data and robust on, the same cells
with the identity codec (32-bit), for "compression adds at most 1 point to the attacked gap".
Every run also sets network.on_peer_failure: continue (the nan attack gets its sender dropped).

Each run is `qgossip launch` into OUT/<recipe>/<topology>/<data>/<attack>/<robust>/seed<k>/; a run
whose every honest node wrote its summary is kept (the grid resumes where it stopped; a hostile node
that stopped, its attack diverging, does not make the run count as failed). A run's result is the
worst honest node's final test accuracy (node-<rank>.json, hostile ranks left out); a node that
diverged or stopped without an accuracy counts as chance (0.10).

--report-only launches nothing: it reports the runs of the selection that exist (several invocations
with different selections into one OUT, then one report over all of them).

Writes OUT/grid.csv (one row per run) and OUT/grid.md (medians over the seeds, the worst seed
named, and the issue's checks) and prints the Markdown. Exit 0 when every run finished, 1 when some
launch failed (it is still counted, as chance), 2 for bad arguments.
The shebang is Debian's python3 on purpose (python3-yaml is not needed here; plain standard library).
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ATTACKS = ("flip", "scale", "noise", "nan", "label_flip", "alie", "ipm", "dissensus", "equivocate", "adaptive")
RECIPES = {"demo": "configs/demo.yaml", "h1": "configs/choco-8bit-h1.yaml"}
TOPOLOGIES = {  # (the --set options, the hostile ranks)
    "ring": (["topology.n=16"], [5]),
    "ring2": (["topology.n=16"], [5, 6]),
    "torus": (["topology=" + os.path.join(ROOT, "configs/topologies/torus4x4.yaml")], [5]),
}
DATA = {"iid": [], "dirichlet": ["data.partition=dirichlet", "data.alpha=1"]}
ROBUST = {"off": [], "on": ["algorithm.robust.clip=auto", "algorithm.robust.tolerate=1"],
          "screen": ["algorithm.robust.clip=auto", "algorithm.robust.tolerate=1", "algorithm.robust.screen=1.0"]}
CHANCE = 0.10
NODES = 16


def cells(args):
    """Every run of the grid: dicts of recipe, topology, data, attack, robust, seed, codec."""
    out = []
    for recipe in args.recipes:
        for topology in args.topologies:
            for data in args.data:
                runs = [("clean", "off")] if "off" not in args.robust else []  # the reference
                runs += [(attack, robust) for attack in ["clean"] + args.attacks for robust in args.robust]
                for attack, robust in runs:
                    for seed in args.seeds:
                        out.append(dict(recipe=recipe, topology=topology, data=data, attack=attack, robust=robust,
                                        seed=seed, codec="qsgd"))
    if args.codec_check:
        for attack in ["clean"] + args.attacks:
            for seed in args.seeds:
                out.append(dict(recipe="demo", topology="torus", data="iid", attack=attack, robust="on", seed=seed,
                                codec="identity"))
    return out


def run_dir(out, c):
    codec = "" if c["codec"] == "qsgd" else "-" + c["codec"]
    return os.path.join(out, c["recipe"] + codec, c["topology"], c["data"], c["attack"], c["robust"],
                        f"seed{c['seed']}")


def scenario_file(d, c):
    """The run's scenario: its hostile: list ("clean": none)."""
    path = os.path.join(d, "scenario.yaml")
    lines = ["hostile:"] + [f"  - {{rank: {r}, attack: {c['attack']}}}" for r in TOPOLOGIES[c["topology"]][1]]
    with open(path, "w") as f:
        f.write("\n".join(lines if c["attack"] != "clean" else ["hostile: []"]) + "\n")
    return path


def hostile_ranks(c):
    return set(TOPOLOGIES[c["topology"]][1]) if c["attack"] != "clean" else set()


def summaries(d, c):
    """{rank: node-<rank>.json} of a finished run; None when some honest node left no summary (a
    hostile node that stopped does not count: the attack is its to run)."""
    found = {}
    for rank in range(NODES):
        try:
            with open(os.path.join(d, "run", f"node-{rank}.json")) as f:
                found[rank] = json.load(f)
        except (OSError, ValueError):
            if rank not in hostile_ranks(c):
                return None
    return found


def launch(args, c):
    """Runs the cell's launch (unless its summaries exist); returns (its summaries, the exit code)."""
    d = run_dir(args.out, c)
    done = summaries(d, c)
    if done is not None:
        return done, 0
    os.makedirs(d, exist_ok=True)
    sets = list(TOPOLOGIES[c["topology"]][0]) + DATA[c["data"]] + ROBUST[c["robust"]]
    sets += [f"seed={c['seed']}", "name=run", f"output.dir={d}", "network.on_peer_failure=continue",
             f"topology.base_port={args.base_port}"]
    if c["codec"] != "qsgd":
        sets.append("compressor=" + c["codec"])
    cmd = [os.path.join(args.build, "qgossip"), "launch", os.path.join(ROOT, RECIPES[c["recipe"]]), "--plain",
           "--no-plot", "--scenario", scenario_file(d, c)]
    for s in sets:
        cmd += ["--set", s]
    if args.dry_run:
        print(" ".join(cmd))
        return None, 0
    with open(os.path.join(d, "launch.log"), "w") as log:
        launch_process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        try:
            rc = launch_process.wait(timeout=args.timeout)
        except subprocess.TimeoutExpired:  # SIGTERM: the launcher stops its nodes and says so
            launch_process.terminate()
            try:
                launch_process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                launch_process.kill()
                launch_process.wait()
            rc = "timeout"
    return summaries(d, c) or {}, rc


def worst_honest(c, found):
    """(the worst honest node's accuracy, the honest mean, how many honest nodes counted as chance)."""
    hostile = hostile_ranks(c)
    accs, chance = [], 0
    for rank in range(NODES):
        if rank in hostile:
            continue
        s = found.get(rank, {})
        acc = s.get("test_acc")
        if s.get("status") != "ok" or not isinstance(acc, (int, float)):
            acc, chance = CHANCE, chance + 1
        accs.append(float(acc))
    return min(accs), statistics.mean(accs), chance


def measure(args):
    rows, failed = [], 0
    todo = cells(args)
    started = time.monotonic()
    for i, c in enumerate(todo, 1):
        if args.report_only and summaries(run_dir(args.out, c), c) is None:
            continue
        found, rc = launch(args, c)
        if args.dry_run:
            continue
        failed += rc != 0  # a number, or "timeout"
        worst, mean, chance = worst_honest(c, found)
        rows.append(dict(c, worst=worst, mean=mean, chance_nodes=chance, rc=rc))
        print(f"[{i}/{len(todo)} {time.monotonic() - started:.0f} s] {run_dir(args.out, c)}: worst honest {worst:.4f}"
              f"{f' ({chance} nodes at chance)' if chance else ''}{f' (launch exit {rc})' if rc else ''}", flush=True)
    return rows, failed


def median_of(rows, **key):
    """(median over seeds of the worst honest accuracy, the worst seed, its accuracy, seeds) or None."""
    picked = [r for r in rows if all(r[k] == v for k, v in key.items())]
    if not picked:
        return None
    worst = min(picked, key=lambda r: r["worst"])
    return statistics.median(r["worst"] for r in picked), worst["seed"], worst["worst"], len(picked)


def points(x):
    return f"{100 * x:.1f}"


def cell_text(m):
    return f"{points(m[0])} (seed {m[1]}: {points(m[2])})" if m else "–"


def table(rows, recipe, topology, data, attacks, robust):
    """The Markdown table of one (recipe, topology, data): per attack, each robust mode, against clean."""
    base = dict(recipe=recipe, topology=topology, data=data, codec="qsgd")
    clean_off = median_of(rows, attack="clean", robust="off", **base)
    if clean_off is None:
        return [], {}
    defended = [m for m in robust if m != "off"]
    lines = [f"**{recipe}, {topology}, {data}** (worst honest node's test accuracy, %, median of "
             f"{clean_off[3]} seeds; worst seed in brackets; gap: points below the clean run without defence)",
             "", "| attack | robust off | " + " | ".join(f"robust {m} | gap, robust {m}" for m in defended) + " |",
             "|---|---|" + "---|---|" * len(defended)]
    checks = {"gaps": {m: {} for m in defended}, "off": {}}
    for attack in ["clean"] + attacks:
        off = median_of(rows, attack=attack, robust="off", **base)
        found = {m: median_of(rows, attack=attack, robust=m, **base) for m in defended}
        if not any(found.values()):
            continue
        if off:
            checks["off"][attack] = off[0]
        cols = []
        for m in defended:
            if found[m]:
                checks["gaps"][m][attack] = clean_off[0] - found[m][0]
            cols += [cell_text(found[m]), f"{100 * (clean_off[0] - found[m][0]):+.1f}" if found[m] else "–"]
        lines.append(f"| {attack} | {cell_text(off)} | " + " | ".join(cols) + " |")
    return lines + [""], checks


def verdicts_of(where, data, topology, checks):
    """The issue's checks of one table: each defended mode's largest gap and cost, and the teeth."""
    out = []
    for mode, gaps in checks["gaps"].items():
        attacked = {a: g for a, g in gaps.items() if a != "clean"}
        if attacked:
            worst_attack = max(attacked, key=attacked.get)
            bound = 0.02 if data == "iid" else 0.05
            gated = data == "iid" or topology == "torus"
            out.append(f"- {where}: robust {mode}, the largest gap is {100 * attacked[worst_attack]:.1f} "
                       f"points ({worst_attack}); bound {100 * bound:.0f}" + ("" if gated else " (reported, not gated)")
                       + (": met" if attacked[worst_attack] <= bound else ": NOT met"))
        cost = gaps.get("clean")
        if cost is not None:
            bound = 0.01 if data == "iid" else 0.03
            out.append(f"- {where}: the defence costs {100 * cost:.1f} points with nobody attacking (robust {mode}); "
                       f"bound {100 * bound:.0f}: {'met' if cost <= bound else 'NOT met'}")
    attacked_off = [v for a, v in checks["off"].items() if a != "clean"]
    if attacked_off:
        lowest = min(attacked_off)
        out.append(f"- {where}: robust off, the lowest worst-honest accuracy is {points(lowest)} % "
                   f"(teeth: within 10 points of chance, {points(CHANCE + 0.10)} %: "
                   f"{'yes' if lowest <= CHANCE + 0.10 else 'no'})")
    return out


def report(rows, args):
    out = ["# Hostile-node grid (scripts/hostile_grid.py)", ""]
    verdicts = []
    for recipe in args.recipes:
        for topology in args.topologies:
            for data in args.data:
                lines, checks = table(rows, recipe, topology, data, args.attacks, args.robust)
                out += lines
                if checks:
                    verdicts += verdicts_of(f"{recipe}, {topology}, {data}", data, topology, checks)
    if args.codec_check:
        base32 = dict(recipe="demo", topology="torus", data="iid", robust="on", codec="identity")
        clean32 = median_of(rows, attack="clean", **base32)
        clean3 = median_of(rows, attack="clean", robust="off", recipe="demo", topology="torus", data="iid",
                           codec="qsgd")
        if clean32 and clean3:
            out += ["**demo, torus, iid, robust on: 3-bit QSGD against 32-bit** (gap: points below each codec's own "
                    "clean run, robust on)", "", "| attack | 32-bit | gap 32-bit | 3-bit gap less 32-bit gap |",
                    "|---|---|---|---|"]
            clean3_on = median_of(rows, attack="clean", robust="on", recipe="demo", topology="torus", data="iid",
                                  codec="qsgd")
            for attack in args.attacks:
                a32 = median_of(rows, attack=attack, **base32)
                a3 = median_of(rows, attack=attack, robust="on", recipe="demo", topology="torus", data="iid",
                               codec="qsgd")
                if not (a32 and a3 and clean3_on):
                    continue
                extra = (clean3_on[0] - a3[0]) - (clean32[0] - a32[0])
                out.append(f"| {attack} | {points(a32[0])} | {100 * (clean32[0] - a32[0]):+.1f} | {100 * extra:+.1f} |")
                verdicts.append(f"- compression, {attack}: adds {100 * extra:.1f} points to the attacked gap; bound 1: "
                                f"{'met' if extra <= 0.01 else 'NOT met'}")
            out.append("")
    return "\n".join(out + ["Checks:", ""] + verdicts) + "\n"


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"), help="the folder with qgossip (default: build)")
    p.add_argument("--out", default=os.path.join(ROOT, "runs", "hostile-grid"), help="where the runs go")
    p.add_argument("--recipes", default="demo,h1")
    p.add_argument("--topologies", default="ring,ring2,torus")
    p.add_argument("--data", default="iid,dirichlet")
    p.add_argument("--attacks", default=",".join(ATTACKS))
    p.add_argument("--robust", default="off,on")
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--codec-check", action="store_true")
    p.add_argument("--base-port", type=int, default=24100, help="the nodes' base port (default: %(default)s)")
    p.add_argument("--timeout", type=float, default=600, help="seconds a launch may take before it is stopped "
                   "and counted as failed (default: %(default)s)")
    p.add_argument("--dry-run", action="store_true", help="print the launches instead of running them")
    p.add_argument("--report-only", action="store_true", help="launch nothing; report the runs that exist")
    args = p.parse_args(argv)
    for name, allowed in (("recipes", RECIPES), ("topologies", TOPOLOGIES), ("data", DATA), ("attacks", ATTACKS),
                          ("robust", ROBUST)):
        values = [v for v in getattr(args, name).split(",") if v]
        bad = [v for v in values if v not in allowed]
        if bad or not values:
            p.error(f"--{name}: expected some of {', '.join(allowed)}; received {getattr(args, name)!r}")
        setattr(args, name, values)
    try:
        args.seeds = [int(s) for s in args.seeds.split(",")]
    except ValueError:
        p.error(f"--seeds: expected whole numbers separated by commas; received {args.seeds!r}")
    if not os.access(os.path.join(args.build, "qgossip"), os.X_OK):
        p.error(f"--build {args.build}: no qgossip there (build it first: scripts/build.sh)")
    return args


def main(argv):
    args = parse(argv)
    rows, failed = measure(args)
    if args.dry_run:
        return 0
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "grid.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["recipe"])
        w.writeheader()
        w.writerows(rows)
    text = report(rows, args)
    with open(os.path.join(args.out, "grid.md"), "w") as f:
        f.write(text)
    print(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
