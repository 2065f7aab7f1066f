#!/usr/bin/env python3
"""Tests for scripts/plot.py: it runs as a subprocess (through its own shebang, which picks the
python3 that has matplotlib) on small synthetic run directories. Pure standard library.

Run: python3 tests/scripts/test_plot.py
"""
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLOT = os.path.join(ROOT, "scripts", "plot.py")
HEADER = ("iteration,epoch,wall_s,lr,train_loss,test_loss,test_acc,bytes_sent,bytes_recv,"
          "round_bytes_sent,round_bytes_recv,compute_s,codec_s,comm_s,rejected")


def run_plot(*args, stdin=None):
    # Through the shebang when executable (as users run it); else with the interpreter it names.
    cmd = [PLOT] if os.access(PLOT, os.X_OK) else ["/usr/bin/python3", PLOT]
    return subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=120, input=stdin)


def write_run(run_dir, name, algorithm, compressor, nodes=3, rounds=40, eval_every=10, meta=True):
    os.makedirs(run_dir, exist_ok=True)
    per_round = 1000 * (1 + nodes)
    for rank in range(nodes):
        lines = [HEADER]
        for it in range(0, rounds + 1, 5):
            loss = 2.3 / (1 + 0.1 * it) + 0.01 * rank
            evaluated = it % eval_every == 0
            acc = f"{0.1 + 0.8 * it / rounds - 0.01 * rank:.4f}" if evaluated else ""
            test_loss = f"{loss * 1.1:.4f}" if evaluated else ""
            lines.append(f"{it},{it / 20:.3f},{0.05 * it * (1 + 0.1 * rank):.3f},0.1,{loss:.5f},{test_loss},{acc},"
                         f"{per_round * it},{per_round * it},{per_round},{per_round},0.01,0.002,0.003,0")
        with open(os.path.join(run_dir, f"node-{rank}.csv"), "w") as f:
            f.write("\n".join(lines) + "\n")
    if meta:
        with open(os.path.join(run_dir, "run.json"), "w") as f:
            json.dump({"name": name, "algorithm": algorithm, "compressor": compressor, "seed": 1}, f)


def png_size(path):
    """(width, height) from the PNG header; fails the test if the file is not a PNG."""
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


def plot_module():
    """scripts/plot.py imported, for its functions."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("plot", PLOT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class PlotFirstHourTest(unittest.TestCase):
    """Issue 31, item 3 (plots of short runs, comparison legends, restarted nodes) and item 2 (a run
    folder's stray node files)."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.plot = plot_module()

    def tearDown(self):
        self.tmp.cleanup()

    def test_a_run_with_one_evaluation_draws_its_point(self):
        d = os.path.join(self.dir, "short")
        write_run(d, "short", "dcd", "identity", rounds=10, eval_every=100)  # one evaluation: round 0
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        run = self.plot.load_run(d)
        self.plot.legends([run])
        fig, ax = plt.subplots()
        self.plot.draw(ax, [run], ["C0"], "epoch", "test_acc")
        mean = [line for line in ax.lines if line.get_label() == run["legend"]]
        self.assertEqual(len(mean), 1)
        self.assertEqual(len(mean[0].get_xdata()), 1)
        self.assertEqual(mean[0].get_marker(), "o")  # was no marker: a single point drew nothing
        plt.close(fig)

    def test_compared_runs_are_told_apart_by_folder(self):
        a, b = os.path.join(self.dir, "lr-0.1"), os.path.join(self.dir, "lr-0.2")
        write_run(a, "demo", "choco", "qsgd")
        write_run(b, "demo", "choco", "qsgd")
        runs = [self.plot.load_run(a), self.plot.load_run(b)]
        self.plot.legends(runs)
        self.assertEqual(runs[0]["legend"], "lr-0.1: choco + qsgd (mean of 3 nodes)")
        self.assertEqual(runs[1]["legend"], "lr-0.2: choco + qsgd (mean of 3 nodes)")
        self.plot.legends(runs[:1])
        self.assertEqual(runs[0]["legend"], "choco + qsgd (mean of 3 nodes)")

    def test_a_hostile_node_is_not_drawn_and_the_worst_honest_one_is(self):
        d = os.path.join(self.dir, "attacked")
        write_run(d, "attacked", "choco", "qsgd", nodes=4)
        with open(os.path.join(d, "node-3.json"), "w") as f:
            json.dump({"rank": 3, "hostile": "flip"}, f)
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        run = self.plot.load_run(d)
        self.assertEqual(sorted(run["nodes"]), [0, 1, 2])
        self.assertEqual(run["hostile"], {3: "flip"})
        self.plot.legends([run])
        self.assertEqual(run["legend"], "choco + qsgd (mean of 3 honest nodes; dashed: the worst)")
        fig, ax = plt.subplots()
        self.plot.draw(ax, [run], ["C0"], "epoch", "test_acc")
        dashed = [line for line in ax.lines if line.get_linestyle() == "--"]
        self.assertEqual(len(dashed), 1)
        # write_run gives rank r an accuracy 0.01 r below rank 0's: the worst honest node is rank 2.
        self.assertAlmostEqual(dashed[0].get_ydata()[-1], 0.9 - 0.02, places=4)
        plt.close(fig)
        r = run_plot(d, "-o", os.path.join(self.dir, "out"))
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_a_restarted_node_is_on_the_first_nodes_clock(self):
        d = os.path.join(self.dir, "churn")
        write_run(d, "churn", "dcd", "identity", nodes=2)
        # Node 1 restarted 30 s after node 0 started: its wall_s counts from its new start.
        for rank, start in ((0, 1000.0), (1, 1030.0)):
            with open(os.path.join(d, f"node-{rank}.json"), "w") as f:
                json.dump({"rank": rank, "wall_s": 10.0, "end_unix_s": start + 10.0}, f)
        run = self.plot.load_run(d)
        self.assertEqual(run["nodes"][0]["wall_s"][0], 0.0)
        self.assertAlmostEqual(run["nodes"][1]["wall_s"][0], 30.0)

    def test_node_files_of_ranks_run_json_does_not_have_are_ignored(self):
        d = os.path.join(self.dir, "reused")
        write_run(d, "reused", "dcd", "identity", nodes=3)
        with open(os.path.join(d, "run.json"), "w") as f:
            json.dump({"name": "reused", "algorithm": "dcd", "compressor": "identity", "n": 2}, f)
        self.assertEqual(sorted(self.plot.load_run(d)["nodes"]), [0, 1])


class PlotTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def assert_png(self, path):
        self.assertTrue(os.path.isfile(path), path)
        self.assertGreater(os.path.getsize(path), 1000, path)
        width, height = png_size(path)
        self.assertGreater(width, 100)
        self.assertGreater(height, 100)

    def test_two_runs_into_an_output_dir(self):
        a, b = os.path.join(self.dir, "dpsgd"), os.path.join(self.dir, "dcd")
        write_run(a, "dpsgd-fp32", "dpsgd", "none")
        write_run(b, "dcd-q8", {"name": "dcd"}, {"name": "qsgd", "levels": 255}, nodes=4, eval_every=20)
        out = os.path.join(self.dir, "figures", "cmp")
        r = run_plot(a, b, "-o", out, "--title", "D-PSGD vs DCD")
        self.assertEqual(r.returncode, 0, r.stderr)
        written = r.stdout.split()
        self.assertEqual(written, [os.path.join(out, "convergence.png"), os.path.join(out, "accuracy_vs_bytes.png")])
        for path in written:
            self.assert_png(path)

    def test_one_run_defaults_to_its_dir_and_tolerates_no_run_json(self):
        a = os.path.join(self.dir, "solo")
        write_run(a, "solo", "dpsgd", "none", meta=False)
        r = run_plot(a)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assert_png(os.path.join(a, "convergence.png"))
        self.assert_png(os.path.join(a, "accuracy_vs_bytes.png"))

    def test_when_told_draws_on_go_and_nothing_otherwise(self):
        # qgossip launch starts the plotter while the nodes train (--when-told) and says "go" at the end.
        a = os.path.join(self.dir, "told")
        write_run(a, "told", "dpsgd", "none")
        r = run_plot("--when-told", a, stdin="")  # the launch failed: stdin closed, nothing drawn
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(os.path.exists(os.path.join(a, "convergence.png")))
        r = run_plot("--when-told", a, stdin="go\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assert_png(os.path.join(a, "convergence.png"))
        self.assert_png(os.path.join(a, "accuracy_vs_bytes.png"))

    def test_empty_dir_is_an_error_naming_it(self):
        empty = os.path.join(self.dir, "empty")
        os.makedirs(empty)
        r = run_plot(empty)
        self.assertEqual(r.returncode, 2)
        self.assertIn(empty, r.stderr)
        self.assertIn("no node-<rank>.csv", r.stderr)
        self.assertEqual(os.listdir(empty), [])

    def test_missing_column_is_an_error_naming_file_and_column(self):
        a = os.path.join(self.dir, "broken")
        write_run(a, "broken", "dpsgd", "none", nodes=2)
        path = os.path.join(a, "node-1.csv")
        with open(path) as f:
            text = f.read().replace(",test_acc,", ",accuracy,", 1)
        with open(path, "w") as f:
            f.write(text)
        r = run_plot(a)
        self.assertEqual(r.returncode, 2)
        self.assertIn(f"{path}: missing column 'test_acc'", r.stderr)

    def test_bad_value_is_an_error_naming_the_line(self):
        a = os.path.join(self.dir, "garbled")
        write_run(a, "garbled", "dpsgd", "none", nodes=1)
        path = os.path.join(a, "node-0.csv")
        with open(path, "a") as f:
            f.write("45,2.25,oops,0.1,0.5,,,1,1,1,1,0,0,0,0\n")
        r = run_plot(a)
        self.assertEqual(r.returncode, 2)
        self.assertIn(f"{path}:11: column 'wall_s': not a number: 'oops'", r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
