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
LAST node to log the row. Asynchronous gossip (train.max_staleness in run.json's config), where nodes
run at their own pace and a slow one evaluates at other iterations (or stops with its neighbours
before its next evaluation): at each evaluation any node logs, once every node has logged one, the
mean over the nodes of their latest accuracies, at that time (the epoch: the furthest node's). Time
to a target: the first evaluation whose accuracy is >= the target.

Two times to each target, the same definitions for every system:
  from launch    the evaluation's time on the launch clock (start-up included);
  training only  that time less the start of training: when the LAST rank began its first round (its
                 first optimizer step), after its start-up and the meeting of the ranks. Peers: the
                 largest first_step_s of the ranks' summaries; qgossip: qgossip_startup below.
                 Asynchronous gossip waits for no neighbour, not even one still starting up, so
                 training begins when the FIRST node began its first round (never later: a node
                 that trains while another starts up is training).
A cell (a system on a link at a node count) is run `repeats` times; it reports the median over its
ended runs (a run that did not reach a target counts as slower than any that did) and the range of
the runs that reached it.
"""
import collections
import csv
import json
import math
import os
import re


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
    if asynchronous(run_dir):
        return latest_means(per_node), notes
    common = set.intersection(*(set(r) for r in per_node.values())) if per_node else set()
    points = []
    for it in sorted(common):
        entries = [per_node[r][it] for r in per_node]
        points.append((max(e[0] for e in entries), entries[0][1], sum(e[2] for e in entries) / len(entries), it))
    return points, notes


def asynchronous(run_dir):
    """Whether the run's config (run.json, written by rank 0) sets train.max_staleness above 0."""
    config = (read_json(os.path.join(run_dir, "run.json")) or {}).get("config_yaml", "")
    m = re.search(r"^\s*max_staleness:\s*(\S+)", config, re.MULTILINE)
    return bool(m) and m.group(1) != "0"


def latest_means(per_node):
    """Asynchronous runs: [(time, epoch, mean accuracy, iteration)] at each node's evaluation, the
    mean over the nodes of their latest accuracies once every node has one (epoch and iteration: the
    furthest node's)."""
    events = sorted((t, rank, epoch, acc, it) for rank, rows in per_node.items() for it, (t, epoch, acc) in rows.items())
    latest, points = {}, []
    for t, rank, epoch, acc, it in events:
        latest[rank] = (epoch, acc, it)
        if len(latest) == len(per_node):
            points.append((t, max(e for e, _, _ in latest.values()), sum(a for _, a, _ in latest.values()) / len(latest),
                           max(i for _, _, i in latest.values())))
    return points


def qgossip_startup(run_dir, launch_unix):
    """Seconds from the launch until the LAST node began its first round, or in an asynchronous run the
    FIRST node (None when it cannot be told).

    A node logs no start-up time, so it is taken from its first CSV row: that row's wall_s (node clock)
    minus the seconds the node's rounds had spent until then (compute_s + codec_s + comm_s +
    transfer_s, cumulative) is when the node entered round 1, after its setup (data, model, transport,
    the peers' connections); the launch-clock offset (qgossip_offset) puts it on the launch's clock.
    The first row's own evaluation, when it has one, and untimed per-round bookkeeping are counted as
    start-up (tens of milliseconds for the MLP's 10,000 test images). The last node is taken because
    the first round needs the neighbours: it is when the whole run is training, as a peer's first
    step is after the rendezvous of all ranks. Asynchronous rounds need nobody: the first node to
    begin one is training already."""
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
    if not starts:
        return None
    return min(starts) if asynchronous(run_dir) else max(starts)


def peer_startup(run_dir):
    """Seconds from the launch until the LAST rank began its first optimizer step: the largest
    first_step_s of the ranks' summaries (each written after the rank's data, the gloo rendezvous and,
    for DDP, the broadcast of the initial model); None unless every rank's summary has it."""
    starts = [_num((read_json(j) or {}).get("first_step_s")) for _, (_, j) in node_files(run_dir).items()]
    return max(starts) if starts and None not in starts else None


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
    # Start-up: launch to the start of training, the last rank's first round (peers: its first optimizer
    # step; qgossip: its start of round 1, from the nodes' first CSV rows); training only = the rest.
    m["startup_s"] = peer_startup(run_dir) if kind != "qgossip" else qgossip_startup(run_dir, launch)
    m["train_ttas"] = None if m["startup_s"] is None else \
        {t: None if tta is None else (tta[0] - m["startup_s"], tta[1]) for t, tta in m["ttas"].items()}
    # Epoch time, the same way for every system: between the first and the last evaluation.
    first, last = (points[0], points[-1]) if len(points) >= 2 else (None, None)
    m["epoch_time_s"] = ((last[0] - first[0]) / (last[1] - first[1])
                         if first and first[1] is not None and last[1] is not None and last[1] > first[1] else None)
    ranks = stats.get("ranks") or []
    tx = [_num(r.get("tx_bytes")) for r in ranks]
    m["wire_bytes_per_epoch"] = mean(tx) / epochs if tx and None not in tx and epochs else None
    m["tbf_dropped"] = sum(int(r.get("tbf_dropped") or 0) for r in ranks) if ranks else None
    return m


# ---- a cell: the repeats of one system on one link at one node count -----------------------------

ENDED = ("target", "time_cap", "epochs")
NAMES = {"ddp": "DDP", "diloco": "DiLoCo"}


def median(values):
    """The median of a list of numbers (math.inf allowed), None when it is empty."""
    v = sorted(values)
    if not v:
        return None
    mid = len(v) // 2
    return v[mid] if len(v) % 2 else (v[mid - 1] + v[mid]) / 2


def spread(ttas):
    """One (time, epoch) or None per run -> the median time (a run that missed the target counts as
    slower than any that reached it: math.inf), the range and number of the runs that reached it, and
    their median epoch."""
    hits = [t for t in ttas if t]
    return {"median": median([t[0] if t else math.inf for t in ttas]), "runs": len(ttas), "reached": len(hits),
            "lo": min((t[0] for t in hits), default=None), "hi": max((t[0] for t in hits), default=None),
            "epoch": median([t[1] for t in hits if t[1] is not None])}


def representative(ms, targets):
    """The run in the middle of a cell, ranked by time to the highest target, then to the next."""
    def key(m):
        return tuple(m["ttas"][t][0] if m["ttas"].get(t) else math.inf for t in reversed(targets))

    ranked = sorted(ms, key=key)
    return ranked[(len(ranked) - 1) // 2] if ranked else None


def cell_metrics(ms, targets, repeats):
    """A cell's figures from its runs' run_metrics: medians over the runs that ended (target, time cap
    or epochs); a failed run is counted in `statuses` and its error kept, not timed."""
    done = [m for m in ms if m["status"] in ENDED]
    timed = [m for m in done if m.get("train_ttas") is not None]  # those whose start of training is known
    mid = representative(done, targets) or {}
    c = {"runs": len(done), "repeats": repeats, "statuses": collections.Counter(m["status"] for m in ms),
         "ttas": {t: spread([m["ttas"].get(t) for m in done]) for t in targets},
         "train_ttas": {t: spread([m["train_ttas"].get(t) for m in timed]) for t in targets},
         "points": mid.get("points", []), "points_startup_s": mid.get("startup_s"),
         "params": next((m["params"] for m in ms if m.get("params")), None),
         "errors": sorted({m["error"] for m in ms if m.get("error")}),
         "notes": sorted({n for m in ms for n in m["notes"]}),
         "all_epochs": bool(done) and all(m["status"] == "epochs" for m in done)}
    for k in ("startup_s", "epoch_time_s", "bytes_per_epoch", "wire_bytes_per_epoch", "final_acc", "epoch_last"):
        c[k] = median([m[k] for m in done if m.get(k) is not None])
    return c


# ---- the comparison --------------------------------------------------------------------------


def best_of(cells, kind, target, key="ttas"):
    """(median time, label) of the cell of this kind fastest to the target (key: ttas from the launch,
    train_ttas training only), or None."""
    hits = [(c["m"][key][target]["median"], c["label"]) for c in cells
            if c["kind"] == kind and c["m"][key][target]["runs"] and c["m"][key][target]["median"] != math.inf]
    return min(hits) if hits else None


def fmt_num(s):
    return f"{s:.1f}" if s < 100 else f"{s:.0f}"


def fmt_s(s):
    return "–" if s is None else fmt_num(s) + " s"


def fmt_spread(sp, c, cap_s, with_epoch=True):
    """'12.3 s (11.8–14.0, ep 7)': the median, the range of the runs that reached the target, how many
    did when not all, the median epoch; or why the target was missed: the cap, or every epoch run."""
    if not sp["runs"]:
        return "–"
    if sp["median"] == math.inf:
        missed = (f"not in {c['epoch_last']:.3g} ep" if c["all_epochs"] and c.get("epoch_last") else
                  f"> {cap_s:g} s" if cap_s else "not reached")
        return missed + (f" ({sp['reached']} of {sp['runs']} reached)" if sp["reached"] else "")
    inner = [f"{fmt_num(sp['lo'])}–{fmt_num(sp['hi'])}"] if sp["runs"] > 1 else []
    if sp["reached"] < sp["runs"]:
        inner.append(f"{sp['reached']} of {sp['runs']}")
    if with_epoch and sp["epoch"] is not None:
        inner.append(f"ep {sp['epoch']:.3g}")
    return fmt_s(sp["median"]) + (f" ({', '.join(inner)})" if inner else "")


def fmt_ratio(sp, best):
    if not sp["runs"] or sp["median"] == math.inf or best is None:
        return "–"
    return f"{sp['median'] / best[0]:.2f}"


def fmt_mb(b):
    return "–" if b is None else f"{b / 1e6:.2f}"


def fmt_stopped(c):
    counts = ", ".join(f"{s} ×{k}" if k > 1 else s for s, k in c["statuses"].items())
    return counts + (f": {'; '.join(c['errors'])[:60]}" if c["errors"] else "")


def load_note(runs):
    """' 1-min load average as the runs started: median M (min-max).' or '' when none was recorded."""
    loads = sorted(r["m"]["load"]["start"] for r in runs if r["m"].get("load", {}).get("start") is not None)
    if not loads:
        return ""
    return f" Load average (1 min) as the runs started: median {median(loads):.1f} ({loads[0]:.1f}–{loads[-1]:.1f})."


def table_head(targets, kinds):
    tt = " / ".join(f"{t:g}" for t in targets)
    head = ["system", "runs"] + [f"to {t:g}, from launch" for t in targets] + \
        [f"to {t:g}, training only" for t in targets]
    for k in kinds:
        head += [f"÷ {NAMES[k]} best, from launch ({tt})", f"÷ {NAMES[k]} best, training only ({tt})"]
    return head + ["start-up", "epoch time", "MB/rank/epoch (algorithm)", "MB/rank/epoch (wire)", "params",
                   "last acc", "stopped"]


def table_row(cell, targets, cap_s, best, kinds):
    m = cell["m"]
    cells = [cell["label"].replace("|", "\\|"), f"{m['runs']}/{m['repeats']}"]
    cells += [fmt_spread(m["ttas"][t], m, cap_s) for t in targets]
    cells += [fmt_spread(m["train_ttas"][t], m, cap_s, with_epoch=False) for t in targets]
    for k in kinds:
        for key in ("ttas", "train_ttas"):
            cells.append(" / ".join(fmt_ratio(m[key][t], best[(k, key, t)]) for t in targets))
    return cells + [fmt_s(m.get("startup_s")), fmt_s(m.get("epoch_time_s")), fmt_mb(m.get("bytes_per_epoch")),
                    fmt_mb(m.get("wire_bytes_per_epoch")), f"{m['params']:,}" if m.get("params") else "–",
                    f"{m['final_acc']:.4f}" if m.get("final_acc") is not None else "–", fmt_stopped(m)]


def table(cells, targets, cap_s):
    """Markdown table of one (link, node count): cells = [{label, kind, m: cell_metrics}], a row each,
    with ratios to the best DDP and DiLoCo cells (medians) where the table has such cells."""
    best = {(k, key, t): best_of(cells, k, t, key) for k in NAMES for key in ("ttas", "train_ttas") for t in targets}
    kinds = [k for k in NAMES if any(best[(k, "ttas", t)] for t in targets)]
    head = table_head(targets, kinds)
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(table_row(c, targets, cap_s, best, kinds)) + " |" for c in cells]
    lines = []
    for k in kinds:
        for key, how in (("ttas", "from launch"), ("train_ttas", "training only")):
            bests = [f"{t:g}: {b[1]} ({fmt_s(b[0])})" for t in targets if (b := best[(k, key, t)])]
            if bests:
                lines.append(f"{NAMES[k]} best per target (median), {how} — " + "; ".join(bests) + ".")
    return "\n".join(out) + "\n\n" + ("\n".join(lines) + "\n" if lines else "")


def draw_figure(groups, path, title, targets, training_only=False):
    """groups: {(n, link label): [{label, kind, m: cell_metrics, highlight}]}; one panel per link, a row
    per n; each cell's middle run (m["points"]), from the launch or (training_only) from the start of
    training of that run (a run whose start is not known is left out)."""
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
    accs = [p[2] for runs in groups.values() for r in runs for p in r["m"]["points"]]
    # From a little below the lowest target (or the lowest point, when higher) to above every point.
    bottom = min(max(min(accs, default=0.7), min(targets) - 0.12), min(targets) - 0.02)
    top = max(accs + list(targets)) + 0.01
    for i, n in enumerate(ns):
        for j, link in enumerate(links):
            ax = axs[i][j]
            for r in groups.get((n, link), []):
                pts, shift = r["m"]["points"], r["m"].get("points_startup_s") if training_only else 0.0
                if not pts or shift is None:
                    continue
                strong = r.get("highlight", True)
                ax.plot([p[0] - shift for p in pts], [p[2] for p in pts], marker="." if strong else None,
                        linewidth=1.8 if strong else 0.8, alpha=1.0 if strong else 0.35, color=colours[r["label"]],
                        label=r["label"] if strong else None)
            for t in targets:
                ax.axhline(t, color="grey", linewidth=0.6, linestyle=":")
            ax.set_title(f"{link}, n = {n}")
            ax.set_xlabel("training time: from the last rank's first round (s)" if training_only else
                          "wall time from launch (s)")
            ax.set_ylabel("test accuracy (global model; qgossip: mean of nodes)")
            ax.set_ylim(bottom, top)
            ax.grid(True, alpha=0.3)
            handles, _ = ax.get_legend_handles_labels()
            if handles:
                ax.legend(fontsize=7, loc="lower right")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
