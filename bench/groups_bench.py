#!/usr/bin/python3
"""One gossip node per host group against one per process, where the links between hosts are slow
(issue 46; docs/python.md, "Groups"). The image example (examples/python/image.py: a CNN on
Fashion-MNIST, SGD with Nesterov momentum under a one-cycle schedule) trained by 4 processes in both
cases, each process on its own shard with the same batch, steps and schedule, 3-bit CHOCO on a ring
every --local-steps steps, in scripts/cluster.sh's namespaces with every namespace's egress shaped
by tc to --rate:
  4x1   4 gossip nodes of one process, one namespace each (4 namespaces)
  2x2   2 gossip nodes of 2 processes each (topology.group_size 2: `qgossip group-exec` gives each
        group torchrun's variables), one namespace per group: DDP (gloo all-reduce every step) over
        the namespace's loopback inside a group, gossip between the groups over the shaped links
  2x2-torchrun  the same groups as torchrun starts them: one torchrun job per namespace (cluster.sh
        --ranks 2; --nnodes 2, 2 processes each, static rendezvous at namespace 0), every node found
        from torchrun's variables (its GROUP_RANK), gloo on the namespace's interface
Interleaved, --repeats times each. For each: the test accuracy on all 10,000 test images (worst and
mean node), the bytes the namespaces sent on their shaped veths (the tbf's count: gossip only; a
group's all-reduce stays on its loopback), the training time (the slowest node's train_s) and the
time from launch to the launch's end. Medians over the repeats.

    sudo /usr/bin/python3 bench/groups_bench.py --build build --rate 10mbit   (about 15 minutes)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = {"4x1": (4, 1), "2x2": (2, 2), "2x2-torchrun": (2, 2)}  # (gossip nodes, processes a node)
SUBNET, PREFIX = "10.77.0", "qgb"  # cluster.sh's default subnet: namespace r holds SUBNET.(r+1)


def write_config(path, out, nodes, group_size, local_steps, listed=False):
    group = f", group_size: {group_size}" if group_size > 1 and not listed else ""
    # torchrun's case: cluster.sh --ranks runs the jobs, so the nodes are listed at their namespaces.
    at = f", nodes: [{', '.join(f'{{host: {SUBNET}.{r + 1}, port: 29500}}' for r in range(nodes))}]" if listed else ""
    path.write_text(textwrap.dedent(f"""\
        name: groups
        seed: 1
        topology: {{graph: ring, n: {nodes}{group}{at}}}
        algorithm: {{name: choco, consensus_step: 0.8}}
        compressor: {{name: qsgd, bits: 3, bucket: 128, norm: max}}
        train: {{local_steps: {local_steps}, log_every: 1}}
        network: {{transport: tcp, security: none, start_timeout_s: 60, round_timeout_s: 120}}
        output: {{dir: {out}}}
        """))


def torchrun_jobs(args, out, cfg, stats, image, nodes, group_size):
    """One torchrun job per namespace (cluster.sh --ranks), --nnodes jobs of group_size processes, gloo
    on the namespace's interface: each job is a gossip node, found from torchrun's variables."""
    return ["bash", os.path.join(REPO, "scripts", "cluster.sh"), "--prefix", PREFIX, "--rate", args.rate,
            "--stats", stats, "--ranks", str(nodes), "--log-dir", out + "-logs", "--",
            "env", "GLOO_SOCKET_IFNAME={iface}", f"QGOSSIP_CONFIG={cfg}", "/usr/bin/python3", "-m",
            "torch.distributed.run", "--nnodes", str(nodes), "--nproc_per_node", str(group_size), "--node_rank",
            "{rank}", "--master_addr", "{master}", "--master_port", "29400", "--redirects", "1", "--tee", "1",
            "--log_dir", out + "-torchrun-{rank}"] + image.split()[1:]


def run_case(args, tmp, label, index):
    nodes, group_size = CASES[label]
    out = os.path.join(tmp, f"{label}-{index}")
    cfg, stats = Path(out + ".yaml"), out + "-stats.json"
    torchrun = label.endswith("torchrun")
    write_config(cfg, out, nodes, group_size, args.local_steps, listed=torchrun)
    image = (f"/usr/bin/python3 {REPO}/examples/python/image.py --steps {args.steps} --batch {args.batch} "
             f"--eval-every {args.steps}")
    cmd = ["bash", os.path.join(REPO, "scripts", "cluster.sh"), "--prefix", PREFIX, "--rate", args.rate,
           "--stats", stats, str(cfg), "--exec", image, "--plain", "--no-plot"]
    if torchrun:
        cmd = torchrun_jobs(args, out, cfg, stats, image, nodes, group_size)
    env = dict(os.environ, PATH=os.path.abspath(args.build) + os.pathsep + os.environ["PATH"],
               PYTHONPATH=os.path.join(os.path.abspath(args.build), "python"), OMP_NUM_THREADS="1")
    began = time.time()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=REPO)
    wall = time.time() - began
    if r.returncode != 0:
        sys.exit(f"{label}: exit {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    results = [json.load(open(os.path.join(out, "groups", f"image-{k}.json"))) for k in range(nodes)]
    if any(x["processes"] != group_size for x in results):
        sys.exit(f"{label}: the nodes ran {[x['processes'] for x in results]} processes each, not {group_size}")
    shaped = json.load(open(stats))["ranks"]
    v = subprocess.run([os.path.join(args.build, "qgossip"), "verify", os.path.join(out, "groups")],
                       capture_output=True, text=True)
    acc = [x["test_acc"] for x in results]
    return {"worst_acc": min(acc), "mean_acc": sum(acc) / nodes, "shaped_mb": sum(s["tbf_sent_bytes"] for s in shaped) / 1e6,
            "train_s": max(x["train_s"] for x in results), "launch_s": wall, "rounds": results[0]["rounds"],
            "verified": v.returncode == 0, "verify": (v.stdout + v.stderr).strip()}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build")
    p.add_argument("--rate", default="10mbit", help="each namespace's egress under tc (cluster.sh --rate)")
    p.add_argument("--steps", type=int, default=600, help="optimizer steps of every process")
    p.add_argument("--batch", type=int, default=64, help="every process's batch")
    p.add_argument("--local-steps", type=int, default=8)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--cases", default=",".join(CASES), help="of " + ", ".join(CASES))
    p.add_argument("--out", help="write the results as JSON here")
    args = p.parse_args()
    results = {c: [] for c in args.cases.split(",")}
    with tempfile.TemporaryDirectory(prefix="qgossip-groups-") as tmp:
        for i in range(args.repeats):  # interleaved: every case once per repeat
            for c in results:
                results[c].append(run_case(args, tmp, c, i))
                print(c, i, json.dumps(results[c][-1]), file=sys.stderr, flush=True)
    print(f"{'case':<13} {'worst acc':>9} {'mean acc':>8} {'shaped MB':>9} {'train s':>8} {'launch s':>8} verified")
    summary = {}
    for c, runs in results.items():
        m = {k: statistics.median(r[k] for r in runs) for k in ("worst_acc", "mean_acc", "shaped_mb", "train_s", "launch_s")}
        m["verified"] = all(r["verified"] for r in runs)
        summary[c] = dict(m, runs=runs)
        print(f"{c:<13} {m['worst_acc']:9.4f} {m['mean_acc']:8.4f} {m['shaped_mb']:9.2f} {m['train_s']:8.1f} "
              f"{m['launch_s']:8.1f} {m['verified']}")
    if args.out:
        json.dump({"args": vars(args), "cases": summary}, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
