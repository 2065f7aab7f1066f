#!/usr/bin/env python3
"""Tests for scripts/hostile_grid.py: its arguments, the grid it plans, the launches it would run
(--dry-run) and its report on rows made here (the grid itself takes an hour: docs/security.md).
Pure standard library.

Run: python3 tests/scripts/test_hostile_grid.py BUILD_DIR
"""
import importlib.util
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "hostile_grid.py")
BUILD = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(ROOT, "build")


def grid_module():
    spec = importlib.util.spec_from_file_location("hostile_grid", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class HostileGridTest(unittest.TestCase):
    def setUp(self):
        self.g = grid_module()
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def args(self, *extra):
        return self.g.parse(["--build", BUILD, "--out", self.tmp.name, *extra])

    def test_the_grid_is_the_product_of_its_axes(self):
        a = self.args()
        # 2 recipes x 3 topologies x 2 data x (clean + 10 attacks) x 2 robust x 3 seeds
        self.assertEqual(len(self.g.cells(a)), 2 * 3 * 2 * 11 * 2 * 3)
        a = self.args("--recipes", "demo", "--topologies", "torus", "--data", "iid", "--attacks", "flip",
                      "--seeds", "1", "--codec-check")
        cells = self.g.cells(a)
        self.assertEqual(len(cells), 2 * 2 + 2)  # (clean, flip) x robust, and the 32-bit check
        self.assertEqual({c["codec"] for c in cells}, {"qsgd", "identity"})

    def test_bad_arguments_are_refused(self):
        r = subprocess.run([sys.executable, SCRIPT, "--build", BUILD, "--attacks", "flip,flop"], capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--attacks: expected some of flip", r.stderr)
        r = subprocess.run([sys.executable, SCRIPT, "--build", self.tmp.name], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("no qgossip there", r.stderr)

    def test_a_dry_run_prints_each_launch_with_its_scenario(self):
        r = subprocess.run([sys.executable, SCRIPT, "--build", BUILD, "--out", self.tmp.name, "--dry-run", "--recipes",
                            "demo", "--topologies", "ring2", "--data", "dirichlet", "--attacks", "alie", "--seeds", "7"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(len(lines), 4)  # clean and alie, robust off and on
        alie_on = [line for line in lines if "/alie/on/" in line][0]
        for part in ("--set data.partition=dirichlet", "--set data.alpha=1", "--set algorithm.robust.clip=auto",
                     "--set seed=7", "--set topology.n=16", "--set network.on_peer_failure=continue"):
            self.assertIn(part, alie_on)
        scenario = os.path.join(self.tmp.name, "demo", "ring2", "dirichlet", "alie", "on", "seed7", "scenario.yaml")
        with open(scenario) as f:
            self.assertEqual(f.read(), "hostile:\n  - {rank: 5, attack: alie}\n  - {rank: 6, attack: alie}\n")

    def test_the_worst_honest_node_leaves_the_hostile_ones_out_and_counts_failures_as_chance(self):
        found = {r: {"status": "ok", "test_acc": 0.85} for r in range(16)}
        found[5] = {"status": "ok", "test_acc": 0.05}   # hostile: not counted
        found[9] = {"status": "diverged", "test_acc": None}
        worst, mean, chance = self.g.worst_honest({"topology": "torus", "attack": "flip"}, found)
        self.assertEqual((worst, chance), (0.10, 1))
        self.assertAlmostEqual(mean, (14 * 0.85 + 0.10) / 15)

    def test_a_run_is_finished_when_every_honest_node_wrote_its_summary(self):
        # A hostile node whose attack diverged may stop (two adjacent dissensus ranks once did): the
        # run still counts, by its honest nodes; a missing honest summary makes it unfinished.
        run = os.path.join(self.tmp.name, "run")
        os.makedirs(run)
        for rank in range(16):
            if rank != 6:
                with open(os.path.join(run, f"node-{rank}.json"), "w") as f:
                    f.write('{"status": "ok", "test_acc": 0.85}')
        found = self.g.summaries(self.tmp.name, {"topology": "ring2", "attack": "dissensus"})
        self.assertEqual(sorted(found), [r for r in range(16) if r != 6])
        self.assertEqual(self.g.worst_honest({"topology": "ring2", "attack": "dissensus"}, found)[0], 0.85)
        self.assertIsNone(self.g.summaries(self.tmp.name, {"topology": "ring", "attack": "dissensus"}))
        self.assertIsNone(self.g.summaries(self.tmp.name, {"topology": "ring2", "attack": "clean"}))

    def test_the_report_gives_medians_the_worst_seed_and_the_checks(self):
        a = self.args("--recipes", "demo", "--topologies", "torus", "--data", "iid", "--attacks", "flip")
        rows = []
        for seed, (clean, off, on) in {1: (0.87, 0.60, 0.86), 2: (0.86, 0.15, 0.85), 3: (0.87, 0.65, 0.87)}.items():
            base = dict(recipe="demo", topology="torus", data="iid", seed=seed, codec="qsgd")
            rows += [dict(base, attack="clean", robust="off", worst=clean), dict(base, attack="clean", robust="on", worst=clean),
                     dict(base, attack="flip", robust="off", worst=off), dict(base, attack="flip", robust="on", worst=on)]
        text = self.g.report(rows, a)
        self.assertIn("| flip | 60.0 (seed 2: 15.0) | 86.0 (seed 2: 85.0) | +1.0 |", text)
        self.assertIn("robust on, the largest gap is 1.0 points (flip); bound 2: met", text)
        self.assertIn("lowest worst-honest accuracy is 60.0 % (teeth: within 10 points of chance, 20.0 %: no)", text)
        self.assertIn("the defence costs 0.0 points with nobody attacking (robust on); bound 1: met", text)

    def test_the_loss_screen_is_a_column_of_its_own_and_the_clean_run_stays_the_reference(self):
        a = self.args("--recipes", "h1", "--topologies", "ring2", "--data", "iid", "--attacks", "label_flip",
                      "--robust", "screen", "--seeds", "1")
        cells = self.g.cells(a)
        self.assertEqual([(c["attack"], c["robust"]) for c in cells],
                         [("clean", "off"), ("clean", "screen"), ("label_flip", "screen")])
        self.assertIn("algorithm.robust.screen=1.0", self.g.ROBUST["screen"])
        base = dict(recipe="h1", topology="ring2", data="iid", seed=1, codec="qsgd")
        rows = [dict(base, attack="clean", robust="off", worst=0.85), dict(base, attack="clean", robust="screen", worst=0.86),
                dict(base, attack="label_flip", robust="screen", worst=0.84)]
        text = self.g.report(rows, a)
        self.assertIn("| label_flip | – | 84.0 (seed 1: 84.0) | +1.0 |", text)
        self.assertIn("robust screen, the largest gap is 1.0 points (label_flip); bound 2: met", text)
        self.assertIn("the defence costs -1.0 points with nobody attacking (robust screen); bound 1: met", text)
        self.assertNotIn("teeth", text)  # nothing attacked without the defence


if __name__ == "__main__":
    unittest.main(verbosity=2)
