#!/usr/bin/env python3
"""Tests for scripts/tta.py, scripts/tta_metrics.py and bench/peers/: the sweep file's checks, grid
expansion, repeats and scenarios, the peers' learning-rate schedule against qgossip's formula, the
launch clock, the two times to a target and the medians of a cell on hand-made run directories, and a
tiny end-to-end run (--local: 2 ranks on loopback, no root) of DDP, DiLoCo and a qgossip entry on
Fashion-MNIST, whose outputs are checked (the cosine rates the peer and qgossip logged included).

Run: python3 tests/scripts/test_tta.py BUILD_DIR     (BUILD_DIR holds the qgossip binary)
"""
import csv
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
import schedule  # noqa: E402
import tta  # noqa: E402
import tta_metrics  # noqa: E402

BUILD = None  # set from argv in __main__
FASHION = "/usr/share/datasets/fashion-mnist"


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return path


def write_rows(path, rows, columns=("iteration", "epoch", "wall_s", "test_acc")):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(columns)
        for r in rows:
            w.writerow(["" if v is None else v for v in r])


class SweepFile(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.base = write(os.path.join(self.tmp.name, "base.yaml"), "name: b\n")

    def tearDown(self):
        self.tmp.cleanup()

    def load(self, text):
        return tta.load_sweep(write(os.path.join(self.tmp.name, "s.yaml"), "base: base.yaml\n" + text))

    def error(self, text):
        with self.assertRaises(tta.SweepError) as cm:
            self.load(text)
        return str(cm.exception)

    def test_grid_expands_lists_and_names_the_varying_keys(self):
        s = self.load("name: g\nlinks: [{label: unshaped}, {label: slow, rate: 10mbit, cap_s: 50}]\nsystems:\n"
                      "  - {label: DiLoCo, kind: diloco, H: [16, 32], lr: [0.1, 0.2], outer_lr: 0.7}\n"
                      "  - {label: DDP, kind: ddp, lr: 0.1, momentum: 0.9, nesterov: true, links: [slow]}\n")
        labels = [x["label"] for x in s["systems"]]
        self.assertEqual(labels, ["DiLoCo H=16 lr=0.1", "DiLoCo H=16 lr=0.2", "DiLoCo H=32 lr=0.1",
                                  "DiLoCo H=32 lr=0.2", "DDP"])
        self.assertEqual(s["systems"][0]["options"], {"H": 16, "lr": 0.1, "outer_lr": 0.7})
        runs = tta.plan_runs(s, "/out")
        # 4 DiLoCo cells on both links, DDP on the slow one only; interleaved by link; the whole plan once
        # per repeat (default 3), a cell's later repeats named -r<k>.
        self.assertEqual([r["name"] for r in runs][:5], ["diloco-h-16-lr-0.1-unshaped-n8", "diloco-h-16-lr-0.2-unshaped-n8",
                                                         "diloco-h-32-lr-0.1-unshaped-n8", "diloco-h-32-lr-0.2-unshaped-n8",
                                                         "diloco-h-16-lr-0.1-slow-n8"])
        self.assertEqual(len(runs), 27)
        self.assertEqual([(r["name"], r["repeat"]) for r in runs[8:10]], [("ddp-slow-n8", 1),
                                                                          ("diloco-h-16-lr-0.1-unshaped-n8-r2", 2)])
        self.assertEqual(runs[9]["cell"], "diloco-h-16-lr-0.1-unshaped-n8")
        self.assertEqual(runs[-1]["name"], "ddp-slow-n8-r3")
        self.assertEqual(s["stop_at"], 0.88)
        args = tta.peer_args(s, runs[-1], "/shards")
        self.assertIn("--nesterov", args)
        self.assertEqual(args[args.index("--momentum") + 1], "0.9")
        # The slow link's own cap; the unshaped one has the sweep's (default 300 s).
        self.assertEqual(args[args.index("--time-cap") + 1], "50")
        first = tta.peer_args(s, runs[0], "/shards")
        self.assertEqual(first[first.index("--time-cap") + 1], "300")

    def test_errors_say_where_and_what(self):
        self.assertIn("unknown key 'H'", self.error("name: x\nsystems: [{label: D, kind: ddp, H: 4}]\n"))
        self.assertIn("kind: expected ddp, diloco or qgossip", self.error("name: x\nsystems: [{label: D, kind: adam}]\n"))
        self.assertIn("missing required key 'systems'", self.error("name: x\n"))
        self.assertIn("rate '10mbps'", self.error("name: x\nlinks: [{label: a, rate: 10mbps}]\n"
                                                  "systems: [{label: D, kind: ddp}]\n"))
        self.assertIn("appear twice", self.error("name: x\nsystems: [{label: D, kind: ddp}, {label: D, kind: ddp}]\n"))
        self.assertIn("links: expected a list of link labels",
                      self.error("name: x\nsystems: [{label: D, kind: ddp, links: [nowhere]}]\n"))
        self.assertIn("H: 0 is not a valid value", self.error("name: x\nsystems: [{label: D, kind: diloco, H: 0}]\n"))
        self.assertIn("needs config", self.error("name: x\nsystems: [{label: Q, kind: qgossip}]\n"))
        self.assertIn("cap_s must be", self.error("name: x\nlinks: [{label: a, cap_s: -1}]\n"
                                                  "systems: [{label: D, kind: ddp}]\n"))
        self.assertIn("repeats: expected a whole number", self.error("name: x\nrepeats: 0\n"
                                                                     "systems: [{label: D, kind: ddp}]\n"))
        self.assertIn("schedule: 'linear' is not a valid value (expected constant or cosine)",
                      self.error("name: x\nsystems: [{label: D, kind: ddp, schedule: linear}]\n"))
        self.assertIn("epochs 20 is more than the sweep's epochs 12",
                      self.error("name: x\nsystems: [{label: D, kind: diloco, epochs: 20}]\n"))
        write(os.path.join(self.tmp.name, "slow.yaml"), "{}\n")
        self.assertIn("a rate and a scenario", self.error("name: x\nlinks: [{label: a, rate: 10mbit, scenario: "
                                                          "slow.yaml}]\nsystems: [{label: D, kind: ddp}]\n"))

    def test_peer_schedule_and_epochs_reach_the_trainer(self):
        s = self.load("name: c\nepochs: 12\nsystems:\n  - {label: D, kind: diloco, schedule: cosine, epochs: 10, "
                      "outer_lr: [0.5, 1.0]}\n")
        self.assertEqual([x["label"] for x in s["systems"]], ["D outer_lr=0.5", "D outer_lr=1"])
        args = tta.peer_args(s, tta.plan_runs(s, "/out")[0], "/shards")
        self.assertEqual(args[args.index("--schedule") + 1], "cosine")
        self.assertEqual(args.count("--epochs"), 1)  # the entry's, in place of the sweep's
        self.assertEqual(args[args.index("--epochs") + 1], "10")


class Scenarios(unittest.TestCase):
    """scenario: (the sweep's, or a link's own) goes to every scripts/cluster.sh call, and a real run
    refuses a missing file or a cluster.sh without --scenario."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.base = write(os.path.join(self.tmp.name, "base.yaml"), f"""\
name: b
topology: {{graph: ring, n: 2}}
algorithm: dpsgd
model: {{kind: mlp, hidden: [128]}}
data: {{dataset: fashion-mnist, dir: {FASHION}, partition: iid}}
""")
        self.slow = write(os.path.join(self.tmp.name, "scen", "slow.yaml"), "{}\n")
        self.cluster = tta.CLUSTER

    def tearDown(self):
        tta.CLUSTER = self.cluster
        self.tmp.cleanup()

    def sweep(self):
        return tta.load_sweep(write(os.path.join(self.tmp.name, "s.yaml"), """\
name: s
base: base.yaml
nodes: [2]
scenario: scen/slow.yaml
links: [{label: every}, {label: own, scenario: scen/far.yaml}]
systems: [{label: D, kind: diloco}, {label: Q, kind: qgossip, config: base.yaml}]
"""))

    def fake_cluster(self, help_text):
        tta.CLUSTER = write(os.path.join(self.tmp.name, "cluster.sh"), f"echo '{help_text}'\n")

    def test_every_cluster_call_gets_its_links_scenario(self):
        s = self.sweep()
        every, own = s["links"]
        self.assertEqual((every["scenario"], every["missing_scenario"]), (self.slow, False))
        self.assertEqual((own["scenario"], own["missing_scenario"]), (os.path.join(self.tmp.name, "scen", "far.yaml"),
                                                                       True))
        runs = tta.plan_runs(s, "/out")
        for run in runs:
            args = tta.cluster_prefix(s, run)
            self.assertEqual(args[args.index("--scenario") + 1], run["link"]["scenario"])
        peer = tta.run_command(s, runs[0], "/q", "/out", local=False)
        self.assertLess(peer.index("--scenario"), peer.index("--ranks"))
        self.fake_cluster("  --scenario FILE  per-node CPU quota, rate and delay")
        self.assertEqual(tta.scenario_problems(runs[:1]), [])
        self.assertIn("far.yaml does not exist", tta.scenario_problems(runs)[0])
        self.fake_cluster("  --rate RATE")
        self.assertIn("has no --scenario option", tta.scenario_problems(runs[:1])[0])
        self.assertEqual(tta.scenario_problems([]), [])  # no scenario: cluster.sh is not asked

    def test_a_run_refuses_what_a_dry_run_notes(self):
        self.sweep()
        argv = [tta.PYTHON, os.path.join(ROOT, "scripts", "tta.py"), os.path.join(self.tmp.name, "s.yaml"),
                "--build", BUILD, "--out", os.path.join(self.tmp.name, "out")]
        # far.yaml is missing: --dry-run prints the whole plan and a note; a run refuses (exit 2), runs nothing.
        dry = subprocess.run(argv + ["--dry-run"], capture_output=True, text=True, timeout=60)
        self.assertEqual(dry.returncode, 0, dry.stderr)
        self.assertIn("NOTE: cannot run yet: scenario file", dry.stdout)
        self.assertIn("--scenario " + self.slow, dry.stdout)
        self.assertIn("[12/12] q-own-n2-r3 (repeat 3): run", dry.stdout)
        real = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        self.assertEqual(real.returncode, 2, real.stdout + real.stderr)
        self.assertIn("far.yaml does not exist", real.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp.name, "out")))
        local = subprocess.run(argv + ["--local"], capture_output=True, text=True, timeout=60)
        self.assertEqual(local.returncode, 2)
        self.assertIn("--local cannot shape links", local.stderr)


class Schedule(unittest.TestCase):
    """The peers' learning rate is qgossip's (node/optim/lr_schedule.cpp), written out here again."""

    @staticmethod
    def qgossip_cosine(epoch, lr, total, final=0.0, warmup=0.0, start=0.1):
        factor = final + (1 - final) * 0.5 * (1 + math.cos(math.pi * min(max(epoch, 0), total) / total))
        return lr * factor * ((start + (1 - start) * epoch / warmup) if epoch < warmup else 1.0)

    def test_cosine_matches_qgossip_step_for_step(self):
        spe = 117  # 8 ranks, batch 64
        for step, expected in [(1, 0.2), (586, 0.1), (1171, 0.0), (1500, 0.0)]:  # epochs 0, 5, 10, past the end
            self.assertAlmostEqual(schedule.lr_of_step(step, spe, 0.2, "cosine", 10.0), expected, places=12)
        for step in (1, 2, 117, 118, 500, 1000, 1170):
            epoch = (step - 1) / spe  # node_plan::epoch_after(step - 1)
            self.assertEqual(schedule.lr_of_step(step, spe, 0.2, "cosine", 10.0), self.qgossip_cosine(epoch, 0.2, 10.0))
            self.assertEqual(schedule.lr_of_step(step, spe, 0.2, "constant", 10.0), 0.2)
        # final_factor and warm-up (qgossip's defaults: 0, none from 0.1).
        for epoch in (0.0, 0.5, 2.0, 9.0):
            self.assertAlmostEqual(schedule.lr_at(epoch, 0.2, "cosine", 10.0, final_factor=0.1, warmup_epochs=1.0),
                                   self.qgossip_cosine(epoch, 0.2, 10.0, 0.1, 1.0), places=15)
        self.assertEqual(schedule.describe("cosine", 0.2, 10.0), {"kind": "cosine", "lr": 0.2, "total_epochs": 10.0,
                                                                   "final_factor": 0.0, "warmup_epochs": 0.0,
                                                                   "warmup_start": 0.1})
        with self.assertRaises(ValueError):
            schedule.lr_at(1.0, 0.1, "linear")


class Clock(unittest.TestCase):
    """Every time on the launch's clock; qgossip's accuracy = the mean of the nodes' at an iteration,
    timed by the last node."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.d = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_qgossip_nodes_are_put_on_the_launch_clock(self):
        launch = 1000.0
        # Node 0 started 2 s after the launch (ended at 1030 after 28 s), node 1 5 s after (1034, 29 s).
        for rank, (end, wall, rows) in enumerate([(1030.0, 28.0, [(10, 1.0, 10.0, 0.80), (20, 2.0, 20.0, 0.86)]),
                                                  (1034.0, 29.0, [(10, 1.0, 9.0, 0.84), (20, 2.0, 18.5, 0.88),
                                                                  (25, 2.5, 24.0, 0.95)])]):
            write_rows(os.path.join(self.d, f"node-{rank}.csv"), rows)
            write(os.path.join(self.d, f"node-{rank}.json"), json.dumps({"rank": rank, "end_unix_s": end,
                                                                         "wall_s": wall, "epoch": 2.5,
                                                                         "bytes_sent": 5e6}))
        write(os.path.join(self.d, "tta-run.json"), json.dumps({"launch_unix_s": launch, "status": "target"}))
        points, notes = tta_metrics.curve_qgossip(self.d, launch)
        self.assertEqual(notes, [])
        # Iteration 10: node 0 at 2 + 10 = 12 s, node 1 at 5 + 9 = 14 s -> 14 s, mean 0.82; iteration 25
        # is node 1's alone: left out.
        self.assertEqual([(round(t, 6), e, round(a, 6), it) for t, e, a, it in points],
                         [(14.0, 1.0, 0.82, 10), (23.5, 2.0, 0.87, 20)])
        m = tta_metrics.run_metrics("qgossip", self.d, [0.82, 0.86, 0.9], cap_s=100)
        self.assertEqual(m["ttas"][0.82], (14.0, 1.0))
        self.assertEqual(m["ttas"][0.86], (23.5, 2.0))
        self.assertIsNone(m["ttas"][0.9])
        self.assertAlmostEqual(m["epoch_time_s"], 9.5)
        self.assertAlmostEqual(m["bytes_per_epoch"], 2e6)
        # The cap counts: a target reached after it is not reached.
        self.assertIsNone(tta_metrics.run_metrics("qgossip", self.d, [0.86], cap_s=20)["ttas"][0.86])

    def test_qgossip_startup_is_the_last_nodes_start_of_round_1(self):
        launch = 1000.0
        cols = ("iteration", "epoch", "wall_s", "test_acc", "compute_s", "codec_s", "comm_s", "transfer_s")
        # Node 0 started 2 s after the launch; its first row at 1.5 s on its clock had spent 0.25 + 0.05 +
        # 0.2 s in rounds: round 1 began 1.0 s into it, 3.0 s after the launch. Node 1 started 1 s after
        # the launch; its first row at 3.0 s had spent 0.5 s in rounds: round 1 at 1 + 2.5 = 3.5 s. The
        # last node counts.
        for rank, (end, wall, first) in enumerate([(1030.0, 28.0, (4, 0.5, 1.5, None, 0.25, 0.05, 0.2, 0)),
                                                   (1030.0, 29.0, (4, 0.5, 3.0, None, 0.3, 0.1, 0.1, ""))]):
            write_rows(os.path.join(self.d, f"node-{rank}.csv"), [first, (8, 1.0, 6.0, 0.8, 1, 0.1, 1, 0)], cols)
            write(os.path.join(self.d, f"node-{rank}.json"), json.dumps({"rank": rank, "end_unix_s": end,
                                                                         "wall_s": wall, "epoch": 1.0}))
        self.assertAlmostEqual(tta_metrics.qgossip_startup(self.d, launch), 3.5)
        write(os.path.join(self.d, "tta-run.json"), json.dumps({"launch_unix_s": launch, "status": "target"}))
        m = tta_metrics.run_metrics("qgossip", self.d, [0.8], cap_s=100)
        self.assertAlmostEqual(m["startup_s"], 3.5)
        # Node 0 reached 0.8 at 2 + 6 = 8 s, node 1 at 1 + 6 = 7 s: the mean at 8 s, 4.5 s of training.
        self.assertAlmostEqual(m["ttas"][0.8][0], 8.0)
        self.assertAlmostEqual(m["train_ttas"][0.8][0], 4.5)
        cell = {"label": "q", "kind": "qgossip", "m": tta_metrics.cell_metrics([m], [0.8], 1)}
        row = tta_metrics.table([cell], [0.8], 100).splitlines()[2]
        self.assertEqual(row.split(" | ")[1:5], ["1/1", "8.0 s (ep 1)", "4.5 s", "3.5 s"])
        self.assertEqual(m["load"], {"start": None, "end": None})
        self.assertEqual(tta_metrics.load_note([{"m": m}]), "")
        # The load averages the harness records around a run: the 1-minute figure, and their median.
        write(os.path.join(self.d, "tta-run.json"), json.dumps({"launch_unix_s": launch, "status": "target",
                                                                "loadavg_start": [3.0, 2.0, 1.0],
                                                                "loadavg_end": [5.0, 2.5, 1.5]}))
        m = tta_metrics.run_metrics("qgossip", self.d, [0.8], cap_s=100)
        self.assertEqual(m["load"], {"start": 3.0, "end": 5.0})
        other = {"m": {"load": {"start": 7.0, "end": None}}}
        self.assertEqual(tta_metrics.load_note([{"m": m}, other]),
                         " Load average (1 min) as the runs started: median 5.0 (3.0–7.0).")
        # Without the launch time (or the columns) it cannot be told.
        self.assertIsNone(tta_metrics.qgossip_startup(self.d, None))
        # Asynchronous gossip waits for nobody: training begins with the first node's round 1 (3.0 s).
        write(os.path.join(self.d, "run.json"), json.dumps({"config_yaml": "train:\n  max_staleness: unbounded\n"}))
        self.assertAlmostEqual(tta_metrics.qgossip_startup(self.d, launch), 3.0)

    def test_asynchronous_runs_take_each_nodes_latest_evaluation(self):
        launch = 1000.0
        # Node 1 is a straggler: it evaluates once, at its own iteration 3, while node 0 runs on.
        for rank, (end, wall, rows) in enumerate([(1030.0, 30.0, [(10, 1.0, 10.0, 0.80), (20, 2.0, 20.0, 0.86),
                                                                  (30, 3.0, 30.0, 0.88)]),
                                                  (1030.0, 30.0, [(3, 0.3, 15.0, 0.70)])]):
            write_rows(os.path.join(self.d, f"node-{rank}.csv"), rows)
            write(os.path.join(self.d, f"node-{rank}.json"), json.dumps({"rank": rank, "end_unix_s": end,
                                                                         "wall_s": wall, "epoch": 3.0}))
        write(os.path.join(self.d, "run.json"), json.dumps({"config_yaml": "train:\n  max_staleness: unbounded\n"}))
        points, notes = tta_metrics.curve_qgossip(self.d, launch)
        self.assertEqual(notes, [])
        # Nothing before node 1's first evaluation (15 s); then the mean of the latest of each.
        self.assertEqual([(t, e, round(a, 6), it) for t, e, a, it in points],
                         [(15.0, 1.0, 0.75, 10), (20.0, 2.0, 0.78, 20), (30.0, 3.0, 0.79, 30)])
        # Synchronous (max_staleness 0, or absent): only iterations every node evaluated.
        write(os.path.join(self.d, "run.json"), json.dumps({"config_yaml": "train:\n  max_staleness: 0\n"}))
        self.assertEqual(tta_metrics.curve_qgossip(self.d, launch)[0], [])

    def test_a_node_without_its_start_is_said(self):
        write_rows(os.path.join(self.d, "node-0.csv"), [(5, 1.0, 3.0, 0.9)])
        points, notes = tta_metrics.curve_qgossip(self.d, 1000.0)
        self.assertEqual(points, [(3.0, 1.0, 0.9, 5)])
        self.assertIn("node 0: no end_unix_s", notes[0])

    def test_peers_use_rank_0s_evaluations_and_the_table_divides_by_the_best(self):
        runs = []
        for label, kind, rows in [("DDP a", "ddp", [(117, 1.0, 40.0, 0.85), (234, 2.0, 80.0, 0.87)]),
                                  ("DDP b", "ddp", [(117, 1.0, 30.0, 0.86), (234, 2.0, 60.0, 0.865)]),
                                  ("DiLoCo", "diloco", [(117, 1.0, 10.0, 0.84), (234, 2.0, 15.0, 0.86)])]:
            d = os.path.join(self.d, label.replace(" ", "_"))
            os.makedirs(d)
            write_rows(os.path.join(d, "node-0.csv"), rows)
            write_rows(os.path.join(d, "node-1.csv"), [(r[0], r[1], r[2], None) for r in rows])
            # The start of training is the LAST rank's first step: rank 1's, 6 s after the launch.
            for rank, first in ((0, 5.0), (1, 6.0)):
                write(os.path.join(d, f"node-{rank}.json"), json.dumps({"rank": rank, "params": 101770,
                                                                        "first_step_s": first, "epoch": 2.0,
                                                                        "bytes_sent": 4e6}))
            write(os.path.join(d, "tta-run.json"), json.dumps({"status": "target"}))
            m = tta_metrics.run_metrics(kind, d, [0.84, 0.86], 300)
            runs.append({"label": label, "kind": kind, "m": tta_metrics.cell_metrics([m], [0.84, 0.86], 1)})
        self.assertEqual(tta_metrics.peer_startup(os.path.join(self.d, "DiLoCo")), 6.0)
        self.assertEqual(runs[0]["m"]["ttas"][0.84]["median"], 40.0)
        self.assertEqual(runs[2]["m"]["train_ttas"][0.86]["median"], 9.0)
        self.assertEqual(tta_metrics.best_of(runs, "ddp", 0.84), (30.0, "DDP b"))
        self.assertEqual(tta_metrics.best_of(runs, "ddp", 0.84, "train_ttas"), (24.0, "DDP b"))
        text = tta_metrics.table(runs, [0.84, 0.86], 300)
        row = next(l for l in text.splitlines() if l.startswith("| DiLoCo"))
        # DDP's best is DDP b at both targets (30 s): from launch 10/30 and 15/30; training only (6 s less)
        # 4/24 and 9/24; 1 against itself.
        self.assertIn("| 0.33 / 0.50 | 0.17 / 0.38 | 1.00 / 1.00 | 1.00 / 1.00 |", row)
        self.assertIn("| 10.0 s (ep 1) | 15.0 s (ep 2) | 4.0 s | 9.0 s |", row)
        self.assertIn("40.0 s (ep 1)", text)
        self.assertIn("101,770", row)
        self.assertIn("DiLoCo best per target (median), training only — 0.84: DiLoCo (4.0 s)", text)

    def test_a_cell_is_the_median_of_its_runs(self):
        def run(t84, t88, status="target", start=2.0):
            ttas = {0.84: t84 and (t84, 2.0), 0.88: t88 and (t88, 7.0)}
            return {"status": status, "error": "", "notes": [], "points": [(t84 or 1.0, 1.0, 0.5, 1)], "params": 5,
                    "ttas": ttas, "startup_s": start, "epoch_last": 7.0, "final_acc": 0.88,
                    "train_ttas": {t: v and (v[0] - start, v[1]) for t, v in ttas.items()}}
        runs = [run(10.0, 30.0), run(12.0, None, "time_cap", 3.0), run(11.0, 20.0, start=3.0),
                dict(run(None, None, "failed"), error="exit 1")]
        c = tta_metrics.cell_metrics(runs, [0.84, 0.88], 4)
        self.assertEqual((c["runs"], c["repeats"]), (3, 4))  # the failed run is not timed
        self.assertEqual(c["ttas"][0.84], {"median": 11.0, "runs": 3, "reached": 3, "lo": 10.0, "hi": 12.0,
                                           "epoch": 2.0})
        # A run that missed 0.88 counts as slower than those that reached it: the median is 30 s.
        self.assertEqual((c["ttas"][0.88]["median"], c["ttas"][0.88]["reached"]), (30.0, 2))
        self.assertEqual(c["train_ttas"][0.88]["median"], 28.0)  # 30 − 2, 20 − 3 and one missed
        self.assertEqual(c["startup_s"], 3.0)
        self.assertEqual(c["points"], [(10.0, 1.0, 0.5, 1)])  # the middle run by time to 0.88: 30 s
        m = {"label": "x", "kind": "diloco", "m": c}
        row = tta_metrics.table([m], [0.84, 0.88], 100).splitlines()[2]
        self.assertIn("| 3/4 | 11.0 s (10.0–12.0, ep 2) | 30.0 s (20.0–30.0, 2 of 3, ep 7) | 8.0 s (8.0–9.0) | "
                      "28.0 s (17.0–28.0, 2 of 3) |", row)
        self.assertIn("target ×2, time_cap, failed: exit 1", row)
        # Two of three missing it: the median is missed, and the table says how many reached it.
        c = tta_metrics.cell_metrics([run(10.0, None, "epochs"), run(11.0, None, "epochs"), run(12.0, 25.0)],
                                     [0.84, 0.88], 3)
        self.assertEqual(tta_metrics.fmt_spread(c["ttas"][0.88], c, 100), "> 100 s (1 of 3 reached)")
        self.assertEqual(tta_metrics.median([3.0, 1.0, math.inf, 2.0]), 2.5)


@unittest.skipUnless(os.path.isdir(FASHION), f"no Fashion-MNIST in {FASHION} (apt-get install dataset-fashion-mnist)")
class EndToEnd(unittest.TestCase):
    """tta.py --local: 2 ranks on loopback, a sliver of an epoch, DDP + DiLoCo + qgossip."""

    def test_tiny_sweep(self):
        with tempfile.TemporaryDirectory() as tmp:
            base = write(os.path.join(tmp, "base.yaml"), f"""\
name: base
seed: 1
topology: {{graph: ring, n: 2}}
algorithm: dpsgd
compressor: identity
model: {{kind: mlp, hidden: [128]}}
data: {{dataset: fashion-mnist, dir: {FASHION}, partition: iid, standardize: true}}
train: {{epochs: 1, batch: 64, lr: 0.1, log_every: 20}}
network: {{transport: ipc, start_timeout_s: 60, round_timeout_s: 60, linger_s: 2}}
""")
            sweep = write(os.path.join(tmp, "tiny.yaml"), """\
name: tiny
base: base.yaml
nodes: [2]
links: [{label: loopback}]
targets: [0.5, 0.99]
stop_at: 0.99
cap_s: 200
epochs: 0.1
repeats: 1
systems:
  - {label: DDP, kind: ddp, lr: 0.1}
  - {label: DiLoCo, kind: diloco, H: 8, lr: 0.1, schedule: cosine}
  - {label: qgossip D-PSGD, kind: qgossip, config: base.yaml, set: ["train.schedule={kind: cosine}"]}
""")
            out = os.path.join(tmp, "out")
            dry = subprocess.run([tta.PYTHON, os.path.join(ROOT, "scripts", "tta.py"), sweep, "--build", BUILD,
                                  "--out", out, "--local", "--dry-run"], capture_output=True, text=True, timeout=60)
            self.assertEqual(dry.returncode, 0, dry.stderr)
            self.assertIn("[3/3] qgossip-d-psgd-loopback-n2 (repeat 1): run", dry.stdout)
            p = subprocess.run([tta.PYTHON, os.path.join(ROOT, "scripts", "tta.py"), sweep, "--build", BUILD,
                                "--out", out, "--local"], capture_output=True, text=True, timeout=600)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            with open(os.path.join(out, "tiny", "runs.csv"), newline="") as f:
                rows = {r["system"]: r for r in csv.DictReader(f)}
            self.assertEqual(set(rows), {"DDP", "DiLoCo", "qgossip D-PSGD"})
            for name, r in rows.items():
                self.assertEqual(r["status"], "epochs", f"{name}: {r}")
                self.assertTrue(r["time_to_0.5_s"], f"{name} did not reach 0.5 in 0.1 epoch: {r}")
                self.assertEqual(r["time_to_0.99_s"], "")
                self.assertEqual(r["params"], "101770")
                self.assertGreater(float(r["time_to_0.5_s"]), 0)
            # 0.1 epoch = ceil(46.8) = 47 steps of 64 on a shard of 30,000 (468 steps per epoch). DDP: one
            # all-reduce of 407,080 bytes per step; a ring of 2 sends half of it twice: 407,080 B per rank.
            self.assertAlmostEqual(float(rows["DDP"]["bytes_per_rank_per_epoch"]), 407080 * 468, delta=1)
            # DiLoCo with H = 8: 5 all-reduces in 47 steps.
            self.assertAlmostEqual(float(rows["DiLoCo"]["bytes_per_rank_per_epoch"]), 407080 * 5 / (47 / 468), delta=1)
            # Training only = from launch less the start of training (the last rank's first round), on both.
            for name, r in rows.items():
                launch, startup = float(r["time_to_0.5_s"]), float(r["startup_s"])
                self.assertAlmostEqual(float(r["train_time_to_0.5_s"]), launch - startup, delta=2e-3, msg=name)
                self.assertGreater(float(r["startup_s"]), 0, name)
            self.check_cosine(os.path.join(out, "tiny"))
            ddp = json.load(open(os.path.join(out, "tiny", "ddp-loopback-n2", "node-1.json")))
            self.assertEqual(ddp["status"], "ok")
            self.assertEqual(ddp["threads"], 1)
            self.assertIn("blas", ddp["blas"])
            # Same shards: the harness checked the qgossip entry's; the table and figure exist.
            md = open(os.path.join(out, "tiny", "tta.md")).read()
            self.assertIn("### loopback, n = 2", md)
            for fig in ("accuracy_vs_time", "accuracy_vs_training_time"):
                self.assertTrue(os.path.getsize(os.path.join(out, "tiny", "figures", f"{fig}.png")) > 1000)
            with open(os.path.join(out, "tiny", "cells.csv"), newline="") as f:
                cells = {r["system"]: r for r in csv.DictReader(f)}
            self.assertAlmostEqual(float(cells["DDP"]["time_to_0.5_s_median"]), float(rows["DDP"]["time_to_0.5_s"]),
                                   delta=1e-3)
            self.assertEqual(cells["DDP"]["runs_ended"], "1")
            # Resumable: a second invocation runs nothing.
            again = subprocess.run([tta.PYTHON, os.path.join(ROOT, "scripts", "tta.py"), sweep, "--build", BUILD,
                                    "--out", out, "--local"], capture_output=True, text=True, timeout=120)
            self.assertEqual(again.returncode, 0, again.stderr)
            self.assertEqual(again.stdout.count("skipped (done)"), 3, again.stdout)

    def check_cosine(self, out):
        """Both logged the cosine over the 0.1 epoch (468 steps per epoch) at the rate qgossip's formula
        gives each step: the qgossip binary's rows, and the peer's last, at the same step."""
        rates = {}
        for run, rank in (("qgossip-d-psgd-loopback-n2", 1), ("diloco-loopback-n2", 0)):
            with open(os.path.join(out, run, f"node-{rank}.csv"), newline="") as f:
                rates[run] = {int(r["iteration"]): r["lr"] for r in csv.DictReader(f)}
        qgossip, peer = rates["qgossip-d-psgd-loopback-n2"], rates["diloco-loopback-n2"]
        self.assertGreaterEqual(len(qgossip), 3)
        for step, lr in qgossip.items():  # D-PSGD: one step per round
            self.assertEqual(lr, f"{schedule.lr_of_step(step, 468, 0.1, 'cosine', 0.1):.6g}", step)
        self.assertEqual(peer[47], qgossip[47])
        self.assertLess(float(peer[47]), 0.001)
        summary = json.load(open(os.path.join(out, "diloco-loopback-n2", "node-0.json")))
        self.assertEqual(summary["schedule"]["kind"], "cosine")
        self.assertEqual(summary["schedule"]["total_epochs"], 0.1)


if __name__ == "__main__":
    BUILD = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else os.path.join(ROOT, "build")
    unittest.main()
