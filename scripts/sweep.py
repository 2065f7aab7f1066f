#!/usr/bin/python3
"""Runs an experiment sweep of qgossip launches, collects their logs into CSVs and draws the figures.

Usage: scripts/sweep.py SWEEP.yaml [--build DIR] [--out DIR] [--dry-run] [--only PATTERN] [--set K=V] [-v]

The sweep file (YAML; see configs/sweeps/):
  name: tang-fig3                       # the sweep's directory: OUT/<name>/
  description: free text                # optional; printed in the results table
  base: configs/demo.yaml               # the run YAML (relative to the sweep file, else to the repo root)
  set: [train.epochs=0.25]              # overrides applied to every run (qgossip launch --set)
  shaping: emulate                      # emulate (default): network.emulate.* pass through as --set;
                                        # cluster: run under scripts/cluster.sh, which gets
                                        # network.emulate.rate_mbit / delay_ms as --rate / --latency
  runs:                                 # axes: the sweep is their product ...
    algorithm: [{label: "DCD 8-bit", set: [algorithm=dcd, "compressor=qsgd:bits=8"]}, ...]
    network:   [{label: "10Mbit 50ms", set: [network.emulate.rate_mbit=10, network.emulate.delay_ms=50]}]
  # ... or a list of such mappings: the union of their products (explicit combinations)
  figures: [loss_epoch, loss_time, epoch_time_vs_bandwidth, epoch_time_vs_latency, accuracy_vs_bytes]
  # a figure may also be a mapping: {kind: loss_epoch, name: fig4-16, filter: {nodes: "n=16"},
  #   line: algorithm, panel: network, y: train_loss | test_acc | test_loss}

Each combination runs as OUT/<name>/<run>/, <run> made from its labels. Resumable: a run whose
node-<rank>.json all say status ok (for every rank of run.json's n) is skipped, unless its overrides
changed since it ran; any other run is cleared and run again. One failed run does not stop the sweep
(exit 1 at the end). Ctrl-C interrupts the current launch (its nodes stop cleanly), keeps finished
runs, still collects and draws what exists, and exits 130.

Writes into OUT/<name>/:
  sweep.json    the resolved sweep (runs, labels, overrides): what scripts/results.py reads
  rows.csv      every node's CSV rows, long format: sweep, run, run_dir, one column per axis, label,
                rank, then the node CSV's columns (by header name; a column a run lacks is empty)
  summary.csv   one row per run: status, error, final test accuracy min/mean/max, epoch time (wall
                seconds per epoch from the rows, median over nodes), bytes per round, total bytes, ...
  figures/*.png the figures the sweep file selects
  results.md    a Markdown fragment (the results table and the figures) for docs/results.md
Epoch time: (wall_s at the last row - wall_s at the first) / (epoch at the last - at the first), from
rows without a test evaluation when a node has two such rows (so the final full evaluation is not
counted as training), else from all rows; the median over nodes.

Exit: 0 every selected run ok, 1 some run failed, 2 bad sweep file or arguments, 130 interrupted.
The shebang is Debian's python3 on purpose: it has python3-yaml and python3-matplotlib.
"""
import argparse
import csv
import itertools
import json
import math
import os
import re
import shlex
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import results  # noqa: E402  (scripts/results.py: the Markdown rendering, shared with docs/results.md)
import sweep_file  # noqa: E402  (scripts/sweep_file.py: reading the sweep YAML, shared with tta.py)

RATE_KEY = "network.emulate.rate_mbit"
DELAY_KEY = "network.emulate.delay_ms"
FIGURE_KINDS = ("loss_epoch", "loss_time", "epoch_time_vs_bandwidth", "epoch_time_vs_latency", "accuracy_vs_bytes")
SWEEP_KEYS = ("name", "description", "base", "set", "shaping", "runs", "figures")
VARIANT_KEYS = ("label", "set")
FIGURE_KEYS = ("kind", "name", "filter", "line", "panel", "y", "title")
NODE_FILE = re.compile(r"node-(\d+)\.(csv|json|log)$")
RUN_RECORD = "sweep-run.json"
STATUS_ORDER = ("failed", "diverged", "interrupted", "incomplete", "not run", "ok")


# summary.csv: "sweep", "run", "run_dir", one column per axis, then these.
SUMMARY_TAIL = ["label", "status", "error", "n_nodes", "config_algorithm", "config_compressor", "rate_mbit",
                "delay_ms", "rounds", "epochs", "final_acc_min", "final_acc_mean", "final_acc_max",
                "final_test_loss_mean", "final_train_loss_mean", "epoch_time_s", "bytes_per_round", "bytes_per_node",
                "total_bytes", "wall_s", "duration_s"]
# Names an axis may not take: its column would clash in rows.csv or summary.csv.
RESERVED_COLUMNS = {"sweep", "run", "run_dir", "rank", *SUMMARY_TAIL, "iteration", "epoch", "lr", "train_loss",
                    "test_loss", "test_acc", "bytes_sent", "bytes_recv", "round_bytes_sent", "round_bytes_recv",
                    "compute_s", "codec_s", "comm_s", "rejected", "probe_bytes_sent", "consensus_dist",
                    "avg_test_loss", "avg_test_acc", "transfer_s", "transfer_bytes", "staleness", "rounds_per_s"}


class SweepError(Exception):
    """A sweep file or argument that cannot be used; the message says where and why."""


class Interrupted(Exception):
    """Ctrl-C (or SIGTERM) arrived; the current launch has been stopped."""


# ---- the sweep file ---------------------------------------------------------------------------------


def sanitize(text):
    """'DCD 8-bit | n=8' -> 'dcd-8-bit-n-8': a plain directory name (also a valid qgossip run name)."""
    s = re.sub(r"[^a-z0-9._]+", "-", text.lower()).strip("-.")
    return s or "run"


def check_sets(sets, where):
    if sets is None:
        return []
    if not isinstance(sets, list) or not all(isinstance(s, (str, int, float)) for s in sets):
        raise SweepError(f"{where}: expected a list of key=value strings")
    sets = [str(s) for s in sets]
    for s in sets:
        if "=" not in s or s.startswith("="):
            raise SweepError(f"{where}: '{s}' is not key=value")
    return sets


def check_keys(mapping, allowed, where):
    for key in mapping:
        if key not in allowed:
            raise SweepError(f"{where}: unknown key '{key}' (expected one of: {', '.join(allowed)})")


def load_sweep(path, extra_sets=()):
    """The sweep file, validated and expanded; extra_sets (sweep.py --set) apply after every run's own."""
    doc = sweep_file.read_mapping(path, SWEEP_KEYS, ("name", "base", "runs"), SweepError)
    name = str(doc["name"])
    if sanitize(name) != name:
        raise SweepError(f"{path}: name '{name}' must be a plain directory name, e.g. '{sanitize(name)}'")
    shaping = doc.get("shaping", "emulate")
    if shaping not in ("emulate", "cluster"):
        raise SweepError(f"{path}: shaping: expected emulate or cluster, not '{shaping}'")

    base = str(doc["base"])
    candidates = [base] if os.path.isabs(base) else [os.path.join(os.path.dirname(os.path.abspath(path)), base),
                                                     os.path.join(ROOT, base), os.path.abspath(base)]
    found = next((c for c in candidates if os.path.isfile(c)), None)
    if not found:
        raise SweepError(f"{path}: base: cannot find '{base}' (looked in: {', '.join(candidates)})")

    fixed_sets = check_sets(doc.get("set"), f"{path}: set")
    blocks = doc["runs"] if isinstance(doc["runs"], list) else [doc["runs"]]
    axes, runs, network_axes = [], [], []
    for b, block in enumerate(blocks):
        where = f"{path}: runs" + (f"[{b}]" if isinstance(doc["runs"], list) else "")
        if not isinstance(block, dict) or not block:
            raise SweepError(f"{where}: expected a mapping of axis name -> list of {{label, set}}")
        choices = []
        for axis, variants in block.items():
            axis = str(axis)
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", axis):
                raise SweepError(f"{where}: axis name '{axis}' must be an identifier")
            if axis in RESERVED_COLUMNS:
                raise SweepError(f"{where}: axis name '{axis}' is also a column of rows.csv or summary.csv; "
                                 f"pick another (e.g. '{axis}_axis')")
            if axis not in axes:
                axes.append(axis)
            if not isinstance(variants, list) or not variants:
                raise SweepError(f"{where}.{axis}: expected a non-empty list of {{label, set}}")
            parsed = []
            for i, v in enumerate(variants):
                vw = f"{where}.{axis}[{i}]"
                if not isinstance(v, dict) or not str(v.get("label") or "").strip():
                    raise SweepError(f"{vw}: expected a mapping with a non-empty 'label' (and a 'set' list)")
                check_keys(v, VARIANT_KEYS, vw)
                sets = check_sets(v.get("set"), vw + ".set")
                shapes_network = any(s.partition("=")[0].strip() in (RATE_KEY, DELAY_KEY) for s in sets)
                if shapes_network and axis not in network_axes:
                    network_axes.append(axis)  # it gives the epoch-time figures their x values
                parsed.append((axis, str(v["label"]), sets))
            choices.append(parsed)
        for combo in itertools.product(*choices):
            labels = {axis: label for axis, label, _ in combo}
            sets = [s for _, _, ss in combo for s in ss]
            runs.append({"labels": labels, "sets": sets})
    seen = {}
    for run in runs:
        run["labels"] = {a: run["labels"].get(a, "") for a in axes}
        run["label"] = " | ".join(l for l in run["labels"].values() if l)
        run["dir"] = sanitize(run["label"])
        if run["dir"] in seen:
            raise SweepError(f"{path}: runs '{seen[run['dir']]}' and '{run['label']}' get the same directory "
                             f"'{run['dir']}': make their labels differ")
        seen[run["dir"]] = run["label"]
        # The network a run emulates, for the epoch-time figures. When a run sets one of the two, the other
        # is the config's default, 0 (unlimited rate, no delay).
        every = fixed_sets + run["sets"] + list(extra_sets)
        rate, delay = number_of(set_value(every, RATE_KEY)), number_of(set_value(every, DELAY_KEY))
        shaped = rate is not None or delay is not None
        run["rate_mbit"] = (rate or 0.0) if shaped else None
        run["delay_ms"] = (delay or 0.0) if shaped else None

    figures = []
    for i, fig in enumerate(doc.get("figures") or []):
        where = f"{path}: figures[{i}]"
        spec = {"kind": fig} if isinstance(fig, str) else fig
        if not isinstance(spec, dict):
            raise SweepError(f"{where}: expected a figure kind or a mapping")
        check_keys(spec, FIGURE_KEYS, where)
        if spec.get("kind") not in FIGURE_KINDS:
            raise SweepError(f"{where}: kind: expected one of {', '.join(FIGURE_KINDS)}, not {spec.get('kind')!r}")
        for key in ("line", "panel"):
            if spec.get(key) is not None and spec[key] not in axes:
                raise SweepError(f"{where}: {key}: '{spec[key]}' is not an axis ({', '.join(axes)})")
        flt = spec.get("filter") or {}
        if not isinstance(flt, dict) or any(a not in axes for a in flt):
            raise SweepError(f"{where}: filter: expected a mapping axis -> label (or list of labels)")
        spec = dict(spec)
        spec["filter"] = {a: [str(x) for x in (v if isinstance(v, list) else [v])] for a, v in flt.items()}
        spec.setdefault("name", spec["kind"] if not flt else spec["kind"] + "-" + sanitize(
            "-".join(l for v in spec["filter"].values() for l in v)))
        spec["name"] = sanitize(str(spec["name"]))
        if any(f["name"] == spec["name"] for f in figures):
            raise SweepError(f"{where}: a second figure named '{spec['name']}': give it another 'name'")
        figures.append(spec)

    return {
        "name": name,
        "file": os.path.abspath(path),
        "description": str(doc.get("description") or ""),
        "base": os.path.abspath(found),
        "set": fixed_sets,
        "extra_set": check_sets(list(extra_sets), "--set"),
        "shaping": shaping,
        "axes": axes,
        "network_axes": network_axes,
        "runs": runs,
        "figures": figures,
    }


def run_sets(sweep, run):
    """Every override of one run, in the order they apply: the sweep's, the run's, the command line's."""
    return sweep["set"] + run["sets"] + sweep["extra_set"]


def set_value(sets, key):
    """The value the last `key=value` in sets gives key, or None."""
    value = None
    for s in sets:
        k, _, v = s.partition("=")
        if k.strip() == key:
            value = v.strip()
    return value


def number_of(text):
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


# ---- one run ---------------------------------------------------------------------------------------


def read_json(path):
    try:
        with open(path) as f:
            value = json.load(f)
        return value if isinstance(value, dict) else None
    except (OSError, ValueError):
        return None


def node_ranks(run_dir):
    ranks = set()
    try:
        for entry in os.listdir(run_dir):
            m = NODE_FILE.fullmatch(entry)
            if m:
                ranks.add(int(m.group(1)))
    except OSError:
        pass
    return sorted(ranks)


def run_state(run_dir):
    """(status, error) of a run directory from its files: ok | failed | diverged | interrupted |
    incomplete (some node wrote no summary) | not run (no node files)."""
    meta = read_json(os.path.join(run_dir, "run.json")) or {}
    ranks = node_ranks(run_dir)
    n = meta.get("n") if isinstance(meta.get("n"), int) and meta.get("n") > 0 else None
    if n is not None:
        ranks = sorted(set(ranks) | set(range(n)))
    if not ranks:
        record = read_json(os.path.join(run_dir, RUN_RECORD)) or {}
        if record.get("exit_code") not in (None, 0):
            return "failed", record.get("error") or f"launch exited {record.get('exit_code')}"
        return "not run", ""
    worst, error = "ok", ""
    for rank in ranks:
        summary = read_json(os.path.join(run_dir, f"node-{rank}.json"))
        status = (summary or {}).get("status") or "incomplete"
        if status not in STATUS_ORDER:
            status = "failed"
        if STATUS_ORDER.index(status) < STATUS_ORDER.index(worst):
            worst = status
            error = (summary or {}).get("error") or (f"node {rank} wrote no summary" if not summary else "")
    if worst != "ok":
        # The launch's own account (the first node to fail and why) beats a node's, which is often only
        # the consequence ("no message from rank 3").
        record = read_json(os.path.join(run_dir, RUN_RECORD)) or {}
        error = record.get("error") or error or ""
    return worst, error


def clear_run_dir(run_dir):
    """Removes what a launch writes, so that a re-run never mixes with an earlier attempt's files."""
    if not os.path.isdir(run_dir):
        return
    for entry in os.listdir(run_dir):
        if NODE_FILE.fullmatch(entry) or entry in ("run.json", "launch.log", RUN_RECORD) or entry.endswith(".png"):
            os.remove(os.path.join(run_dir, entry))


def launch_command(sweep, run, qgossip, sweep_out):
    """The command line of one run: qgossip launch, or scripts/cluster.sh (whose --rate / --latency
    replace the network.emulate.* overrides: the links themselves are shaped)."""
    sets = run_sets(sweep, run)
    tail = [f"name={run['dir']}", f"output.dir={json.dumps(sweep_out)}"]
    if sweep["shaping"] == "cluster":
        shaping_args = []
        rate, delay = number_of(set_value(sets, RATE_KEY)), number_of(set_value(sets, DELAY_KEY))
        if rate:
            shaping_args += ["--rate", f"{rate:g}mbit"]
        if delay:
            shaping_args += ["--latency", f"{delay:g}ms"]
        sets = [s for s in sets if s.partition("=")[0].strip() not in (RATE_KEY, DELAY_KEY)]
        argv = ["bash", os.path.join(ROOT, "scripts", "cluster.sh"), *shaping_args, "--qgossip", qgossip,
                sweep["base"]]
    else:
        argv = [qgossip, "launch", sweep["base"]]
    for s in sets + tail:
        argv += ["--set", s]
    return argv + ["--plain", "--no-plot"]


def stop_group(proc, sig):
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


def run_launch(argv, log_path, timeout_s):
    """Runs one launch, its output into log_path. Returns (exit_code, seconds). Raises Interrupted after
    stopping it when Ctrl-C arrives. The launch gets its own process group, so the terminal's Ctrl-C
    reaches only this script, which forwards exactly one SIGINT to the group (as a terminal would):
    the launcher then stops its nodes and they write their summaries."""
    start = time.monotonic()
    with open(log_path, "w") as log:
        log.write("$ " + shlex.join(argv) + "\n")
        log.flush()
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            while True:
                try:
                    code = proc.wait(timeout=0.5)
                    return code, time.monotonic() - start
                except subprocess.TimeoutExpired:
                    if timeout_s and time.monotonic() - start > timeout_s:
                        log.write(f"\nsweep.py: run timed out after {timeout_s:g} s; stopping it\n")
                        log.flush()
                        stop_launch(proc)
                        return 124, time.monotonic() - start
        except KeyboardInterrupt:
            stop_launch(proc)
            raise Interrupted() from None


def stop_launch(proc):
    """SIGINT to the launch's group, then SIGTERM, then SIGKILL, each after a grace period (the launcher
    itself gives its nodes 5 s between SIGINT and SIGKILL). A second Ctrl-C skips ahead."""
    for sig, grace in ((signal.SIGINT, 30), (signal.SIGTERM, 10), (signal.SIGKILL, 10)):
        stop_group(proc, sig)
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue
        except KeyboardInterrupt:
            continue


def launch_error(log_path):
    """The launch's own words on why it failed: its last 'qgossip launch:' or 'qgossip: error:' line,
    else the log's last line (e.g. scripts/cluster.sh's message)."""
    try:
        with open(log_path, errors="replace") as f:
            lines = [l.strip() for l in f if l.strip()]
    except OSError:
        return ""
    for line in reversed(lines):
        if line.startswith(("qgossip launch:", "qgossip: error:")):
            return line[:300]
    return lines[-1][:300] if lines else ""


# ---- collecting ---------------------------------------------------------------------------------------


def read_node_csv(path):
    """(header, rows as dicts of strings). A half-written last line (a run in progress) is dropped."""
    try:
        with open(path, newline="") as f:
            text = f.read()
    except OSError:
        return [], []
    if text and not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]
    reader = csv.reader(text.splitlines())
    header = next(reader, [])
    rows = [dict(zip(header, r)) for r in reader if len(r) == len(header)]
    return header, rows


def num(row, column):
    """The row's value as a float, None when empty, absent or not a number (NaN and inf stay)."""
    try:
        cell = (row.get(column) or "").strip()
        return float(cell) if cell else None
    except (ValueError, AttributeError):
        return None


def read_run(run_dir):
    """{"meta": run.json, "record": sweep-run.json, "nodes": {rank: {"header", "rows", "summary"}}}."""
    nodes = {}
    for rank in node_ranks(run_dir):
        header, rows = read_node_csv(os.path.join(run_dir, f"node-{rank}.csv"))
        nodes[rank] = {"header": header, "rows": rows,
                       "summary": read_json(os.path.join(run_dir, f"node-{rank}.json")) or {}}
    return {"meta": read_json(os.path.join(run_dir, "run.json")) or {},
            "record": read_json(os.path.join(run_dir, RUN_RECORD)) or {}, "nodes": nodes}


def epoch_time(rows):
    """Wall seconds per epoch from a node's rows (see the module docstring); None with < 2 usable rows."""
    usable = [r for r in rows if num(r, "wall_s") is not None and num(r, "epoch") is not None]
    quiet = [r for r in usable if num(r, "test_acc") is None]
    for candidates in (quiet, usable):
        if len(candidates) >= 2:
            first, last = candidates[0], candidates[-1]
            d_epoch = num(last, "epoch") - num(first, "epoch")
            if d_epoch > 0:
                return (num(last, "wall_s") - num(first, "wall_s")) / d_epoch
    return None


def final_value(node, key, csv_column=None):
    """The summary's value for key, else the last non-empty CSV value."""
    v = node["summary"].get(key)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    for row in reversed(node["rows"]):
        x = num(row, csv_column or key)
        if x is not None:
            return x
    return None


def finite(values):
    return [v for v in values if v is not None and math.isfinite(v)]


def summarize_run(sweep, run, data, status, error):
    nodes = data["nodes"].values()
    accs = finite(final_value(n, "test_acc") for n in nodes)
    test_losses = finite(final_value(n, "test_loss") for n in nodes)
    train_losses = finite(final_value(n, "train_loss") for n in nodes)
    epoch_times = finite(epoch_time(n["rows"]) for n in nodes)
    sent = finite(final_value(n, "bytes_sent") for n in nodes)
    per_round = []
    for n in nodes:
        v = n["summary"].get("mean_round_bytes_sent")
        if isinstance(v, (int, float)) and v > 0:
            per_round.append(float(v))
        elif n["rows"]:
            it, b = num(n["rows"][-1], "iteration"), num(n["rows"][-1], "bytes_sent")
            if it and b is not None:
                per_round.append(b / it)
    rounds = finite(final_value(n, "rounds", "iteration") for n in nodes)
    epochs = finite(final_value(n, "epoch") for n in nodes)
    walls = finite(final_value(n, "wall_s") for n in nodes)
    meta = data["meta"]

    def mean(v):
        return statistics.fmean(v) if v else None

    row = {"sweep": sweep["name"], "run": run["label"], "run_dir": run["dir"]}
    row.update(run["labels"])
    row.update({
        "status": status,
        "error": error,
        "n_nodes": meta.get("n") or len(data["nodes"]) or None,
        "config_algorithm": meta.get("algorithm", ""),
        "config_compressor": meta.get("compressor", ""),
        "rate_mbit": run["rate_mbit"],
        "delay_ms": run["delay_ms"],
        "rounds": max(rounds) if rounds else None,
        "epochs": statistics.median(epochs) if epochs else None,
        "final_acc_min": min(accs) if accs else None,
        "final_acc_mean": mean(accs),
        "final_acc_max": max(accs) if accs else None,
        "final_test_loss_mean": mean(test_losses),
        "final_train_loss_mean": mean(train_losses),
        "epoch_time_s": statistics.median(epoch_times) if epoch_times else None,
        "bytes_per_round": mean(per_round),
        "bytes_per_node": mean(sent),
        "total_bytes": sum(sent) if sent else None,
        "wall_s": max(walls) if walls else None,
        "duration_s": data["record"].get("duration_s"),
    })
    return row




def cell(v):
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def write_csvs(sweep, sweep_out, collected):
    """rows.csv (long) and summary.csv; returns their paths."""
    axes = sweep["axes"]
    columns = []
    for _, data, _ in collected:
        for node in data["nodes"].values():
            for c in node["header"]:
                if c not in columns:
                    columns.append(c)
    rows_path = os.path.join(sweep_out, "rows.csv")
    with open(rows_path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["sweep", "run", "run_dir"] + axes + ["label", "rank"] + columns)
        for run, data, _ in collected:
            for rank, node in sorted(data["nodes"].items()):
                for r in node["rows"]:
                    w.writerow([sweep["name"], run["label"], run["dir"]] + [run["labels"][a] for a in axes] +
                               [run["label"], rank] + [r.get(c, "") for c in columns])
    summary_path = os.path.join(sweep_out, "summary.csv")
    with open(summary_path, "w", newline="") as f:
        w = csv.writer(f)
        header = ["sweep", "run", "run_dir"] + axes + SUMMARY_TAIL
        w.writerow(header)
        for run, _, summary in collected:
            row = dict(summary, label=run["label"])
            w.writerow([cell(row.get(c)) for c in header])
    return rows_path, summary_path


# ---- figures ----------------------------------------------------------------------------------------


def mean_curve(nodes, x_column, y_column):
    """Per iteration, the mean over nodes of x and y (iterations where every node has both, else any)."""
    by_it = {}
    for node in nodes:
        for r in node["rows"]:
            it, x, y = num(r, "iteration"), num(r, x_column), num(r, y_column)
            if it is not None and x is not None and y is not None and math.isfinite(x) and math.isfinite(y):
                by_it.setdefault(it, []).append((x, y))
    complete = {it: v for it, v in by_it.items() if len(v) == len(nodes)}
    chosen = complete or by_it
    xs = [statistics.fmean(p[0] for p in chosen[it]) for it in sorted(chosen)]
    ys = [statistics.fmean(p[1] for p in chosen[it]) for it in sorted(chosen)]
    return xs, ys


def figure_groups(sweep, spec, items, default_panel, exclude=()):
    """Filters items (run, data, summary) and returns (panel_axis, {panel label: {line label: [items]}}).
    Axes in `exclude` (those that give the x values) never go into line names."""
    axes = sweep["axes"]
    selected = [it for it in items if all(it[0]["labels"].get(a) in labels for a, labels in spec["filter"].items())]
    line_axis = spec.get("line") or ("algorithm" if "algorithm" in axes else axes[0])
    panel_axis = spec.get("panel", default_panel(axes, line_axis))
    # Axes that vary within the selection and are neither lines nor panels go into the line's name, so
    # that no two runs are silently merged into one line.
    varying = [a for a in axes if a not in (line_axis, panel_axis) and a not in spec["filter"] and a not in exclude
               and len({it[0]["labels"][a] for it in selected}) > 1]
    groups = {}
    for it in selected:
        labels = it[0]["labels"]
        panel = labels.get(panel_axis, "") if panel_axis else ""
        line = " | ".join(l for l in [labels.get(line_axis, "")] + [labels[a] for a in varying] if l)
        groups.setdefault(panel, {}).setdefault(line, []).append(it)
    return panel_axis, groups


def default_panel(sweep, line_axis):
    """Curves get one panel per network condition: the axis named 'network', else the one axis that sets
    the emulated network; none when that is the line axis or there is no such single axis."""
    candidates = ["network"] if "network" in sweep["axes"] else sweep["network_axes"]
    return candidates[0] if len(candidates) == 1 and candidates[0] != line_axis else None


def subplots(plt, count, width=5.2, height=4.0):
    cols = 2 if count in (2, 4) else min(count, 3)
    rows = math.ceil(count / cols)
    fig, axs = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False, constrained_layout=True)
    flat = [a for row in axs for a in row]
    for ax in flat[count:]:
        ax.set_visible(False)
    return fig, flat[:count]


def legend(ax):
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small")
    else:
        ax.text(0.5, 0.5, "no data", transform=ax.transAxes, ha="center", va="center", color="grey")


def style_for(plt, lines):
    cycle = plt.rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
    return {line: cycle[i % len(cycle)] for i, line in enumerate(lines)}


def ordered_lines(groups):
    out = []
    for panel in groups.values():
        for line in panel:
            if line not in out:
                out.append(line)
    return out


def draw_curves(plt, sweep, spec, items, x_column, xlabel):
    y = spec.get("y") or "train_loss"
    panel_axis, groups = figure_groups(sweep, spec, items, lambda axes, line: default_panel(sweep, line))
    groups = {p: {l: [it for it in v if it[1]["nodes"]] for l, v in g.items()} for p, g in groups.items()}
    if not any(v for g in groups.values() for v in g.values()):
        return None, "no run has rows"
    colours = style_for(plt, ordered_lines(groups))
    fig, axs = subplots(plt, len(groups))
    bounded = []  # y values of runs that did not diverge: they set the y range
    for ax, (panel, lines) in zip(axs, groups.items()):
        for line, its in lines.items():
            for run, data, summary in its:
                xs, ys = mean_curve(data["nodes"].values(), x_column, y)
                if not xs:
                    continue
                bad = summary["status"] != "ok"
                ax.plot(xs, ys, color=colours[line], linestyle="--" if bad else "-",
                        marker="." if len(xs) < 8 else None, label=line + (f" ({summary['status']})" if bad else ""))
                if summary["status"] != "diverged":
                    bounded += ys
        ax.set_title(panel or sweep["name"])
        ax.set_xlabel(xlabel)
        ax.set_ylabel(y.replace("_", " "))
        if y == "consensus_dist" and all(v > 0 for v in bounded):
            ax.set_yscale("log")  # the distance shrinks by orders of magnitude as the rate decays
        ax.grid(True, alpha=0.3)
        legend(ax)
    if bounded and "loss" in y:
        lo, hi = min(bounded), max(bounded)
        for ax in axs:
            ax.set_ylim(lo - 0.05 * (hi - lo), hi + 0.1 * (hi - lo) + 1e-9)
    fig.suptitle(spec.get("title") or f"{sweep['name']}: {y.replace('_', ' ')} vs {xlabel}")
    return fig, None


def draw_epoch_time(plt, sweep, spec, items, x_key, panel_key):
    x_name = {"rate_mbit": "bandwidth (Mbit/s)", "delay_ms": "latency (ms)"}
    points = [it for it in items if it[2]["epoch_time_s"] is not None and it[0][x_key] is not None]
    if x_key == "rate_mbit":
        points = [it for it in points if it[0]["rate_mbit"] > 0]  # 0 = unlimited: no place on the axis
    if not points:
        key = RATE_KEY if x_key == "rate_mbit" else DELAY_KEY
        return None, f"no finished run sets {key} (and has an epoch time)"
    _, groups = figure_groups(sweep, dict(spec, panel=None), points, lambda axes, line: None,
                              exclude=sweep["network_axes"])
    # Panels by the other network quantity (latency for the bandwidth plot and vice versa).
    panels = {}
    for lines in groups.values():
        for line, its in lines.items():
            for it in its:
                p = it[0][panel_key]
                panels.setdefault(p, {}).setdefault(line, []).append(it)
    colours = style_for(plt, ordered_lines(groups))
    order = sorted(panels, key=lambda p: (p is None, p or 0))
    fig, axs = subplots(plt, len(order))
    for ax, p in zip(axs, order):
        for line, its in panels[p].items():
            its = sorted(its, key=lambda it: it[0][x_key])
            ax.plot([it[0][x_key] for it in its], [it[2]["epoch_time_s"] for it in its], marker="o",
                    color=colours[line], label=line)
        if x_key == "rate_mbit":
            ax.set_xscale("log")
        ax.set_yscale("log")  # epoch times span 1 s to 1000 s across a bandwidth sweep
        if panel_key == "delay_ms":
            ax.set_title(f"latency {p:g} ms" if p is not None else "latency not set")
        else:
            ax.set_title(f"bandwidth {p:g} Mbit/s" if p else "bandwidth unlimited")
        ax.set_xlabel(x_name[x_key])
        ax.set_ylabel("epoch time (s)")
        ax.grid(True, alpha=0.3, which="both")
        legend(ax)
    fig.suptitle(spec.get("title") or f"{sweep['name']}: epoch time vs {x_name[x_key].split(' ')[0]}")
    return fig, None


def draw_accuracy_vs_bytes(plt, sweep, spec, items):
    panel_axis, groups = figure_groups(sweep, spec, items, lambda axes, line: default_panel(sweep, line))
    colours = style_for(plt, ordered_lines(groups))
    fig, axs = subplots(plt, len(groups))
    drawn = False
    for ax, (panel, lines) in zip(axs, groups.items()):
        for line, its in lines.items():
            for run, data, summary in its:
                xs, ys = mean_curve(data["nodes"].values(), "bytes_sent", spec.get("y") or "test_acc")
                if not xs:
                    continue
                drawn = True
                ax.plot([x / 1e6 for x in xs], ys, marker="o", color=colours[line],
                        linestyle="--" if summary["status"] != "ok" else "-", label=line)
        ax.set_title(panel or sweep["name"])
        ax.set_xlabel("MB sent per node (cumulative)")
        ax.set_ylabel((spec.get("y") or "test_acc").replace("_", " "))
        ax.grid(True, alpha=0.3)
        legend(ax)
    if not drawn:
        plt.close(fig)
        return None, "no run has test accuracy and bytes"
    fig.suptitle(spec.get("title") or f"{sweep['name']}: test accuracy vs bytes sent")
    return fig, None


def draw_figures(sweep, sweep_out, collected):
    """Writes the selected figures; returns (paths written, notes on figures left out)."""
    if not sweep["figures"]:
        return [], []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = os.path.join(sweep_out, "figures")
    os.makedirs(out_dir, exist_ok=True)
    written, notes = [], []
    for spec in sweep["figures"]:
        kind = spec["kind"]
        if kind == "loss_epoch":
            fig, why = draw_curves(plt, sweep, spec, collected, "epoch", "epoch")
        elif kind == "loss_time":
            fig, why = draw_curves(plt, sweep, spec, collected, "wall_s", "wall time (s)")
        elif kind == "epoch_time_vs_bandwidth":
            fig, why = draw_epoch_time(plt, sweep, spec, collected, "rate_mbit", "delay_ms")
        elif kind == "epoch_time_vs_latency":
            fig, why = draw_epoch_time(plt, sweep, spec, collected, "delay_ms", "rate_mbit")
        else:
            fig, why = draw_accuracy_vs_bytes(plt, sweep, spec, collected)
        if fig is None:
            notes.append(f"figure {spec['name']} not drawn: {why}")
            continue
        path = os.path.join(out_dir, spec["name"] + ".png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written, notes


# ---- the sweep --------------------------------------------------------------------------------------


def stop_like_ctrl_c(signum, frame):
    """SIGTERM stops the sweep the way Ctrl-C does."""
    raise KeyboardInterrupt()


def format_seconds(s):
    if s < 10:
        return f"{s:.1f} s"
    if s < 90:
        return f"{s:.0f} s"
    if s < 3600:
        return f"{s / 60:.0f} min"
    return f"{int(s // 3600)} h {int(s % 3600 // 60):02d} min"


def plan(sweep, sweep_out, only):
    """[(run, action, why)]: action is run | skip | rerun | filtered."""
    pattern = re.compile(only, re.IGNORECASE) if only else None
    out = []
    for run in sweep["runs"]:
        run_dir = os.path.join(sweep_out, run["dir"])
        status, error = run_state(run_dir)
        if pattern and not (pattern.search(run["label"]) or pattern.search(run["dir"])):
            out.append((run, "filtered", status))
        elif status == "ok":
            record = read_json(os.path.join(run_dir, RUN_RECORD))
            wanted = {"base": sweep["base"], "set": run_sets(sweep, run), "shaping": sweep["shaping"]}
            if record and any(record.get(k) != v for k, v in wanted.items()):
                out.append((run, "rerun", "its settings changed since it ran"))
            else:
                out.append((run, "skip", "done"))
        elif status == "not run":
            out.append((run, "run", ""))
        else:
            out.append((run, "rerun", f"previous attempt {status}" + (f": {error}" if error else "")))
    return out


def main(argv):
    parser = argparse.ArgumentParser(
        description="Run a qgossip experiment sweep, collect its logs into CSVs, draw its figures.",
        epilog=__doc__.split("\n", 2)[2], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sweep", metavar="SWEEP.yaml", help="the sweep file (see configs/sweeps/)")
    parser.add_argument("--build", default=os.path.join(ROOT, "build"), help="build directory holding qgossip "
                        "(default: %(default)s)")
    parser.add_argument("--out", default="runs/sweeps",
                        help="where the sweep's directory goes (default: %(default)s)")
    parser.add_argument("--dry-run", action="store_true", help="print the plan and the commands; run nothing")
    parser.add_argument("--only", metavar="PATTERN", help="run only the runs whose label or directory matches this "
                        "regular expression (case-insensitive); the others are still collected")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="an override for every run, applied after the sweep file's (repeatable), e.g. "
                        "--set data.dataset=synthetic for a quick check of a sweep file")
    parser.add_argument("--timeout", type=float, default=0, metavar="S",
                        help="stop a run that takes longer than S seconds (default: no limit)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print each launch's output after it ends")
    args = parser.parse_args(argv)

    try:
        sweep = load_sweep(args.sweep, args.set)
        if args.only:
            re.compile(args.only)
    except SweepError as e:
        print(f"sweep.py: {e}", file=sys.stderr)
        return 2
    except re.error as e:
        print(f"sweep.py: --only: not a regular expression: {e}", file=sys.stderr)
        return 2
    qgossip = os.path.abspath(os.path.join(args.build, "qgossip"))
    sweep_out = os.path.abspath(os.path.join(args.out, sweep["name"]))
    steps = plan(sweep, sweep_out, args.only)
    total = len(steps)

    if args.dry_run:
        print(f"sweep {sweep['name']}: {total} runs into {sweep_out}/ (shaping: {sweep['shaping']})")
        for i, (run, action, why) in enumerate(steps, 1):
            verb = {"run": "run", "skip": "skip (done)", "rerun": f"re-run ({why})",
                    "filtered": "not selected"}[action]
            print(f"[{i}/{total}] {run['label']} -> {run['dir']}/: {verb}")
            if action in ("run", "rerun"):
                cmd = launch_command(sweep, run, qgossip, sweep_out)
                print("    " + shlex.join(cmd))
        return 0

    if not os.access(qgossip, os.X_OK):
        print(f"sweep.py: no qgossip binary at {qgossip} (build it, or give --build DIR)", file=sys.stderr)
        return 2
    os.makedirs(sweep_out, exist_ok=True)
    with open(os.path.join(sweep_out, "sweep.json"), "w") as f:
        json.dump(sweep, f, indent=2)

    signal.signal(signal.SIGTERM, stop_like_ctrl_c)
    durations, interrupted = [], False
    to_run = sum(1 for _, action, _ in steps if action in ("run", "rerun"))
    done_now = 0
    for i, (run, action, why) in enumerate(steps, 1):
        prefix = f"[{i}/{total}] {run['label']}"
        if action == "filtered":
            continue
        if action == "skip":
            print(f"{prefix}: skipped (done)", flush=True)
            continue
        run_dir = os.path.join(sweep_out, run["dir"])
        if action == "rerun":
            print(f"{prefix}: re-running ({why})", flush=True)
        clear_run_dir(run_dir)
        os.makedirs(run_dir, exist_ok=True)
        cmd = launch_command(sweep, run, qgossip, sweep_out)
        print(f"{prefix} ...", end="", flush=True)
        log_path = os.path.join(run_dir, "launch.log")
        record = {"base": sweep["base"], "set": run_sets(sweep, run), "shaping": sweep["shaping"],
                  "command": cmd, "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        try:
            code, seconds = run_launch(cmd, log_path, args.timeout)
        except Interrupted:
            record.update(exit_code=130, error="interrupted by the sweep (Ctrl-C)")
            with open(os.path.join(run_dir, RUN_RECORD), "w") as f:
                json.dump(record, f, indent=2)
            print(" interrupted", flush=True)
            interrupted = True
            break
        status, error = run_state(run_dir)
        if code != 0 and status in ("ok", "not run"):
            status = "failed"  # a config error (no node started), the replica check, a node's late error
        if code != 0 or status != "ok":
            error = launch_error(log_path) or error or f"launch exited {code}"
        record.update(exit_code=code, duration_s=round(seconds, 3), status=status,
                      error=error if status != "ok" else "")
        with open(os.path.join(run_dir, RUN_RECORD), "w") as f:
            json.dump(record, f, indent=2)
        done_now += 1
        durations.append(seconds)
        left = to_run - done_now
        eta = f"; ETA {format_seconds(statistics.median(durations) * left)}" if left else ""
        if status == "ok":
            print(f" {format_seconds(seconds)}{eta}", flush=True)
        else:
            what = "FAILED" if status == "failed" else f"FAILED ({status})"
            print(f" {what} after {format_seconds(seconds)}: {error}{eta}", flush=True)
        if args.verbose:
            with open(log_path, errors="replace") as f:
                sys.stdout.write(f.read())

    # Collect everything the sweep has, including runs not selected or finished by earlier invocations.
    collected = []
    for run in sweep["runs"]:
        run_dir = os.path.join(sweep_out, run["dir"])
        if not os.path.isdir(run_dir):
            continue
        status, error = run_state(run_dir)
        data = read_run(run_dir)
        collected.append((run, data, summarize_run(sweep, run, data, status, error)))
    rows_path, summary_path = write_csvs(sweep, sweep_out, collected)
    try:
        figures, notes = draw_figures(sweep, sweep_out, collected)
    except ImportError as e:
        figures, notes = [], [f"no figures: {e} (scripts/setup.sh installs python3-matplotlib)"]
    for note in notes:
        print(f"sweep.py: {note}")
    fragment = os.path.join(sweep_out, "results.md")
    with open(fragment, "w") as f:
        f.write(results.render_sweep(sweep_out, os.path.dirname(fragment), heading_level=2))
    print(f"collected {len(collected)} runs: {rows_path}, {summary_path}, {fragment}" +
          (f", {len(figures)} figures in {os.path.join(sweep_out, 'figures')}/" if figures else ""))
    if interrupted:
        print("sweep.py: interrupted; finished runs are kept, run the same command again to resume", file=sys.stderr)
        return 130
    not_ok = [run["label"] for run, action, _ in steps if action != "filtered" and run_state(
        os.path.join(sweep_out, run["dir"]))[0] != "ok"]
    if not_ok:
        print(f"sweep.py: {len(not_ok)} run(s) not ok: " + "; ".join(not_ok), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:  # between launches or while collecting: nothing running to stop
        print("\nsweep.py: interrupted; finished runs are kept, run the same command again to resume",
              file=sys.stderr)
        sys.exit(130)
