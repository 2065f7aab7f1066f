#!/usr/bin/python3
"""An image classifier trained by qgossip nodes inside this program's own loop, with what the CLI's
loop does not have: augmentation written in Python (a random crop of a padded image and a horizontal
flip, torchvision's RandomCrop(padding=2) and RandomHorizontalFlip as plain tensor code), a
convolutional network of the program's own, label smoothing, SGD with Nesterov momentum and weight
decay under a one-cycle schedule, and its own evaluation logged into the node's CSV (val_loss,
val_acc). Data: Fashion-MNIST's IDX files (Debian's dataset-fashion-mnist); each node trains on its
own shard (every n-th example of a seeded shuffle) and all evaluate on the same test images.

One node per rank, started by the launcher (it sets the rank and the run YAML):
    build/qgossip launch examples/python/image.yaml --exec '/usr/bin/python3 examples/python/image.py'
Each node writes what it measured as JSON next to its log (image-<rank>.json).

A node of several processes (topology.group_size; docs/python.md, "Groups") trains with DDP inside
its group, each process on its own shard:
    build/qgossip launch examples/python/image.yaml --set topology.n=2 --set topology.group_size=2 \
        --exec '/usr/bin/python3 examples/python/image.py'
"""
import argparse
import gzip
import json
import os
import struct
import sys
import time

import torch

DATA = "/usr/share/datasets/fashion-mnist"


def read_idx(path):
    """An IDX file of unsigned bytes (gzip or raw) as a uint8 tensor of its shape."""
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[:3] != b"\0\0\x08":
        sys.exit(f"{path}: not an IDX file of unsigned bytes")
    shape = struct.unpack(">" + "I" * data[3], data[4:4 + 4 * data[3]])
    return torch.frombuffer(bytearray(data[4 + 4 * data[3]:]), dtype=torch.uint8).reshape(shape)


def load(directory, split):
    prefix = "train" if split == "train" else "t10k"
    images = read_idx(os.path.join(directory, f"{prefix}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(directory, f"{prefix}-labels-idx1-ubyte.gz"))
    x = images.unsqueeze(1).float().div_(255.0).sub_(0.2860).div_(0.3530)  # Fashion-MNIST's mean and stddev
    return x, labels.long()


def augment(x, generator, padding=2):
    """RandomCrop(28, padding) and RandomHorizontalFlip, image by image, on a batch [n, 1, 28, 28]."""
    n, _, h, w = x.shape
    padded = torch.nn.functional.pad(x, (padding,) * 4)
    dy = torch.randint(0, 2 * padding + 1, (n,), generator=generator).tolist()
    dx = torch.randint(0, 2 * padding + 1, (n,), generator=generator).tolist()
    crops = torch.stack([padded[i, :, dy[i]:dy[i] + h, dx[i]:dx[i] + w] for i in range(n)])
    flip = torch.rand(n, generator=generator) < 0.5
    crops[flip] = crops[flip].flip(-1)
    return crops


def model_for(classes=10):
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Dropout(0.25), torch.nn.Linear(64 * 7 * 7, 128), torch.nn.ReLU(),
        torch.nn.Linear(128, classes))


@torch.no_grad()
def evaluate(model, x, y, chunk=1000):
    model.eval()
    loss, correct = 0.0, 0
    for i in range(0, len(x), chunk):
        logits = model(x[i:i + chunk])
        loss += torch.nn.functional.cross_entropy(logits, y[i:i + chunk], reduction="sum").item()
        correct += (logits.argmax(1) == y[i:i + chunk]).sum().item()
    model.train()
    return loss / len(x), correct / len(x)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=DATA, help="the folder of Fashion-MNIST's IDX files (default %(default)s)")
    p.add_argument("--steps", type=int, default=600, help="optimizer steps of each node")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.05, help="the one-cycle schedule's peak")
    p.add_argument("--eval-every", type=int, default=100, help="steps between evaluations (and at the end)")
    p.add_argument("--eval-examples", type=int, default=2000, help="test images per evaluation (the end: all)")
    p.add_argument("--out", help="where to write the JSON of what was measured")
    args = p.parse_args()
    torch.set_num_threads(1)
    import qgossip

    node = qgossip.Node()  # rank and run YAML from the launcher's environment
    train_x, train_y = load(args.data, "train")
    test_x, test_y = load(args.data, "test")
    order = torch.randperm(len(train_x), generator=torch.Generator().manual_seed(1))
    torch.manual_seed(0)  # the same initial model on every node
    model = model_for()
    node.attach(model)
    net, member, members = model, 0, 1
    if node.group is not None:  # a node of several processes (docs/python.md, "Groups"): DDP inside it
        import torch.distributed as dist
        member, members = dist.get_rank(node.group), dist.get_world_size(node.group)
        net = torch.nn.parallel.DistributedDataParallel(model, process_group=node.group)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, nesterov=True, weight_decay=5e-4)
    schedule = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=args.steps)
    process, processes = node.rank * members + member, node.nodes * members  # every process its own shard
    shard = order[process::processes]
    g = torch.Generator().manual_seed(1000 + process)
    start = time.time()
    for step in range(1, args.steps + 1):
        rows = shard[torch.randint(0, len(shard), (args.batch,), generator=g)]
        x = augment(train_x[rows], g)
        loss = torch.nn.functional.cross_entropy(net(x), train_y[rows], label_smoothing=0.1)
        opt.zero_grad()
        loss.backward()
        opt.step()
        schedule.step()
        node.step()
        metrics = {}
        if member == 0 and (step == 1 or step % args.eval_every == 0):  # a group's members hold its model
            metrics = dict(zip(("val_loss", "val_acc"),
                               evaluate(model, test_x[:args.eval_examples], test_y[:args.eval_examples])))
        node.log(loss.item(), **metrics)
    train_s = time.time() - start
    if member > 0:
        return node.close()
    val_loss, val_acc = evaluate(model, test_x, test_y)
    result = {"rank": node.rank, "processes": members, "steps": args.steps, "batch": args.batch,
              "rounds": node.round, "test_loss": val_loss, "test_acc": val_acc, "train_s": train_s}
    result["exit"] = node.close()
    out = args.out or os.path.join(node.output_dir, f"image-{node.rank}.json")
    json.dump(result, open(out, "w"))
    print(json.dumps(result), file=sys.stderr)
    return result["exit"]


if __name__ == "__main__":
    sys.exit(main())
