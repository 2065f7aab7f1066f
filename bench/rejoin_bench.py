#!/usr/bin/python3
"""A rejoin at size (issue 45, docs/results.md "A rejoin at size"): a node of a ring of 3, SIGKILLed
mid-run and started again, rejoins from a neighbour's state in chunks of network.max_message_mib, and
every copy ends exact.

The program: a stack of L bias-free Linear(W, W) layers (L·W² parameters, float32; bench/linear_stack.py), trained with plain SGD on one random batch, a round every step. Three Python nodes on a ring
(CHOCO-SGD, 3-bit QSGD, network.on_peer_failure: continue, CURVE as rejoining needs, TCP on loopback), each its own
process started by hand; rank 1 kills itself (SIGKILL) at step --die-at and is started again with the
same command at once. Reported: the state's bytes and chunks, the time from the restart to the end of the
joiner's first step() (admitted, the state received and installed, its first round run), each process's
peak RSS and its RSS at its last round (what it keeps for the rest of a run), and `qgossip verify`'s
verdict.

    /usr/bin/python3 bench/rejoin_bench.py --build build --params 300e6      (about 3 minutes)
    /usr/bin/python3 bench/rejoin_bench.py --params 1e6 --max-message-mib 0.25 --rounds 40
"""
import argparse
import json
import math
import os
import resource
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time

import linear_stack

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def worker(a):
    import torch
    import qgossip

    torch.set_num_threads(1)
    torch.manual_seed(0)  # the same initial model on every node
    model = linear_stack.build(torch, a.layers, a.width)
    node = qgossip.Node(a.config, rank=a.rank)
    started = time.time()
    node.attach(model)  # a restarted node asks to be admitted here; its first step() installs the state
    attached, joined = time.time(), None
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(8, a.width, generator=torch.Generator().manual_seed(100 + a.rank))
    step = 0
    while node.round < a.rounds and not node.done:
        step += 1
        if step == a.die_at:
            os.kill(os.getpid(), signal.SIGKILL)
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        node.step()
        if joined is None:  # the round the first step ended at: a joiner's is the round it was admitted at
            joined = {"round": node.round, "at": time.time()}
    with open("/proc/self/statm") as f:  # resident pages now, the run's rounds done: what the node keeps
        end_bytes = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    result = {"rank": a.rank, "exit": node.close(), "round": node.round, "first_round": joined["round"],
              "end_bytes": end_bytes,
              "attach_s": attached - started, "first_step_at": joined["at"],
              "peak_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}
    with open(a.out, "w") as f:
        json.dump(result, f)


def write_run(folder, n, mib, transport, network_extra):
    run = os.path.join(folder, "run.yaml")
    with open(run, "w") as f:
        f.write(textwrap.dedent(f"""\
            name: rejoin
            seed: 1
            topology: {{graph: ring, n: {n}, base_port: 29710}}
            algorithm: {{name: choco, consensus_step: 0.5}}
            compressor: {{name: qsgd, bits: 3, bucket: 128, norm: max}}
            train: {{local_steps: 1, log_every: 1}}
            network: {{transport: {transport}, security: curve, on_peer_failure: continue, max_message_mib: {mib},{network_extra}
                      round_timeout_s: 600, start_timeout_s: 600}}
            output: {{dir: {folder}/runs}}
            """))
    return run


def start(a, folder, run, rank, die_at, life):
    out = os.path.join(folder, f"result-{rank}-{life}.json")
    cmd = linear_stack.worker_command(os.path.abspath(__file__), a.layers, a.width, out) + [
        "--rounds", str(a.rounds), "--die-at", str(die_at), "--config", run, "--rank", str(rank)]
    python_path = os.pathsep.join(filter(None, [os.path.join(os.path.abspath(a.build), "python"),
                                                os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PYTHONPATH=python_path)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True)
    threading.Thread(target=copy_lines, args=(proc.stdout, os.path.join(folder, f"node-{rank}.out")), daemon=True).start()
    return proc, out


T0 = time.time()


def copy_lines(stream, path):
    """A node's output into its file, each line behind the seconds since the bench started."""
    with open(path, "a") as f:
        for line in stream:
            f.write(f"{time.time() - T0:8.2f} {line}")
            f.flush()


def run_nodes(a, folder, run, procs):
    """Waits for rank 1's death, starts it again, and waits for the three to end: (restart time, results)."""
    procs[1][0].wait()
    if procs[1][0].returncode != -signal.SIGKILL:
        sys.exit(f"rank 1 ended with {procs[1][0].returncode}, not killed: see {folder}/node-1.out")
    restarted = time.time()
    print(f"rank 1 killed at its step {a.die_at}; started again", flush=True)
    procs[1] = start(a, folder, run, 1, 0, 2)
    results = {}
    for r, (proc, out) in procs.items():
        proc.wait()
        if not os.path.exists(out):
            sys.exit(f"rank {r} ended with {proc.returncode} and no result: see {folder}/node-{r}.out")
        results[r] = json.load(open(out))
    return restarted, results


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(REPO, "build"))
    p.add_argument("--params", type=float, default=300e6, help="about this many parameters (default 300e6)")
    p.add_argument("--rounds", type=int, default=30, help="rounds of the run (default 30)")
    p.add_argument("--die-at", type=int, default=5, help="rank 1's step at which it is killed (default 5)")
    p.add_argument("--max-message-mib", type=float, default=64, help="network.max_message_mib (default 64)")
    p.add_argument("--transport", choices=["tcp", "ipc"], default="tcp", help="network.transport (default tcp, loopback)")
    p.add_argument("--heartbeat-s", type=float, help="network.heartbeat_s (default: the config's default)")
    linear_stack.add_worker_arguments(p)
    p.add_argument("--config", help=argparse.SUPPRESS)
    p.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        return worker(a)
    a.layers, a.width = linear_stack.shape(a.params)
    params = a.layers * a.width ** 2
    state = 8 * params  # a model and its public copy, float32
    chunk = int(a.max_message_mib * 2 ** 20)
    folder = tempfile.mkdtemp(prefix="qgossip-rejoin-")
    print(f"model: {a.layers} x Linear({a.width}, {a.width}) = {params / 1e6:.1f} M parameters float32 "
          f"({4 * params / 1e9:.2f} GB); a state of {state / 1e9:.2f} GB in {math.ceil(state / chunk)} chunks of "
          f"{a.max_message_mib:g} MiB; in {folder}", flush=True)
    run = write_run(folder, 3, a.max_message_mib, a.transport, f" heartbeat_s: {a.heartbeat_s}," if a.heartbeat_s is not None else "")
    keys = subprocess.run([os.path.join(a.build, "qgossip"), "keys", "--config", run], capture_output=True, text=True)
    if keys.returncode != 0:
        sys.exit(keys.stderr)
    procs = {r: start(a, folder, run, r, a.die_at if r == 1 else 0, 1) for r in range(3)}
    try:
        restarted, results = run_nodes(a, folder, run, procs)
    finally:  # a failed run leaves no node behind
        for proc, _ in procs.values():
            if proc.poll() is None:
                proc.kill()
    verify = subprocess.run([os.path.join(a.build, "qgossip"), "verify", os.path.join(folder, "runs", "rejoin")],
                            capture_output=True, text=True)
    joiner = results[1]
    for r in range(3):
        res = results[r]
        print(f"  rank {r}: exit {res['exit']}, round {res['round']}, peak RSS {res['peak_bytes'] / 1e9:.2f} GB "
              f"({res['peak_bytes'] / (4 * params):.2f} models), at the last round {res['end_bytes'] / 1e9:.2f} GB "
              f"({res['end_bytes'] / (4 * params):.2f})")
    print(f"  joiner: admitted at round {joiner['first_round']}, its state installed and its first round done "
          f"{joiner['first_step_at'] - restarted:.1f} s after the restart (of which attach {joiner['attach_s']:.1f} s)")
    print("  verify: " + (verify.stdout + verify.stderr).strip().splitlines()[-1])
    print(json.dumps({"params": params, "state_bytes": state, "chunks": math.ceil(state / chunk),
                      "results": results, "verify_exit": verify.returncode}))
    if verify.returncode != 0 or any(res["exit"] != 0 for res in results.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
