#!/usr/bin/python3
"""What node.step() costs a Python loop beside what the CLI's own round costs, on one model of about
25 M parameters (issue 29, docs/python.md "Cost"), and how many heap allocations a round makes.

Two nodes on this host (ipc, no CURVE), CHOCO-SGD with 3-bit QSGD, a round every step, the same
TorchScript model (Linear(W, W) then Linear(W, 10); W = 5000: 25.06 M parameters) driven twice:
  cli      `qgossip launch`: each round a gradient on one synthetic example, the local step, then
           the round; its host work is compute_s − gradient_s + codec_s (the node's own timers), its
           whole round less the network wait the CSV's wall_s − comm_s per round (rounds 2 on),
           less the gradient's mean time
  python   `qgossip launch --exec` of this file (--worker): each round the parameters move a little
           (the user's optimizer step, not timed), then node.step(); its host work is compute_s +
           codec_s, its whole call (timed by the worker: the binding and the GIL are in it) less the
           network wait comm_s
Both runs are interleaved, `--repeats` times each, and the medians are reported, as the ratio
python / cli. The worker also counts, with bench/alloc_count.cpp preloaded, the heap allocations
its own thread makes inside node.step() (the node's work; libzmq's I/O threads are not counted)
and reports them for every round after the first.

    /usr/bin/python3 bench/step_cost.py --build build            (about 2 minutes on 2 cores)
"""
import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_model(path, width):
    import torch

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.Linear(width, 10))
    torch.jit.script(net).save(path)
    return sum(p.numel() for p in net.parameters())


def write_run(folder, model, width, rounds):
    run = os.path.join(folder, "run.yaml")
    with open(run, "w") as f:
        f.write(textwrap.dedent(f"""\
            name: step_cost
            seed: 1
            topology: {{graph: complete, n: 2}}
            algorithm: {{name: choco, consensus_step: 0.8}}
            compressor: {{name: qsgd, bits: 3, bucket: 128, norm: max}}
            model: {{kind: torchscript, path: {model}, threads: 1}}
            data: {{dataset: synthetic, synthetic: {{train: 64, test: 16, dim: {width}, classes: 10}}}}
            train: {{epochs: {rounds / 32}, batch: 1, lr: 0.001, local_steps: 1, eval_every: 0,
                    eval_examples: 16, log_every: 1}}
            network: {{transport: ipc, security: none, round_timeout_s: 120}}
            """))
    return run


def launch(build, run, out, extra=(), env=None):
    cmd = [os.path.join(build, "qgossip"), "launch", run, "--set", f"output.dir={out}", "--plain", "--no-plot", *extra]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{done.stdout}{done.stderr}")
    return [json.load(open(os.path.join(out, "step_cost", f"node-{r}.json"))) for r in range(2)]


def per_round_ms(summary, *keys, minus=()):
    seconds = sum(summary[k] for k in keys) - sum(summary[k] for k in minus)
    return 1e3 * seconds / summary["rounds"]


def round_less_wait_ms(out, rank, summary):
    """A CLI node's rounds 2.. from its CSV: wall time less the network wait and the mean gradient."""
    with open(os.path.join(out, "step_cost", f"node-{rank}.csv")) as f:
        header = f.readline().strip().split(",")
        rows = [dict(zip(header, line.strip().split(","))) for line in f]
    first, last = rows[0], rows[-1]
    rounds = int(last["iteration"]) - int(first["iteration"])
    spent = (float(last["wall_s"]) - float(first["wall_s"])) - (float(last["comm_s"]) - float(first["comm_s"]))
    return 1e3 * (spent / rounds - summary["gradient_s"] / summary["rounds"])


def worker(a):
    import torch
    import qgossip

    counter = ctypes.CDLL(a.alloc_lib)
    calls, nbytes = ctypes.c_uint64(), ctypes.c_uint64()

    def allocations():
        counter.qg_alloc_count(ctypes.byref(calls), ctypes.byref(nbytes))
        return calls.value, nbytes.value

    torch.set_num_threads(1)
    node = qgossip.Node()
    model = torch.jit.load(a.model)
    node.attach(model)
    steps, allocated = [], []
    core = node._core
    for r in range(a.rounds):
        with torch.no_grad():  # the user's optimizer step, not timed
            for p in model.parameters():
                p.add_(1e-4)
        c0, b0 = allocations()
        t0 = time.perf_counter()
        core.step()
        t1 = time.perf_counter()
        c1, b1 = allocations()
        steps.append(t1 - t0)
        allocated.append((c1 - c0, b1 - b0))
    node.close()
    with open(os.path.join(a.out, f"worker-{node.rank}.json"), "w") as f:
        json.dump({"step_s": steps, "allocations": allocated}, f)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(REPO, "build"))
    p.add_argument("--width", type=int, default=5000, help="W (default %(default)s: 25.06 M parameters)")
    p.add_argument("--rounds", type=int, default=32)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--model", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    p.add_argument("--alloc-lib", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        return worker(a)

    alloc_lib = os.path.join(a.build, "bench", "libqgossip_alloc_count.so")
    if not os.path.exists(alloc_lib):
        sys.exit(f"{alloc_lib} is missing: build the target qgossip_alloc_count")
    folder = tempfile.mkdtemp(prefix="step_cost-")
    model = os.path.join(folder, "model.pt")
    params = write_model(model, a.width)
    run = write_run(folder, model, a.width, a.rounds)
    print(f"model: {params / 1e6:.2f} M parameters; {a.rounds} rounds; 2 nodes; CHOCO 3-bit QSGD; in {folder}")
    cli_ms, cli_call_ms, py_ms, py_call_ms, per_round_allocs = [], [], [], [], []
    for i in range(a.repeats):
        out = os.path.join(folder, f"cli-{i}")
        cli = launch(a.build, run, out)
        cli_ms.append(statistics.mean(per_round_ms(s, "compute_s", "codec_s", minus=["gradient_s"]) for s in cli))
        cli_call_ms.append(statistics.mean(round_less_wait_ms(out, r, s) for r, s in enumerate(cli)))
        out = os.path.join(folder, f"py-{i}")
        program = (f"{sys.executable} {os.path.abspath(__file__)} --worker --model {model} --rounds {a.rounds} "
                   f"--out {out} --alloc-lib {alloc_lib}")
        env = dict(os.environ, LD_PRELOAD=alloc_lib)
        py = launch(a.build, run, out, ["--exec", program], env=env)
        py_ms.append(statistics.mean(per_round_ms(s, "compute_s", "codec_s") for s in py))
        workers = [json.load(open(os.path.join(out, f"worker-{r}.json"))) for r in range(2)]
        # The whole call, less the time the node waited on the network (comm_s).
        py_call_ms.append(statistics.mean(1e3 * (sum(w["step_s"]) - s["comm_s"]) / s["rounds"]
                                          for w, s in zip(workers, py)))
        per_round_allocs += [tuple(x) for w in workers for x in w["allocations"][1:]]
        print(f"  repeat {i + 1}: host work cli {cli_ms[-1]:.1f} ms, python {py_ms[-1]:.1f} ms; the whole round less "
              f"the network wait (and the CLI's gradient) cli {cli_call_ms[-1]:.1f} ms, python {py_call_ms[-1]:.1f} ms")
    cli_m, cli_call, py_m, call_m = (statistics.median(v) for v in (cli_ms, cli_call_ms, py_ms, py_call_ms))
    print(f"medians of {a.repeats}, per round: host work cli {cli_m:.1f} ms, python {py_m:.1f} ms ({py_m / cli_m:.2f}x); "
          f"the whole round less the network wait cli {cli_call:.1f} ms, python {call_m:.1f} ms ({call_m / cli_call:.2f}x)")
    most = max(per_round_allocs)
    print(f"heap allocations on the calling thread in node.step(), rounds 2..{a.rounds} of every node and "
          f"repeat: at most {most[0]} calls, {max(b for _, b in per_round_allocs)} bytes per round "
          f"(mean {statistics.mean(c for c, _ in per_round_allocs):.1f} calls)")


if __name__ == "__main__":
    main()
