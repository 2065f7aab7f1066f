"""The Python module (docs/python.md, issue 29): real nodes, each its own /usr/bin/python3 process
with torch, gossiping over ipc:// on this host. Every run is seeded (the models' initialization, the
data, the quantization), and synchronous gossip's result does not depend on timing, so the checks
below cannot flake on a loaded machine: only the time-outs are wall-clock, and they are generous."""
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import torch  # a machine without python3-torch fails here: these tests do not skip

# A node's program: a small classifier on a seeded synthetic task, its own AdamW, its own loss.
WORKER = textwrap.dedent('''
    import json, os, signal, sys, time, torch, qgossip
    rank, steps, config, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    die_at = int(os.environ.get("DIE_AT", "0"))
    pause = float(os.environ.get("STEP_PAUSE_S", "0"))  # a slower loop, so that a restart lands mid-run
    torch.manual_seed(int(os.environ.get("INIT_SEED", "0")))  # the same initial model on every node
    width = int(os.environ.get("WIDTH", "32"))  # a node with another width has another model
    dtype = getattr(torch, os.environ.get("DTYPE", "float32"))  # the parameters' and the inputs'
    model = torch.nn.Sequential(torch.nn.Linear(20, width), torch.nn.ReLU(), torch.nn.Linear(width, 4)).to(dtype)
    node = qgossip.Node(config, rank=rank)
    node.attach(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    if rank % 2: opt = qgossip.torch.wrap(opt, node)   # the wrapper's shape on odd ranks
    w = torch.randn(20, 4, generator=torch.Generator().manual_seed(7))
    g = torch.Generator().manual_seed(100 + rank)  # each node its own data
    losses, result = [], {"rank": rank}
    try:
        step = 0
        # A restarted node goes on from the round it rejoins at; a node whose peers are done
        # (asynchronous gossip) ends by itself.
        while node.round < steps // node.local_steps and not node.done:
            step += 1
            if step == die_at:
                open(out + ".died", "w").write(str(time.time()))
                os.kill(os.getpid(), signal.SIGKILL)
            time.sleep(pause)
            x = torch.randn(64, 20, generator=g)
            loss = torch.nn.functional.cross_entropy(model(x.to(dtype)).float(), (x @ w).argmax(1))
            opt.zero_grad(); loss.backward(); opt.step()
            if not rank % 2: node.step()
            node.log(loss.item()); losses.append(loss.item())
        result["exit"] = node.close()
    except qgossip.NodeError as e:
        result.update(error=str(e), error_exit=e.exit, error_at=time.time())
    result.update(first=sum(losses[:20]) / 20, last=sum(losses[-20:]) / 20, round=node.round, done=node.done,
                  dtypes=sorted({str(p.dtype) for p in model.parameters()}))
    json.dump(result, open(out, "w"))
''')


# A node's program inside `with qgossip.Node(...)`, whose loop raises RAISE (RuntimeError or
# KeyboardInterrupt) at step RAISE_AT; the time of the raise is written first. Each rank marks
# <result>.up once its round 1 has landed (step 8, train.local_steps 4); with WAIT_UP=n the raising
# rank waits for n marks first. Overlapped, a node's neighbours may otherwise train on before a slow
# starter is up, and stop before it can hear why: it then learns only that their links closed.
WITH_WORKER = textwrap.dedent('''
    import glob, json, os, sys, time, torch, qgossip
    rank, steps, config, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    raise_at, kind = int(os.environ.get("RAISE_AT", "0")), os.environ.get("RAISE", "RuntimeError")
    wait_up = int(os.environ.get("WAIT_UP", "0"))
    pause_at, pause_s = int(os.environ.get("PAUSE_AT", "0")), float(os.environ.get("PAUSE_S", "0"))
    if os.environ.get("SPECIAL_RANK", str(rank)) != str(rank):  # under the launcher: every rank has the env
        raise_at = pause_at = 0
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(20, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    w = torch.randn(20, 4, generator=torch.Generator().manual_seed(7))
    g = torch.Generator().manual_seed(100 + rank)
    result = {"rank": rank}
    try:
        with qgossip.Node(config, rank=rank) as node:
            node.attach(model)
            opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
            for step in range(1, steps + 1):
                if step == raise_at:
                    while len(glob.glob(os.path.join(os.path.dirname(out), "*.up"))) < wait_up:
                        time.sleep(0.02)  # every rank up, its links carrying messages, before the raise
                    result["raised_at"] = time.time()
                    json.dump(result, open(out, "w"))
                    raise KeyboardInterrupt() if kind == "KeyboardInterrupt" else RuntimeError(f"boom at step {step}")
                if step == pause_at:  # the program busy between two steps: an evaluation, a checkpoint
                    result["paused_at"] = time.time()
                    json.dump(result, open(out + ".paused", "w"))
                    time.sleep(pause_s)
                x = torch.randn(64, 20, generator=g)
                loss = torch.nn.functional.cross_entropy(model(x), (x @ w).argmax(1))
                opt.zero_grad(); loss.backward(); opt.step()
                node.step()
                if step == 8:  # round 1 landed, even overlapped: every neighbour's link to this node carries
                    open(out + ".up", "w").close()
            result["exit"] = node.close()
    except qgossip.NodeError as e:
        result.update(error=str(e), error_exit=e.exit, error_at=time.time())
    json.dump(result, open(out, "w"))
''')


def write_config(tmp_path, n, extra="", network="", algorithm="{name: choco, consensus_step: 0.8}",
                 compressor="{name: qsgd, bits: 3, bucket: 128, norm: max}", train="", round_timeout_s=30):
    path = tmp_path / "run.yaml"
    path.write_text(textwrap.dedent(f"""\
        name: py
        seed: 3
        topology: {{graph: ring, n: {n}}}
        algorithm: {algorithm}
        compressor: {compressor}
        train: {{local_steps: 4, log_every: 5{train}}}
        network: {{transport: ipc, security: none, start_timeout_s: 30, round_timeout_s: {round_timeout_s}{network}}}
        output: {{dir: {tmp_path}/runs}}
        """) + extra)
    return path


def start_node(tmp_path, config, rank, steps, env):
    worker = tmp_path / "worker.py"
    if not worker.exists():  # written once: a node starting meanwhile must not read it half-written
        worker.write_text(WORKER)
    out = tmp_path / f"result-{rank}.json"
    log = open(tmp_path / f"node-{rank}.out", "a")
    return subprocess.Popen([sys.executable, str(worker), str(rank), str(steps), str(config), str(out)],
                            env=dict(os.environ, **env), stdout=log, stderr=subprocess.STDOUT), out


def run_nodes(build, tmp_path, n, steps, env_for=lambda rank: {}, network="", **algorithm):
    config = write_config(tmp_path, n, network=network, **algorithm)
    procs = [start_node(tmp_path, config, rank, steps, env_for(rank)) for rank in range(n)]
    results = []
    for rank, (p, out) in enumerate(procs):
        p.wait(timeout=120)
        results.append(json.loads(out.read_text()) if out.exists() else {"rank": rank, "killed": p.returncode})
    return results


def assert_verified(build, tmp_path, says):
    """`qgossip verify` of the run: exit 0, and its verdict saying `says`."""
    verify = subprocess.run([os.path.join(build, "qgossip"), "verify", str(tmp_path / "runs" / "py")],
                            capture_output=True, text=True)
    said = verify.stdout + verify.stderr
    assert verify.returncode == 0 and says in said, said


def node_output(tmp_path, rank):
    return (tmp_path / f"node-{rank}.out").read_text()


def run_workers(tmp_path, name, source, config, n=4):
    """n processes of the program `source` (written as NAME_worker.py), each given its rank, the run
    YAML and its result file NAME-RANK.pt: waits for each to exit 0 and returns their results."""
    worker = tmp_path / f"{name}_worker.py"
    worker.write_text(source)
    procs = [subprocess.Popen([sys.executable, str(worker), str(r), str(config), str(tmp_path / f"{name}-{r}.pt")],
                              stdout=open(tmp_path / f"node-{r}.out", "w"), stderr=subprocess.STDOUT)
             for r in range(n)]
    for r, p in enumerate(procs):
        assert p.wait(timeout=120) == 0, node_output(tmp_path, r)
    return [torch.load(tmp_path / f"{name}-{r}.pt") for r in range(n)]


def test_four_python_nodes_train_on_a_ring_and_every_copy_is_exact(build, tmp_path):
    results = run_nodes(build, tmp_path, 4, 200)
    for r in results:
        assert r.get("exit") == 0, node_output(tmp_path, r["rank"])
        assert r["round"] == 50  # 200 steps, a round every 4
        assert r["last"] < 0.5 * r["first"], r  # the task is learnt (mean loss of the last 20 steps)
    assert_verified(build, tmp_path, "all equal")
    rows = (tmp_path / "runs" / "py" / "node-0.csv").read_text().splitlines()
    header, last = rows[0].split(","), rows[-1].split(",")
    assert last[header.index("iteration")] == "50"
    assert float(last[header.index("train_loss")]) > 0  # the program's loss, from node.log


# A bf16 model: the node's rounds work on a float32 copy, widened from the parameters before each
# round and rounded back into them after it; the parameters stay bf16, the task is learnt, and the
# copies the nodes hold of one another stay exact (they are the node's float32 values).
def test_a_bf16_model_trains_on_a_ring_and_every_copy_is_exact(build, tmp_path):
    results = run_nodes(build, tmp_path, 4, 200, env_for=lambda rank: {"DTYPE": "bfloat16"})
    for r in results:
        assert r.get("exit") == 0, node_output(tmp_path, r["rank"])
        assert r["round"] == 50 and r["dtypes"] == ["torch.bfloat16"], r
        assert r["last"] < 0.5 * r["first"], r
    assert_verified(build, tmp_path, "all equal")


# An fp16 model (torch 1.13 has no fp16 matrix product on the CPU, so the program moves the
# parameters itself): each node's parameters pushed apart by a seeded offset of its own, then mix(8)
# brings them within a tenth of their spread, in float16 throughout. CHOCO's pull per round is
# γ(1 − W_ii) = 0.8 · 2/3, less the 3-bit noise, as in the mix test below: seeded, synchronous.
FP16_WORKER = textwrap.dedent('''
    import sys, torch, qgossip
    rank, config, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    torch.manual_seed(0)
    model = torch.nn.Linear(20, 4).half()
    flat = lambda: torch.cat([p.detach().reshape(-1).float() for p in model.parameters()])
    with qgossip.Node(config, rank=rank) as node:
        node.attach(model)
        g = torch.Generator().manual_seed(100 + rank)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(torch.randn(p.shape, generator=g).half())
        for _ in range(4):
            node.step()
        before = flat()
        node.mix(8)
        torch.save({"before": before, "after": flat(), "dtypes": {str(p.dtype) for p in model.parameters()}}, out)
''')


def test_an_fp16_models_copies_are_pulled_together_by_mix(build, tmp_path):
    ends = run_workers(tmp_path, "fp16", FP16_WORKER, write_config(tmp_path, 4))
    assert all(e["dtypes"] == {"torch.float16"} for e in ends)
    spread = lambda key: max(float((e[key] - sum(f[key] for f in ends) / 4).norm()) for e in ends)
    print("spread before", spread("before"), "after", spread("after"))
    assert spread("before") > 1
    assert spread("after") < 0.1 * spread("before")
    assert_verified(build, tmp_path, "all equal")


# Every algorithm that takes local steps, driven by the same Python loop: each learns, and each
# keeps its copies (DCD replicas, ECD estimates, public copies; the centralized ones: one model).
@pytest.mark.parametrize("algorithm,compressor", [
    ("dpsgd", "identity"),
    ("dcd", "{name: qsgd, bits: 8, bucket: 128, norm: max}"),
    ("ecd", "{name: qsgd, bits: 8, bucket: 128, norm: max}"),
    ("allreduce", "{name: qsgd, bits: 8, bucket: 128, norm: max}"),
    ("allgather", "{name: qsgd, bits: 4, bucket: 128, norm: max}"),
])
def test_every_algorithm_with_local_steps_runs_from_python(build, tmp_path, algorithm, compressor):
    results = run_nodes(build, tmp_path, 4, 120, algorithm=algorithm, compressor=compressor)
    for r in results:
        assert r.get("exit") == 0, node_output(tmp_path, r["rank"])
        assert r["last"] < r["first"], r
    # D-PSGD sends x afresh every round: it holds no copies, and verify says so.
    assert_verified(build, tmp_path, "holds no copies" if algorithm == "dpsgd" else "all equal")


def test_a_killed_neighbour_stops_the_others_within_two_seconds_naming_it(build, tmp_path):
    results = run_nodes(build, tmp_path, 2, 400, env_for=lambda rank: {"DIE_AT": "120"} if rank == 1 else {})
    survivor = results[0]
    assert "error" in survivor, survivor
    assert "rank 1" in survivor["error"], survivor["error"]
    assert survivor["error_exit"] == 1
    died = float((tmp_path / "result-1.json.died").read_text())
    assert survivor["error_at"] - died < 2.0, survivor


def test_a_synchronous_node_whose_neighbour_ended_sooner_stops_naming_it(build, tmp_path):
    """Rank 1's loop stops after 10 rounds, rank 0's goes on: its round 11 has no message from rank 1
    and never will. It stops naming rank 1 and the rule (before, an internal invariant fired)."""
    config = write_config(tmp_path, 2)
    procs = [start_node(tmp_path, config, rank, steps, {}) for rank, steps in ((0, 60), (1, 40))]
    results = []
    for p, out in procs:
        p.wait(timeout=120)
        results.append(json.loads(out.read_text()))
    assert results[1].get("exit") == 0 and results[1]["round"] == 10, results[1]
    assert results[0].get("error_exit") == 1, results[0]
    assert ("rank 1 ended its run before round 11: in a synchronous run every node runs the same rounds"
            in results[0]["error"]), results[0]


def test_a_neighbour_with_another_model_size_is_named_with_both_sizes(build, tmp_path):
    results = run_nodes(build, tmp_path, 2, 40, env_for=lambda rank: {"WIDTH": "33"} if rank == 1 else {})
    sizes = {0: "804", 1: "829"}  # 20·32+32+32·4+4 and 20·33+33+33·4+4 parameters
    named = []
    for r in results:  # each stops naming the other; the first to hear the other's start names both sizes
        other = 1 - r["rank"]
        assert "error" in r and f"rank {other}" in r["error"], r
        named.append(f"rank {other} starts from a model of {sizes[other]} values where this node's has "
                     f"{sizes[r['rank']]}" in r["error"] and r["error_exit"] == 2)
    assert any(named), results


def test_a_neighbour_that_starts_from_other_values_is_named_before_the_first_round(build, tmp_path):
    results = run_nodes(build, tmp_path, 2, 40, env_for=lambda rank: {"INIT_SEED": "1"} if rank == 1 else {})
    named = []
    for r in results:  # each stops in its first round naming the other; the first to hear names both hashes
        other = 1 - r["rank"]
        assert "error" in r and f"rank {other}" in r["error"] and r["round"] <= 1, r
        named.append(f"rank {other} starts from another model (hash 0x" in r["error"] and r["error_exit"] == 2 and
                     "seed the model's initialization the same on every node" in r["error"])
    assert any(named), results


def test_under_continue_the_others_train_on_past_a_killed_node(build, tmp_path):
    config = write_config(tmp_path, 4, network=", on_peer_failure: continue")
    procs = {r: start_node(tmp_path, config, r, 400, {"DIE_AT": "60"} if r == 1 else {}) for r in range(4)}
    for rank, (p, out) in procs.items():
        p.wait(timeout=120)
        if rank == 1:
            assert p.returncode == -9  # SIGKILLed at its step 60 (round 15)
            continue
        result = json.loads(out.read_text())
        assert result.get("exit") == 0 and result["round"] == 100, node_output(tmp_path, rank)
    assert "rank 1 left the run" in node_output(tmp_path, 0)
    assert_verified(build, tmp_path, "all equal")


# Under CURVE (the default), as a rejoin needs: each connection's routing id is ZeroMQ's own, so the
# joiner's fresh links never collide with its old ones at a neighbour's ROUTER (gossip/zmq/transport.hpp;
# with security: none they can, and the neighbour then never hears the joiner's state).
def test_under_continue_a_killed_node_started_again_rejoins_and_every_copy_is_exact(build, tmp_path):
    config = write_config(tmp_path, 4, network=", on_peer_failure: continue")
    config.write_text(config.read_text().replace("security: none", "security: curve"))
    keys = subprocess.run([os.path.join(build, "qgossip"), "keys", "--config", str(config)],
                          capture_output=True, text=True)
    assert keys.returncode == 0, keys.stderr
    slow = {"STEP_PAUSE_S": "0.02"}  # 400 steps: 8 s at least, so that the restart lands mid-run
    procs = {r: start_node(tmp_path, config, r, 400, dict(slow, DIE_AT="60") if r == 1 else slow) for r in range(4)}
    procs[1][0].wait(timeout=120)  # SIGKILLed at its step 60 (round 15)
    assert procs[1][0].returncode == -9
    procs[1] = start_node(tmp_path, config, 1, 400, slow)  # the same command again: it rejoins
    for rank, (p, out) in procs.items():
        p.wait(timeout=180)
        result = json.loads(out.read_text())
        assert result.get("exit") == 0 and result["round"] == 100, node_output(tmp_path, rank)
    assert "rejoined the run at round" in node_output(tmp_path, 1), node_output(tmp_path, 1)
    assert_verified(build, tmp_path, "all equal")


def one_node_against_its_twin(tmp_path, outer, twin_round):
    """40 SGD steps of one node (a round every 4) and of a twin model the test steps by itself,
    applying twin_round(start, twin) every 4 steps; returns the largest difference."""
    import qgossip

    config = write_config(tmp_path, 1).read_text().replace("graph: ring", "graph: complete")
    (tmp_path / "one.yaml").write_text(config)
    torch.manual_seed(0)
    model, twin = torch.nn.Linear(5, 2), torch.nn.Linear(5, 2)
    twin.load_state_dict(model.state_dict())
    node = qgossip.Node(tmp_path / "one.yaml", rank=0, overrides=outer)
    node.attach(model)
    opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (model, twin)]
    g = torch.Generator().manual_seed(1)
    start = [p.detach().clone() for p in twin.parameters()]
    for step in range(1, 41):
        x = torch.randn(8, 5, generator=g)
        for m, o in zip((model, twin), opts):
            o.zero_grad()
            m(x).pow(2).mean().backward()
            o.step()
        node.step()
        if step % 4 == 0:
            with torch.no_grad():
                twin_round(start, list(twin.parameters()))
            start = [p.detach().clone() for p in twin.parameters()]
    assert node.close() == 0 and node.round == 10
    return max((a - b).abs().max().item() for a, b in zip(model.parameters(), twin.parameters()))


def test_a_bounded_asynchronous_run_ends_a_node_whose_peers_are_done(build, tmp_path):
    # Asynchronous gossip (max_staleness 2) on a ring of 3: ranks 0 and 1 take 40 steps (10 rounds),
    # rank 2 up to 4000. Once its neighbours have finished and it has caught up with them (a few
    # rounds that only mix), rank 2's node ends by itself, as `qgossip run` would: node.done, its
    # summary written (ended with its neighbours), and its loop stops long before 1000 rounds.
    config = write_config(tmp_path, 3, train=", max_staleness: 2")
    procs = [start_node(tmp_path, config, rank, 4000 if rank == 2 else 40, {}) for rank in range(3)]
    results = []
    for rank, (p, out) in enumerate(procs):
        p.wait(timeout=120)
        results.append(json.loads(out.read_text()))
    for r in results:
        assert r.get("exit") == 0, node_output(tmp_path, r["rank"])
    assert [r["round"] for r in results[:2]] == [10, 10]
    assert not results[0]["done"] and not results[1]["done"]  # their loops ended first: closed
    assert results[2]["done"] and results[2]["round"] < 100, results[2]
    summary = json.load(open(tmp_path / "runs" / "py" / "node-2.json"))
    assert summary["status"] == "ok" and summary["ended"] == "with its neighbours", summary
    assert summary["catch_up_rounds"] > 0, summary


def test_one_node_trains_as_plain_local_sgd(build, tmp_path):
    # x − (x − x') is x' up to float32 rounding: the node's round gives back the program's own steps.
    worst = one_node_against_its_twin(tmp_path, [], lambda start, twin: None)
    assert worst < 1e-6, worst


def test_one_node_applies_the_outer_nesterov_step_to_each_rounds_change(build, tmp_path):
    lr, mu = 0.7, 0.9
    momentum = {}

    def diloco(start, twin):  # DiLoCo's outer step: Δ = x_t − x_{t,H}; m = μm + Δ; x = x_t − η(Δ + μm)
        for i, (s, p) in enumerate(zip(start, twin)):
            delta = s - p
            m = momentum[i] = mu * momentum.get(i, torch.zeros_like(delta)) + delta
            p.copy_(s - lr * (delta + mu * m))

    outer = [f"train.outer.lr={lr}", f"train.outer.momentum={mu}", "train.outer.nesterov=true"]
    worst = one_node_against_its_twin(tmp_path, outer, diloco)
    assert worst < 1e-5, worst


def test_bad_inputs_each_give_their_error(build, tmp_path):
    import qgossip

    one = write_config(tmp_path, 1).read_text().replace("graph: ring", "graph: complete")
    (tmp_path / "one.yaml").write_text(one)
    node = qgossip.Node(tmp_path / "one.yaml", rank=0)
    with pytest.raises(ValueError, match="attach a model first"):
        node.step()
    with pytest.raises(TypeError, match="float32, bfloat16 or float16"):
        node.attach(torch.nn.Linear(3, 2).double())
    with pytest.raises(TypeError, match="several dtypes"):
        node.attach(torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Linear(2, 2).half()))
    node.attach(torch.nn.Linear(3, 2))
    with pytest.raises(ValueError, match="already has a model"):
        node.attach(torch.nn.Linear(3, 2))
    node.close()
    with pytest.raises(ValueError, match="closed"):
        node.step()
    (tmp_path / "ckpt.yaml").write_text(one.replace("log_every: 5}", "log_every: 5, checkpoint_every: 5}"))
    with pytest.raises(ValueError, match="checkpoint_every"):
        qgossip.Node(tmp_path / "ckpt.yaml", rank=0)
    with pytest.raises(ValueError, match="QGOSSIP_RANK"):
        qgossip.Node(tmp_path / "one.yaml")
    # Unbounded staleness where every round sends on every link: queues without end, refused.
    (tmp_path / "dcd.yaml").write_text(one.replace("log_every: 5}", "log_every: 5, max_staleness: unbounded}")
                                          .replace("{name: choco, consensus_step: 0.8}", "{name: dcd}"))
    with pytest.raises(ValueError, match="max_staleness: unbounded: dcd sends every round on every link"):
        qgossip.Node(tmp_path / "dcd.yaml", rank=0)


def test_the_programs_own_metrics_are_columns_of_the_csv_and_keys_of_the_summary(build, tmp_path):
    import qgossip

    one = write_config(tmp_path, 1).read_text().replace("graph: ring", "graph: complete")
    (tmp_path / "one.yaml").write_text(one.replace("log_every: 5", "log_every: 1"))
    node = qgossip.Node(tmp_path / "one.yaml", rank=0)
    node.attach(torch.nn.Linear(3, 2))
    with pytest.raises(ValueError, match="node's own columns"):
        node.log(train_loss=1.0)
    with pytest.raises(ValueError, match="letters, digits"):
        node.log(**{"val loss": 1.0})
    for step in range(1, 13):  # 3 rounds of 4 steps, a CSV row after each
        node.log(0.5, val_loss=float(step))
        if step <= 4:
            node.log(early=1.0)  # logged in the first round only: empty cells after it
        node.step()
    with pytest.raises(ValueError, match="first logged after the node's CSV began"):
        node.log(late=1.0)
    assert node.close() == 0
    rows = [r.split(",") for r in (tmp_path / "runs" / "py" / "node-0.csv").read_text().splitlines()]
    header = rows[0]
    assert header[-2:] == ["val_loss", "early"]
    assert [r[header.index("val_loss")] for r in rows[1:]] == ["2.5", "6.5", "10.5"]  # the means per round
    assert [r[header.index("early")] for r in rows[1:]] == ["1", "", ""]
    assert [r[header.index("train_loss")] for r in rows[1:]] == ["0.5"] * 3
    summary = json.load(open(tmp_path / "runs" / "py" / "node-0.json"))
    assert summary["val_loss"] == 10.5 and summary["early"] == 1.0


# A program that saves everything at one step (its model, its AdamW, its data's generator, the node's
# state) and, when told, stops there; started again with the saved file, it goes on from that step.
RESUMABLE = textwrap.dedent('''
    import json, os, sys, torch, qgossip
    rank, steps, config, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    save_at, stop_after_save, load = int(sys.argv[5]), sys.argv[6] == "stop", sys.argv[7]
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(20, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    node = qgossip.Node(config, rank=rank)
    w = torch.randn(20, 4, generator=torch.Generator().manual_seed(7))
    g = torch.Generator().manual_seed(100 + rank)
    step, saved = 0, None
    if load != "-":
        saved = torch.load(load)
        model.load_state_dict(saved["model"])
        g.set_state(saved["data"])
        step = saved["step"]
        node.load_state_dict(saved["node"])
    node.attach(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    if saved is not None:
        opt.load_state_dict(saved["opt"])
    while step < steps:
        step += 1
        x = torch.randn(64, 20, generator=g)
        loss = torch.nn.functional.cross_entropy(model(x), (x @ w).argmax(1))
        opt.zero_grad(); loss.backward(); opt.step()
        node.step()
        node.log(loss.item(), loss_sq=loss.item() ** 2)
        if step == save_at:
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "data": g.get_state(),
                        "step": step, "node": node.state_dict()}, out + ".ckpt")
            if stop_after_save:
                os._exit(0)  # every node stops at this step: no neighbour waits for another round
    json.dump({"rank": rank, "exit": node.close(), "round": node.round}, open(out, "w"))
''')


def run_resumable(tmp_path, config, folder, steps, save_at, stop, load):
    program = tmp_path / "resumable.py"
    program.write_text(RESUMABLE)
    out = tmp_path / folder
    out.mkdir(exist_ok=True)
    procs = [subprocess.Popen([sys.executable, str(program), str(r), str(steps), str(config), str(out / f"r{r}.json"),
                               str(save_at), stop, load(r)],
                              stdout=open(out / f"node-{r}.out", "w"), stderr=subprocess.STDOUT) for r in range(4)]
    for p in procs:
        assert p.wait(timeout=120) == 0, (out / "node-0.out").read_text()
    return out


def test_a_run_saved_with_state_dict_and_continued_ends_as_one_never_stopped(build, tmp_path):
    (tmp_path / "whole").mkdir()
    (tmp_path / "parts").mkdir()
    whole_cfg, parts_cfg = write_config(tmp_path / "whole", 4), write_config(tmp_path / "parts", 4)
    run_resumable(tmp_path, whole_cfg, "whole", 40, 0, "-", lambda r: "-")
    first = run_resumable(tmp_path, parts_cfg, "first", 40, 18, "stop", lambda r: "-")  # stops mid-round 5
    run_resumable(tmp_path, parts_cfg, "second", 40, 0, "-", lambda r: str(first / f"r{r}.json.ckpt"))
    for r in range(4):
        whole = json.load(open(tmp_path / "whole" / "runs" / "py" / f"node-{r}.json"))
        parts = json.load(open(tmp_path / "parts" / "runs" / "py" / f"node-{r}.json"))
        assert parts["status"] == "ok" and parts["rounds"] == whole["rounds"] == 10
        assert parts["model_hash"] == whole["model_hash"], r
        assert [parts[k] for k in sorted(parts) if k.startswith("copy_")] == \
               [whole[k] for k in sorted(whole) if k.startswith("copy_")]
        assert parts["loss_sq"] == whole["loss_sq"]
        # The CSV went on from the rows written at the save: the same rows, the same columns.
        def rows(folder):
            lines = (tmp_path / folder / "runs" / "py" / f"node-{r}.csv").read_text().splitlines()
            header = lines[0].split(",")
            keep = [header.index(c) for c in ("iteration", "train_loss", "bytes_sent", "loss_sq")]
            return [[line.split(",")[i] for i in keep] for line in lines]
        assert rows("parts") == rows("whole")
    assert "continuing from the saved state of round 4 (18 steps)" in (tmp_path / "second" / "node-0.out").read_text()
    import qgossip
    node = qgossip.Node(parts_cfg, rank=1)
    node.load_state_dict(torch.load(first / "r0.json.ckpt")["node"])
    with pytest.raises(ValueError, match="the state is rank 0's; this node is rank 1"):
        node.attach(torch.nn.Linear(20, 4))


def start_with_worker(tmp_path, n, steps, special, env, network, round_timeout_s=30, train=""):
    """n nodes of WITH_WORKER, rank `special` with env: (process, result path) per rank."""
    config = write_config(tmp_path, n, network=network, round_timeout_s=round_timeout_s, train=train)
    worker = tmp_path / "with_worker.py"
    worker.write_text(WITH_WORKER)
    procs = []
    for rank in range(n):
        out = tmp_path / f"result-{rank}.json"
        log = open(tmp_path / f"node-{rank}.out", "a")
        procs.append((subprocess.Popen([sys.executable, str(worker), str(rank), str(steps), str(config), str(out)],
                                       env=dict(os.environ, **(env if rank == special else {})), stdout=log,
                                       stderr=subprocess.STDOUT), out))
    return procs


def run_with_worker(tmp_path, n, steps, raising, env, network, round_timeout_s=30, train=""):
    """n nodes of WITH_WORKER, rank `raising` with env; their exit codes and results."""
    procs = start_with_worker(tmp_path, n, steps, raising, env, network, round_timeout_s, train)
    codes = [p.wait(timeout=120) for p, _ in procs]
    return codes, [json.loads(out.read_text()) for _, out in procs]


def summary_of(tmp_path, rank):
    return json.loads((tmp_path / "runs" / "py" / f"node-{rank}.json").read_text())


# An exception in the program's loop inside `with` ends the node as failed at once, its summary naming
# the exception (within 1 s of the raise: it waits for no neighbour); under `continue` the others train
# on and their copies are exact; under `stop` they stop within 2 s naming it. The same with
# train.overlap, where the raise comes while round 2 is in flight on the node's thread.
@pytest.mark.parametrize("policy,train", [("continue", ""), ("stop", ""), ("continue", ", overlap: true"),
                                          ("stop", ", overlap: true")])
def test_an_exception_inside_with_ends_the_node_failed_and_its_neighbours_learn_it(build, tmp_path, policy, train):
    codes, results = run_with_worker(tmp_path, 4, 80, 2, {"RAISE_AT": "12", "WAIT_UP": "4"},
                                     f", on_peer_failure: {policy}",
                                     train=train)
    assert codes[2] == 1, node_output(tmp_path, 2)  # Python's own exit for an uncaught exception
    failed = summary_of(tmp_path, 2)
    assert failed["status"] == "failed", failed
    assert "the program's loop raised RuntimeError: boom at step 12 (after round 2)" in failed["error"], failed
    assert failed["end_unix_s"] - results[2]["raised_at"] < 1.0, failed
    others = [r for r in results if r["rank"] != 2]
    if policy == "continue":
        for r in others:
            assert codes[r["rank"]] == 0 and r.get("exit") == 0, node_output(tmp_path, r["rank"])
        assert "rank 2 left the run" in node_output(tmp_path, 1)
        assert_verified(build, tmp_path, "all equal")
    else:
        for r in others:
            assert "error" in r and "rank 2" in r["error"], r
            assert r["error_at"] - results[2]["raised_at"] < 2.0, r


# Ctrl-C in the program's loop (KeyboardInterrupt outside a round) ends the node as interrupted.
def test_a_keyboard_interrupt_inside_with_ends_the_node_interrupted(build, tmp_path):
    codes, results = run_with_worker(tmp_path, 2, 80, 1, {"RAISE_AT": "10", "RAISE": "KeyboardInterrupt"},
                                     ", on_peer_failure: continue")
    assert codes[1] == -signal.SIGINT, node_output(tmp_path, 1)  # Python ends by SIGINT itself
    interrupted = summary_of(tmp_path, 1)
    assert interrupted["status"] == "interrupted", interrupted
    assert "KeyboardInterrupt" in interrupted["error"], interrupted
    assert codes[0] == 0 and results[0].get("exit") == 0, node_output(tmp_path, 0)


# A program busy between two steps for longer than network.round_timeout_s (an evaluation, a
# checkpoint, a compile) stays alive to its neighbours: its messaging library's threads answer their
# heartbeats while Python sleeps, so they wait for it, saying so ("waiting for rank 1: alive, 4 s
# behind"), instead of failing it (network.stall_timeout_s: none, the default). 4 nodes on a ring,
# sync CHOCO 3-bit; rank 1 sleeps 8 s after round 7, four round time-outs of 2 s: under both
# policies every node ends 0 and every copy is exact. With stall_timeout_s: 0 (not waited for) the
# same pause is a failure, as before.
@pytest.mark.parametrize("policy", ["continue", "stop"])
def test_a_loop_that_pauses_past_the_round_timeout_is_waited_for(build, tmp_path, policy):
    codes, results = run_with_worker(tmp_path, 4, 80, 1, {"PAUSE_AT": "30", "PAUSE_S": "8"},
                                     f", on_peer_failure: {policy}", round_timeout_s=2)
    for r in results:
        assert codes[r["rank"]] == 0 and r.get("exit") == 0, node_output(tmp_path, r["rank"])
    said = node_output(tmp_path, 0) + node_output(tmp_path, 2)
    assert re.search(r"waiting for rank 1: alive, [2-8] s behind", said), said
    assert_verified(build, tmp_path, "all equal")


def test_a_pause_is_a_failure_where_stall_timeout_s_is_0(build, tmp_path):
    codes, results = run_with_worker(tmp_path, 2, 80, 1, {"PAUSE_AT": "30", "PAUSE_S": "6"},
                                     ", on_peer_failure: stop, stall_timeout_s: 0", round_timeout_s=2)
    assert "error" in results[0] and "rank 1" in results[0]["error"], results[0]
    assert "waiting for" not in node_output(tmp_path, 0)


# A node killed while a neighbour's loop pauses is found as fast as ever (its link closes): rank 1
# sleeps 10 s; 3 s in (ranks 0 and 2 past their round time-out, waiting for it), rank 3 is killed
# (-9); ranks 0 and 2 say it left within 1.5 s, train on when rank 1 is back, and end 0 with it.
# The same with train.overlap (the wait is then the node's thread's).
@pytest.mark.parametrize("train", ["", ", overlap: true"])
def test_a_node_killed_during_a_pause_is_found_at_once(build, tmp_path, train):
    procs = start_with_worker(tmp_path, 4, 80, 1, {"PAUSE_AT": "30", "PAUSE_S": "10"},
                              ", on_peer_failure: continue", round_timeout_s=2, train=train)
    paused = tmp_path / "result-1.json.paused"
    deadline = time.monotonic() + 60
    while not paused.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert paused.exists(), node_output(tmp_path, 1)
    time.sleep(3.0)
    procs[3][0].kill()
    killed = time.monotonic()
    found = {}
    while len(found) < 2 and time.monotonic() < killed + 5:
        for r in (0, 2):
            if r not in found and "rank 3 left the run" in node_output(tmp_path, r):
                found[r] = time.monotonic() - killed
        time.sleep(0.05)
    codes = [p.wait(timeout=120) for p, _ in procs]
    assert sorted(found) == [0, 2] and max(found.values()) < 1.5, (found, node_output(tmp_path, 0))
    assert codes[:3] == [0, 0, 0] and codes[3] == -signal.SIGKILL, codes
    assert_verified(build, tmp_path, "all equal")


# Ctrl-C of one node under `qgossip launch --exec` (its loop's KeyboardInterrupt, Python then ending
# by SIGINT): that node's summary says interrupted, and the launcher exits 130 (docs/errors.md); under
# `continue` the other trains on, and the launch, which it completed, exits 0 naming the departure.
@pytest.mark.parametrize("policy,code", [("stop", 130), ("continue", 0)])
def test_a_keyboard_interrupt_under_the_launcher(build, tmp_path, policy, code):
    config = write_config(tmp_path, 2, network=f", on_peer_failure: {policy}")
    worker = tmp_path / "with_worker.py"
    worker.write_text(WITH_WORKER)
    program = f"{sys.executable} {worker} {{rank}} 80 {config} {tmp_path}/result-{{rank}}.json"
    launch = subprocess.run([os.path.join(build, "qgossip"), "launch", str(config), "--exec", program, "--plain",
                             "--no-plot"], env=dict(os.environ, RAISE_AT="10", RAISE="KeyboardInterrupt", SPECIAL_RANK="1"),
                            capture_output=True, text=True, timeout=180)
    said = launch.stdout + launch.stderr
    assert launch.returncode == code, said
    assert summary_of(tmp_path, 1)["status"] == "interrupted"
    if policy == "continue":
        assert "node 1 left the run at round 2 (rank 1: it stopped: interrupted" in said, said


# node.mix(k): k rounds that only mix. 4 nodes on a ring, CHOCO 3-bit with DiLoCo's outer step (lr 0.7,
# momentum 0.9), 40 steps, then mix(8): the models' largest distance to their mean falls (each round
# pulls a fraction γ(1 − W_ii) = 0.8 · 2/3 of the way, less the 3-bit noise: below a tenth after 8
# rounds), their mean stays where it was (CHOCO's symmetric mixing keeps it, the outer step's
# momentum is not applied: it would move the mean by a step of its own), copies exact. Seeded,
# synchronous: the same figures on every run. Off a round boundary, mix() is refused.
MIX_WORKER = textwrap.dedent('''
    import sys, torch, qgossip
    rank, config, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(20, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    w = torch.randn(20, 4, generator=torch.Generator().manual_seed(7))
    g = torch.Generator().manual_seed(100 + rank)
    flat = lambda: torch.cat([p.detach().reshape(-1) for p in model.parameters()]).clone()
    with qgossip.Node(config, rank=rank) as node:
        node.attach(model)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
        for step in range(1, 41):
            x = torch.randn(64, 20, generator=g)
            loss = torch.nn.functional.cross_entropy(model(x), (x @ w).argmax(1))
            opt.zero_grad(); loss.backward(); opt.step()
            node.step()
            if step == 6:
                try:
                    node.mix(1)
                except ValueError as e:
                    refused = str(e)
        before = flat()
        node.mix(8)
        torch.save({"before": before, "after": flat(), "refused": refused, "round": node.round}, out)
        node.close()
''')


def test_mix_pulls_the_models_together_and_keeps_their_mean(build, tmp_path):
    config = write_config(tmp_path, 4, train=", outer: {lr: 0.7, momentum: 0.9, nesterov: true}")
    ends = run_workers(tmp_path, "mix", MIX_WORKER, config)
    assert all(e["round"] == 18 for e in ends)  # 40 steps, a round every 4, then 8 that only mix
    assert "mix(): call it at a round boundary: 6 steps is not a multiple of train.local_steps (4)" in ends[0]["refused"]
    spread = lambda key: max(float((e[key] - mean(key)).norm()) for e in ends)
    mean = lambda key: sum(e[key] for e in ends) / len(ends)
    print("spread before", spread("before"), "after", spread("after"),
          "mean moved", float((mean("after") - mean("before")).norm()))
    assert spread("before") > 0.05
    assert spread("after") < 0.1 * spread("before")
    assert float((mean("after") - mean("before")).norm()) < 0.01 * spread("before")
    assert_verified(build, tmp_path, "all equal")
