"""One node of a run that `qgossip run` could train on its own, trained instead by this Python loop:
the run YAML's TorchScript model, loaded by torch; the node's own shard and batch order (written by
`qgossip shards`, read by bench/peers/peer_data.py, standardized bit for bit as a node does);
the run's learning-rate schedule (bench/peers/schedule.py, qgossip's formula); torch.optim.SGD with
the run's momentum and weight decay; cross-entropy on the logits. After each step node.step(), which
every train.local_steps steps runs the node's round. At the end the model is written as
model-<rank>.npy, as `output.model: true` makes a CLI node write it (tests/python/test_cli_parity.py).

Started by `qgossip launch RUN.yaml --exec '/usr/bin/python3 cli_parity_worker.py --shards DIR ...'`,
which gives each process its rank and the run YAML (QGOSSIP_RANK, QGOSSIP_CONFIG)."""
import argparse
import math
import os
import sys

# One BLAS thread, as a node's libtorch runs (node/models/torch/torch_model.cpp): OpenBLAS splits a
# matrix product's sums differently over 2 threads, so the gradients would differ in the last bits.
# torch.set_num_threads does not reach OpenBLAS; its variable must be set before it loads.
os.environ["OPENBLAS_NUM_THREADS"] = "1"
import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "peers"))
import peer_data  # noqa: E402
import schedule  # noqa: E402

import qgossip  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shards", required=True, help="what `qgossip shards --config RUN.yaml --out DIR` wrote")
    p.add_argument("--model", required=True, help="the run's TorchScript file (its model.path)")
    p.add_argument("--lr", type=float, required=True, help="the run's train.lr")
    p.add_argument("--schedule", default="constant", choices=schedule.KINDS, help="the run's train.schedule.kind")
    p.add_argument("--epochs", type=float, required=True, help="the run's train.epochs (the cosine's length)")
    p.add_argument("--momentum", type=float, default=0.0)
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--out", required=True, help="folder for model-<rank>.npy")
    a = p.parse_args()

    torch.set_num_threads(1)  # as the node's libtorch (model.threads 1): the same kernels, the same sums
    node = qgossip.Node()
    meta = peer_data.read_shards_json(a.shards)
    data = peer_data.load_rank_data(a.shards, node.rank, meta["n"])
    spe = meta["steps_per_epoch"]
    rounds = max(1, math.ceil(a.epochs * spe / node.local_steps))  # the node's plan (node/run/plan.cpp)
    steps = rounds * node.local_steps
    if steps > len(data["batches"]):
        sys.exit(f"{a.shards}: {len(data['batches'])} batches written, this run takes {steps}")

    model = torch.jit.load(a.model)
    model.train()
    node.attach(model)
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum, weight_decay=a.weight_decay)
    x, y = torch.from_numpy(data["train_x"]), torch.from_numpy(data["train_y"])
    for step in range(1, steps + 1):
        for group in opt.param_groups:
            group["lr"] = schedule.lr_of_step(step, spe, a.lr, a.schedule, a.epochs)
        rows = torch.from_numpy(data["batches"][step - 1])
        loss = torch.nn.functional.cross_entropy(model(x[rows]), y[rows])
        opt.zero_grad()
        loss.backward()
        opt.step()
        node.step()
        node.log(loss.item())
    code = node.close()
    flat = torch.cat([q.detach().reshape(-1) for q in model.parameters()]).numpy()
    np.save(os.path.join(a.out, f"model-{node.rank}.npy"), flat)
    sys.exit(code)


if __name__ == "__main__":
    main()
