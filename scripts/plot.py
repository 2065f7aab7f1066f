#!/usr/bin/python3
"""Plots qgossip run directories.

Usage: scripts/plot.py RUN_DIR [RUN_DIR ...] [-o OUT_DIR] [--title T]

Each RUN_DIR holds node-<rank>.csv (one row per logged round, written by the nodes) and run.json
(the resolved config; "name", "algorithm" and "compressor" name the run in titles and legends).
Writes into OUT_DIR (default: the first RUN_DIR):
  convergence.png        test accuracy and train loss, against epoch and against wall time
  accuracy_vs_bytes.png  test accuracy against cumulative MB sent
Thin lines are single nodes, thick lines the mean over a run's nodes (aligned on iteration); with
several runs each run has one colour. A hostile node (a scenario's attack: its node-<rank>.json names
it under "hostile") is not drawn: the curves are the honest nodes', and a dashed line is their worst
node (per iteration, the minimum accuracy, the maximum loss). Exits 2 with a message naming the file (and column) when a run
directory has no node CSVs or a CSV lacks a needed column or holds a bad value.

The shebang is Debian's python3 on purpose: it has python3-matplotlib, a pyenv python3 may not.
"""
import argparse
import csv
import json
import math
import os
import re
import sys

NEEDED_COLUMNS = ("iteration", "epoch", "wall_s", "train_loss", "test_acc", "bytes_sent")
NODE_CSV = re.compile(r"node-(\d+)\.csv$")


class InputError(Exception):
    """A run directory or file that cannot be plotted; the message names it."""


def read_node_csv(path):
    """Returns {column: [float]} for NEEDED_COLUMNS; empty cells (a round without evaluation) are NaN."""
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        header = reader.fieldnames or []
        for column in NEEDED_COLUMNS:
            if column not in header:
                raise InputError(f"{path}: missing column '{column}'")
        columns = {c: [] for c in NEEDED_COLUMNS}
        for row in reader:
            for c in NEEDED_COLUMNS:
                cell = (row.get(c) or "").strip()
                try:
                    columns[c].append(float(cell) if cell else math.nan)
                except ValueError:
                    raise InputError(f"{path}:{reader.line_num}: column '{c}': not a number: {cell!r}") from None
    return columns


def describe(component):
    """'qsgd(levels=255)' from {'name': 'qsgd', 'levels': 255}; strings pass through."""
    if isinstance(component, dict):
        name = str(component.get("name", "?"))
        params = ", ".join(f"{k}={v}" for k, v in component.items() if k != "name" and not isinstance(v, (dict, list)))
        return f"{name}({params})" if params else name
    return None if component is None else str(component)


def load_run(run_dir):
    if not os.path.isdir(run_dir):
        raise InputError(f"{run_dir}: not a directory")
    meta = read_json_object(os.path.join(run_dir, "run.json"))  # {}: titles fall back to the folder's name
    n = meta.get("n") if isinstance(meta.get("n"), int) and meta.get("n") > 0 else None
    nodes = []
    for entry in os.listdir(run_dir):
        m = NODE_CSV.fullmatch(entry)
        if m and (n is None or int(m.group(1)) < n):  # ranks run.json has not: an earlier run's files
            nodes.append((int(m.group(1)), os.path.join(run_dir, entry)))
    if not nodes:
        raise InputError(f"{run_dir}: no node-<rank>.csv files")
    nodes.sort()
    hostile = hostile_ranks(run_dir, [rank for rank, _ in nodes])
    nodes = [(rank, path) for rank, path in nodes if rank not in hostile]
    if not nodes:
        raise InputError(f"{run_dir}: every node is hostile (node-<rank>.json \"hostile\"): no honest node to draw")
    data = {rank: read_node_csv(path) for rank, path in nodes}
    if not any(d["iteration"] for d in data.values()):
        raise InputError(f"{run_dir}: the node CSVs have no rows")
    for rank, offset in start_offsets(run_dir, data).items():
        data[rank]["wall_s"] = [t + offset for t in data[rank]["wall_s"]]
    name = str(meta.get("name") or os.path.basename(os.path.normpath(run_dir)))
    parts = [p for p in (describe(meta.get("algorithm")), describe(meta.get("compressor"))) if p]
    label = " + ".join(parts) if parts else name
    return {"dir": run_dir, "name": name, "label": label, "nodes": data, "hostile": hostile}


def hostile_ranks(run_dir, ranks):
    """{rank: its attack} of the ranks whose summary names one (a scenario's hostile: list)."""
    found = {}
    for rank in ranks:
        attack = read_json_object(os.path.join(run_dir, f"node-{rank}.json")).get("hostile")
        if isinstance(attack, str) and attack:
            found[rank] = attack
    return found


def read_json_object(path):
    """The JSON object in path; {} when it is missing, unreadable or not an object."""
    try:
        with open(path) as f:
            loaded = json.load(f)
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def start_offsets(run_dir, data):
    """{rank: seconds its process started after the first node's}, from each node-<rank>.json
    (end_unix_s - wall_s: its start on the system clock). A node's wall_s counts from its own start,
    so a node restarted mid-run (network.restart, churn) would start again at 0 s; shifted by this,
    every curve is on one clock, the first node's. Empty when fewer than two summaries say."""
    starts = {}
    for rank in data:
        summary = read_json_object(os.path.join(run_dir, f"node-{rank}.json"))
        try:
            starts[rank] = float(summary["end_unix_s"]) - float(summary["wall_s"])
        except (KeyError, TypeError, ValueError):
            continue
    if len(starts) < 2:
        return {}
    first = min(starts.values())
    return {rank: start - first for rank, start in starts.items()}


def mean_curve(nodes, x_column, y_column, reduce=None):
    """(xs, ys): per iteration, the mean over nodes of x and y (reduce: another function of the y
    values, e.g. min for the worst node's accuracy). Uses the iterations at which every node has a y
    value; when the nodes never agree (different evaluation schedules), those at which any does."""
    by_iteration = {}
    for d in nodes.values():
        for it, x, y in zip(d["iteration"], d[x_column], d[y_column]):
            if not (math.isnan(y) or math.isnan(x)):
                by_iteration.setdefault(it, []).append((x, y))
    complete = {it: v for it, v in by_iteration.items() if len(v) == len(nodes)}
    chosen = complete or by_iteration
    xs, ys = [], []
    for it in sorted(chosen):
        pairs = chosen[it]
        xs.append(sum(p[0] for p in pairs) / len(pairs))
        ys.append(reduce([p[1] for p in pairs]) if reduce else sum(p[1] for p in pairs) / len(pairs))
    return xs, ys


def node_curve(d, x_column, y_column, x_scale=1.0):
    pts = [(x * x_scale, y) for x, y in zip(d[x_column], d[y_column]) if not (math.isnan(x) or math.isnan(y))]
    return [p[0] for p in pts], [p[1] for p in pts]


# Curves of at most this many points mark them: a run with one or two evaluations (1-2 epochs) is a
# point or a segment, which a line alone does not show.
MARKED_POINTS = 30


def draw(ax, runs, colours, x_column, y_column, x_scale=1.0):
    for run, colour in zip(runs, colours):
        for d in run["nodes"].values():
            xs, ys = node_curve(d, x_column, y_column, x_scale)
            ax.plot(xs, ys, color=colour, linewidth=0.7, alpha=0.35)
        xs, ys = mean_curve(run["nodes"], x_column, y_column)
        marker = "o" if len(xs) <= MARKED_POINTS else None
        ax.plot([x * x_scale for x in xs], ys, color=colour, linewidth=2.2, marker=marker, markersize=4,
                label=run["legend"])
        if run["hostile"]:  # the worst honest node: the lowest accuracy, the highest loss
            worst = min if "acc" in y_column else max
            xs, ys = mean_curve(run["nodes"], x_column, y_column, worst)
            ax.plot([x * x_scale for x in xs], ys, color=colour, linewidth=1.4, linestyle="--")
    ax.grid(True, alpha=0.3)


def legends(runs):
    """One legend entry per run. Alone: algorithm + compressor. Compared: each run's folder name first
    (runs differing in a topology, a learning rate or anything else the label does not show stay
    apart; a folder holds one run), then algorithm + compressor; the folder's path when two folders
    share a name."""
    names = [os.path.basename(os.path.normpath(r["dir"])) for r in runs]
    for r, name in zip(runs, names):
        if len(runs) == 1:
            legend = r["label"]
        else:
            who = name if names.count(name) == 1 else os.path.normpath(r["dir"])
            legend = f"{who}: {r['label']}"
        if r["hostile"]:
            r["legend"] = f"{legend} (mean of {len(r['nodes'])} honest nodes; dashed: the worst)"
        else:
            r["legend"] = f"{legend} (mean of {len(r['nodes'])} nodes)"


def plot(runs, out_dir, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    legends(runs)
    cycle = plt.rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
    colours = [cycle[i % len(cycle)] for i in range(len(runs))]
    if title is None:
        title = f"{runs[0]['name']}: {runs[0]['label']}" if len(runs) == 1 else "comparison"
        hostile = sorted({f"{attack} (rank {rank})" for r in runs for rank, attack in r["hostile"].items()})
        if hostile:
            title += "; hostile, not drawn: " + ", ".join(hostile)
    os.makedirs(out_dir, exist_ok=True)
    written = []

    # Fixed margins rather than constrained_layout: the same figure in two thirds of the time
    # (qgossip launch draws it after the last round, while the user waits).
    fig, axes = plt.subplots(2, 2, figsize=(12, 8.5))
    fig.subplots_adjust(left=0.06, right=0.98, bottom=0.06, top=0.93, wspace=0.18, hspace=0.2)
    panels = [
        (axes[0][0], "epoch", "test_acc", "epoch", "test accuracy"),
        (axes[0][1], "epoch", "train_loss", "epoch", "train loss"),
        (axes[1][0], "wall_s", "test_acc", "wall time (s)", "test accuracy"),
        (axes[1][1], "wall_s", "train_loss", "wall time (s)", "train loss"),
    ]
    for ax, x, y, xlabel, ylabel in panels:
        draw(ax, runs, colours, x, y)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
    axes[0][0].legend(loc="lower right", fontsize="small")
    fig.suptitle(title)
    path = os.path.join(out_dir, "convergence.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)

    fig, ax = plt.subplots(figsize=(7, 5))
    fig.subplots_adjust(left=0.11, right=0.97, bottom=0.1, top=0.92)
    draw(ax, runs, colours, "bytes_sent", "test_acc", x_scale=1e-6)
    ax.set_xlabel("MB sent per node (cumulative)")
    ax.set_ylabel("test accuracy")
    ax.legend(loc="lower right", fontsize="small")
    ax.set_title(title)
    path = os.path.join(out_dir, "accuracy_vs_bytes.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)
    return written


def main(argv):
    parser = argparse.ArgumentParser(description="Plot qgossip run directories (node-<rank>.csv + run.json).")
    parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR")
    parser.add_argument("-o", "--out-dir", help="where to write the PNGs (default: the first RUN_DIR)")
    parser.add_argument("--title", help="figure title (default: the run's name, or 'comparison')")
    parser.add_argument("--when-told", action="store_true",
                        help="import the plotting libraries, then wait for a line 'go' on stdin before "
                             "reading the runs; anything else (or end of input) exits 0 without plotting "
                             "(qgossip launch starts the plotter this way while the nodes train)")
    args = parser.parse_args(argv)
    if args.when_told:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot  # noqa: F401 (the import is the work done ahead)

        if sys.stdin.readline().strip() != "go":
            return 0
    try:
        runs = [load_run(d) for d in args.run_dirs]
    except (InputError, OSError) as e:
        print(f"plot.py: {e}", file=sys.stderr)
        return 2
    for path in plot(runs, args.out_dir or args.run_dirs[0], args.title):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
