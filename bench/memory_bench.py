#!/usr/bin/python3
"""What a node costs a program in memory (issue 45, docs/results.md "Memory"): the peak RSS of the same
training program with and without a qgossip node, in model-sized buffers of the model's dtype.

The program: a stack of L bias-free Linear(W, W) layers (L·W² parameters, in --dtype), made in that dtype
(no float32 copy on the way), trained --steps steps with plain SGD (no optimizer state) on one random
batch. Alone: one process, no node. With a node: `qgossip launch --exec` of the same program on 2 nodes
(a ring of 2), CHOCO-SGD with 3-bit QSGD, a round every step, with or without the demo's outer step
(--outer). Each process reports its own peak RSS (getrusage's ru_maxrss); the node's cost is each
rank's peak less the program's alone, over the model's bytes. The cases run interleaved, --repeats
times, and the medians are reported.

    /usr/bin/python3 bench/memory_bench.py --build build --params 100e6            (about 2 minutes)
    /usr/bin/python3 bench/memory_bench.py --build build --params 1e9 --dtype bf16 --cases node
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap

import linear_stack

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DTYPES = {"fp32": ("float32", 4), "bf16": ("bfloat16", 2), "fp16": ("float16", 2)}


def worker(a):
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)
    dtype = getattr(torch, DTYPES[a.dtype][0])
    model = linear_stack.build(torch, a.layers, a.width, dtype)
    node = None
    if a.node:
        import qgossip

        node = qgossip.Node()
        node.attach(model)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(8, a.width, dtype=dtype)
    for _ in range(a.steps):
        loss = model(x).float().square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if node:
            node.step()
    if node:
        node.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    rank = os.environ.get("QGOSSIP_RANK", "alone")
    with open(os.path.join(a.out, f"peak-{rank}.json"), "w") as f:
        json.dump({"peak_bytes": peak, "params": sum(p.numel() for p in model.parameters())}, f)


def write_run(folder, outer):
    run = os.path.join(folder, "run.yaml")
    outer_line = ", outer: {lr: 0.7, momentum: 0.9}" if outer else ""
    with open(run, "w") as f:
        f.write(textwrap.dedent(f"""\
            name: memory
            seed: 1
            topology: {{graph: ring, n: 2}}
            algorithm: {{name: choco, consensus_step: 0.5}}
            compressor: {{name: qsgd, bits: 3, bucket: 128, norm: max}}
            train: {{local_steps: 1, log_every: 1{outer_line}}}
            network: {{transport: ipc, security: none, round_timeout_s: 600, start_timeout_s: 600}}
            """))
    return run


def run_case(a, folder, case, index):
    out = os.path.join(folder, f"{case}-{index}")
    os.makedirs(out)
    program = linear_stack.worker_command(os.path.abspath(__file__), a.layers, a.width, out) + [
        "--dtype", a.dtype, "--steps", str(a.steps)]
    if case == "alone":
        done = subprocess.run(program, capture_output=True, text=True)
        ranks = ["alone"]
    else:
        run = write_run(out, outer=case == "node+outer")
        cmd = [os.path.join(a.build, "qgossip"), "launch", run, "--set", f"output.dir={out}", "--plain", "--no-plot",
               "--exec", " ".join(program + ["--node"])]
        done = subprocess.run(cmd, capture_output=True, text=True)
        ranks = ["0", "1"]
    if done.returncode != 0:
        sys.exit(f"{case}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return [json.load(open(os.path.join(out, f"peak-{r}.json"))) for r in ranks]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(REPO, "build"))
    p.add_argument("--params", type=float, default=100e6, help="about this many parameters (default 100e6)")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="fp32")
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--cases", default="alone,node,node+outer")
    linear_stack.add_worker_arguments(p)
    p.add_argument("--node", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        return worker(a)
    a.layers, a.width = linear_stack.shape(a.params)
    params = a.layers * a.width ** 2
    model_bytes = params * DTYPES[a.dtype][1]
    cases = a.cases.split(",")
    folder = tempfile.mkdtemp(prefix="qgossip-memory-")
    print(f"model: {a.layers} x Linear({a.width}, {a.width}) = {params / 1e6:.1f} M parameters in {a.dtype} "
          f"({model_bytes / 1e9:.2f} GB); {a.steps} SGD steps; cases {cases}; in {folder}")
    peaks = {c: [] for c in cases}
    for i in range(a.repeats):
        for c in cases:
            ranks = run_case(a, folder, c, i)
            peaks[c].append([r["peak_bytes"] for r in ranks])
            print(f"  {c} #{i + 1}: peak RSS " + ", ".join(f"{r['peak_bytes'] / 1e9:.2f} GB" for r in ranks), flush=True)
    alone = statistics.median(x[0] for x in peaks["alone"]) if "alone" in peaks else None
    print(f"\nmedians of {a.repeats} (GB; buffers: (peak - alone) / the model's {model_bytes / 1e9:.2f} GB)")
    summary = {"params": params, "dtype": a.dtype, "model_bytes": model_bytes, "cases": {}}
    for c in cases:
        worst = statistics.median(max(x) for x in peaks[c])
        line = f"  {c:<11} peak {worst / 1e9:6.2f}"
        if alone is not None and c != "alone":
            line += f"  +{(worst - alone) / 1e9:.2f} GB = {(worst - alone) / model_bytes:.2f} model-sized buffers"
        print(line)
        summary["cases"][c] = {"peak_bytes": worst, "runs": peaks[c]}
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
