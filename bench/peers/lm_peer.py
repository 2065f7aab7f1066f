#!/usr/bin/python3
"""One rank of a PyTorch peer on the language-model workload of examples/python/lm.py: the same
byte-level transformer (--size), initialization (seed 0), corpus and held-out split, windows per step
and data order per rank (generator 1000 + rank), AdamW (weight decay 0.01), linear warm-up and
gradient clipping as a qgossip node of that example, so that the race compares the systems, not the
recipes (docs/tta.md).

Usage: bench/peers/lm_peer.py --mode ddp|diloco|streaming --rank R --world N [--master-port P]
                              [lm.py's --text --size --steps --batch --context --lr --warmup --clip]
                              [--local-steps H --outer-lr --outer-momentum]
                              [--fragments P --delay TAU --alpha A] --out DIR

  ddp        DistributedDataParallel (gloo): every step all-reduces the gradient (mean over ranks).
  diloco     Douillard et al. 2023 (bench/peers/diloco.py): H inner AdamW steps on each rank alone, then
             one all-reduce of the pseudo-gradient and an outer SGD step (Nesterov, --outer-lr 0.7,
             --outer-momentum 0.9); every rank restarts from θ_global.
  streaming  Streaming DiLoCo (bench/peers/streaming_diloco.py): --fragments synced in turn, each
             sync's outer update merged --delay inner steps after it began, with --alpha.

Evaluation, on the held-out windows lm.py uses: every rank's own model at the end (the model a user
of that rank is handed; DDP's and DiLoCo's are every rank's, the latter as of its last outer step).
Writes OUT/lm-<rank>.json: the keys of lm.py's result (first_val_loss, val_loss, tokens, train_s, ...)
and mode, world, bytes_sent (payload of the training all-reduces by gloo's ring: 2(n−1)/n · 4 bytes a
float), syncs, comm_s (seconds the loop waited for them), wall_s (from --launch-time, else this
process's start). Exit 0, or 1 with the error on stderr.
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples", "python"))
from corpus import read_corpus  # noqa: E402
from diloco import DiLoCo  # noqa: E402
from gloo_interface import bind_gloo_interface  # noqa: E402
from lm import SIZES, ByteLM, Curve, loss_of, validation_loss, windows  # noqa: E402
from streaming_diloco import StreamingDiLoCo  # noqa: E402


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", choices=["ddp", "diloco", "streaming"], required=True)
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--world", type=int, required=True)
    p.add_argument("--master-addr", default="127.0.0.1")
    p.add_argument("--master-port", type=int, default=29400)
    p.add_argument("--text", help="any text file; default: the King James Version (as lm.py)")
    p.add_argument("--size", choices=sorted(SIZES), default="tiny")
    p.add_argument("--steps", type=int, default=320, help="inner optimizer steps of each rank")
    p.add_argument("--batch", type=int, default=16, help="windows per step of each rank")
    p.add_argument("--context", type=int, default=64)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--local-steps", type=int, default=16, help="H: inner steps between a fragment's syncs")
    p.add_argument("--outer-lr", type=float, default=0.7)
    p.add_argument("--outer-momentum", type=float, default=0.9)
    p.add_argument("--fragments", type=int, default=4, help="streaming: P, fragments synced in turn")
    p.add_argument("--delay", type=int, default=1, help="streaming: τ, inner steps a sync overlaps")
    p.add_argument("--alpha", type=float, default=0.5, help="streaming: α, the merge's weight of the local model")
    p.add_argument("--eval-every", type=int, default=0, metavar="N",
                   help="also evaluate every N steps, as lm.py: OUT/lm-<rank>.curve.jsonl (DiLoCo: θ_global)")
    p.add_argument("--launch-time", type=float, help="Unix seconds of the launch (wall_s counts from it)")
    p.add_argument("--out", required=True, help="where lm-<rank>.json goes")
    args = p.parse_args(argv)
    if not 0 <= args.rank < args.world:
        p.error(f"--rank {args.rank}: expected 0 to --world − 1 = {args.world - 1}")
    if args.steps < 1 or args.local_steps < 1:
        p.error("--steps and --local-steps must be at least 1")
    if args.mode == "streaming" and not 0 <= args.delay < args.local_steps:
        p.error(f"--delay {args.delay}: expected 0 to H − 1 = {args.local_steps - 1} (a fragment's next sync "
                "starts H steps after its last)")
    if args.mode == "streaming" and not 0.0 <= args.alpha <= 1.0:
        p.error(f"--alpha {args.alpha}: expected a merge factor in [0, 1]")
    return args


def ring_bytes(floats, world):
    return 2 * (world - 1) * 4 * floats // world if world > 1 else 0


def train(args):
    launched = args.launch_time or time.time()
    torch.set_num_threads(1)
    train_data, val = read_corpus(args.text)
    torch.manual_seed(0)  # the same initial model on every rank, as lm.py's nodes
    width, layers, heads = SIZES[args.size]
    model = ByteLM(args.context, width, layers, heads)
    numel = sum(p.numel() for p in model.parameters())
    os.environ.update(MASTER_ADDR=args.master_addr, MASTER_PORT=str(args.master_port))
    bind_gloo_interface(args.master_addr)
    dist.init_process_group("gloo", rank=args.rank, world_size=args.world)
    net = torch.nn.parallel.DistributedDataParallel(model) if args.mode == "ddp" else model
    outer = None
    if args.mode == "diloco":
        outer = DiLoCo(model, ByteLM(args.context, width, layers, heads), args.outer_lr, args.outer_momentum)
    elif args.mode == "streaming":
        outer = StreamingDiLoCo(model, args.local_steps, args.fragments, args.delay, args.alpha, args.outer_lr,
                                args.outer_momentum)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    warmup = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / args.warmup))
    g = torch.Generator().manual_seed(1000 + args.rank)  # lm.py's data order for this rank
    evaluated = outer.global_model if args.mode == "diloco" else model  # what the rank would hand out
    os.makedirs(args.out, exist_ok=True)
    curve = Curve(os.path.join(args.out, f"lm-{args.rank}.curve.jsonl"), args.eval_every)
    first_val = validation_loss(model, val, args.context)
    curve.add(0, first_val)
    start = time.time()
    for step in range(1, args.steps + 1):
        loss = loss_of(net, windows(train_data, args.batch, args.context, g))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        opt.step()
        warmup.step()
        if args.mode == "diloco" and step % args.local_steps == 0:
            outer.sync(args.world)
        elif args.mode == "streaming":
            outer.after_step(step, args.world)
        if curve.due(step) and step < args.steps:
            curve.add(step, validation_loss(evaluated, val, args.context))
    if args.mode == "streaming":
        outer.finish(args.world)
    train_s = time.time() - start
    syncs = args.steps if args.mode == "ddp" else outer.syncs
    floats = outer.floats_sent if args.mode == "streaming" else numel * syncs  # ddp: d a step; diloco: d a sync
    final_val = validation_loss(evaluated, val, args.context)
    result = {"rank": args.rank, "mode": args.mode, "world": args.world, "size": args.size, "parameters": numel,
              "steps": args.steps, "batch": args.batch, "tokens": args.steps * args.batch * args.context,
              "first_val_loss": first_val, "val_loss": final_val, "train_s": train_s,
              "start_unix": start, "end_unix": time.time(),
              "wall_s": time.time() - launched, "syncs": syncs, "bytes_sent": ring_bytes(floats, args.world),
              "comm_s": outer.comm_s if outer else None, "local_steps": args.local_steps,
              "model_sum": float(sum(p.double().sum() for p in model.parameters()))}
    curve.add(args.steps, final_val)
    result["curve"] = curve.points
    if args.mode == "streaming":
        result.update(fragments=len(outer.fragments), delay=args.delay, alpha=args.alpha)
    dist.destroy_process_group()
    return result


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    result = train(args)
    with open(os.path.join(args.out, f"lm-{args.rank}.json"), "w") as f:
        json.dump(result, f)
    print(json.dumps(result), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
