#!/usr/bin/python3
"""One rank of a PyTorch data-parallel peer: DDP or DiLoCo, on the same model, shards, batches and test
set as a qgossip run (docs/tta.md).

Usage: bench/peers/train.py --mode ddp|diloco --shards DIR --out DIR [--rank R --world N]
                            [--master-addr A --master-port P] [optimizer and stopping options]

Data: `qgossip shards --config RUN.yaml --out DIR` writes every rank's shard, batch order and the
standardization statistics; this rank trains on exactly those (bench/peers/peer_data.py). Model: the
MLP 784-128-10 (nn.Linear, ReLU, nn.Linear; PyTorch's default initialization from --seed, identical
on every rank). One process per rank, torch.distributed with gloo, torch.set_num_threads(1).

  ddp     DistributedDataParallel: every step all-reduces the gradient (mean over ranks), then SGD
          with --lr, --momentum, --nesterov, --weight-decay.
  diloco  Douillard et al. 2023: H = --local-steps inner steps of SGD (--lr, --momentum, --nesterov,
          --weight-decay) on each rank alone, then one all-reduce of the pseudo-gradient
          θ_global − θ_local and an outer SGD step on θ_global with --outer-lr, --outer-momentum
          (Nesterov unless --no-outer-nesterov); every rank restarts from θ_global.

Learning rate (DDP's, DiLoCo's inner): --schedule constant (--lr throughout) or cosine (from --lr to 0
over --epochs), qgossip's formula step for step (bench/peers/schedule.py): step s takes the rate at
epoch (s − 1)/steps_per_epoch, as a node with train.schedule {kind: cosine} over train.epochs does.

Evaluation: after every --eval-every epochs (and at the end) rank 0 evaluates the global model (DDP:
the model; DiLoCo: θ_global, i.e. as of the last outer step) on all test images; the time it takes is
part of wall time (the other ranks wait for it, as they would for a qgossip node's evaluation). Then
rank 0 decides for everyone (one tiny broadcast) whether to stop: --target reached, --time-cap passed,
or --epochs done.

Time: wall_s is measured from the launch (--launch-time, Unix seconds; else $QG_LAUNCH_UNIX, which
scripts/cluster.sh sets; else this process's own start from /proc), so Python start-up, the torch
import, data loading and the gloo rendezvous are all counted.

Writes OUT/node-<rank>.csv (a row per evaluation, and every --log-every steps):
  iteration,epoch,wall_s,lr,train_loss,test_loss,test_acc,bytes_sent,bytes_recv,wire_bytes_sent,
  wire_bytes_recv,comm_s,eval_s
(iteration = optimizer steps; test columns on rank 0's evaluation rows only; bytes_sent/recv =
training all-reduces counted from the algorithm: gloo's ring all-reduce sends and receives
2(n−1)/n · 4d bytes per rank for d floats, payload only; wire_bytes_* = this rank's interface
counters (IP headers, TCP ACKs, the rendezvous and the stop broadcasts included) when $QG_IFACE names
its own interface, as in scripts/cluster.sh's namespaces, else empty; comm_s = seconds in DiLoCo's
all-reduce, empty for DDP, whose all-reduce overlaps the backward pass) and OUT/node-<rank>.json (the
summary: status, stop_reason, the epoch and time each of --report-targets was first reached, bytes
per epoch, parameter count, the start-up times (first_step_s: this rank's first optimizer step, after its
data and the rendezvous), the learning-rate schedule, libraries).

Exit: 0 done (target, cap or epochs), 1 run-time failure, 2 bad input, 130/143 interrupted.
"""
import argparse
import csv
import json
import math
import os
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import schedule  # noqa: E402
from gloo_interface import bind_gloo_interface  # noqa: E402

CSV_COLUMNS = ["iteration", "epoch", "wall_s", "lr", "train_loss", "test_loss", "test_acc", "bytes_sent",
               "bytes_recv", "wire_bytes_sent", "wire_bytes_recv", "comm_s", "eval_s"]


class Stop(Exception):
    """SIGTERM arrived (the harness's time cap, or Ctrl-C through scripts/cluster.sh)."""

    def __init__(self, signum):
        super().__init__(f"stopped by signal {signum}")
        self.signum = signum


def process_start_unix():
    """This process's start in Unix seconds (/proc: start ticks since boot, against /proc/uptime)."""
    with open("/proc/self/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    start_since_boot = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22 of proc(5)
    with open("/proc/uptime") as f:
        uptime = float(f.read().split()[0])
    return time.time() - (uptime - start_since_boot)


def interface_bytes(iface):
    """(tx, rx) bytes of the interface, or (None, None) when it has no counters here."""
    if not iface:
        return None, None
    try:
        with open(f"/sys/class/net/{iface}/statistics/tx_bytes") as f:
            tx = int(f.read())
        with open(f"/sys/class/net/{iface}/statistics/rx_bytes") as f:
            rx = int(f.read())
        return tx, rx
    except (OSError, ValueError):
        return None, None


def blas_library():
    """The BLAS shared library this process has mapped (Debian: libblas.so.3 -> OpenBLAS via alternatives)."""
    found = set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1] if len(line.split()) >= 6 else ""
                if "blas" in os.path.basename(path).lower():
                    found.add(os.path.realpath(path))
    except OSError:
        pass
    return ", ".join(sorted(found)) or "none mapped"


def ring_allreduce_bytes(floats, world):
    """Bytes one rank sends (and receives) in a ring all-reduce of `floats` float32 values."""
    return 2.0 * (world - 1) / world * 4.0 * floats if world > 1 else 0.0


def parse_args(argv):
    p = argparse.ArgumentParser(description="One rank of a PyTorch DDP or DiLoCo peer trainer (gloo, 1 thread).",
                                epilog=__doc__.split("\n", 2)[2], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", choices=("ddp", "diloco"), required=True)
    p.add_argument("--shards", required=True, metavar="DIR", help="what `qgossip shards` wrote for this run")
    p.add_argument("--out", required=True, metavar="DIR", help="where node-<rank>.csv and .json go")
    p.add_argument("--data", metavar="DIR", help="Fashion-MNIST IDX directory (default: shards.json's dir)")
    env = os.environ
    p.add_argument("--rank", type=int, default=int(env.get("QG_RANK", env.get("RANK", "0"))),
                   help="this rank (default: $QG_RANK, else $RANK, else 0)")
    p.add_argument("--world", type=int, default=int(env.get("QG_NODES", env.get("WORLD_SIZE", "1"))),
                   help="number of ranks (default: $QG_NODES, else $WORLD_SIZE, else 1)")
    p.add_argument("--master-addr", default=env.get("QG_MASTER_ADDR", env.get("MASTER_ADDR", "127.0.0.1")),
                   help="rank 0's address (default: $QG_MASTER_ADDR, else $MASTER_ADDR, else 127.0.0.1)")
    p.add_argument("--master-port", type=int, default=int(env.get("MASTER_PORT", "29400")),
                   help="rank 0's rendezvous port (default: $MASTER_PORT, else 29400)")
    p.add_argument("--launch-time", type=float, default=float(env["QG_LAUNCH_UNIX"]) if env.get("QG_LAUNCH_UNIX")
                   else None, metavar="UNIX_S", help="the launch, in Unix seconds: wall_s counts from it (default: "
                   "$QG_LAUNCH_UNIX, else this process's start)")
    p.add_argument("--seed", type=int, help="model initialization seed (default: shards.json's seed)")
    p.add_argument("--lr", type=float, default=0.1, help="learning rate (DiLoCo: of the inner steps)")
    p.add_argument("--schedule", choices=schedule.KINDS, default="constant",
                   help="the learning rate over the run: constant, or cosine from --lr to 0 over --epochs "
                   "(qgossip's train.schedule: {kind: cosine}; default %(default)s)")
    p.add_argument("--momentum", type=float, default=0.0, help="SGD momentum (DiLoCo: inner)")
    p.add_argument("--nesterov", action="store_true", help="Nesterov momentum (DiLoCo: inner)")
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--local-steps", "-H", type=int, default=32, help="DiLoCo: inner steps per outer step (H)")
    p.add_argument("--outer-lr", type=float, default=0.7, help="DiLoCo: outer learning rate")
    p.add_argument("--outer-momentum", type=float, default=0.9, help="DiLoCo: outer momentum")
    p.add_argument("--no-outer-nesterov", action="store_true", help="DiLoCo: plain (heavy-ball) outer momentum")
    p.add_argument("--hidden", type=int, default=128, help="hidden units of the MLP (qgossip's model.hidden)")
    p.add_argument("--epochs", type=float, default=12, help="at most this many epochs")
    p.add_argument("--time-cap", type=float, default=0, metavar="S",
                   help="stop at the first evaluation at or after S seconds from launch (0: none)")
    p.add_argument("--target", type=float, default=0, help="stop once the test accuracy reaches this (0: never)")
    p.add_argument("--report-targets", default="0.84,0.86,0.88",
                   help="accuracies whose first epoch and time the summary records (default: %(default)s)")
    p.add_argument("--eval-every", type=float, default=1.0, help="evaluate every this many epochs (default 1)")
    p.add_argument("--log-every", type=int, default=0, help="also a CSV row every this many steps (0: none)")
    p.add_argument("--timeout", type=float, default=300, help="gloo's collective and rendezvous timeout, s")
    args = p.parse_args(argv)
    problems = []
    if args.world < 1 or not 0 <= args.rank < args.world:
        problems.append(f"--rank {args.rank} --world {args.world}: need world >= 1 and 0 <= rank < world")
    for name in ("lr", "outer_lr"):
        if not getattr(args, name) > 0:
            problems.append(f"--{name.replace('_', '-')} must be > 0")
    for name in ("momentum", "outer_momentum"):
        if not 0 <= getattr(args, name) < 1:
            problems.append(f"--{name.replace('_', '-')} must be in [0, 1)")
    if args.nesterov and args.momentum == 0:
        problems.append("--nesterov needs --momentum > 0")
    if args.local_steps < 1:
        problems.append("--local-steps must be >= 1")
    if not args.epochs > 0 or not args.eval_every > 0:
        problems.append("--epochs and --eval-every must be > 0")
    try:
        args.report_targets = sorted(float(t) for t in args.report_targets.split(",") if t.strip())
    except ValueError:
        problems.append(f"--report-targets {args.report_targets!r}: expected numbers separated by commas")
    if problems:
        p.error("; ".join(problems))
    return args


class RankLog:
    """node-<rank>.csv, flushed row by row, and the summary node-<rank>.json."""

    def __init__(self, out_dir, rank):
        os.makedirs(out_dir, exist_ok=True)
        self.out_dir, self.rank = out_dir, rank
        self.file = open(os.path.join(out_dir, f"node-{rank}.csv"), "w", newline="")
        self.writer = csv.writer(self.file)
        self.writer.writerow(CSV_COLUMNS)
        self.file.flush()

    def row(self, values):
        self.writer.writerow(["" if values.get(c) is None else
                              (f"{values[c]:.6g}" if isinstance(values[c], float) and c != "wall_s" else values[c])
                              for c in CSV_COLUMNS])
        self.file.flush()

    def summary(self, summary):
        path = os.path.join(self.out_dir, f"node-{self.rank}.json")
        with open(path + ".tmp", "w") as f:
            json.dump(summary, f, indent=2)
        os.replace(path + ".tmp", path)


def train(args, launch_unix, log, summary):
    import numpy as np
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F

    import peer_data
    from diloco import DiLoCo

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    wall = lambda: time.time() - launch_unix  # noqa: E731
    summary.update(torch_version=torch.__version__, threads=torch.get_num_threads())

    data = peer_data.load_rank_data(args.shards, args.rank, args.world, args.data)
    meta = data["meta"]
    steps_per_epoch = int(meta["steps_per_epoch"])
    total_steps = math.ceil(args.epochs * steps_per_epoch - 1e-9)
    if total_steps > data["batches"].shape[0]:
        raise peer_data.DataError(f"{args.shards}: batches for {data['batches'].shape[0]} steps, --epochs "
                                  f"{args.epochs:g} needs {total_steps}: run `qgossip shards ... --epochs "
                                  f"{math.ceil(args.epochs)}`")
    train_x, train_y = torch.from_numpy(data["train_x"]), torch.from_numpy(data["train_y"])
    test_x, test_y = torch.from_numpy(data["test_x"]), torch.from_numpy(data["test_y"])
    batches = torch.from_numpy(np.ascontiguousarray(data["batches"]))
    summary["data_loaded_s"] = wall()

    iface = os.environ.get("QG_IFACE", "")  # the namespace's own interface: its byte counters below
    bind_gloo_interface(args.master_addr)
    import datetime
    dist.init_process_group("gloo", init_method=f"tcp://{args.master_addr}:{args.master_port}", rank=args.rank,
                            world_size=args.world, timeout=datetime.timedelta(seconds=args.timeout))
    summary["rendezvous_s"] = wall()

    def make_model():
        return nn.Sequential(nn.Linear(int(meta["dim"]), args.hidden), nn.ReLU(),
                             nn.Linear(args.hidden, int(meta["classes"])))

    seed = args.seed if args.seed is not None else int(meta["seed"])
    torch.manual_seed(seed)
    model = make_model()  # the same initialization on every rank: the same seed
    params = sum(p.numel() for p in model.parameters())
    summary["params"] = params
    if meta.get("model_params") and meta["model_params"] != params:
        summary["warning"] = f"qgossip's model has {meta['model_params']} parameters, this one {params}"
    if args.mode == "ddp":
        net = nn.parallel.DistributedDataParallel(model)
        evaluated = net.module
        opt = torch.optim.SGD(net.parameters(), lr=args.lr, momentum=args.momentum, nesterov=args.nesterov,
                              weight_decay=args.weight_decay)
        diloco = None
    else:
        net = model
        evaluated = make_model()
        opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum, nesterov=args.nesterov,
                              weight_decay=args.weight_decay)
        diloco = DiLoCo(model, evaluated, args.outer_lr, args.outer_momentum, not args.no_outer_nesterov)
    per_allreduce = ring_allreduce_bytes(params, args.world)
    allreduces = 0
    eval_period = max(1, round(args.eval_every * steps_per_epoch))
    eval_s = 0.0
    loss_sum, loss_count = 0.0, 0
    reached = {}
    stop_reason = "epochs"
    stop_flag = torch.zeros(1, dtype=torch.int32)
    summary["schedule"] = schedule.describe(args.schedule, args.lr, args.epochs)

    def rate_of(s):  # the learning rate of optimizer step s (1-based), qgossip's formula
        return schedule.lr_of_step(s, steps_per_epoch, args.lr, args.schedule, args.epochs)

    # The system's first round: every rank's data loaded, the rendezvous (and DDP's broadcast of the
    # initial model) done; the harness takes the last rank's as the start of training (docs/tta.md).
    summary["first_step_s"] = wall()

    def record(step, test=None):
        nonlocal loss_sum, loss_count
        tx, rx = interface_bytes(iface)
        log.row({"iteration": step, "epoch": step / steps_per_epoch, "wall_s": round(wall(), 6),
                 "lr": rate_of(step), "train_loss": loss_sum / loss_count if loss_count else None,
                 "test_loss": test[0] if test else None, "test_acc": test[1] if test else None,
                 "bytes_sent": round(allreduces * per_allreduce), "bytes_recv": round(allreduces * per_allreduce),
                 "wire_bytes_sent": tx, "wire_bytes_recv": rx,
                 "comm_s": diloco.comm_s if diloco else None, "eval_s": eval_s})
        loss_sum, loss_count = 0.0, 0

    net.train()
    step = 0
    last_test = None
    while step < total_steps:
        idx = batches[step]
        out = net(train_x[idx])
        loss = F.cross_entropy(out, train_y[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        for group in opt.param_groups:
            group["lr"] = rate_of(step + 1)
        opt.step()
        step += 1
        loss_sum += loss.item()
        loss_count += 1
        if diloco is None:
            allreduces += 1  # DDP: one all-reduce of every gradient per step (in buckets: same bytes)
        elif step % args.local_steps == 0:
            diloco.sync(args.world)
            allreduces += 1
        evaluate_now = step % eval_period == 0 or step == total_steps
        if evaluate_now:
            test = None
            if args.rank == 0:
                t0 = time.time()
                with torch.no_grad():
                    logits = evaluated(test_x)
                    test = (F.cross_entropy(logits, test_y).item(),
                            (logits.argmax(1) == test_y).float().mean().item())
                eval_s += time.time() - t0
                last_test = test
                now = wall()
                for target in args.report_targets:
                    if target not in reached and test[1] >= target:
                        reached[target] = {"epoch": step / steps_per_epoch, "wall_s": now, "step": step}
                code = 0
                if args.target > 0 and test[1] >= args.target:
                    code = 1
                elif args.time_cap > 0 and now >= args.time_cap:
                    code = 2
                stop_flag.fill_(code)
            record(step, test)
            if args.world > 1:
                dist.broadcast(stop_flag, src=0)
            if stop_flag.item():
                stop_reason = {1: "target", 2: "time_cap"}[stop_flag.item()]
                break
        elif args.log_every and step % args.log_every == 0:
            record(step)
    tx, rx = interface_bytes(iface)
    epochs_done = step / steps_per_epoch
    train_s = wall() - summary["first_step_s"]
    summary.update(
        status="ok", stop_reason=stop_reason, rounds=step, epoch=epochs_done, wall_s=wall(),
        test_loss=last_test[0] if last_test else None, test_acc=last_test[1] if last_test else None,
        bytes_sent=round(allreduces * per_allreduce), bytes_recv=round(allreduces * per_allreduce),
        bytes_per_allreduce=per_allreduce, allreduces=allreduces,
        bytes_per_epoch=allreduces * per_allreduce / epochs_done if epochs_done else None,
        wire_bytes_sent=tx, wire_bytes_recv=rx,
        wire_bytes_per_epoch=tx / epochs_done if tx is not None and epochs_done else None,
        comm_s=diloco.comm_s if diloco else None, eval_s=eval_s,
        epoch_time_s=train_s / epochs_done if epochs_done else None,
        targets={f"{t:g}": v for t, v in sorted(reached.items())}, blas=blas_library())
    dist.destroy_process_group()


def main(argv):
    args = parse_args(argv)
    launch_unix = args.launch_time if args.launch_time is not None else process_start_unix()
    summary = {"rank": args.rank, "world": args.world, "mode": args.mode, "status": "failed", "error": "",
               "launch_unix_s": launch_unix, "start_unix_s": process_start_unix(),
               "config": {k: v for k, v in vars(args).items() if k not in ("launch_time",)}}
    log = RankLog(args.out, args.rank)

    def on_term(signum, frame):
        raise Stop(signum)

    signal.signal(signal.SIGTERM, on_term)
    code = 0
    try:
        train(args, launch_unix, log, summary)
    except Stop as e:
        summary.update(status="interrupted", error=str(e))
        code = 128 + e.signum
    except KeyboardInterrupt:
        summary.update(status="interrupted", error="interrupted (SIGINT)")
        code = 130
    except Exception as e:  # noqa: BLE001 - every failure ends in a summary that says what it was
        import peer_data
        summary.update(status="failed", error=f"{type(e).__name__}: {e}")
        code = 2 if isinstance(e, peer_data.DataError) else 1
        print(f"train.py rank {args.rank}: error: {summary['error']}", file=sys.stderr)
    summary["wall_s"] = summary.get("wall_s") if summary["status"] == "ok" else time.time() - launch_unix
    log.summary(summary)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
