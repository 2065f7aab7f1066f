#!/usr/bin/python3
"""Overlapped rounds against blocking ones where the wire is slow (train.overlap, issue 44;
docs/results.md, "Overlapped rounds"). Four Python nodes of examples/python/lm.py on a ring, CHOCO-SGD
with 3-bit QSGD, in scripts/cluster.sh's namespaces, each node's egress shaped by tc to --rate, and
unshaped (the same namespaces, no rate). Cases, interleaved, --repeats times each:
  unshaped           blocking rounds, no shaping: the loop's own pace
  unshaped-overlap   train.overlap: true, no shaping (what overlap costs where the wire is fast)
  blocking@R         blocking rounds at --rate
  overlap@R          train.overlap: true at --rate
  overlap+τ@R        train.overlap with train.max_staleness: --staleness (a bound: no round waits
                     for a neighbour fewer than τ rounds behind)
  overlap-skip@R     train.overlap with train.max_staleness: unbounded (rounds skip a busy link:
                     docs/algorithms.md, "A busy uplink")
  skip@R             train.max_staleness: unbounded, rounds not overlapped
--algorithm diloco runs the same cases for the quantized all-reduce with DiLoCo's outer step (no
overlap-stale, overlap-skip or skip: the all-reduce has no asynchronous form). For each: the loop's steps per second (the slowest rank's steps over its train_s: the time from its
first step to the end of its last round, its round in flight landed) and the validation loss after
the same steps (worst and mean rank). Medians over the repeats; ratios to the unshaped run.

--workload demo runs the same cases for the CLI demo (configs/demo.yaml, 8 nodes: `qgossip launch`
under scripts/cluster.sh), its blocking cases as the demo is (γ 0.8) and its overlapped ones at
--demo-overlap-consensus-step (the one-round-late consensus needs γ (1 - λ_n) < 1); for each, the
rounds per second (the rounds over the slowest node's wall_s) and the test accuracy after the same
rounds (worst and mean node), every run verified.

    sudo /usr/bin/python3 bench/overlap_bench.py --build build --rate 4mbit   (about 10 minutes)
    sudo /usr/bin/python3 bench/overlap_bench.py --build build --workload demo --rate 500kbit
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_config(path, out, args, train_extra):
    if args.algorithm == "diloco":  # the quantized ring all-reduce of the change, DiLoCo's outer step
        algorithm, train_extra = "allreduce", f", outer: {{lr: 0.7, momentum: 0.9}}{train_extra}"
    else:
        algorithm = f"{{name: choco, consensus_step: {args.consensus_step}}}"
    path.write_text(textwrap.dedent(f"""\
        name: overlap
        seed: 1
        topology: {{graph: ring, n: 4}}
        algorithm: {algorithm}
        compressor: {{name: qsgd, bits: 3, bucket: 128, norm: max}}
        train: {{local_steps: {args.local_steps}, log_every: 1{train_extra}}}
        network: {{transport: tcp, security: none, start_timeout_s: 60, round_timeout_s: 60}}
        output: {{dir: {out}}}
        """))


def demo_sets(train_extra):
    """The --set arguments of a case (train_extra as write_config's: ", overlap: true, ...")."""
    sets = []
    for item in filter(None, (x.strip() for x in train_extra.split(","))):
        key, value = (x.strip() for x in item.split(":", 1))
        sets += ["--set", f"train.{key}={value}"]
    return sets


def case_dir(tmp, label, index):
    return os.path.join(tmp, f"{label}-{index}".replace("@", "-").replace("+", "-"))


def cluster(label, rate, options, run, env=None):
    """scripts/cluster.sh (--rate when rate) with its options, then the run's arguments; exits on failure."""
    cmd = ["bash", os.path.join(REPO, "scripts", "cluster.sh"), "--prefix", "qo"] + options
    if rate:
        cmd += ["--rate", rate]
    r = subprocess.run(cmd + run, env=env, capture_output=True, text=True, cwd=REPO)
    if r.returncode != 0:
        sys.exit(f"{label}: exit {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")


def verified(args, run_dir):
    return subprocess.run([os.path.join(args.build, "qgossip"), "verify", run_dir], capture_output=True).returncode == 0


def run_demo_case(args, tmp, label, rate, train_extra, index):
    out = case_dir(tmp, label, index)
    sets = demo_sets(train_extra) + ["--set", f"output.dir={out}", "--set", "network.transport=tcp"]
    if "overlap" in train_extra:
        sets += ["--set", f"algorithm.consensus_step={args.demo_overlap_consensus_step}"]
    cluster(label, rate, ["--qgossip", os.path.join(os.path.abspath(args.build), "qgossip")],
            [os.path.join(REPO, "configs", "demo.yaml"), "--plain", "--no-plot"] + sets)
    nodes = [json.load(open(os.path.join(out, "demo", f"node-{k}.json"))) for k in range(8)]
    accuracy = [x["test_acc"] for x in nodes]
    return {"steps_per_s": min(x["rounds"] / x["wall_s"] for x in nodes), "worst": min(accuracy),
            "mean": sum(accuracy) / len(accuracy), "verified": verified(args, os.path.join(out, "demo"))}


def run_case(args, tmp, label, rate, train_extra, index):
    if args.workload == "demo":
        return run_demo_case(args, tmp, label, rate, train_extra, index)
    out = case_dir(tmp, label, index)
    cfg = Path(out + ".yaml")
    write_config(cfg, out, args, train_extra)
    lm = (f"/usr/bin/python3 {REPO}/examples/python/lm.py --size {args.size} --steps {args.steps} "
          f"--batch {args.batch} --context {args.context}")
    env = dict(os.environ, PATH=os.path.join(os.path.abspath(args.build)) + os.pathsep + os.environ["PATH"],
               PYTHONPATH=os.path.join(os.path.abspath(args.build), "python"), OMP_NUM_THREADS="1")
    cluster(label, rate, [], [str(cfg), "--exec", lm, "--plain", "--no-plot"], env)
    ranks = [json.load(open(os.path.join(out, "overlap", f"lm-{k}.json"))) for k in range(4)]
    slowest = max(x["train_s"] for x in ranks)
    losses = [x["val_loss"] for x in ranks]
    return {"steps_per_s": args.steps / slowest, "worst": max(losses), "mean": sum(losses) / 4,
            "verified": verified(args, os.path.join(out, "overlap"))}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build")
    p.add_argument("--rate", default="4mbit", help="each node's egress under tc (cluster.sh --rate)")
    p.add_argument("--staleness", type=int, default=4, help="train.max_staleness of the overlap-stale case")
    p.add_argument("--size", default="tiny", help="examples/python/lm.py --size")
    p.add_argument("--steps", type=int, default=128)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--context", type=int, default=64)
    p.add_argument("--local-steps", type=int, default=8)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--consensus-step", type=float, default=0.5,
                   help="CHOCO-SGD's gamma for every case (overlap needs gamma (1 - lambda_n) < 1: below 0.75 on this ring)")
    p.add_argument("--algorithm", choices=["choco", "diloco"], default="choco",
                   help="choco: CHOCO-SGD on the ring; diloco: allreduce of the round's change with DiLoCo's outer "
                        "Nesterov (lr 0.7, momentum 0.9), overlapped as DiLoCo with a delayed outer step; 3-bit QSGD either way")
    p.add_argument("--workload", choices=["lm", "demo"], default="lm",
                   help="lm: four Python nodes of examples/python/lm.py; demo: the CLI demo (configs/demo.yaml, 8 nodes)")
    p.add_argument("--demo-overlap-consensus-step", type=float, default=0.6,
                   help="--workload demo: CHOCO-SGD's gamma of the overlapped cases (the blocking ones keep the demo's 0.8)")
    p.add_argument("--cases", default="unshaped,blocking,overlap,overlap-stale")
    p.add_argument("--out", help="write the results as JSON here")
    args = p.parse_args()
    cases = {"unshaped": ("", ""), "unshaped-overlap": ("", ", overlap: true"), "blocking": (args.rate, ""), "overlap": (args.rate, ", overlap: true"),
             "overlap-stale": (args.rate, f", overlap: true, max_staleness: {args.staleness}"),
             "overlap-skip": (args.rate, ", overlap: true, max_staleness: unbounded"),
             "skip": (args.rate, ", max_staleness: unbounded")}
    chosen = args.cases.split(",")
    if args.algorithm == "diloco":  # the all-reduce has no asynchronous form (refused at load)
        chosen = [c for c in chosen if c not in ("overlap-stale", "overlap-skip", "skip")]
    results = {c: [] for c in chosen}
    with tempfile.TemporaryDirectory(prefix="qgossip-overlap-") as tmp:
        for i in range(args.repeats):  # interleaved: every case once per repeat
            for c in chosen:
                rate, extra = cases[c]
                results[c].append(run_case(args, tmp, c, rate, extra, i))
                print(c, i, json.dumps(results[c][-1]), file=sys.stderr, flush=True)
    base = statistics.median(r["steps_per_s"] for r in results[chosen[0]])
    summary = {}
    pace, score = ("rounds/s", "acc") if args.workload == "demo" else ("steps/s", "val")
    print(f"{'case':<16} {pace:>8} {'x ' + chosen[0]:>12} {'worst ' + score:>10} {'mean ' + score:>9} verified")
    for c in chosen:
        sps = statistics.median(r["steps_per_s"] for r in results[c])
        worst = statistics.median(r["worst"] for r in results[c])
        mean = statistics.median(r["mean"] for r in results[c])
        ok = all(r["verified"] for r in results[c])
        summary[c] = {"steps_per_s": sps, "ratio": sps / base, "worst_val": worst, "mean_val": mean, "verified": ok,
                      "runs": results[c]}
        print(f"{c:<16} {sps:8.2f} {sps / base:12.2f} {worst:10.3f} {mean:9.3f} {ok}")
    if args.out:
        json.dump({"args": vars(args), "cases": summary}, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
