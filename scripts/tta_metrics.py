"""Time to accuracy: reads what one run of scripts/tta.py left (peer ranks' or qgossip nodes' CSVs and
JSONs, scripts/cluster.sh's --stats record), puts every evaluation on one clock (seconds from the
launch) and renders the comparison (tables, CSVs, the figure). No subprocesses: tests import this.

The clock. A peer rank (bench/peers/train.py) logs wall_s from the launch time it is given. A qgossip
node logs wall_s from its own start (a steady clock started as node_setup is built); its node-<r>.json
has end_unix_s, the system clock when the summary was written, right after its own final wall_s, so
the node started at end_unix_s - wall_s (Unix seconds) and a row's time from the launch is
(end_unix_s - wall_s_final - launch_unix_s) + wall_s_row.

The accuracy. Peers: rank 0's evaluation of the global model. qgossip: at each evaluated iteration
that every node has logged, the mean over the nodes of their test accuracies; its time is that of the
LAST node to log the row. Time to a target: the first evaluation whose accuracy is >= the target.
"""
import csv
import json
import math
import os


class MetricsError(Exception):
    """A run directory that cannot be read; the message names the file."""


def _num(text):
    if text in (None, ""):
        return None
    try:
        v = float(text)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _first(values):
    """The 1-minute figure of a recorded [1, 5, 15 min] load average, or None."""
    return _num(values[0]) if isinstance(values, list) and values else None


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def read_csv_rows(path):
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    except OSError:
        return []


def node_files(run_dir):
    """{rank: (csv path, json path)} of node-<r>.csv files in run_dir."""
    out = {}
    for name in os.listdir(run_dir) if os.path.isdir(run_dir) else []:
        if name.startswith("node-") and name.endswith(".csv"):
            rank = name[len("node-"):-len(".csv")]
            if rank.isdigit():
                out[int(rank)] = (os.path.join(run_dir, name), os.path.join(run_dir, f"node-{rank}.json"))
    return dict(sorted(out.items()))


def qgossip_offset(summary, launch_unix):
    """Seconds from the launch to the node's start, from its summary; None when it cannot be told."""
    if not summary or launch_unix is None:
        return None
    end, wall = _num(summary.get("end_unix_s")), _num(summary.get("wall_s"))
    if end is None or wall is None:
        return None
    return end - wall - launch_unix


def curve_qgossip(run_dir, launch_unix):
    """([(time from launch, epoch, mean accuracy, iteration)], notes): the mean over nodes at each
    iteration every node evaluated, timed by the last node to log it."""
    files = node_files(run_dir)
    if not files:
        return [], ["no node-<r>.csv"]
    notes, per_node = [], {}
    for rank, (csv_path, json_path) in files.items():
        offset = qgossip_offset(read_json(json_path), launch_unix)
        if offset is None:
            notes.append(f"node {rank}: no end_unix_s in node-{rank}.json (or no launch time): its times count "
                         "from its own start, not the launch")
            offset = 0.0
        rows = {}
        for row in read_csv_rows(csv_path):
            acc, wall, it = _num(row.get("test_acc")), _num(row.get("wall_s")), _num(row.get("iteration"))
            if acc is None or wall is None or it is None:
                continue
            rows[int(it)] = (offset + wall, _num(row.get("epoch")), acc)
        per_node[rank] = rows
    common = set.intersection(*(set(r) for r in per_node.values())) if per_node else set()
    points = []
    for it in sorted(common):
        entries = [per_node[r][it] for r in per_node]
        points.append((max(e[0] for e in entries), entries[0][1], sum(e[2] for e in entries) / len(entries), it))
    return points, notes


def qgossip_startup(run_dir, launch_unix):
    """Seconds from the launch until the LAST node began its first round (None when it cannot be told).

    A node logs no start-up time, so it is taken from its first CSV row: that row's wall_s (node clock)
    minus the seconds the node's rounds had spent until then (compute_s + codec_s + comm_s +
    transfer_s, cumulative) is when the node entered round 1, after its setup (data, model, transport,
    the peers' connections); the launch-clock offset (qgossip_offset) puts it on the launch's clock.
    The first row's own evaluation, when it has one, and untimed per-round bookkeeping are counted as
    start-up (tens of milliseconds for the MLP's 10,000 test images). The last node is taken because
    the first round needs the neighbours: it is when the whole run is training, as a peer's first
    step is after the rendezvous of all ranks."""
    starts = []
    for rank, (csv_path, json_path) in node_files(run_dir).items():
        offset = qgossip_offset(read_json(json_path), launch_unix)
        rows = read_csv_rows(csv_path)
        if offset is None or not rows:
            return None
        first = rows[0]
        wall = _num(first.get("wall_s"))
        spent = [_num(first.get(k)) for k in ("compute_s", "codec_s", "comm_s")]
        if wall is None or None in spent:
            return None
        starts.append(offset + wall - sum(spent) - (_num(first.get("transfer_s")) or 0.0))
    return max(starts) if starts else None


def curve_peer(run_dir):
    """Rank 0's evaluations: [(time from launch, epoch, accuracy, step)]."""
    path = os.path.join(run_dir, "node-0.csv")
    points = []
    for row in read_csv_rows(path):
        acc, wall = _num(row.get("test_acc")), _num(row.get("wall_s"))
        if acc is None or wall is None:
            continue
        points.append((wall, _num(row.get("epoch")), acc, int(_num(row.get("iteration")) or 0)))
    return points, ([] if points else [f"no evaluation rows in {path}"])


def time_to(points, target, cap_s=None):
    """(time, epoch) of the first point with accuracy >= target (within cap_s when given), else None."""
    for t, epoch, acc, _ in points:
        if cap_s is not None and t > cap_s:
            return None
        if acc >= target - 1e-12:
            return t, epoch
    return None


def mean(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def run_metrics(kind, run_dir, targets, cap_s, params_hint=None):
    """Everything the tables need about one finished run (a dict), from its files alone."""
    stats = read_json(os.path.join(run_dir, "cluster.json")) or {}
    record = read_json(os.path.join(run_dir, "tta-run.json")) or {}
    launch = _num(stats.get("launch_unix_s")) if stats else None
    if launch is None:
        launch = _num(record.get("launch_unix_s"))
    if kind == "qgossip":
        points, notes = curve_qgossip(run_dir, launch)
    else:
        points, notes = curve_peer(run_dir)
    summaries = [read_json(j) for _, (_, j) in node_files(run_dir).items()]
    summaries = [s for s in summaries if s]
    epochs = mean([_num(s.get("epoch")) for s in summaries])
    sent = mean([_num(s.get("bytes_sent")) for s in summaries])
    m = {"points": points, "notes": notes, "ttas": {}, "epoch_last": epochs,
         "bytes_per_epoch": sent / epochs if sent is not None and epochs else None,
         "params": params_hint, "final_acc": points[-1][2] if points else None,
         "status": record.get("status", "not run"), "error": record.get("error", ""),
         "load": {k: _first(record.get(f"loadavg_{k}")) for k in ("start", "end")}}
    for target in targets:
        m["ttas"][target] = time_to(points, target, cap_s)
    s0 = next((s for s in summaries if s.get("rank") == 0), None) or {}
    if kind != "qgossip":
        m["params"] = s0.get("params") or params_hint
    # Start-up: launch to the first training step (peers: rank 0's first_step_s, after the rendezvous of
    # all ranks); qgossip: launch to the last node's start of round 1, from the nodes' first CSV rows.
    m["startup_s"] = _num(s0.get("first_step_s")) if kind != "qgossip" else qgossip_startup(run_dir, launch)
    # Epoch time, the same way for every system: between the first and the last evaluation.
    first, last = (points[0], points[-1]) if len(points) >= 2 else (None, None)
    m["epoch_time_s"] = ((last[0] - first[0]) / (last[1] - first[1])
                         if first and first[1] is not None and last[1] is not None and last[1] > first[1] else None)
    ranks = stats.get("ranks") or []
    tx = [_num(r.get("tx_bytes")) for r in ranks]
    m["wire_bytes_per_epoch"] = mean(tx) / epochs if tx and None not in tx and epochs else None
    m["tbf_dropped"] = sum(int(r.get("tbf_dropped") or 0) for r in ranks) if ranks else None
    return m


# ---- the comparison --------------------------------------------------------------------------


def best_of(runs, kind, target):
    """(time, label) of the fastest run of this kind to reach target, or None."""
    hits = [(r["m"]["ttas"][target][0], r["label"]) for r in runs if r["kind"] == kind and r["m"]["ttas"].get(target)]
    return min(hits) if hits else None


def fmt_s(s):
    if s is None:
        return "–"
    return f"{s:.1f} s" if s < 100 else f"{s:.0f} s"


def fmt_tta(tta, cap_s, m=None):
    """'12.3 s (ep 4)', or why the target was not reached: the cap, or all epochs run without it."""
    if tta is None:
        if m and m.get("status") == "epochs" and m.get("epoch_last"):
            return f"not in {m['epoch_last']:.3g} ep"
        if m and m.get("status") in ("failed", "not run"):
            return "–"
        return f"> {cap_s:g} s" if cap_s else "not reached"
    return f"{fmt_s(tta[0])} (ep {tta[1]:.3g})"


def fmt_ratio(tta, best):
    if tta is None or best is None:
        return "–"
    return f"{tta[0] / best[0]:.2f}"


def fmt_mb(b):
    return "–" if b is None else f"{b / 1e6:.2f}"


def load_note(runs):
    """' 1-min load average as the runs started: median M (min-max).' or '' when none was recorded."""
    loads = sorted(r["m"]["load"]["start"] for r in runs if r["m"].get("load", {}).get("start") is not None)
    if not loads:
        return ""
    mid = len(loads) // 2
    median = loads[mid] if len(loads) % 2 else (loads[mid - 1] + loads[mid]) / 2
    return f" Load average (1 min) as the runs started: median {median:.1f} ({loads[0]:.1f}–{loads[-1]:.1f})."


def table(runs, targets, cap_s):
    """Markdown table of one (link, node count): runs = [{label, kind, m}]."""
    best = {(k, t): best_of(runs, k, t) for k in ("ddp", "diloco") for t in targets}
    tt = " / ".join(f"{t:g}" for t in targets)
    head = (["system"] + [f"time to {t:g} (epoch)" for t in targets] +
            [f"÷ DDP best ({tt})", f"÷ DiLoCo best ({tt})", "start-up", "epoch time",
             "MB/rank/epoch (algorithm)", "MB/rank/epoch (wire)", "params", "last acc", "stopped"])
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in runs:
        m = r["m"]
        cells = [r["label"].replace("|", "\\|")]
        cells += [fmt_tta(m["ttas"].get(t), cap_s, m) for t in targets]
        for k in ("ddp", "diloco"):
            cells.append(" / ".join(fmt_ratio(m["ttas"].get(t), best[(k, t)]) for t in targets))
        cells += [fmt_s(m.get("startup_s")), fmt_s(m.get("epoch_time_s")), fmt_mb(m.get("bytes_per_epoch")),
                  fmt_mb(m.get("wire_bytes_per_epoch")), f"{m['params']:,}" if m.get("params") else "–",
                  f"{m['final_acc']:.4f}" if m.get("final_acc") is not None else "–",
                  m.get("status", "") + (f": {m['error'][:60]}" if m.get("error") else "")]
        out.append("| " + " | ".join(cells) + " |")
    lines = []
    for k, name in (("ddp", "DDP"), ("diloco", "DiLoCo")):
        bests = [f"{t:g}: {b[1]} ({fmt_s(b[0])})" for t in targets if (b := best[(k, t)])]
        if bests:
            lines.append(f"{name} best per target — " + "; ".join(bests) + ".")
    return "\n".join(out) + "\n\n" + ("\n".join(lines) + "\n" if lines else "")


def draw_figure(groups, path, title, targets):
    """groups: {(n, link label): [{label, kind, m, highlight}]}; one panel per link, a row per n."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ns = sorted({n for n, _ in groups})
    links = list(dict.fromkeys(link for _, link in groups))
    fig, axs = plt.subplots(len(ns), len(links), figsize=(max(7.0, 5.2 * len(links)), 4.4 * len(ns) + 0.6),
                            squeeze=False)
    labels = list(dict.fromkeys(r["label"] for runs in groups.values() for r in runs))
    cmap = plt.get_cmap("tab10" if len(labels) <= 10 else "tab20")
    colours = {label: cmap(i % cmap.N) for i, label in enumerate(labels)}
    lo = min((p[2] for runs in groups.values() for r in runs for p in r["m"]["points"]), default=0.7)
    for i, n in enumerate(ns):
        for j, link in enumerate(links):
            ax = axs[i][j]
            for r in groups.get((n, link), []):
                pts = r["m"]["points"]
                if not pts:
                    continue
                strong = r.get("highlight", True)
                ax.plot([p[0] for p in pts], [p[2] for p in pts], marker="." if strong else None,
                        linewidth=1.8 if strong else 0.8, alpha=1.0 if strong else 0.35, color=colours[r["label"]],
                        label=r["label"] if strong else None)
            for t in targets:
                ax.axhline(t, color="grey", linewidth=0.6, linestyle=":")
            ax.set_title(f"{link}, n = {n}")
            ax.set_xlabel("wall time from launch (s)")
            ax.set_ylabel("test accuracy (global model; qgossip: mean of nodes)")
            ax.set_ylim(max(lo, min(targets) - 0.12), max(targets) + 0.02)
            ax.grid(True, alpha=0.3)
            handles, _ = ax.get_legend_handles_labels()
            if handles:
                ax.legend(fontsize=7, loc="lower right")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
