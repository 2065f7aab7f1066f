#!/usr/bin/python3
"""The language-model race's smallest cell (scripts/tta.py configs/tta/lm.yaml, run by scripts/tta_lm.py):
the race's own sweep with its every system, 8 ranks, cut to 32 steps (DiLoCo H=32's one outer step) on
loopback (--local, unshaped, one repeat). Each system starts, trains and reports: a row per run in
runs.csv, ended; every rank's curve at steps 0, 16 and 32, the loss falling; qgossip's rows `qgossip verify` all equal and their ranks'
average model evaluated; a table row per system in lm.md. Then bad sweep files, refused with exit 2 and
what is wrong. Not timed (the race is), and nothing here depends on timing: every check is of what the
runs wrote, which seeded synchronous runs make the same each time except the asynchronous row's losses,
which are only checked to be finite and below the first evaluation's (5.81) by a margin (> 1.0) that
32 AdamW steps clear in every row by more than twice.

Usage: test_tta_lm.py BUILD_DIR"""
import csv
import os
import subprocess
import sys
import tempfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TTA = os.path.join(REPO, "scripts", "tta.py")
SWEEP = os.path.join(REPO, "configs", "tta", "lm.yaml")


def smallest(tmp):
    doc = yaml.safe_load(open(SWEEP))
    doc.update(name="smallest", steps=32, eval_every=16, warmup=4, repeats=1, links=[{"label": "unshaped"}])
    for s in doc["systems"]:
        if "config" in s:
            s["config"] = os.path.join(REPO, "configs", "tta", s["config"])
    path = os.path.join(tmp, "smallest.yaml")
    yaml.safe_dump(doc, open(path, "w"))
    return path, doc


def tta(build, *args):
    return subprocess.run([sys.executable, TTA] + list(args) + ["--build", build], capture_output=True, text=True)


def check_race(build, tmp):
    path, doc = smallest(tmp)
    out = os.path.join(tmp, "out")
    p = tta(build, path, "--local", "--out", out)
    assert p.returncode == 0, p.stdout + p.stderr
    rows = list(csv.DictReader(open(os.path.join(out, "smallest", "runs.csv"))))
    systems = {r["system"] for r in rows}
    # Every system of the race, DiLoCo's grid expanded (H=16, H=32).
    assert len(rows) == len(doc["systems"]) + 1 and len(systems) == len(rows), systems
    for r in rows:
        assert r["status"] == "ok", r
        assert 1.0 < float(r["final_worst"]) < 4.8 and float(r["final_mean"]) <= float(r["final_worst"]), r
        if r["kind"] == "qgossip":
            assert r["verify"] == "all equal", r
            assert float(r["average_model"]) < 4.8, r
    curves = list(csv.DictReader(open(os.path.join(out, "smallest", "curves.csv"))))
    for r in rows:
        steps = [int(c["step"]) for c in curves if c["run"] == r["run"]]
        assert steps == [0, 16, 32], (r["run"], steps)
    table = open(os.path.join(out, "smallest", "lm.md")).read()
    for s in systems:
        assert f"| {s} | 1 |" in table, s
    assert os.path.exists(os.path.join(out, "smallest", "figures", "val_loss_vs_time.png"))
    # A second call finds every run done and runs nothing.
    again = tta(build, path, "--local", "--out", out)
    assert again.returncode == 0 and again.stdout.count("skipped (done)") == len(rows), again.stdout


def check_refusals(build, tmp):
    path, doc = smallest(tmp)
    cases = [({"stepz": 3}, "unknown key 'stepz'"),
             ({"targets": []}, "targets: expected validation losses"),
             ({"systems": [{"label": "x", "kind": "horovod"}]}, "kind: expected ddp, diloco, streaming, qgossip"),
             ({"systems": [{"label": "x", "kind": "diloco", "H": 0.5}]}, "H: 0.5 is not a valid value"),
             ({"nodes": 4}, "has 8 nodes, the sweep's nodes 4"),
             ({"links": [{"label": "slow", "rate": "1mbit"}]}, "--local cannot shape links")]
    for change, message in cases:
        bad = dict(doc, **change)
        bad_path = os.path.join(tmp, "bad.yaml")
        yaml.safe_dump(bad, open(bad_path, "w"))
        p = tta(build, bad_path, "--local", "--out", os.path.join(tmp, "bad-out"))
        assert p.returncode == 2 and message in p.stderr, (change, p.returncode, p.stderr)
    dry = tta(build, path, "--local", "--dry-run", "--out", os.path.join(tmp, "dry"))
    assert dry.returncode == 0 and dry.stdout.count("lm_peer.py") == 4, dry.stdout


def main():
    build = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory(prefix="qgossip-tta-lm-") as tmp:
        check_refusals(build, tmp)
        check_race(build, tmp)
    print("tta_lm: the race's every system ran, reported and verified; bad sweeps refused")


if __name__ == "__main__":
    main()
