"""The language-model example (examples/python/lm.py, docs/python.md) as a user runs it: four Python
nodes started by `qgossip launch --exec`, a byte-level transformer with its own loss, AdamW, warm-up
and clipping, 3-bit CHOCO every 16 steps; the same four nodes averaging exactly (allreduce, no
compression: the control that shows what the gossip and its 3 bits cost); and the same model alone
on the same number of tokens. Seeded throughout, and synchronous gossip does not depend on timing:
the figures are the same on every run, so the bounds below cannot flake."""
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEXT = "/usr/share/common-licenses/GPL-3"  # any text file; this one is on every Debian
ARGS = ["--text", TEXT, "--steps", "64", "--batch", "8"]


# The example's YAML with exact averaging every round in place of 3-bit CHOCO (same ring, same H).
EXACT = """name: lm
seed: 1
topology: {graph: ring, n: 4}
algorithm: {name: allreduce}
compressor: {name: identity}
train: {local_steps: 16, log_every: 1}
network: {transport: ipc}
"""


def launch_nodes(build, config, out):  # the four nodes' results (lm-<r>.json)
    example = os.path.join(REPO, "examples", "python", "lm.py")
    program = " ".join([sys.executable, example] + ARGS)
    launch = subprocess.run([os.path.join(build, "qgossip"), "launch", str(config), "--exec", program,
                             "--set", f"output.dir={out}", "--plain", "--no-plot"],
                            capture_output=True, text=True, timeout=240)
    assert launch.returncode == 0, launch.stdout + launch.stderr
    assert "all equal" in launch.stdout + launch.stderr  # the launcher's qgossip verify
    return [json.load(open(out / "lm" / f"lm-{r}.json")) for r in range(4)]


def test_four_python_lm_nodes_under_the_launcher_learn_and_keep_exact_copies(build, tmp_path):
    example = os.path.join(REPO, "examples", "python", "lm.py")
    nodes = launch_nodes(build, os.path.join(REPO, "examples/python/lm.yaml"), tmp_path / "choco")
    (tmp_path / "exact.yaml").write_text(EXACT)
    exact = launch_nodes(build, tmp_path / "exact.yaml", tmp_path / "exact")
    alone = subprocess.run([sys.executable, example] + ARGS + ["--alone", "4", "--out", str(tmp_path / "alone.json")],
                           capture_output=True, text=True, timeout=240)
    assert alone.returncode == 0, alone.stderr
    single = json.load(open(tmp_path / "alone.json"))
    print("validation loss, from", single["first_val_loss"], "- nodes, 3-bit CHOCO:", [n["val_loss"] for n in nodes],
          "exact averaging:", exact[0]["val_loss"], "alone on the same tokens:", single["val_loss"])
    for n in nodes:
        assert n["exit"] == 0 and n["rounds"] == 4  # 64 steps, a round every 16
        assert n["tokens"] * 4 == single["tokens"]
        assert n["val_loss"] < n["first_val_loss"] - 2.0, n  # from 5.74 (uniform over bytes is 5.55)
        # 3-bit gossip on a ring ends where exact averaging does (measured: 2.655-2.677 against 2.658)
        assert abs(n["val_loss"] - exact[0]["val_loss"]) < 0.03, (n, exact[0])


# The peer that sends the same bits (docs/tta.md, "The language-model peers"): DiLoCo with 3-bit
# pseudo-gradients, qgossip's all-gather of C(Δ) with the outer step, from the same loop: every rank
# ends with the same model (measured 2.749 on every rank, from 5.74), and the launcher's verify agrees.
def test_diloco_with_3_bit_pseudo_gradients_from_the_python_loop(build, tmp_path):
    nodes = launch_nodes(build, os.path.join(REPO, "examples/python/lm-diloco-3bit.yaml"), tmp_path / "qdiloco")
    assert len({n["val_loss"] for n in nodes}) == 1, nodes
    for n in nodes:
        assert n["exit"] == 0 and n["rounds"] == 4 and n["val_loss"] < n["first_val_loss"] - 2.0, n


# The default corpus: Debian's King James Version through its `bible` command, 4.3 MB, the last tenth
# held out; the same bytes on every call (every rank and every system reads the same split).
def test_the_default_corpus_is_the_king_james_version_with_a_fixed_held_out_tenth():
    sys.path.insert(0, os.path.join(REPO, "examples", "python"))
    from corpus import read_corpus
    train, val = read_corpus()
    total = len(train) + len(val)
    assert 4_000_000 < total < 5_000_000, total
    assert len(val) == total - int(0.9 * total)
    assert bytes(train[:80].tolist()).strip().startswith(b"Genesis 1")
    assert b"Amen." in bytes(val[-200:].tolist())
    again_train, again_val = read_corpus()
    assert torch_equal(train, again_train) and torch_equal(val, again_val)


def torch_equal(a, b):
    return len(a) == len(b) and bool((a == b).all())
