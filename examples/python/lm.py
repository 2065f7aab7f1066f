#!/usr/bin/python3
"""A byte-level transformer language model trained by qgossip nodes inside this program's own loop:
its own loss (next-byte cross-entropy), AdamW, a linear warm-up and gradient clipping, on the King
James Version (Debian's bible-kjv) or any text file (--text). What the CLI cannot do: the model, the
data and the optimizer are this program's (docs/python.md). Three sizes (--size): tiny (0.14 M
parameters at context 64, the default), small (1.07 M at context 128) and medium (14.4 M at 128).

One node per rank, started by the launcher (it sets the rank and the run YAML):
    build/qgossip launch examples/python/lm.yaml --exec 'python3 examples/python/lm.py [--text FILE]'
or by hand, one process per rank r:
    QGOSSIP_RANK=r QGOSSIP_CONFIG=examples/python/lm.yaml python3 examples/python/lm.py --text FILE
The same model alone on the same number of tokens (the comparison the test makes):
    python3 examples/python/lm.py --text FILE --alone NODES
Each run writes what it measured as JSON (--out, default: next to the node's log).
"""
import argparse
import json
import math
import os
import sys
import time

import torch

from corpus import read_corpus

# --size: the model's width, layers and attention heads.
SIZES = {"tiny": (64, 2, 4), "small": (128, 5, 4), "medium": (384, 8, 6)}

class ByteLM(torch.nn.Module):
    """A small causal transformer over bytes (vocabulary 256)."""

    def __init__(self, context, width=64, layers=2, heads=4):
        super().__init__()
        self.embed = torch.nn.Embedding(256, width)
        self.position = torch.nn.Parameter(torch.zeros(context, width))
        layer = torch.nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0, batch_first=True,
                                                 norm_first=True)
        self.blocks = torch.nn.TransformerEncoder(layer, layers)
        self.out = torch.nn.Linear(width, 256)
        self.register_buffer("mask", torch.triu(torch.full((context, context), float("-inf")), diagonal=1))

    def forward(self, x):
        h = self.embed(x) + self.position[: x.shape[1]]
        return self.out(self.blocks(h, mask=self.mask[: x.shape[1], : x.shape[1]]))


def loss_of(model, batch):
    logits = model(batch[:, :-1])
    return torch.nn.functional.cross_entropy(logits.reshape(-1, 256), batch[:, 1:].reshape(-1))


def windows(data, count, context, generator):
    starts = torch.randint(0, len(data) - context - 1, (count,), generator=generator)
    return torch.stack([data[s: s + context + 1] for s in starts.tolist()])


@torch.no_grad()
def validation_loss(model, val, context):
    g = torch.Generator().manual_seed(12345)  # the same validation windows for every node and run
    return loss_of(model, windows(val, 64, context, g)).item()


class Curve:
    """The validation loss during a run (scripts/tta.py's language-model race times it): a point every
    `every` steps, each with its Unix time, appended to a JSON-lines file as soon as it is measured, so a
    run stopped at its time cap keeps what it had reached. every = 0: no points."""

    def __init__(self, path, every):
        self.every, self.points = every, []
        self.file = open(path, "w") if every and path else None

    def due(self, step):
        return self.every > 0 and step % self.every == 0

    def add(self, step, val_loss):
        point = dict(step=step, unix=time.time(), val_loss=val_loss)
        self.points.append(point)
        if self.file:
            self.file.write(json.dumps(point) + "\n")
            self.file.flush()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--text", help="any text file (bytes); default: the King James Version (bible-kjv)")
    p.add_argument("--size", choices=sorted(SIZES), default="tiny",
                   help="tiny: width 64, 2 layers; small: 128, 5; medium: 384, 8 (default: %(default)s)")
    p.add_argument("--steps", type=int, default=320, help="optimizer steps of each node")
    p.add_argument("--batch", type=int, default=16, help="windows per step of each node")
    p.add_argument("--context", type=int, default=64, help="bytes per window")
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--warmup", type=int, default=20, help="steps of linear warm-up")
    p.add_argument("--clip", type=float, default=1.0, help="gradient norm clipping")
    p.add_argument("--alone", type=int, default=0, metavar="NODES",
                   help="no node: one process, batch × NODES, the tokens of NODES nodes")
    p.add_argument("--mix-rounds", type=int, default=0, metavar="K",
                   help="after the last step, K rounds that only mix (node.mix(K)): the ranks' models closer "
                        "together, their mean kept")
    p.add_argument("--eval-every", type=int, default=0, metavar="N",
                   help="also evaluate every N steps (after the step's round), each point with its time, "
                        "written as it is measured to <out>.curve.jsonl (default 0: only at the end)")
    p.add_argument("--eval-mix", type=int, default=0, metavar="K",
                   help="before each of those evaluations, K rounds that only mix (node.mix(K))")
    p.add_argument("--save-model", action="store_true",
                   help="write the final parameters beside the JSON (lm-<rank>.pt), e.g. to average them")
    p.add_argument("--out", help="where to write the JSON of what was measured")
    args = p.parse_args()
    torch.set_num_threads(1)
    train, val = read_corpus(args.text)
    torch.manual_seed(0)  # the same initial model on every node
    width, layers, heads = SIZES[args.size]
    model = ByteLM(args.context, width, layers, heads)
    node = None
    if not args.alone:
        import qgossip

        node = qgossip.Node()  # rank and run YAML from the launcher's environment
        node.attach(model)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    warmup = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / args.warmup))
    g = torch.Generator().manual_seed(1000 + (node.rank if node else 0))
    batch = args.batch * (args.alone or 1)
    out = args.out or (os.path.join(node.output_dir, f"lm-{node.rank}.json") if node else "lm-alone.json")
    curve = Curve(os.path.splitext(out)[0] + ".curve.jsonl", args.eval_every)
    first_val = validation_loss(model, val, args.context)
    curve.add(0, first_val)
    start = time.time()
    for step in range(1, args.steps + 1):
        loss = loss_of(model, windows(train, batch, args.context, g))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        opt.step()
        warmup.step()
        if node:
            node.step()
            node.log(loss.item())
        if curve.due(step) and step < args.steps:
            if node and args.eval_mix:
                node.mix(args.eval_mix)
            curve.add(step, validation_loss(model, val, args.context))
    if node:
        node.settle()  # train.overlap: the round in flight lands before the evaluation
    train_s = time.time() - start
    trained_val = validation_loss(model, val, args.context)
    if node and args.mix_rounds:
        node.mix(args.mix_rounds)
    result = {"rank": node.rank if node else None, "alone": args.alone, "size": args.size,
              "parameters": sum(p.numel() for p in model.parameters()), "steps": args.steps, "batch": batch,
              "tokens": args.steps * batch * args.context, "first_val_loss": first_val,
              "trained_val_loss": trained_val, "mix_rounds": args.mix_rounds,
              "val_loss": validation_loss(model, val, args.context) if args.mix_rounds else trained_val,
              "train_s": train_s, "start_unix": start, "end_unix": time.time(),
              "rounds": node.round if node else 0}
    curve.add(args.steps, result["val_loss"])
    result["curve"] = curve.points
    if node:
        result["exit"] = node.close()
    if args.save_model:
        torch.save(model.state_dict(), os.path.splitext(out)[0] + ".pt")
    json.dump(result, open(out, "w"))
    print(json.dumps(result), file=sys.stderr)
    return result.get("exit", 0)


if __name__ == "__main__":
    sys.exit(main())
