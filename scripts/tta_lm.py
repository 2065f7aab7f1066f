#!/usr/bin/python3
"""The language-model race (issue 43): time to a validation loss for qgossip's Python nodes
(examples/python/lm.py) and the PyTorch peers in the same loop (bench/peers/lm_peer.py: DDP, DiLoCo,
Streaming DiLoCo), side by side, on scripts/cluster.sh's shaped namespaces. scripts/tta.py hands a sweep
whose `workload:` is `lm` to this file; run it the same way:

    scripts/tta.py configs/tta/lm.yaml [--build DIR] [--out DIR] [--only PATTERN] [--local] [--dry-run]
                                       [--report-only]

The sweep file (YAML):
  name: lm                            # the output directory OUT/<name>/
  workload: lm
  description: free text
  nodes: 8                            # ranks
  size: tiny                          # lm.py --size; and its --steps, --batch, --context, --lr, --warmup,
  steps: 192                          #   --clip: every system's recipe, the same for all (the peers take
  batch: 16                           #   lm.py's model, initialization, data order per rank and AdamW)
  context: 64
  eval_every: 32                      # every rank evaluates its model every this many steps
  targets: [2.6, 2.4]                 # validation losses timed (fixed before the runs)
  cap_s: 600                          # a run still going at this many seconds from launch is stopped
  repeats: 3
  prefix: lmrace                      # scripts/cluster.sh --prefix and --subnet
  subnet: 10.81.0
  links:                              # as scripts/tta.py: {label, rate} or {label, scenario}; cap_s
    - {label: uniform, scenario: ../scenarios/lm-uniform.yaml}
  systems:                            # a list value makes a grid (one cell each), as scripts/tta.py
    - {label: DDP, kind: ddp}
    - {label: DiLoCo, kind: diloco, H: [16, 32], outer_lr: 0.7, outer_momentum: 0.9}
    - {label: Streaming DiLoCo, kind: streaming, H: 16, fragments: 4, delay: 4, alpha: 0.5}
    - {label: qgossip CHOCO, kind: qgossip, config: ../../examples/python/lm.yaml, set: [...],
       eval_mix: 0, final_mix: 8}     # lm.py --eval-mix and --mix-rounds; peer: true makes a qgossip
                                      #   row a peer (÷ peer divides by the fastest peer cell)
A system may say `links: [label, ...]` to run on those links only.

Order: link after link; on each, the whole set of cells once per repeat (interleaved: load from other
work hits every system alike). A run is OUT/<name>/<cell>-<link>-r<k>/, resumable as in scripts/tta.py.

Every rank's curve: its validation loss (lm.py's 64 fixed held-out windows) at steps 0, eval_every, ...
and at the end, each with its Unix time. A point of the run is a step that every rank evaluated: the
worst rank's loss (the model a user may be handed), the mean rank's, and the time the last rank logged
it. Time to a target: the first point at which the worst (and, beside it, the mean) rank is at or below
it, from launch (scripts/cluster.sh's launch time) and training only (from when the last rank took its
first step, after the rendezvous). qgossip also reports its ranks' average model at the end.

Writes OUT/<name>/runs.csv (a row per run), cells.csv (medians and ranges), curves.csv, lm.md (a table
per link, ratios to the strongest peer) and figures/val_loss_vs_time.png. Needs root for cluster.sh;
--local runs everything on loopback, unshaped (links with a rate or a scenario are refused).
Exit: 0 every run ended, 1 some run failed, 2 bad sweep file or arguments, 130 interrupted.
"""
import csv
import itertools
import json
import os
import shlex
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import sweep_file  # noqa: E402
import tta  # noqa: E402
import tta_metrics  # noqa: E402

PYTHON = "/usr/bin/python3"
LM = os.path.join(ROOT, "examples", "python", "lm.py")
PEER = os.path.join(ROOT, "bench", "peers", "lm_peer.py")
SWEEP_KEYS = ("name", "workload", "description", "nodes", "size", "steps", "batch", "context", "lr", "warmup",
              "clip", "eval_every", "targets", "cap_s", "repeats", "prefix", "subnet", "links", "scenario",
              "systems")
RECIPE = {"size": "tiny", "steps": 192, "batch": 16, "context": 64, "lr": 3e-3, "warmup": 20, "clip": 1.0}
KIND_KEYS = {"ddp": (), "diloco": ("H", "outer_lr", "outer_momentum"),
             "streaming": ("H", "outer_lr", "outer_momentum", "fragments", "delay", "alpha"),
             "qgossip": ("config", "set", "eval_mix", "final_mix", "peer")}
PEER_FLAGS = {"H": "--local-steps", "outer_lr": "--outer-lr", "outer_momentum": "--outer-momentum",
              "fragments": "--fragments", "delay": "--delay", "alpha": "--alpha"}
ENDED = ("ok", "time_cap")
SweepError = tta.SweepError


# ---- the sweep ------------------------------------------------------------------------------------


def expand(entry, where):
    """One system entry -> its cells: a grid over every peer key given as a list."""
    kind, label = entry.get("kind"), str(entry.get("label") or "").strip()
    if kind not in KIND_KEYS:
        raise SweepError(f"{where}: kind: expected {', '.join(KIND_KEYS)}, not {kind!r}")
    if not label:
        raise SweepError(f"{where}: a non-empty label is required")
    for k in entry:
        if k not in ("label", "kind", "links") + KIND_KEYS[kind]:
            raise SweepError(f"{where}: unknown key '{k}' for kind {kind} (expected "
                             f"{', '.join(('label', 'links') + KIND_KEYS[kind])})")
    if kind == "qgossip":
        if "config" not in entry:
            raise SweepError(f"{where}: a qgossip entry needs config: RUN.yaml")
        sets = entry.get("set") or []
        if not isinstance(sets, list) or not all(isinstance(s, str) and "=" in s for s in sets):
            raise SweepError(f"{where}: set: expected a list of key=value strings")
        mixes = {k: entry.get(k, 0) for k in ("eval_mix", "final_mix")}
        for k, v in mixes.items():
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise SweepError(f"{where}: {k}: expected a whole number of rounds >= 0, not {v!r}")
        if not isinstance(entry.get("peer", False), bool):
            raise SweepError(f"{where}: peer: expected true or false")
        return [dict(label=label, family=label, kind=kind, config=entry["config"], set=sets, options=mixes,
                     links=entry.get("links"), peer=entry.get("peer", False))]
    grid = {k: tta.as_list(entry[k]) for k in KIND_KEYS[kind] if k in entry}
    for k, values in grid.items():
        for v in values:
            whole = k in ("H", "fragments", "delay")
            if isinstance(v, bool) or not isinstance(v, int if whole else (int, float)) or v < 0:
                raise SweepError(f"{where}: {k}: {v!r} is not a valid value (a {'whole ' if whole else ''}"
                                 "number >= 0)")
    varying = [k for k, values in grid.items() if len(values) > 1]
    cells = []
    for combo in itertools.product(*grid.values()):
        options = dict(zip(grid, combo))
        name = label + "".join(f" {k}={tta.fmt_value(options[k])}" for k in varying)
        cells.append(dict(label=name, family=label, kind=kind, options=options, links=entry.get("links"), peer=True))
    return cells


def load(path):
    doc = sweep_file.read_mapping(path, SWEEP_KEYS, ("name", "systems"), SweepError)
    name = str(doc["name"])
    if tta.sanitize(name) != name:
        raise SweepError(f"{path}: name '{name}' must be a plain directory name, e.g. '{tta.sanitize(name)}'")
    recipe = {k: doc.get(k, v) for k, v in RECIPE.items()}
    for k, v in recipe.items():
        if k != "size" and (isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0):
            raise SweepError(f"{path}: {k}: expected a number > 0, not {v!r}")
    nodes, eval_every = doc.get("nodes", 8), doc.get("eval_every", 32)
    if not isinstance(nodes, int) or not 2 <= nodes <= 253:
        raise SweepError(f"{path}: nodes: expected a rank count 2..253, not {nodes!r}")
    if not isinstance(eval_every, int) or eval_every < 1:
        raise SweepError(f"{path}: eval_every: expected a whole number of steps >= 1, not {eval_every!r}")
    targets = sorted((float(t) for t in tta.as_list(doc.get("targets", []))), reverse=True)
    if not targets or not all(t > 0 for t in targets):
        raise SweepError(f"{path}: targets: expected validation losses > 0, e.g. [2.6, 2.4]")
    repeats, cap_s = doc.get("repeats", 3), doc.get("cap_s", 600)
    if not isinstance(repeats, int) or isinstance(repeats, bool) or repeats < 1:
        raise SweepError(f"{path}: repeats: expected a whole number >= 1, not {repeats!r}")
    if isinstance(cap_s, bool) or not isinstance(cap_s, (int, float)) or cap_s <= 0:
        raise SweepError(f"{path}: cap_s: expected seconds > 0, not {cap_s!r}")
    links = tta.check_links(path, doc.get("links") or [{"label": "unshaped"}], doc.get("scenario"))
    systems = tta.systems_of(path, doc["systems"], expand, links)
    labels = [s["label"] for s in systems]
    if len(set(labels)) != len(labels):
        raise SweepError(f"{path}: systems: a label appears twice; make them differ")
    return dict(name=name, description=str(doc.get("description") or "").strip(), file=os.path.abspath(path),
                nodes=nodes, recipe=recipe, eval_every=eval_every, targets=targets, cap_s=float(cap_s),
                repeats=repeats, links=links, systems=systems, prefix=str(doc.get("prefix", "lmrace")),
                subnet=str(doc.get("subnet", "10.81.0")))


def plan(sweep, out):
    runs = []
    for link in sweep["links"]:
        for repeat in range(1, sweep["repeats"] + 1):
            for s in sweep["systems"]:
                if s["links"] is not None and link["label"] not in s["links"]:
                    continue
                cell = tta.sanitize(f"{s['label']}-{link['label']}")
                name = f"{cell}-r{repeat}"
                runs.append(dict(name=name, cell=cell, repeat=repeat, system=s, link=link, n=sweep["nodes"],
                                 dir=os.path.join(out, name)))
    return runs


# ---- the commands ---------------------------------------------------------------------------------


def recipe_args(sweep):
    args = []
    for k, v in sweep["recipe"].items():
        args += [f"--{k}", str(v)]
    return args + ["--eval-every", str(sweep["eval_every"])]


def qgossip_command(sweep, run, qgossip, local):
    s = run["system"]
    lm = [PYTHON, LM] + recipe_args(sweep) + ["--eval-mix", str(s["options"]["eval_mix"]),
                                              "--mix-rounds", str(s["options"]["final_mix"]), "--save-model"]
    tail = [s["config"]]
    for x in s["set"] + ["name=run", f"output.dir={run['dir']}"]:
        tail += ["--set", x]
    tail += ["--exec", shlex.join(lm), "--plain", "--no-plot"]
    if local:
        return [qgossip, "launch"] + tail
    return tta.cluster_prefix(sweep, run) + ["--qgossip", qgossip] + tail


def peer_command(sweep, run, local):
    s = run["system"]
    cmd = [PYTHON, PEER, "--mode", s["kind"], "--world", str(run["n"]), "--out", run["dir"]] + recipe_args(sweep)
    for k, v in s["options"].items():
        cmd += [PEER_FLAGS[k], str(v)]
    if local:
        return cmd  # one process per rank: --rank, --master-port added at run time
    return tta.cluster_prefix(sweep, run) + ["--ranks", str(run["n"]), "--log-dir", run["dir"], "--"] + cmd + \
        ["--rank", "{rank}", "--master-addr", "{master}", "--master-port", "29500"]


def check_topologies(sweep, qgossip):
    """Each qgossip system's config (with its set) holds the sweep's `nodes` ranks: asked once a system."""
    for s in sweep["systems"]:
        if s["kind"] == "qgossip" and os.access(qgossip, os.X_OK):
            n = tta.config_n(qgossip, s["config"], s["set"])
            if n != sweep["nodes"]:
                raise SweepError(f"system '{s['label']}': {s['config']}'s topology (with its set) has {n} nodes, "
                                 f"the sweep's nodes {sweep['nodes']}")


def command(sweep, run, qgossip, local):
    if run["system"]["kind"] == "qgossip":
        return qgossip_command(sweep, run, qgossip, local)
    return peer_command(sweep, run, local)


def execute(sweep, run, cmd, local, build):
    """Runs one run; returns (exit code, stopped at the cap, launch Unix time)."""
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=os.path.join(build, "python"),
               PATH=build + os.pathsep + os.environ.get("PATH", ""))
    launch, procs = time.time(), []
    logs = [open(os.path.join(run["dir"], "launch.log"), "w")]
    if local and run["system"]["kind"] != "qgossip":
        port = tta.free_port()
        for r in range(run["n"]):
            logs.append(open(os.path.join(run["dir"], f"rank-{r}.log"), "w"))
            procs.append(subprocess.Popen(cmd + ["--rank", str(r), "--master-port", str(port)], stdout=logs[-1],
                                          stderr=subprocess.STDOUT, env=env))
    else:
        procs.append(subprocess.Popen(cmd, stdout=logs[0], stderr=subprocess.STDOUT, env=env, cwd=ROOT))
    cap, capped = tta.cap_of(sweep, run["link"]), False
    try:
        while any(p.poll() is None for p in procs):
            time.sleep(0.5)
            elapsed = time.time() - launch
            if not capped and elapsed > cap:
                capped = True
                tta.stop(procs, signal.SIGTERM)
            elif capped and elapsed > cap + 60:
                tta.stop(procs, signal.SIGKILL)
    except KeyboardInterrupt:
        tta.stop(procs, signal.SIGTERM)
        for p in procs:
            p.wait()
        raise tta.Interrupted() from None
    codes = [p.wait() for p in procs]
    for f in logs:
        f.close()
    return next((c for c in codes if c != 0), 0), capped, launch


# ---- what a run measured --------------------------------------------------------------------------


def rank_files(run):
    """{rank: (result JSON or None, curve points)} of the run's ranks (qgossip writes into run/)."""
    base = os.path.join(run["dir"], "run") if run["system"]["kind"] == "qgossip" else run["dir"]
    out = {}
    for r in range(run["n"]):
        result = tta_metrics.read_json(os.path.join(base, f"lm-{r}.json"))
        points = []
        try:
            with open(os.path.join(base, f"lm-{r}.curve.jsonl")) as f:
                points = [json.loads(line) for line in f if line.strip()]
        except (OSError, ValueError):
            pass
        if result and result.get("curve"):
            points = result["curve"]
        out[r] = (result, points)
    return out


def average_model_loss(run, sweep):
    """The validation loss of the mean of the qgossip ranks' final models (lm-<rank>.pt), or None."""
    paths = [os.path.join(run["dir"], "run", f"lm-{r}.pt") for r in range(run["n"])]
    if not all(os.path.exists(p) for p in paths):
        return None
    import torch
    sys.path.insert(0, os.path.dirname(LM))
    from corpus import read_corpus
    from lm import SIZES, ByteLM, validation_loss
    states = [torch.load(p) for p in paths]
    mean = {k: sum(s[k].double() for s in states).div(len(states)).to(states[0][k].dtype) for k in states[0]}
    recipe = sweep["recipe"]
    model = ByteLM(recipe["context"], *SIZES[recipe["size"]])
    model.load_state_dict(mean)
    return validation_loss(model, read_corpus(None)[1], recipe["context"])


def measure(sweep, run, qgossip):
    record = tta_metrics.read_json(os.path.join(run["dir"], "lm-run.json")) or {}
    stats = tta_metrics.read_json(os.path.join(run["dir"], "cluster.json")) or {}
    launch = stats.get("launch_unix_s") or record.get("launch_unix_s")
    ranks = rank_files(run)
    results = [res for res, _ in ranks.values()]
    curves = [{p["step"]: p for p in pts} for _, pts in ranks.values()]
    steps = sorted(set.intersection(*(set(c) for c in curves))) if all(curves) else []
    # A rank stopped at the cap wrote no result: its step-0 evaluation, just before its first step, stands in.
    starts = [res["start_unix"] for res in results if res and "start_unix" in res] or \
        [c[0]["unix"] for c in curves if 0 in c]
    start = max(starts) if len(starts) == run["n"] else None
    points = []
    for step in steps:
        losses = [c[step]["val_loss"] for c in curves]
        points.append(dict(step=step, unix=max(c[step]["unix"] for c in curves), worst=max(losses),
                           mean=statistics.fmean(losses)))
    m = dict(status=record.get("status", "missing"), points=points, launch=launch, start=start,
             startup_s=start - launch if start and launch else None)
    for who in ("worst", "mean"):
        for t in sweep["targets"]:
            hit = next((p for p in points if p[who] <= t and p["step"] > 0), None)
            m[f"{who}_{t:g}"] = None if hit is None or launch is None else hit["unix"] - launch
            m[f"{who}_{t:g}_train"] = None if hit is None or start is None else hit["unix"] - start
    complete = all(results) and points and points[-1]["step"] == sweep["recipe"]["steps"]
    m["final_worst"] = points[-1]["worst"] if complete else None
    m["final_mean"] = points[-1]["mean"] if complete else None
    m["wall_s"] = max(r["end_unix"] for r in results) - launch if complete and launch else None
    m["train_s"] = max(r["train_s"] for r in results) if complete else None
    tx = [r.get("tx_bytes") for r in stats.get("ranks", [])]
    m["wire_mb"] = statistics.fmean(tx) / 1e6 if tx and None not in tx else None
    m["average_model"] = record.get("average_model")
    m["verify"] = record.get("verify")
    return m


def finish_record(sweep, run, qgossip, code, capped, launch):
    status = "time_cap" if capped else "ok" if code == 0 else "failed"
    record = dict(status=status, exit_code=code, launch_unix_s=launch, duration_s=round(time.time() - launch, 3),
                  loadavg=[round(x, 2) for x in os.getloadavg()])
    if run["system"]["kind"] == "qgossip" and status == "ok":
        v = subprocess.run([qgossip, "verify", os.path.join(run["dir"], "run")], capture_output=True, text=True)
        record["verify"] = "all equal" if v.returncode == 0 else (v.stdout + v.stderr).strip()[-300:]
        if v.returncode != 0:
            record["status"] = "failed"
        record["average_model"] = average_model_loss(run, sweep)
    return record


# ---- the report -----------------------------------------------------------------------------------


def median_of(values):
    """(median, lo, hi, reached) where None (not reached) counts as slower than any number."""
    got = sorted(v for v in values if v is not None)
    if not values:
        return None, None, None, 0
    ranked = got + [float("inf")] * (len(values) - len(got))
    mid = statistics.median_low(ranked) if len(ranked) % 2 == 0 else statistics.median(ranked)
    return (None if mid == float("inf") else mid), (got[0] if got else None), (got[-1] if got else None), len(got)


def cells_of(runs, measured):
    cells = {}
    for run in runs:
        m = measured.get(run["name"])
        if m and m["status"] in ENDED:
            cells.setdefault((run["link"]["label"], run["system"]["label"]), []).append((run, m))
    return cells


def fmt(v, digits=1):
    return "—" if v is None else f"{v:.{digits}f}"


def cell_row(sweep, label, items, best):
    ms = [m for _, m in items]
    row = [label, str(len(ms))]
    for t in sweep["targets"]:
        for key in (f"worst_{t:g}", f"worst_{t:g}_train", f"mean_{t:g}"):
            med, lo, hi, reached = median_of([m[key] for m in ms])
            row.append(fmt(med) + (f" [{fmt(lo)}–{fmt(hi)}]" if reached > 1 else "") +
                       (f" ({reached}/{len(ms)})" if reached < len(ms) else ""))
        ratio = None
        med = median_of([m[f"worst_{t:g}"] for m in ms])[0]
        if med is not None and best.get(t):
            ratio = med / best[t]
        row.append("—" if ratio is None else f"{ratio:.2f}×")
    for key, digits in (("final_worst", 3), ("final_mean", 3), ("average_model", 3), ("wall_s", 1), ("wire_mb", 1)):
        vals = [m[key] for m in ms if m[key] is not None]
        row.append(fmt(statistics.median(vals), digits) if vals else "—")
    return row


def report(sweep, out, runs, measured):
    cells = cells_of(runs, measured)
    md = [f"## The language-model race: {sweep['name']}", "", sweep["description"], "",
          f"{sweep['nodes']} ranks, lm.py --size {sweep['recipe']['size']}, {sweep['recipe']['steps']} steps of "
          f"{sweep['recipe']['batch']} windows of {sweep['recipe']['context']} bytes a rank; evaluated every "
          f"{sweep['eval_every']} steps. Times in seconds, the median of each cell's runs [their range] "
          "(a run that missed a target counts as slower than any that reached it; (k/n): k runs reached it). "
          "worst: the first evaluation at which every rank is at or below the target; mean: the ranks' mean. "
          "÷ peer: the worst-rank time from launch over the strongest peer's (the fastest cell on that link "
          "of DDP, DiLoCo, Streaming DiLoCo and the rows marked peer: DiLoCo through qgossip's quantized "
          "all-reduce). final: validation loss after the same tokens; avg model: the "
          "mean of qgossip's ranks' models. wall: launch to the last rank's end. MB: each rank's veth tx "
          "bytes (mean over ranks).", ""]
    head = ["system", "runs"]
    for t in sweep["targets"]:
        head += [f"worst ≤ {t:g}, launch", "training", f"mean ≤ {t:g}", "÷ peer"]
    head += ["final worst", "final mean", "avg model", "wall s", "MB/rank"]
    for link in sweep["links"]:
        here = [(k[1], v) for k, v in cells.items() if k[0] == link["label"]]
        if not here:
            continue
        best = {}
        for t in sweep["targets"]:
            peers = [median_of([m[f"worst_{t:g}"] for _, m in v])[0] for _, v in here if v[0][0]["system"]["peer"]]
            peers = [p for p in peers if p is not None]
            best[t] = min(peers) if peers else None
        md += [f"### {link['label']}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        md += ["| " + " | ".join(cell_row(sweep, label, v, best)) + " |" for label, v in here]
        md.append("")
    md += figure(sweep, out, runs, measured)
    path = os.path.join(out, "lm.md")
    with open(path, "w") as f:
        f.write("\n".join(md) + "\n")
    return path


def figure(sweep, out, runs, measured):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        return [f"(no figure: {e})"]
    links = [l for l in sweep["links"] if any(r["link"] is l and r["name"] in measured for r in runs)]
    if not links:
        return []
    fig, axes = plt.subplots(1, len(links), figsize=(6 * len(links), 4.5), squeeze=False)
    for ax, link in zip(axes[0], links):
        for s in sweep["systems"]:
            its = [(r, measured[r["name"]]) for r in runs if r["link"] is link and r["system"] is s
                   and r["name"] in measured and measured[r["name"]]["points"] and measured[r["name"]]["launch"]]
            if not its:
                continue
            its.sort(key=lambda x: x[1]["points"][-1]["unix"])
            _, m = its[len(its) // 2]
            xs = [p["unix"] - m["launch"] for p in m["points"]]
            ax.plot(xs, [p["worst"] for p in m["points"]], label=s["label"],
                    linestyle="-" if s["kind"] == "qgossip" else "--")
        for t in sweep["targets"]:
            ax.axhline(t, color="grey", linewidth=0.5)
        ax.set_ylim(min(sweep["targets"]) - 0.2, max(sweep["targets"]) + 0.7)  # the race, not the first drop
        ax.set_title(link["label"])
        ax.set_xlabel("wall time from launch (s)")
        ax.set_ylabel("worst rank's validation loss")
        ax.legend(fontsize=6)
    fig.suptitle(f"{sweep['name']}: the worst rank's validation loss (each cell's middle run)")
    os.makedirs(os.path.join(out, "figures"), exist_ok=True)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "figures", "val_loss_vs_time.png"), dpi=110)
    plt.close(fig)
    return ["![worst rank's validation loss vs wall time](figures/val_loss_vs_time.png)"]


def write_csvs(sweep, out, runs, measured):
    keys = [f"{w}_{t:g}{x}" for t in sweep["targets"] for w in ("worst", "mean") for x in ("", "_train")]
    keys += ["final_worst", "final_mean", "average_model", "wall_s", "train_s", "startup_s", "wire_mb", "verify"]
    with open(os.path.join(out, "runs.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["run", "cell", "repeat", "system", "kind", "link", "status"] + keys)
        for r in runs:
            m = measured.get(r["name"])
            if m:
                w.writerow([r["name"], r["cell"], r["repeat"], r["system"]["label"], r["system"]["kind"],
                            r["link"]["label"], m["status"]] + ["" if m[k] is None else m[k] for k in keys])
    with open(os.path.join(out, "curves.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["run", "system", "link", "step", "time_from_launch_s", "training_time_s", "worst", "mean"])
        for r in runs:
            m = measured.get(r["name"])
            for p in (m or {}).get("points", []):
                w.writerow([r["name"], r["system"]["label"], r["link"]["label"], p["step"],
                            "" if m["launch"] is None else f"{p['unix'] - m['launch']:.3f}",
                            "" if m["start"] is None else f"{p['unix'] - m['start']:.3f}",
                            f"{p['worst']:.5f}", f"{p['mean']:.5f}"])


# ---- main -----------------------------------------------------------------------------------------


def main(argv):
    parser = tta.arguments("The language-model race (scripts/tta.py, workload: lm).", __doc__.split("\n", 2)[2])
    args = parser.parse_args(argv)
    try:
        sweep, pattern = tta.read_sweep(args, load)
    except SweepError as e:
        print(f"tta.py: {e}", file=sys.stderr)
        return 2
    build = os.path.abspath(args.build)
    qgossip = os.path.join(build, "qgossip")
    out = os.path.abspath(os.path.join(args.out, sweep["name"]))
    runs = plan(sweep, out)
    try:
        check_topologies(sweep, qgossip)
    except SweepError as e:
        print(f"tta.py: {args.sweep}: {e}", file=sys.stderr)
        return 2
    todo = []
    for run in runs:
        if pattern and not pattern.search(run["name"]):
            continue
        cmd = command(sweep, run, qgossip, args.local)
        record = tta_metrics.read_json(os.path.join(run["dir"], "lm-run.json")) or {}
        todo.append((run, cmd, record.get("status") in ENDED and record.get("command") == cmd))
    if args.dry_run:
        print(f"{sweep['name']}: {len(todo)} runs into {out}/ ({'local' if args.local else 'scripts/cluster.sh'})")
        for i, (run, cmd, done) in enumerate(todo, 1):
            print(f"[{i}/{len(todo)}] {run['name']}: {'skip (done)' if done else shlex.join(cmd)}")
        return 0
    problems = [] if args.report_only else tta.scenario_problems([r for r, _, done in todo if not done])
    if not args.report_only and not os.access(qgossip, os.X_OK):
        problems.append(f"no qgossip binary at {qgossip} (build it, or give --build DIR)")
    if problems:
        print(f"tta.py: {args.sweep}: " + "; ".join(problems), file=sys.stderr)
        return 2
    os.makedirs(out, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
    failed, interrupted = [], False
    try:
        for i, (run, cmd, done) in enumerate([] if args.report_only else todo, 1):
            if done:
                print(f"[{i}/{len(todo)}] {run['name']}: skipped (done)", flush=True)
                continue
            subprocess.run(["rm", "-rf", run["dir"]], check=True)
            os.makedirs(run["dir"])
            print(f"[{i}/{len(todo)}] {run['name']} ...", end="", flush=True)
            code, capped, launch = execute(sweep, run, cmd, args.local, build)
            record = dict(command=cmd, **finish_record(sweep, run, qgossip, code, capped, launch))
            with open(os.path.join(run["dir"], "lm-run.json"), "w") as f:
                json.dump(record, f, indent=1)
            print(f" {record['status']} after {record['duration_s']:.0f} s", flush=True)
            if record["status"] == "failed":
                failed.append(run["name"])
    except (tta.Interrupted, KeyboardInterrupt):
        interrupted = True
    measured = {r["name"]: measure(sweep, r, qgossip) for r in runs if os.path.isdir(r["dir"])}
    write_csvs(sweep, out, runs, measured)
    print(f"collected {len(measured)} runs: {report(sweep, out, runs, measured)}")
    return tta.ending(interrupted, failed)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
