"""Overlapped rounds from a program's loop (train.overlap; docs/algorithms.md, "Overlapped rounds";
issue 44): real nodes, each its own /usr/bin/python3 process, over ipc:// on this host.

The rule test drives every node with the same deterministic "local steps" (x <- x - a (x - c_rank),
float32, in place) and compares each node's final parameters with the documented update rule
simulated in float64 in this process. Identity messages make the rule exact up to float32 rounding:
after 30 rounds the float32 nodes sit within 1e-4 of the float64 reference (measured: 2.3e-7 for CHOCO-SGD, 2.4e-7 for D-PSGD,
4.0e-7 for allreduce with DiLoCo's outer step), and the reference of blocking rounds is more than 1e-2 away (measured: 0.085,
0.10 and 0.39), so the test tells the two rules apart
and cannot flake: nothing in it depends on timing (synchronous rounds)."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

RULE_WORKER = textwrap.dedent('''
    import json, sys, numpy as np, qgossip
    rank, rounds, config, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    size, a = 48, np.float32(0.2)
    x = np.random.default_rng(0).standard_normal(size).astype(np.float32)  # x_1, the same everywhere
    c = np.random.default_rng(100 + rank).standard_normal(size).astype(np.float32)  # each node its own pull
    node = qgossip.Node(config, rank=rank)
    node.attach(x)
    for _ in range(rounds * node.local_steps):
        x -= a * (x - c)
        node.step()
    exit = node.close()
    np.save(out, x)
    json.dump({"exit": exit}, open(out + ".json", "w"))
''')

N, H, ROUNDS, A, GAMMA = 4, 2, 30, 0.2, 0.8
OUTER_LR, OUTER_MOMENTUM = 0.7, 0.9  # DiLoCo's outer Nesterov, for allreduce


def reference(algorithm, overlap):
    """Every node's final parameters under the rule of docs/algorithms.md, in float64: ring of 4,
    Metropolis weights 1/3, identity messages, H local steps x <- x - a (x - c) per round."""
    size = 48
    x0 = np.random.default_rng(0).standard_normal(size).astype(np.float32).astype(np.float64)
    c = [np.random.default_rng(100 + i).standard_normal(size).astype(np.float32).astype(np.float64) for i in range(N)]
    w = 1.0 / 3.0
    nbrs = [((i - 1) % N, (i + 1) % N) for i in range(N)]
    P = [x0.copy() for _ in range(N)]  # the program's parameters
    x = [x0.copy() for _ in range(N)]  # the algorithm's model
    hat = [x0.copy() for _ in range(N)]  # CHOCO's public copies (every holder's is the same)
    taken, sent, step = [None] * N, [None] * N, [None] * N
    pending = False

    def land():
        for i in range(N):
            if algorithm == "choco":
                x[i] = x[i] + GAMMA * sum(w * (hat[j] - hat[i]) for j in nbrs[i])
            else:  # dpsgd: the weighted mean of the models sent, less the round's step
                x[i] = (1 - 2 * w) * sent[i] + sum(w * sent[j] for j in nbrs[i]) - step[i]
        for i in range(N):
            P[i] = P[i] - taken[i] + x[i]

    for _ in range(ROUNDS):
        for i in range(N):
            for _ in range(H):
                P[i] = P[i] - A * (P[i] - c[i])
        if pending:
            land()
        for i in range(N):
            taken[i] = P[i].copy()
            if algorithm == "choco":
                x[i] = P[i].copy()  # x - (x - P)
                hat[i] = x[i].copy()  # identity: the public copy becomes x_{t+1/2}
            else:
                sent[i], step[i] = x[i].copy(), x[i] - P[i]
        pending = True
        if not overlap:
            land()
            pending = False
    if pending:  # the node's close() lands the round in flight
        land()
    return P


def allreduce_reference(overlap):
    """allreduce with train.outer (DiLoCo), in float64: blocking, the outer Nesterov step of the
    averaged change (one momentum, the same on every node); overlapped, the delayed outer step of
    docs/algorithms.md: each node's outer step of its own change (its own momentum), averaged by the
    all-reduce and landed one round late on top of the steps taken meanwhile."""
    size = 48
    x = np.random.default_rng(0).standard_normal(size).astype(np.float32).astype(np.float64)
    c = [np.random.default_rng(100 + i).standard_normal(size).astype(np.float32).astype(np.float64) for i in range(N)]
    P = [x.copy() for _ in range(N)]
    m = [np.zeros(size) for _ in range(N)]  # blocking: every node's is the same, m[0] used
    taken, sent, pending = [None] * N, [None] * N, False

    def outer(i, d):
        m[i] = OUTER_MOMENTUM * m[i] + d
        return OUTER_LR * (d + OUTER_MOMENTUM * m[i])

    def land():
        nonlocal x
        x = x - sum(sent) / N
        for i in range(N):
            P[i] = P[i] - taken[i] + x

    for _ in range(ROUNDS):
        for i in range(N):
            for _ in range(H):
                P[i] = P[i] - A * (P[i] - c[i])
        if not overlap:
            x = x - outer(0, x - sum(P) / N)  # x - mean(P): the averaged change
            P = [x.copy() for _ in range(N)]
            continue
        if pending:
            land()
        for i in range(N):
            taken[i] = P[i].copy()
            sent[i] = outer(i, x - P[i])
        pending = True
    if pending:
        land()
    return P


def write_config(tmp_path, algorithm, compressor, overlap, extra_train=""):
    path = tmp_path / "run.yaml"
    path.write_text(textwrap.dedent(f"""\
        name: py
        seed: 3
        topology: {{graph: ring, n: {N}}}
        algorithm: {algorithm}
        compressor: {compressor}
        train: {{local_steps: {H}, log_every: 5, overlap: {str(overlap).lower()}{extra_train}}}
        network: {{transport: ipc, security: none, start_timeout_s: 30, round_timeout_s: 30}}
        output: {{dir: {tmp_path}/runs}}
        """))
    return path


def start_nodes(tmp_path, program, length, config, out_name):
    """N processes of `program` (a worker's text), each given its rank, `length`, the config and
    its output path; returns (process, output path) per rank."""
    worker = tmp_path / "worker.py"
    worker.write_text(program)
    procs = []
    for rank in range(N):
        log = open(tmp_path / f"node-{rank}.out", "w")
        out = tmp_path / out_name.format(rank=rank)
        procs.append((subprocess.Popen([sys.executable, str(worker), str(rank), str(length), str(config), str(out)],
                                       stdout=log, stderr=subprocess.STDOUT), out))
    return procs


def run_rule_nodes(tmp_path, config):
    finals = []
    for rank, (p, out) in enumerate(start_nodes(tmp_path, RULE_WORKER, ROUNDS, config, "x-{rank}.npy")):
        assert p.wait(timeout=120) == 0, (tmp_path / f"node-{rank}.out").read_text()
        finals.append(np.load(out).astype(np.float64))
    return finals


def verify(build, tmp_path):
    v = subprocess.run([os.path.join(build, "qgossip"), "verify", str(tmp_path / "runs" / "py")],
                       capture_output=True, text=True)
    return v.returncode, v.stdout + v.stderr


@pytest.mark.parametrize("algorithm", ["choco", "dpsgd"])
def test_the_overlapped_rule_matches_a_float64_reference(build, tmp_path, algorithm):
    name = "{name: choco, consensus_step: 0.8}" if algorithm == "choco" else "dpsgd"
    finals = run_rule_nodes(tmp_path, write_config(tmp_path, name, "identity", True))
    overlapped, blocking = reference(algorithm, True), reference(algorithm, False)
    for i in range(N):
        assert np.max(np.abs(finals[i] - overlapped[i])) < 1e-4, (i, np.max(np.abs(finals[i] - overlapped[i])))
        assert np.max(np.abs(finals[i] - blocking[i])) > 1e-2  # the reference tells the two rules apart
    code, said = verify(build, tmp_path)
    assert code == 0, said


# allreduce with DiLoCo's outer step: overlapped, the delayed outer step (its float64 reference);
# blocking, DiLoCo's own rule. Every node ends with the same model (verify: "all equal").
@pytest.mark.parametrize("overlap", [True, False])
def test_allreduce_with_the_outer_step_matches_its_float64_reference(build, tmp_path, overlap):
    outer = f", outer: {{lr: {OUTER_LR}, momentum: {OUTER_MOMENTUM}}}"
    finals = run_rule_nodes(tmp_path, write_config(tmp_path, "allreduce", "identity", overlap, outer))
    want, other = allreduce_reference(overlap), allreduce_reference(not overlap)
    for i in range(N):
        assert np.max(np.abs(finals[i] - want[i])) < 1e-4, (i, np.max(np.abs(finals[i] - want[i])))
        assert np.max(np.abs(finals[i] - other[i])) > 1e-2, (i, np.max(np.abs(finals[i] - other[i])))
    code, said = verify(build, tmp_path)
    assert code == 0 and "all equal" in said, said


def test_blocking_rounds_match_the_blocking_reference(build, tmp_path):
    """The same check with overlap off: the reference's blocking form is today's rule."""
    finals = run_rule_nodes(tmp_path, write_config(tmp_path, "{name: choco, consensus_step: 0.8}", "identity", False))
    blocking = reference("choco", False)
    for i in range(N):
        assert np.max(np.abs(finals[i] - blocking[i])) < 1e-4


# A model that learns, 3-bit messages: synchronous and asynchronous (bounded, and unbounded: rounds that
# skip a busy link, a public copy per edge), every copy exact.
@pytest.mark.parametrize("extra", ["", ", max_staleness: 2", ", max_staleness: unbounded"])
def test_overlapped_python_nodes_learn_and_every_copy_is_exact(build, tmp_path, extra):
    from test_node import WORKER  # the classifier loop of test_node.py
    config = write_config(tmp_path, "{name: choco, consensus_step: 0.8}", "{name: qsgd, bits: 3, bucket: 128, norm: max}",
                          True, extra)
    for rank, (p, out) in enumerate(start_nodes(tmp_path, WORKER, 160, config, "result-{rank}.json")):
        p.wait(timeout=120)
        r = json.loads(out.read_text())
        assert r.get("exit") == 0, (tmp_path / f"node-{rank}.out").read_text()
        assert r["last"] < 0.5 * r["first"], r
    code, said = verify(build, tmp_path)
    assert code == 0 and "all equal" in said, said
