#!/usr/bin/env python3
"""Tests for scripts/sweep.py and scripts/results.py: tiny sweeps (2 nodes, synthetic data, a few dozen
rounds over ipc:// sockets, so no TCP port can clash with tests running beside them) run for real with the
qgossip binary, then resumed, filtered, interrupted; the CSVs, figures and Markdown they write are checked.

Run: python3 tests/scripts/test_sweep.py BUILD_DIR     (BUILD_DIR holds the qgossip binary)
"""
import csv
import json
import os
import re
import signal
import struct
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SWEEP = os.path.join(ROOT, "scripts", "sweep.py")
RESULTS = os.path.join(ROOT, "scripts", "results.py")
BUILD = None  # set from argv in __main__

BASE = """\
name: base
seed: 3
topology: {graph: ring, n: 2}
algorithm: dcd
compressor: identity
model: {kind: mlp, hidden: [16]}
data:
  dataset: synthetic
  synthetic: {train: 800, test: 200, dim: 16, classes: 4}
train: {epochs: 3, batch: 32, lr: 0.1, log_every: 3, eval_every: 1}
network: {transport: ipc, start_timeout_s: 20, round_timeout_s: 20, linger_s: 2}
"""

SWEEP_FILE = """\
name: tiny
description: Two algorithms on two emulated networks, and one run that cannot start.
base: base.yaml
set: [train.epochs=3]
runs:
  - algorithm:
      - {label: "D-PSGD", set: [algorithm=dpsgd]}
      - {label: "DCD 8-bit", set: [algorithm=dcd, "compressor=qsgd:bits=8,bucket=128,norm=max"]}
    network:
      - {label: "fast", set: [network.emulate.rate_mbit=0]}
      - {label: "50Mbit 2ms", set: [network.emulate.rate_mbit=50, network.emulate.delay_ms=2]}
  - algorithm: [{label: broken, set: [train.lr=-1]}]
    network: [{label: fast, set: []}]
figures: [loss_epoch, loss_time, epoch_time_vs_bandwidth, epoch_time_vs_latency, accuracy_vs_bytes,
          {kind: loss_epoch, name: dcd-only, filter: {algorithm: "DCD 8-bit"}, line: network}]
"""

SUMMARY_COLUMNS = ["sweep", "run", "run_dir", "algorithm", "network", "label", "status", "error", "n_nodes",
                   "config_algorithm", "config_compressor", "rate_mbit", "delay_ms", "rounds", "epochs",
                   "final_acc_min", "final_acc_mean", "final_acc_max", "final_test_loss_mean",
                   "final_train_loss_mean", "epoch_time_s", "bytes_per_round", "bytes_per_node", "total_bytes",
                   "wall_s", "duration_s"]
FIGURES = ["loss_epoch", "loss_time", "epoch_time_vs_bandwidth", "epoch_time_vs_latency", "accuracy_vs_bytes",
           "dcd-only"]


def sweep(*args, timeout=120):
    return subprocess.run([SWEEP, *args, "--build", BUILD], capture_output=True, text=True, timeout=timeout)


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


def read_csv(path):
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        return reader.fieldnames, list(reader)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


class SweepTest(unittest.TestCase):
    """One real sweep, run twice (the second time resumes), shared by the checks below."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="qgossip-sweep-test-")
        d = cls.tmp.name
        write(os.path.join(d, "base.yaml"), BASE)
        cls.sweep_file = os.path.join(d, "tiny.yaml")
        write(cls.sweep_file, SWEEP_FILE)
        cls.out = os.path.join(d, "out")
        cls.dir = os.path.join(cls.out, "tiny")
        cls.first = sweep(cls.sweep_file, "--out", cls.out)
        cls.mtimes = {r: os.path.getmtime(os.path.join(cls.dir, r, "node-0.json"))
                      for r in ("d-psgd-fast", "dcd-8-bit-fast")}
        cls.second = sweep(cls.sweep_file, "--out", cls.out)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_first_invocation_runs_everything_and_reports_the_failure(self):
        r = self.first
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)  # one run failed, the sweep went on
        lines = r.stdout.splitlines()
        for i, label in enumerate(["D-PSGD | fast", "D-PSGD | 50Mbit 2ms", "DCD 8-bit | fast",
                                   "DCD 8-bit | 50Mbit 2ms"], 1):
            pattern = rf"\[{i}/5\] {re.escape(label)} \.\.\. \d+(\.\d)? s(; ETA \d+(\.\d)? s)?$"
            self.assertTrue(any(re.fullmatch(pattern, l) for l in lines), f"no line like {pattern} in\n{r.stdout}")
        self.assertRegex(r.stdout,
                         r"\[5/5\] broken \| fast \.\.\. FAILED after [\d.]+ s: qgossip: error: .*train\.lr")
        self.assertIn("1 run(s) not ok: broken | fast", r.stderr)

    def test_second_invocation_skips_finished_runs_and_reruns_the_failed_one(self):
        r = self.second
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(r.stdout.count("skipped (done)"), 4, r.stdout)
        self.assertIn("[5/5] broken | fast: re-running (previous attempt failed: qgossip: error:", r.stdout)
        for run, mtime in self.mtimes.items():  # untouched
            self.assertEqual(os.path.getmtime(os.path.join(self.dir, run, "node-0.json")), mtime, run)

    def test_summary_csv(self):
        header, rows = read_csv(os.path.join(self.dir, "summary.csv"))
        self.assertEqual(header, SUMMARY_COLUMNS)
        by_run = {r["run"]: r for r in rows}
        self.assertEqual(sorted(by_run), sorted(["D-PSGD | fast", "D-PSGD | 50Mbit 2ms", "DCD 8-bit | fast",
                                                 "DCD 8-bit | 50Mbit 2ms", "broken | fast"]))
        broken = by_run.pop("broken | fast")
        self.assertEqual(broken["status"], "failed")
        self.assertIn("train.lr", broken["error"])
        for label, r in by_run.items():
            self.assertEqual(r["status"], "ok", label)
            self.assertEqual(r["n_nodes"], "2")
            self.assertEqual(r["rounds"], "36", label)  # 3 epochs x floor(400 examples per node / batch 32)
            self.assertAlmostEqual(float(r["epochs"]), 3.0, places=2)
            acc_min, acc_mean, acc_max = (float(r[k]) for k in ("final_acc_min", "final_acc_mean", "final_acc_max"))
            self.assertTrue(0 <= acc_min <= acc_mean <= acc_max <= 1, label)
            self.assertGreater(acc_mean, 0.5, label)  # 4 well-separated classes: far above chance (0.25)
            self.assertGreater(float(r["epoch_time_s"]), 0, label)
            self.assertAlmostEqual(float(r["total_bytes"]), 2 * float(r["bytes_per_node"]), delta=1)
        self.assertEqual(by_run["DCD 8-bit | fast"]["config_algorithm"], "dcd")
        self.assertEqual(by_run["D-PSGD | fast"]["rate_mbit"], "0")
        self.assertEqual(by_run["D-PSGD | fast"]["delay_ms"], "0")
        self.assertEqual(by_run["D-PSGD | 50Mbit 2ms"]["rate_mbit"], "50")
        self.assertEqual(by_run["D-PSGD | 50Mbit 2ms"]["delay_ms"], "2")
        # 8-bit messages are about a quarter of 32-bit ones (plus headers and per-bucket norms).
        ratio = (float(by_run["DCD 8-bit | fast"]["bytes_per_round"]) /
                 float(by_run["D-PSGD | fast"]["bytes_per_round"]))
        self.assertLess(ratio, 0.4)
        self.assertGreater(ratio, 0.2)
        # A 2 ms delay on each of the 12 rounds of an epoch costs at least 24 ms per epoch.
        self.assertGreater(float(by_run["D-PSGD | 50Mbit 2ms"]["epoch_time_s"]), 0.024)

    def test_rows_csv_holds_every_node_row_in_long_format(self):
        header, rows = read_csv(os.path.join(self.dir, "rows.csv"))
        self.assertEqual(header[:7], ["sweep", "run", "run_dir", "algorithm", "network", "label", "rank"])
        for column in ("iteration", "epoch", "wall_s", "train_loss", "test_acc", "bytes_sent", "comm_s"):
            self.assertIn(column, header)
        expected = 0
        for run in ("d-psgd-fast", "d-psgd-50mbit-2ms", "dcd-8-bit-fast", "dcd-8-bit-50mbit-2ms"):
            for rank in (0, 1):
                with open(os.path.join(self.dir, run, f"node-{rank}.csv")) as f:
                    expected += sum(1 for _ in f) - 1
        self.assertEqual(len(rows), expected)
        self.assertEqual({r["rank"] for r in rows}, {"0", "1"})
        dcd = [r for r in rows if r["run_dir"] == "dcd-8-bit-fast" and r["rank"] == "1"]
        self.assertEqual(dcd[-1]["iteration"], "36")
        self.assertEqual(dcd[0]["algorithm"], "DCD 8-bit")
        self.assertEqual(dcd[0]["network"], "fast")

    def test_figures_and_markdown(self):
        for name in FIGURES:
            path = os.path.join(self.dir, "figures", f"{name}.png")
            self.assertTrue(os.path.isfile(path), path)
            width, height = png_size(path)
            self.assertGreater(width, 300)
            self.assertGreater(height, 200)
        with open(os.path.join(self.dir, "results.md")) as f:
            md = f.read()
        self.assertIn("## tiny", md)
        self.assertIn("Two algorithms on two emulated networks", md)
        self.assertRegex(md, r"\| DCD 8-bit \\\| fast \| ok \| 0\.\d{3}(–0\.\d{3})? \| [\d.]+ s \| "
                             r"[\d.]+ k?B \| [\d.]+ \|")
        self.assertIn("| broken \\| fast | failed: ", md)
        self.assertIn("![tiny: dcd-only](figures/dcd-only.png)", md)

    def test_results_py_renders_a_document_with_working_links(self):
        doc = os.path.join(self.tmp.name, "docs", "results.md")
        r = subprocess.run([RESULTS, self.dir, "-o", doc, "--title", "Results"], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(doc) as f:
            md = f.read()
        self.assertTrue(md.startswith("# Results\n"))
        links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
        self.assertEqual(len(links), len(FIGURES))
        for link in links:
            self.assertTrue(os.path.isfile(os.path.join(os.path.dirname(doc), link)), link)
        missing = subprocess.run([RESULTS, os.path.join(self.tmp.name, "nowhere")], capture_output=True, text=True,
                                 timeout=60)
        self.assertEqual(missing.returncode, 2)
        self.assertIn("no readable sweep.json", missing.stderr)

    def test_dry_run_with_only_launches_nothing(self):
        r = sweep(self.sweep_file, "--out", self.out, "--dry-run", "--only", "dcd")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("[1/5] D-PSGD | fast -> d-psgd-fast/: not selected", r.stdout)
        self.assertIn("[3/5] DCD 8-bit | fast -> dcd-8-bit-fast/: skip (done)", r.stdout)
        self.assertIn("[5/5] broken | fast -> broken-fast/: not selected", r.stdout)

    def test_cluster_shaping_moves_the_network_into_cluster_sh_arguments(self):
        cluster = os.path.join(self.tmp.name, "cluster.yaml")
        write(cluster, SWEEP_FILE.replace("name: tiny", "name: tiny-cluster\nshaping: cluster"))
        r = sweep(cluster, "--out", self.out, "--dry-run", "--only", "50Mbit")
        self.assertEqual(r.returncode, 0, r.stderr)
        commands = [l.strip() for l in r.stdout.splitlines() if l.startswith("    ")]
        self.assertEqual(len(commands), 2, r.stdout)
        for cmd in commands:
            self.assertTrue(cmd.startswith(f"bash {ROOT}/scripts/cluster.sh --rate 50mbit --latency 2ms --qgossip "
                                           f"{BUILD}/qgossip {self.tmp.name}/base.yaml --set train.epochs=3"), cmd)
            self.assertNotIn("network.emulate", cmd)  # the links are shaped instead
            self.assertTrue(cmd.endswith("--plain --no-plot"), cmd)

    def test_changed_settings_are_rerun(self):
        changed = os.path.join(self.tmp.name, "changed.yaml")
        write(changed, SWEEP_FILE.replace("set: [train.epochs=3]", "set: [train.epochs=3, seed=4]"))
        r = sweep(changed, "--out", self.out, "--dry-run")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("[1/5] D-PSGD | fast -> d-psgd-fast/: re-run (its settings changed since it ran)", r.stdout)
        self.assertIn("--set seed=4", r.stdout)


class SweepFileErrorsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="qgossip-sweep-test-")
        write(os.path.join(self.tmp.name, "base.yaml"), BASE)

    def tearDown(self):
        self.tmp.cleanup()

    def check_error(self, text, message):
        path = os.path.join(self.tmp.name, "bad.yaml")
        write(path, text)
        r = sweep(path, "--out", os.path.join(self.tmp.name, "out"))
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn(message, r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp.name, "out")))

    def test_unknown_key(self):
        self.check_error("name: x\nbase: base.yaml\nruns: {a: [{label: A}]}\nfigure: [loss_epoch]\n",
                         "unknown key 'figure' (expected one of: name, description, base, set, shaping, runs, "
                         "figures)")

    def test_missing_base(self):
        self.check_error("name: x\nbase: nowhere.yaml\nruns: {a: [{label: A}]}\n", "base: cannot find 'nowhere.yaml'")

    def test_labels_that_collide(self):
        self.check_error("name: x\nbase: base.yaml\nruns: {a: [{label: 'n=8'}, {label: 'N 8'}]}\n",
                         "runs 'n=8' and 'N 8' get the same directory 'n-8'")

    def test_bad_set_and_figure(self):
        self.check_error("name: x\nbase: base.yaml\nruns: {a: [{label: A, set: [lr]}]}\n", "'lr' is not key=value")
        self.check_error("name: x\nbase: base.yaml\nruns: {a: [{label: A}]}\nfigures: [pie]\n",
                         "kind: expected one of loss_epoch")

    def test_missing_binary(self):
        path = os.path.join(self.tmp.name, "ok.yaml")
        write(path, "name: x\nbase: base.yaml\nruns: {a: [{label: A}]}\n")
        r = subprocess.run([SWEEP, path, "--build", os.path.join(self.tmp.name, "nobuild")], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn("no qgossip binary at", r.stderr)


class InterruptTest(unittest.TestCase):
    def test_ctrl_c_stops_the_current_launch_and_keeps_what_finished(self):
        with tempfile.TemporaryDirectory(prefix="qgossip-sweep-test-") as d:
            write(os.path.join(d, "base.yaml"), BASE)
            path = os.path.join(d, "long.yaml")
            # Long enough (a 1 ms delay on each of 12,000 rounds) never to finish before the signal.
            write(path, "name: long\nbase: base.yaml\nset: [train.epochs=1000, train.log_every=20, "
                        "network.emulate.delay_ms=1]\nruns: {algorithm: [{label: A}, {label: B}]}\n"
                        "figures: [loss_epoch]\n")
            out = os.path.join(d, "out")
            proc = subprocess.Popen([SWEEP, path, "--out", out, "--build", BUILD], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
            csv_path = os.path.join(out, "long", "a", "node-0.csv")
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:  # wait until the nodes are training
                if os.path.isfile(csv_path):
                    with open(csv_path) as f:
                        if sum(1 for _ in f) >= 3:
                            break
                time.sleep(0.1)
            else:
                proc.kill()
                self.fail("the run never started logging")
            proc.send_signal(signal.SIGINT)
            stdout, stderr = proc.communicate(timeout=60)
            self.assertEqual(proc.returncode, 130, stdout + stderr)
            self.assertIn("[1/2] A ... interrupted", stdout)
            self.assertIn("interrupted; finished runs are kept", stderr)
            self.assertNotIn("[2/2]", stdout)  # the sweep stopped
            self.assertFalse(os.path.exists(os.path.join(out, "long", "b")))
            for rank in (0, 1):  # the nodes stopped cleanly and said so
                with open(os.path.join(out, "long", "a", f"node-{rank}.json")) as f:
                    self.assertEqual(json.load(f)["status"], "interrupted")
            _, rows = read_csv(os.path.join(out, "long", "summary.csv"))
            self.assertEqual([r["status"] for r in rows], ["interrupted"])


if __name__ == "__main__":
    if len(sys.argv) < 2 or not os.path.isfile(os.path.join(sys.argv[1], "qgossip")):
        sys.exit("usage: test_sweep.py BUILD_DIR (the directory holding the qgossip binary)")
    BUILD = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
