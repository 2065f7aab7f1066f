#!/usr/bin/python3
"""Time to accuracy: PyTorch DDP and DiLoCo peers (bench/peers/) and qgossip configurations, side by
side, on the same shards, the same one-machine cluster and the same links.

Usage: scripts/tta.py SWEEP.yaml [--build DIR] [--out DIR] [--dry-run] [--only PATTERN] [--local]
                                 [--report-only] [-v]

The sweep file (YAML; see configs/tta/):
  name: peers                         # the output directory: OUT/<name>/
  description: free text              # optional, printed above the tables
  base: ../demo.yaml                  # the run YAML that fixes seed, data, partition, batch, model:
  set: [data.standardize=true]        #   with these overrides, `qgossip shards` writes every rank's shard
                                      #   and batch order from it, and every system trains on those
  nodes: [8]                          # node counts (topology.n is set when it differs from the config's)
  links:                              # scripts/cluster.sh --rate (tc tbf on every node's egress); a link
    - {label: unshaped}               #   without rate is the same namespaces, unshaped
    - {label: 10 Mbit/s, rate: 10mbit, cap_s: 600}   # cap_s: this link's own time cap
    - {label: straggler, scenario: ../scenarios/straggler.yaml}  # cluster.sh --scenario FILE (per-node
                                      #   CPU quota, rate, delay); not with a rate
  scenario: ../scenarios/far.yaml     # optional: the scenario of every link that names none
  targets: [0.84, 0.86, 0.88]         # the accuracies timed
  stop_at: 0.88                       # a run stops when it reaches this (default: the largest target)
  cap_s: 300                          # ... or at this many seconds from its launch
  epochs: 12                          # ... or after this many epochs
  repeats: 3                          # runs per cell (default 3): tables give the median and the range
  prefix: tta                         # scripts/cluster.sh --prefix and --subnet of every run (defaults
  subnet: 10.79.0                     #   tta, 10.79.0): names no other cluster on the machine uses
  systems:
    - {label: DDP, kind: ddp, lr: [0.1, 0.2], momentum: 0}          # a list makes a grid: one cell each
    - {label: DDP Nesterov, kind: ddp, lr: [0.05, 0.1], momentum: 0.9, nesterov: true}
    - {label: DiLoCo, kind: diloco, H: [16, 32], lr: 0.2, schedule: cosine, epochs: 10,
       outer_lr: [0.5, 0.7, 1.0], outer_momentum: [0.8, 0.9]}
    - {label: qgossip ECD 8-bit, kind: qgossip, config: ../demo.yaml, set: [train.lr=0.2]}
Any system may say `links: [unshaped]` (link labels) to run on those links only. Peer keys: lr, momentum,
nesterov, weight_decay, schedule (constant or cosine: bench/peers/train.py --schedule, qgossip's formula),
epochs (the entry's own run length, and its cosine's, as a qgossip entry's train.epochs; at most the
sweep's epochs); DiLoCo also H, outer_lr, outer_momentum, outer_nesterov (default true). A qgossip entry
gets the sweep's `set`, then its own, then topology.n, train.epochs, train.eval_every=1,
train.eval_examples=0 (all 10,000 test images), its own `set` again, output paths; its shards are checked
to be identical to the base's (same seed, partition, batch and files).

Order: the whole plan once per repeat (round-robin: repeat 1 of every cell, then repeat 2, ...); within
it, for each node count, for each link, every system in turn (interleaved: load from other work on the
machine hits all systems alike). A cell is a system on a link at a node count; its first run is
OUT/<name>/<system>-<link>-n<N>/, repeat k > 1 is that name with -r<k>. Runs are resumable: a run that
ended (target, time cap or epochs) with the same command is skipped; any other is run again.

Two times to each target (scripts/tta_metrics.py): from launch (scripts/cluster.sh's launch time;
start-up included), and training only: from the start of training, when the LAST rank began its first
round (peers: the largest first_step_s of the ranks' summaries, each after the gloo rendezvous; qgossip:
the last node's start of round 1, its first CSV row's wall_s less the round time spent until then).
Start-up is launch to that start. Accuracy: peers from rank 0's evaluations of the global model; qgossip
the mean over nodes of the test accuracy at each evaluation, at the time the last node logged it.

Writes into OUT/<name>/: runs.csv (one row per run: times from launch and training only and epochs to
each target, start-up, epoch time, bytes per rank per epoch counted by the algorithm and on the wire,
parameters, the machine's 1-minute load average as the run started and ended), cells.csv (a row per
cell: the median, range and count of reaching runs per target), curves.csv (every evaluation of every
run, from launch and from the start of training), tta.md (a table per node count and link, a row per
cell, with ratios to DDP's and DiLoCo's best cell at each target) and figures/accuracy_vs_time.png and
accuracy_vs_training_time.png (one panel per link; each cell's middle run).

Needs root for scripts/cluster.sh (network namespaces); --local runs everything on this host's
loopback instead (no shaping: links with a rate or a scenario are refused), for tests and quick checks.
A sweep with scenarios needs scripts/cluster.sh's --scenario; without it (or the file) tta.py refuses
to run, and --dry-run prints the plan with a note.
Exit: 0 every run ended, 1 some run failed, 2 bad sweep file or arguments, 130 interrupted.
"""
import argparse
import csv
import hashlib
import itertools
import json
import math
import os
import shutil
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import sweep_file  # noqa: E402
import tta_metrics  # noqa: E402

PYTHON = "/usr/bin/python3"  # Debian's: python3-torch, numpy, yaml, matplotlib
TRAINER = os.path.join(ROOT, "bench", "peers", "train.py")
CLUSTER = os.path.join(HERE, "cluster.sh")
SWEEP_KEYS = ("name", "description", "base", "set", "nodes", "links", "targets", "stop_at", "cap_s", "epochs",
              "systems", "prefix", "subnet", "repeats", "scenario")
PEER_KEYS = {"lr": "--lr", "momentum": "--momentum", "nesterov": "--nesterov", "weight_decay": "--weight-decay",
             "schedule": "--schedule", "epochs": "--epochs", "H": "--local-steps", "outer_lr": "--outer-lr",
             "outer_momentum": "--outer-momentum", "outer_nesterov": "--no-outer-nesterov"}
DDP_KEYS = ("lr", "momentum", "nesterov", "weight_decay", "schedule", "epochs")
SCHEDULES = ("constant", "cosine")  # bench/peers/schedule.py KINDS
ENDED = tta_metrics.ENDED
SHARD_FIELDS = ("seed", "n", "dataset", "dir", "partition", "skew", "total_train", "batch", "steps_per_epoch",
                "standardize", "channel_mean", "channel_stddev", "shard_sizes", "model_params")


class SweepError(Exception):
    """A sweep file or argument that cannot be used; the message says where and why."""


class Interrupted(Exception):
    pass


def sanitize(text):
    s = re.sub(r"[^a-z0-9._]+", "-", str(text).lower()).strip("-.")
    return s or "run"


def resolve(path, sweep_path):
    if os.path.isabs(path):
        return path
    for c in (os.path.join(os.path.dirname(os.path.abspath(sweep_path)), path), os.path.join(ROOT, path)):
        if os.path.exists(c):
            return c
    raise SweepError(f"{sweep_path}: cannot find '{path}' (relative to the sweep file or the repository)")


def as_list(v):
    return v if isinstance(v, list) else [v]


def fmt_value(v):
    return ("on" if v else "off") if isinstance(v, bool) else f"{v:g}" if isinstance(v, float) else str(v)


def peer_value_ok(key, v):
    number = isinstance(v, (int, float)) and not isinstance(v, bool)
    if key in ("nesterov", "outer_nesterov"):
        return isinstance(v, bool)
    if key == "H":
        return isinstance(v, int) and not isinstance(v, bool) and v >= 1
    if key == "schedule":
        return v in SCHEDULES
    if key == "epochs":
        return number and v > 0
    return number


def expand_system(entry, where):
    """One system entry -> its runs' settings: a grid over every key given as a list."""
    kind = entry.get("kind")
    label = str(entry.get("label") or "").strip()
    if kind not in ("ddp", "diloco", "qgossip"):
        raise SweepError(f"{where}: kind: expected ddp, diloco or qgossip, not {kind!r}")
    if not label:
        raise SweepError(f"{where}: a non-empty label is required")
    if kind == "qgossip":
        allowed = ("label", "kind", "config", "set", "links")
        for k in entry:
            if k not in allowed:
                raise SweepError(f"{where}: unknown key '{k}' for a qgossip entry (expected {', '.join(allowed)})")
        if "config" not in entry:
            raise SweepError(f"{where}: a qgossip entry needs config: RUN.yaml")
        sets = entry.get("set") or []
        if not isinstance(sets, list) or not all(isinstance(s, str) and "=" in s for s in sets):
            raise SweepError(f"{where}: set: expected a list of key=value strings")
        return [{"label": label, "kind": kind, "family": label, "config": entry["config"], "set": sets,
                 "links": entry.get("links")}]
    keys = DDP_KEYS if kind == "ddp" else tuple(PEER_KEYS)
    for k in entry:
        if k not in ("label", "kind", "links") + keys:
            raise SweepError(f"{where}: unknown key '{k}' for kind {kind} (expected {', '.join(keys)})")
    grid = {k: as_list(entry[k]) for k in entry if k in keys}  # in the entry's order
    for k, values in grid.items():
        for v in values:
            if not peer_value_ok(k, v):
                raise SweepError(f"{where}: {k}: {v!r} is not a valid value" +
                                 (f" (expected {' or '.join(SCHEDULES)})" if k == "schedule" else ""))
    varying = [k for k, values in grid.items() if len(values) > 1]
    out = []
    for combo in itertools.product(*grid.values()):
        options = dict(zip(grid.keys(), combo))
        name = label + "".join(f" {k}={fmt_value(options[k])}" for k in varying)
        out.append({"label": name, "kind": kind, "family": label, "options": options, "links": entry.get("links")})
    return out


def load_sweep(path):
    doc = sweep_file.read_mapping(path, SWEEP_KEYS, ("name", "base", "systems"), SweepError)
    name = str(doc["name"])
    if sanitize(name) != name:
        raise SweepError(f"{path}: name '{name}' must be a plain directory name, e.g. '{sanitize(name)}'")
    sets = doc.get("set") or []
    if not isinstance(sets, list) or not all(isinstance(s, str) and "=" in s for s in sets):
        raise SweepError(f"{path}: set: expected a list of key=value strings")
    nodes = as_list(doc.get("nodes", [8]))
    if not nodes or not all(isinstance(n, int) and 1 <= n <= 253 for n in nodes):
        raise SweepError(f"{path}: nodes: expected node counts 1..253, e.g. [8, 16]")
    links = check_links(path, doc.get("links") or [{"label": "unshaped"}], doc.get("scenario"))
    repeats = doc.get("repeats", 3)
    if not isinstance(repeats, int) or isinstance(repeats, bool) or repeats < 1:
        raise SweepError(f"{path}: repeats: expected a whole number of runs per cell >= 1, not {repeats!r}")
    targets = sorted(float(t) for t in as_list(doc.get("targets", [0.84, 0.86, 0.88])))
    if not targets or not all(0 < t <= 1 for t in targets):
        raise SweepError(f"{path}: targets: expected accuracies in (0, 1]")
    stop_at = float(doc.get("stop_at", targets[-1]))
    cap_s, epochs = float(doc.get("cap_s", 300)), float(doc.get("epochs", 12))
    if not cap_s > 0 or not epochs > 0:
        raise SweepError(f"{path}: cap_s and epochs must be > 0")
    systems = systems_of(path, doc["systems"], expand_system, links)
    for s in systems:
        if s["kind"] != "qgossip" and s["options"].get("epochs", 0) > epochs:
            raise SweepError(f"{path}: system '{s['label']}': epochs {s['options']['epochs']:g} is more than the "
                             f"sweep's epochs {epochs:g} (the shards hold that many epochs of batches)")
    labels = [s["label"] for s in systems]
    dup = {l for l in labels if labels.count(l) > 1}
    if dup:
        raise SweepError(f"{path}: systems: the label(s) {', '.join(sorted(dup))} appear twice; make them differ")
    prefix = str(doc.get("prefix", "tta"))
    return {"name": name, "description": str(doc.get("description") or "").strip(), "file": os.path.abspath(path),
            "base": resolve(str(doc["base"]), path), "set": sets, "nodes": nodes, "links": links,
            "targets": targets, "stop_at": stop_at, "cap_s": cap_s, "epochs": epochs, "systems": systems,
            "prefix": prefix, "subnet": str(doc.get("subnet", "10.79.0")), "repeats": repeats}


def systems_of(path, entries, expand, links):
    """The sweep's systems: each entry expanded (expand(entry, where) -> its cells), a qgossip entry's
    config resolved, and each system's `links:` checked against the sweep's link labels."""
    if not isinstance(entries, list) or not entries:
        raise SweepError(f"{path}: systems: expected a non-empty list")
    systems = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise SweepError(f"{path}: systems[{i}]: expected a mapping")
        for s in expand(entry, f"{path}: systems[{i}]"):
            if s["kind"] == "qgossip":
                s["config"] = resolve(s["config"], path)
            systems.append(s)
    link_labels = [str(l["label"]) for l in links]
    for s in systems:
        if s["links"] is not None:
            if not isinstance(s["links"], list) or not all(str(l) in link_labels for l in s["links"]):
                raise SweepError(f"{path}: system '{s['label']}': links: expected a list of link labels "
                                 f"({', '.join(link_labels)}), got {s['links']!r}")
            s["links"] = [str(l) for l in s["links"]]
    return systems


def check_links(path, links, scenario):
    """The sweep's links, checked; each gets the sweep's `scenario` unless it names its own, resolved
    against the sweep file's directory or the repository (a file not there yet is kept, with
    missing_scenario set: --dry-run shows the plan, a real run refuses it)."""
    if not isinstance(links, list):
        raise SweepError(f"{path}: links: expected a list of {{label, rate}}")
    for i, link in enumerate(links):
        where = f"{path}: links[{i}]"
        if not isinstance(link, dict) or not str(link.get("label") or "").strip():
            raise SweepError(f"{where}: expected a mapping with a label (and a rate such as 10mbit)")
        for k in link:
            if k not in ("label", "rate", "cap_s", "scenario"):
                raise SweepError(f"{where}: unknown key '{k}' (expected label, rate, cap_s, scenario)")
        if "cap_s" in link and not (isinstance(link["cap_s"], (int, float)) and link["cap_s"] > 0):
            raise SweepError(f"{where}: cap_s must be a number of seconds > 0")
        if link.get("rate") is not None and not re.fullmatch(r"[0-9]+(\.[0-9]+)?(bit|kbit|mbit|gbit)",
                                                               str(link["rate"])):
            raise SweepError(f"{where}: rate '{link['rate']}': expected e.g. 10mbit or 100mbit")
        if link.get("scenario", scenario) is not None:
            link["scenario"], link["missing_scenario"] = scenario_path(str(link.get("scenario", scenario)), path)
            if link.get("rate") is not None:
                raise SweepError(f"{where}: a rate and a scenario ({link['scenario']}): the scenario sets each "
                                 "node's rate; give one of them")
    return links


def scenario_path(name, sweep_path):
    """(absolute path, whether it is missing) of a scenario file named in a sweep."""
    try:
        return resolve(name, sweep_path), False
    except SweepError:
        return os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(sweep_path)), name)), True


# ---- planning -------------------------------------------------------------------------------------


def cap_of(sweep, link):
    return float(link.get("cap_s", sweep["cap_s"]))


def plan_runs(sweep, out):
    """Every run, in the order they run: the whole plan (node counts, links, systems) once per repeat,
    so that a cell's repeats are spread over the sweep's time (round-robin). A cell's first run keeps
    the cell's name; repeat k > 1 is <cell>-r<k>."""
    runs = []
    for repeat in range(1, sweep["repeats"] + 1):
        for n in sweep["nodes"]:
            for link in sweep["links"]:
                for s in sweep["systems"]:
                    if s["links"] is not None and str(link["label"]) not in s["links"]:
                        continue
                    cell = sanitize(f"{s['label']}-{link['label']}-n{n}")
                    d = cell if repeat == 1 else f"{cell}-r{repeat}"
                    runs.append({"system": s, "link": link, "n": n, "dir": os.path.join(out, d), "name": d,
                                 "cell": cell, "repeat": repeat})
    return runs


def config_n(qgossip, config, sets):
    """The topology size of a run YAML after the overrides."""
    args = [qgossip, "topology", config, "--json"]
    for s in sets:
        args += ["--set", s]
    p = subprocess.run(args, capture_output=True, text=True)
    try:
        return int(json.loads(p.stdout)["n"])
    except (ValueError, KeyError):
        raise SweepError(f"qgossip topology {config}: {p.stderr.strip() or 'no JSON'}") from None


def qgossip_sets(sweep, run, qgossip, out):
    s = run["system"]
    sets = list(sweep["set"]) + list(s["set"])
    sets += n_sets(qgossip, s["config"], sets, run["n"])
    # The entry's own overrides come after the sweep's epochs, so an entry may run fewer epochs (its
    # schedule's length, e.g. a cosine decay) than the sweep's cap.
    return sets + [f"train.epochs={sweep['epochs']:g}", "train.eval_every=1", "train.eval_examples=0"] + \
        list(s["set"]) + [f"output.dir={out}", f"name={run['name']}"]


def shards_dir(out, n):
    return os.path.join(out, f"shards-n{n}")


def n_sets(qgossip, config, sets, n):
    """The overrides that give the run n nodes: none, topology.n=N (an inline topology), or else a
    ring of N (a topology file cannot be resized)."""
    if config_n(qgossip, config, sets) == n:
        return []
    try:
        if config_n(qgossip, config, sets + [f"topology.n={n}"]) == n:
            return [f"topology.n={n}"]
    except SweepError:
        pass
    return [f"topology={{graph: ring, n: {n}}}"]


def base_sets(sweep, qgossip, n):
    sets = list(sweep["set"])
    return sets + n_sets(qgossip, sweep["base"], sets, n)


def shards_command(qgossip, config, sets, out_dir, epochs):
    cmd = [qgossip, "shards", "--config", config, "--out", out_dir, "--epochs", str(math.ceil(epochs))]
    for s in sets:
        cmd += ["--set", s]
    return cmd


def peer_args(sweep, run, shards, local_port=None):
    s = run["system"]
    epochs = s["options"].get("epochs", sweep["epochs"])  # an entry's own: its cosine's length, as for qgossip
    args = [PYTHON, TRAINER, "--mode", s["kind"], "--shards", shards, "--out", run["dir"],
            "--epochs", f"{epochs:g}", "--target", f"{sweep['stop_at']:g}", "--time-cap",
            f"{cap_of(sweep, run['link']):g}", "--report-targets", ",".join(f"{t:g}" for t in sweep["targets"])]
    for k, v in s["options"].items():
        if k == "nesterov":
            args += ["--nesterov"] if v else []
        elif k == "outer_nesterov":
            args += [] if v else ["--no-outer-nesterov"]
        elif k == "epochs":
            continue
        else:
            args += [PEER_KEYS[k], f"{v:g}" if isinstance(v, float) else str(v)]
    if local_port:
        args += ["--master-port", str(local_port)]
    return args


def cluster_prefix(sweep, run):
    args = ["bash", CLUSTER, "--prefix", sweep["prefix"], "--subnet", sweep["subnet"],
            "--stats", os.path.join(run["dir"], "cluster.json")]
    if run["link"].get("rate"):
        args += ["--rate", str(run["link"]["rate"])]
    if run["link"].get("scenario"):
        args += ["--scenario", run["link"]["scenario"]]
    return args


def cluster_takes_scenario():
    """Whether scripts/cluster.sh has --scenario (network scenarios: per-node CPU quota, rate, delay)."""
    p = subprocess.run(["bash", CLUSTER, "--help"], capture_output=True, text=True)
    return "--scenario" in p.stdout


def scenario_problems(runs):
    """Why these runs' scenarios cannot run here: files not there, or a cluster.sh without --scenario."""
    links = {r["link"]["scenario"]: r["link"] for r in runs if r["link"].get("scenario")}
    problems = [f"scenario file {p} does not exist" for p, l in links.items() if l.get("missing_scenario")]
    if links and not cluster_takes_scenario():
        problems.append(f"{CLUSTER} has no --scenario option (network scenarios come with another branch): "
                        "merge it, or drop scenario: from the sweep")
    return problems


def run_command(sweep, run, qgossip, out, local):
    """The command line of a run (one list; in --local mode peers are N such lines, rank in the env)."""
    s = run["system"]
    if s["kind"] == "qgossip":
        tail = [s["config"]]
        for x in qgossip_sets(sweep, run, qgossip, out):
            tail += ["--set", x]
        tail += ["--plain", "--no-plot"]
        if local:
            return [qgossip, "launch"] + tail
        return cluster_prefix(sweep, run) + ["--qgossip", qgossip] + tail
    peer = peer_args(sweep, run, shards_dir(out, run["n"]))
    if local:
        return peer
    return cluster_prefix(sweep, run) + ["--ranks", str(run["n"]), "--log-dir", run["dir"], "--"] + peer


# ---- running --------------------------------------------------------------------------------------


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def qgossip_reached(run_dir, stop_at):
    points, _ = tta_metrics.curve_qgossip(run_dir, None)
    return any(p[2] >= stop_at for p in points)


def stop(procs, sig):
    for p in procs:
        if p.poll() is None:
            try:
                p.send_signal(sig)
            except ProcessLookupError:
                pass


def execute(sweep, run, cmd, local, log):
    """Runs one run to its end; returns (exit code, status, launch_unix)."""
    s = run["system"]
    env = dict(os.environ)
    launch = time.time()
    if local and s["kind"] != "qgossip":
        port = free_port()
        cmd = cmd + ["--master-port", str(port)]
        procs = []
        for r in range(run["n"]):
            e = dict(env, QG_RANK=str(r), QG_NODES=str(run["n"]), QG_MASTER_ADDR="127.0.0.1",
                     QG_LAUNCH_UNIX=f"{launch:.6f}")
            rank_log = open(os.path.join(run["dir"], f"rank-{r}.log"), "w")
            procs.append(subprocess.Popen(cmd, stdout=rank_log, stderr=subprocess.STDOUT, env=e))
    else:
        procs = [subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)]
    stopped_by = None
    try:
        while any(p.poll() is None for p in procs):
            time.sleep(0.5)
            elapsed = time.time() - launch
            if stopped_by is None and s["kind"] == "qgossip" and qgossip_reached(run["dir"], sweep["stop_at"]):
                stopped_by = "target"
                stop(procs, signal.SIGTERM)
            elif stopped_by is None and elapsed > cap_of(sweep, run["link"]) + 2:
                stopped_by = "time_cap"
                stop(procs, signal.SIGTERM)
            elif stopped_by and elapsed > cap_of(sweep, run["link"]) + 60:
                stop(procs, signal.SIGKILL)
    except KeyboardInterrupt:
        stop(procs, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        raise Interrupted() from None
    codes = [p.wait() for p in procs]
    code = next((c for c in codes if c != 0), 0)
    return code, stopped_by, launch


def run_status(run, code, stopped_by):
    """target | time_cap | epochs | failed, and an error text."""
    if run["system"]["kind"] == "qgossip":
        if stopped_by:
            return stopped_by, ""
        if code == 0:
            return "epochs", ""
        return "failed", f"exit {code}"
    summary = tta_metrics.read_json(os.path.join(run["dir"], "node-0.json")) or {}
    if summary.get("status") == "ok":
        return summary.get("stop_reason", "epochs"), ""
    if stopped_by == "time_cap":
        return "time_cap", ""
    return "failed", summary.get("error") or f"exit {code}"


def check_same_shards(qgossip, run_sets, config, reference_dir, epochs):
    """None when the qgossip entry trains on the reference shards, else why not."""
    with tempfile.TemporaryDirectory() as tmp:
        p = subprocess.run(shards_command(qgossip, config, run_sets, tmp, epochs), capture_output=True, text=True)
        if p.returncode != 0:
            return f"qgossip shards on {config}: {p.stderr.strip()}"
        mine = tta_metrics.read_json(os.path.join(tmp, "shards.json")) or {}
        ref = tta_metrics.read_json(os.path.join(reference_dir, "shards.json")) or {}
        for k in SHARD_FIELDS:
            if mine.get(k) != ref.get(k):
                return f"{k}: {mine.get(k)!r} here, {ref.get(k)!r} in the sweep's base"
        for name in sorted(os.listdir(tmp)):
            if name.endswith(".npy"):
                with open(os.path.join(tmp, name), "rb") as a, open(os.path.join(reference_dir, name), "rb") as b:
                    if hashlib.sha256(a.read()).digest() != hashlib.sha256(b.read()).digest():
                        return f"{name} differs from the base's"
    return None


def make_shards(sweep, qgossip, out, n, verbose):
    d = shards_dir(out, n)
    cmd = shards_command(qgossip, sweep["base"], base_sets(sweep, qgossip, n), d, sweep["epochs"])
    meta = tta_metrics.read_json(os.path.join(d, "shards.json")) or {}
    if meta.get("steps_written", 0) >= math.ceil(sweep["epochs"]) * meta.get("steps_per_epoch", 0) > 0 \
            and os.path.exists(os.path.join(d, "command.json")) and \
            tta_metrics.read_json(os.path.join(d, "command.json")) == cmd:
        return d
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SweepError(f"{shlex.join(cmd)}: {p.stderr.strip()}")
    with open(os.path.join(d, "command.json"), "w") as f:
        json.dump(cmd, f)
    if verbose:
        print(p.stdout.strip())
    return d


# ---- reporting ------------------------------------------------------------------------------------


def collect(sweep, runs):
    out = []
    for run in runs:
        params = None
        meta = tta_metrics.read_json(os.path.join(os.path.dirname(run["dir"]), f"shards-n{run['n']}", "shards.json"))
        if meta:
            params = meta.get("model_params")
        m = tta_metrics.run_metrics(run["system"]["kind"], run["dir"], sweep["targets"], cap_of(sweep, run["link"]),
                                    params)
        out.append(dict(run, label=run["system"]["label"], kind=run["system"]["kind"], m=m))
    return out


def cells_of(sweep, rows):
    """The cells (a system on a link at a node count), in plan order, each with its runs and their
    medians (tta_metrics.cell_metrics)."""
    cells = {}
    for r in rows:
        c = cells.setdefault(r["cell"], {"cell": r["cell"], "label": r["label"], "kind": r["kind"],
                                         "system": r["system"], "link": r["link"], "n": r["n"], "runs": []})
        c["runs"].append(r)
    for c in cells.values():
        c["m"] = tta_metrics.cell_metrics([r["m"] for r in c["runs"]], sweep["targets"], sweep["repeats"])
    return list(cells.values())


def family_best(cells, targets):
    """Per family (a grid's cells): the label of its best cell, by the median time to the highest
    target, then the next (a target missed counts as infinitely late)."""
    best = {}
    for c in cells:
        score = tuple(c["m"]["ttas"][t]["median"] if c["m"]["runs"] else math.inf for t in reversed(targets))
        fam = c["system"]["family"]
        if fam not in best or score < best[fam][0]:
            best[fam] = (score, c["label"])
    return {f: b[1] for f, b in best.items()}


def csv_value(v):
    return "" if v is None else f"{v:.10g}" if isinstance(v, float) else v


def write_runs_csv(path, sweep, rows):
    targets = sweep["targets"]
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["run", "cell", "repeat", "system", "kind", "family", "link", "rate", "scenario", "nodes", "status",
                    "error"] + [x for t in targets for x in (f"time_to_{t:g}_s", f"epoch_to_{t:g}",
                                                             f"train_time_to_{t:g}_s")] +
                   ["startup_s", "epoch_time_s", "bytes_per_rank_per_epoch", "wire_bytes_per_rank_per_epoch",
                    "tbf_dropped", "params", "last_acc", "epochs_run", "load1_start", "load1_end"])
        for r in rows:
            m = r["m"]
            cells = [r["name"], r["cell"], r["repeat"], r["label"], r["kind"], r["system"]["family"],
                     r["link"]["label"], r["link"].get("rate", ""), r["link"].get("scenario", ""), r["n"], m["status"],
                     m["error"]]
            for t in targets:
                tta, train = m["ttas"].get(t), (m["train_ttas"] or {}).get(t)
                cells += [f"{tta[0]:.3f}", f"{tta[1]:.4g}"] if tta else ["", ""]
                cells.append(f"{train[0]:.3f}" if train else "")
            cells += [csv_value(m.get(k)) for k in ("startup_s", "epoch_time_s", "bytes_per_epoch",
                                                    "wire_bytes_per_epoch", "tbf_dropped", "params", "final_acc",
                                                    "epoch_last")]
            cells += ["" if m["load"][k] is None else f"{m['load'][k]:.2f}" for k in ("start", "end")]
            w.writerow(cells)


def write_cells_csv(path, sweep, cells):
    """A row per cell: the median over its ended runs, the range of those that reached each target."""
    targets = sweep["targets"]
    spread_columns = ("median", "lo", "hi", "reached")
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["cell", "system", "kind", "family", "link", "scenario", "nodes", "runs_ended", "repeats"] +
                   [f"{p}time_to_{t:g}_s_{x}" for t in targets for p in ("", "train_") for x in spread_columns] +
                   [f"epoch_to_{t:g}" for t in targets] +
                   ["startup_s", "epoch_time_s", "bytes_per_rank_per_epoch", "wire_bytes_per_rank_per_epoch",
                    "params", "last_acc"])
        for c in cells:
            m = c["m"]
            row = [c["cell"], c["label"], c["kind"], c["system"]["family"], c["link"]["label"],
                   c["link"].get("scenario", ""), c["n"], m["runs"], m["repeats"]]
            for t in targets:
                for key in ("ttas", "train_ttas"):
                    sp = m[key][t]
                    row += [csv_value(sp[x] if sp["runs"] and sp[x] != math.inf else None) for x in spread_columns[:3]]
                    row.append(sp["reached"] if sp["runs"] else "")
            row += [csv_value(m["ttas"][t]["epoch"]) for t in targets]
            row += [csv_value(m.get(k)) for k in ("startup_s", "epoch_time_s", "bytes_per_epoch",
                                                  "wire_bytes_per_epoch", "params", "final_acc")]
            w.writerow(row)


def write_curves_csv(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["run", "cell", "repeat", "system", "link", "nodes", "time_from_launch_s", "training_time_s",
                    "epoch", "test_acc", "iteration"])
        for r in rows:
            start = r["m"].get("startup_s")
            for t, epoch, acc, it in r["m"]["points"]:
                w.writerow([r["name"], r["cell"], r["repeat"], r["label"], r["link"]["label"], r["n"], f"{t:.3f}",
                            "" if start is None else f"{t - start:.3f}", "" if epoch is None else f"{epoch:.4g}",
                            f"{acc:.6g}", it])


def report_preface(sweep):
    return [f"Each cell (a system on a link) ran {sweep['repeats']} time(s), interleaved (the whole plan once, "
            "then again); each time is the median over the cell's ended runs (a run that missed the target "
            "counts as slower than any that reached it), in brackets the range of the runs that reached it "
            "and the median epoch of that evaluation. Stop at "
            f"{sweep['stop_at']:g}, {sweep['cap_s']:g} s (unless a link says otherwise) or {sweep['epochs']:g} epochs. "
            "Two times to each target: from launch (start-up included) and training only, from the start of "
            "training: when the last rank began its first round (peers: its first optimizer step, after the "
            "gloo rendezvous; qgossip: its start of round 1); start-up is launch to that. ÷ columns: this "
            "cell's median over the best DDP / DiLoCo cell's median to the same target on the same link. "
            "MB/rank/epoch (algorithm): bytes the training messages hold (peers: ring all-reduce, 2(n−1)/n·4d per "
            "all-reduce; qgossip: its bytes_sent); (wire): the rank's veth tx bytes from scripts/cluster.sh "
            "(headers, ACKs, start-up), mean over ranks.", ""]


def write_figures(sweep, out, groups):
    """The two figures (from launch, training only); the markdown lines that show them."""
    if not groups:
        return ["(no runs yet: no figure)", ""]
    figures = os.path.join(out, "figures")
    os.makedirs(figures, exist_ok=True)
    md = []
    for name, training_only, what in (("accuracy_vs_time", False, "wall time from launch"),
                                      ("accuracy_vs_training_time", True, "training time")):
        try:
            tta_metrics.draw_figure(groups, os.path.join(figures, f"{name}.png"),
                                    f"{sweep['name']}: test accuracy vs {what}\neach cell's middle run of its "
                                    "repeats\n(bold: each system's best cell; faint: the rest of its grid)",
                                    sweep["targets"], training_only)
            md += [f"![accuracy vs {what}](figures/{name}.png)", ""]
        except ImportError as e:
            return [f"(no figure: {e})", ""]
    return md


def write_report(sweep, out, rows):
    targets = sweep["targets"]
    write_runs_csv(os.path.join(out, "runs.csv"), sweep, rows)
    write_curves_csv(os.path.join(out, "curves.csv"), rows)
    cells = cells_of(sweep, rows)
    write_cells_csv(os.path.join(out, "cells.csv"), sweep, cells)
    groups = {}
    for c in cells:
        groups.setdefault((c["n"], c["link"]["label"]), []).append(c)
    md = [f"## Time to accuracy: {sweep['name']}", ""]
    if sweep["description"]:
        md += [sweep["description"], ""]
    md += report_preface(sweep)
    for (n, link), its in groups.items():
        cap = cap_of(sweep, its[0]["link"])
        scenario = its[0]["link"].get("scenario")
        md += [f"### {link}, n = {n}", "", f"Time cap {cap:g} s." +
               (f" Scenario {os.path.relpath(scenario, ROOT)}." if scenario else "") +
               tta_metrics.load_note([r for c in its for r in c["runs"]]), "", tta_metrics.table(its, targets, cap)]
        notes = sorted({f"{c['label']}: {x}" for c in its for x in c["m"]["notes"]})
        if notes:
            md += ["Notes: " + "; ".join(notes), ""]
        best = family_best(its, targets)
        for c in its:
            c["highlight"] = c["kind"] == "qgossip" or best.get(c["system"]["family"]) == c["label"]
    md += write_figures(sweep, out, groups)
    with open(os.path.join(out, "tta.md"), "w") as f:
        f.write("\n".join(md))
    return os.path.join(out, "tta.md")


# ---- main -----------------------------------------------------------------------------------------


def print_plan(sweep, qgossip, out, todo, local, problems):
    cells = len({run["cell"] for run, _, _ in todo})
    repeats = f"{sweep['repeats']} repeat" + ("s, the whole plan once per repeat" if sweep["repeats"] > 1 else "")
    print(f"tta {sweep['name']}: {len(todo)} runs ({cells} cells × {repeats}) into {out}/ "
          f"({'local' if local else 'scripts/cluster.sh'})")
    for problem in problems:
        print(f"NOTE: cannot run yet: {problem}")
    for n in sweep["nodes"]:
        sets = base_sets(sweep, qgossip, n) if os.access(qgossip, os.X_OK) else sweep["set"]
        print(f"shards n={n}: " + shlex.join(shards_command(qgossip, sweep["base"], sets, shards_dir(out, n),
                                                              sweep["epochs"])))
    for i, (run, cmd, done) in enumerate(todo, 1):
        print(f"[{i}/{len(todo)}] {run['name']} (repeat {run['repeat']}): {'skip (done)' if done else 'run'}")
        if not done:
            print("    " + shlex.join(cmd) + (f"   (x{run['n']} ranks)" if local and
                                              run["system"]["kind"] != "qgossip" else ""))


def workload_of(path):
    """The sweep's `workload:` (lm: the language-model race, scripts/tta_lm.py), or None."""
    import yaml

    try:
        with open(path) as f:
            doc = yaml.safe_load(f)
    except (OSError, yaml.YAMLError):
        return None  # load_sweep says what is wrong
    return doc.get("workload") if isinstance(doc, dict) else None


def arguments(description, epilog):
    """The options every sweep takes (this file's and scripts/tta_lm.py's)."""
    parser = argparse.ArgumentParser(description=description, epilog=epilog,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sweep", metavar="SWEEP.yaml")
    parser.add_argument("--build", default=os.path.join(ROOT, "build"), help="directory holding qgossip "
                        "(default: %(default)s)")
    parser.add_argument("--out", default="runs/tta", help="where OUT/<name>/ goes (default: %(default)s)")
    parser.add_argument("--dry-run", action="store_true", help="print the plan and the commands; run nothing")
    parser.add_argument("--only", metavar="PATTERN", help="run only runs whose directory matches this regular "
                        "expression; all are still reported")
    parser.add_argument("--local", action="store_true", help="no namespaces: every rank on this host's loopback, "
                        "unshaped (no root needed; links with a rate are refused)")
    parser.add_argument("--report-only", action="store_true", help="run nothing; rebuild the tables and figure")
    return parser


def read_sweep(args, load):
    """(sweep, --only pattern or None) of the parsed arguments, the sweep read by load(path); raises
    SweepError for a bad file, a bad pattern, or --local with shaped links."""
    sweep = load(args.sweep)
    try:
        pattern = re.compile(args.only) if args.only else None
    except re.error as e:
        raise SweepError(f"--only: {e}") from None
    if args.local and any(l.get("rate") or l.get("scenario") for l in sweep["links"]):
        raise SweepError("--local cannot shape links: drop the links with a rate or a scenario (or run as root "
                         "without --local)")
    return sweep, pattern


def ending(interrupted, failed):
    """The exit code of a sweep that ran (0, 1 some run failed, 130 interrupted), said on stderr."""
    if interrupted:
        print("tta.py: interrupted; finished runs are kept, run the same command again to resume", file=sys.stderr)
        return 130
    if failed:
        print(f"tta.py: {len(failed)} run(s) failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def main(argv):
    sweep_arg = next((a for a in argv if not a.startswith("-") and a.endswith((".yaml", ".yml"))), None)
    if sweep_arg and workload_of(sweep_arg) == "lm":
        import tta_lm
        return tta_lm.main(argv)
    parser = arguments("Time to accuracy: PyTorch DDP/DiLoCo peers and qgossip on the same shards and links.",
                       __doc__.split("\n", 2)[2])
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    try:
        sweep, pattern = read_sweep(args, load_sweep)
    except SweepError as e:
        print(f"tta.py: {e}", file=sys.stderr)
        return 2
    qgossip = os.path.abspath(os.path.join(args.build, "qgossip"))
    out = os.path.abspath(os.path.join(args.out, sweep["name"]))
    runs = plan_runs(sweep, out)
    if not args.dry_run and not args.report_only and not os.access(qgossip, os.X_OK):
        print(f"tta.py: no qgossip binary at {qgossip} (build it, or give --build DIR)", file=sys.stderr)
        return 2
    try:
        todo = []
        for run in runs:
            if pattern and not pattern.search(run["name"]):
                continue
            cmd = run_command(sweep, run, qgossip, out, args.local) if os.access(qgossip, os.X_OK) else \
                ["(qgossip not built)"]
            record = tta_metrics.read_json(os.path.join(run["dir"], "tta-run.json")) or {}
            done = record.get("status") in ENDED and record.get("command") == cmd
            todo.append((run, cmd, done))
    except SweepError as e:
        print(f"tta.py: {e}", file=sys.stderr)
        return 2
    problems = [] if args.report_only else scenario_problems([run for run, _, done in todo if not done])
    if args.dry_run:
        print_plan(sweep, qgossip, out, todo, args.local, problems)
        return 0
    if problems:
        print(f"tta.py: {args.sweep}: " + "; ".join(problems), file=sys.stderr)
        return 2
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "tta.json"), "w") as f:
        json.dump(sweep, f, indent=2)
    signal.signal(signal.SIGTERM, lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
    failed, interrupted = [], False
    if not args.report_only:
        try:
            for n in sweep["nodes"]:
                make_shards(sweep, qgossip, out, n, args.verbose)
            checked = {}
            for i, (run, cmd, done) in enumerate(todo, 1):
                prefix = f"[{i}/{len(todo)}] {run['name']}"
                if done:
                    print(f"{prefix}: skipped (done)", flush=True)
                    continue
                s = run["system"]
                if s["kind"] == "qgossip" and (s["label"], run["n"]) not in checked:
                    sets = list(sweep["set"]) + list(s["set"])
                    sets += n_sets(qgossip, s["config"], sets, run["n"])
                    checked[(s["label"], run["n"])] = check_same_shards(qgossip, sets, s["config"],
                                                                        shards_dir(out, run["n"]), sweep["epochs"])
                why = checked.get((s["label"], run["n"]))
                if why:
                    print(f"{prefix}: NOT RUN: its shards differ from the base's: {why}", flush=True)
                    failed.append(run["name"])
                    continue
                shutil.rmtree(run["dir"], ignore_errors=True)  # a node run leaves keys/ and checkpoints/
                os.makedirs(run["dir"], exist_ok=True)
                print(f"{prefix} ...", end="", flush=True)
                load_start = os.getloadavg()
                with open(os.path.join(run["dir"], "launch.log"), "w") as log:
                    code, stopped_by, launch = execute(sweep, run, cmd, args.local, log)
                status, error = run_status(run, code, stopped_by)
                # The machine's load averages (1, 5, 15 min) as the run started and ended: other work on a
                # shared machine stretches wall times, so the tables say how loaded it was.
                record = {"command": cmd, "status": status, "error": error, "exit_code": code,
                          "launch_unix_s": launch, "duration_s": round(time.time() - launch, 3),
                          "loadavg_start": [round(x, 2) for x in load_start],
                          "loadavg_end": [round(x, 2) for x in os.getloadavg()]}
                with open(os.path.join(run["dir"], "tta-run.json"), "w") as f:
                    json.dump(record, f, indent=2)
                print(f" {status} after {record['duration_s']:.0f} s" + (f": {error}" if error else ""), flush=True)
                if status == "failed":
                    failed.append(run["name"])
        except Interrupted:
            interrupted = True
            print(" interrupted", flush=True)
        except KeyboardInterrupt:
            interrupted = True
        except SweepError as e:
            print(f"tta.py: {e}", file=sys.stderr)
            return 2
    rows = collect(sweep, [r for r in runs if os.path.isdir(r["dir"])])
    path = write_report(sweep, out, rows)
    print(f"collected {len(rows)} runs: {path}, " + ", ".join(os.path.join(out, f) for f in
                                                               ("runs.csv", "cells.csv", "curves.csv")))
    return ending(interrupted, failed)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
