#!/usr/bin/env python3
"""Random valid run configurations, each run to its end: no valid config may end in an internal error.

Draws run configs from the schema of docs/config.md (every model kind, a TorchScript file with and
without BatchNorm among them; every schedule kind; every algorithm and codec family; local steps 1 and
several; the outer step on and off; synchronous and asynchronous; on_peer_failure stop and continue;
CURVE and plain links, tcp and ipc), tiny enough that each run takes a second or two, and runs each with
`qgossip launch`. Every run must end one of two ways:
  - ran:     exit 0, and `qgossip verify` finds every copy equal to its owner (or none held);
  - refused: exit 2 before any node started (no node log written), with an error message: the loader's
             refusal of a combination (docs/config.md, "Combinations the loader refuses");
  - diverged: exit 3, a node's summary saying so: the training loss passed train.diverge_loss. A valid
             config can be unstable (CHOCO-SGD with consensus_step 1 and a coarse unbiased quantizer,
             ECD-PSGD with nuqsgd): the documented ending, counted apart.
Anything else is a finding: an internal error (exit 70), a crash, a timeout, a node that died, verify
failing, or an exit 2 after the nodes started. Each finding prints its config file.

The draws depend on --seed alone, so a finding is reproduced by the same seed and index:
  /usr/bin/python3 scripts/valid_configs.py --qgossip build/qgossip --seed 7 --count 200
  /usr/bin/python3 scripts/valid_configs.py --qgossip build/qgossip --seed 7 --only 113 --keep
The data sets (synthetic; an .npy image set of Fashion-MNIST's shape; CIFAR-10 binary files) and the
TorchScript files are written into the work folder; nothing is downloaded.
Exit 0 when every run ended as above, 1 otherwise.
"""
import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import numpy  # Debian's python3-numpy, which python3-torch brings

TORCH_PYTHON = "/usr/bin/python3"  # Debian's python3 with python3-torch writes the TorchScript files

# --- the data sets and TorchScript modules the configs name -------------------------------------------

IMAGE_TRAIN, IMAGE_TEST = 384, 64  # examples of each written image set


def image_bytes(rng, count, size, classes):
    """count images of `size` bytes whose class shows in their mean brightness, and their labels."""
    labels = bytes(rng.randrange(classes) for _ in range(count))
    pixels = bytearray()
    for label in labels:
        base = 40 + 160 * label // max(1, classes - 1)
        pixels += bytes(min(255, max(0, base + rng.randrange(-40, 41))) for _ in range(size))
    return bytes(pixels), labels


def write_npy_images(folder, rng):
    """Fashion-MNIST's shape, (N, 28, 28) uint8, 10 classes: train_*.npy and test_*.npy."""
    os.makedirs(folder, exist_ok=True)
    for split, count in (("train", IMAGE_TRAIN), ("test", IMAGE_TEST)):
        pixels, labels = image_bytes(rng, count, 28 * 28, 10)
        images = numpy.frombuffer(pixels, numpy.uint8).reshape(count, 28, 28)
        numpy.save(os.path.join(folder, f"{split}_images.npy"), images)
        numpy.save(os.path.join(folder, f"{split}_labels.npy"), numpy.frombuffer(labels, numpy.uint8))


def write_cifar10(folder, rng):
    """CIFAR-10's binary version: data_batch_1..5.bin and test_batch.bin, records of 1 + 3072 bytes."""
    os.makedirs(folder, exist_ok=True)
    files = [(f"data_batch_{b}.bin", IMAGE_TRAIN // 5) for b in range(1, 6)] + [("test_batch.bin", IMAGE_TEST)]
    for name, count in files:
        pixels, labels = image_bytes(rng, count, 3072, 10)
        with open(os.path.join(folder, name), "wb") as f:
            for i in range(count):
                f.write(labels[i:i + 1] + pixels[i * 3072:(i + 1) * 3072])


TORCHSCRIPT = r"""
import sys, torch, torch.nn as nn
torch.manual_seed(0)
class Vector(nn.Module):  # [B, dim] -> [B, classes]
    def __init__(self, dim: int, classes: int, bn: bool):
        super().__init__()
        self.fc1 = nn.Linear(dim, 16)
        self.bn = nn.BatchNorm1d(16) if bn else nn.Identity()
        self.drop = nn.Dropout(0.1)
        self.fc2 = nn.Linear(16, classes)
    def forward(self, x):
        return self.fc2(self.drop(torch.relu(self.bn(self.fc1(x)))))
class Image(nn.Module):  # [B, 1, 28, 28] -> [B, 10]
    def __init__(self, bn: bool):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4) if bn else nn.Identity()
        self.drop = nn.Dropout(0.1)
        self.fc = nn.Linear(4 * 7 * 7, 10)
    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.bn(self.conv(x))), 4)
        return self.fc(self.drop(torch.flatten(x, 1)))
out, dim, classes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for bn in (False, True):
    suffix = "-bn" if bn else ""
    torch.jit.script(Vector(dim, classes, bn)).save(f"{out}/vector{suffix}.pt")
    torch.jit.script(Image(bn)).save(f"{out}/image{suffix}.pt")
"""

VECTOR_DIM, VECTOR_CLASSES = 12, 3  # the synthetic data the vector TorchScript modules take


def prepare(work):
    rng = random.Random(20261128)
    write_npy_images(os.path.join(work, "npy"), rng)
    write_cifar10(os.path.join(work, "cifar10"), rng)
    script = os.path.join(work, "write_torchscript.py")  # torch.jit.script reads the classes' source file
    with open(script, "w") as f:
        f.write(TORCHSCRIPT)
    subprocess.run([TORCH_PYTHON, script, work, str(VECTOR_DIM), str(VECTOR_CLASSES)], check=True)


# --- the draw ----------------------------------------------------------------------------------------

DECENTRALIZED = ["dpsgd", "naive", "dcd", "ecd", "choco"]
QUANTIZERS = ["qsgd", "nuqsgd", "dither", "fp16", "bf16"]


def draw_compressor(rng, algorithm):
    if algorithm == "dpsgd":
        return "identity"
    names = QUANTIZERS if algorithm == "allreduce" else QUANTIZERS + ["identity", "mcgq", "randsparse", "randk",
                                                                      "topk", "sign"]
    name = rng.choice(names)
    if name == "qsgd":
        return {"name": "qsgd", "bits": rng.choice([2, 3, 4, 8]), "bucket": rng.choice([0, 16, 128]),
                "norm": rng.choice(["l2", "max"]), "coding": rng.choice(["dense", "elias"])}
    if name == "nuqsgd":
        return {"name": "nuqsgd", "s": rng.choice([1, 3, 6]), "bucket": rng.choice([0, 64])}
    if name == "dither":
        return {"name": "dither", "K": rng.choice([1, 7, 127]), "bucket": rng.choice([0, 32])}
    if name == "mcgq":
        return {"name": "mcgq", "K": rng.choice([0.5, 1, 2]), "coding": rng.choice(["rle", "dense"]),
                "variant": rng.choice(["plain", "accumulate"])}
    if name == "randsparse":
        return {"name": "randsparse", "p": rng.choice([0.1, 0.5])}
    if name == "randk":
        return {"name": "randk", "ratio": rng.choice([0.05, 0.3]), "scaled": rng.choice([True, False])}
    if name == "topk":
        return {"name": "topk", "ratio": rng.choice([0.05, 0.3])}
    if name == "sign":
        return {"name": "sign", "bucket": rng.choice([0, 64])}
    return name  # identity, fp16, bf16


def draw_model(rng):
    """The model and the data it takes."""
    kind = rng.choice(["mlp", "softmax", "lenet5", "resnet20", "torchscript"])
    synthetic = {"dataset": "synthetic",
                 "synthetic": {"train": 0, "test": 64, "dim": VECTOR_DIM, "classes": VECTOR_CLASSES,
                               "noise": 1.0}}
    npy = {"dataset": "npy", "dir": "npy"}
    if kind == "mlp":
        return {"kind": "mlp", "hidden": rng.choice([[8], [16, 8]]), "init": rng.choice(["pytorch", "he"])}, \
            rng.choice([synthetic, npy])
    if kind == "softmax":
        return {"kind": "softmax"}, rng.choice([synthetic, npy])
    torch_keys = {"buffers": rng.choice(["local", "average"])}
    if kind == "lenet5":
        return dict({"kind": "lenet5"}, **torch_keys), npy
    if kind == "resnet20":
        return dict({"kind": "resnet20"}, **torch_keys), {"dataset": "cifar10", "dir": "cifar10"}
    bn = rng.choice(["", "-bn"])
    if rng.random() < 0.5:
        return dict({"kind": "torchscript", "path": f"vector{bn}.pt"}, **torch_keys), synthetic
    return dict({"kind": "torchscript", "path": f"image{bn}.pt"}, **torch_keys), npy


def draw_schedule(rng):
    kind = rng.choice(["constant", "step", "multistep", "cosine"])
    s = {"kind": kind}
    if kind == "step":
        s.update(gamma=rng.choice([0.1, 0.5]), step_epochs=rng.choice([0.5, 1.0]))
    if kind == "multistep":
        s.update(gamma=0.5, milestones=[0.5, 1.0])
    if kind == "cosine":
        s["final_factor"] = rng.choice([0, 0, 0.1])
    if rng.random() < 0.3:
        s.update(warmup_epochs=0.5, warmup_start=rng.choice([0, 0.1]))
    return s


def draw_topology(rng):
    graph = rng.choice(["ring", "complete", "star", "hypercube", "torus", "exponential"])
    if graph == "hypercube":
        t = {"graph": graph, "dim": rng.choice([1, 2])}
    elif graph == "torus":
        t = {"graph": graph, "rows": 2, "cols": 2}
    else:
        t = {"graph": graph, "n": rng.choice([2, 3, 4])}
    t["weights"] = rng.choice(["uniform", "metropolis_hastings"])
    return t


def nodes_of(t):
    return {"hypercube": lambda: 2 ** t.get("dim", 0), "torus": lambda: 4}.get(t["graph"], lambda: t["n"])()


def draw_config(rng, index):
    """One run config (a dict; YAML takes JSON). Combinations the loader refuses are drawn rarely, on
    purpose: a refusal is a valid outcome too."""
    topology = draw_topology(rng)
    n = nodes_of(topology)
    algorithm = rng.choice(DECENTRALIZED + ["allreduce", "allgather"])
    compressor = draw_compressor(rng, algorithm)
    model, data = draw_model(rng)
    if data["dataset"] == "synthetic":
        data = json.loads(json.dumps(data))
        data["synthetic"]["train"] = 48 * n
    if model["kind"] in ("mlp", "softmax") and algorithm == "allgather" and rng.random() < 0.4:
        compressor = {"name": "isgq", "kx": rng.choice([1, 3]), "kd": rng.choice([1, 3]),
                      "variant": rng.choice(["dither", "mse"])}
    decentralized = algorithm in DECENTRALIZED
    isgq = isinstance(compressor, dict) and compressor["name"] == "isgq"
    train = {"epochs": rng.choice([1, 2]), "batch": rng.choice([8, 16]), "lr": rng.choice([0.02, 0.05, 0.1]),
             "schedule": draw_schedule(rng), "log_every": 1, "eval_every": rng.choice([0, 0.5, 1]),
             "eval_examples": 0, "local_steps": 1 if isgq else rng.choice([1, 1, 2, 3])}
    if rng.random() < 0.4 and not isgq:
        train["outer"] = {"lr": rng.choice([0.7, 1.0]), "momentum": rng.choice([0.5, 0.9]),
                          "nesterov": rng.choice([True, False])}
    buffers_averaged = model.get("buffers") == "average"
    if rng.random() < 0.3 and not buffers_averaged and not isgq:
        train["momentum"] = 0.9
        train["weight_decay"] = rng.choice([0, 1e-4])
    asynchronous = decentralized and rng.random() < 0.35
    if asynchronous:
        train["max_staleness"] = rng.choice([1, 2, "unbounded"])
    elif decentralized and rng.random() < 0.2:
        train["consensus_every"] = 2
    elif rng.random() < 0.2 and (model["kind"] in ("mlp", "softmax", "lenet5") or buffers_averaged):
        train["checkpoint_every"] = 2
    if data["dataset"] != "synthetic" and rng.random() < 0.3:
        data["augment"] = {"crop_padding": rng.choice([0, 2]), "flip": rng.choice([True, False])}
    if rng.random() < 0.3:
        data["partition"], data["skew"] = "label", rng.choice([0.5, 1.0])
    data["standardize"] = rng.choice([True, False])
    network = {"transport": rng.choice(["ipc", "ipc", "tcp"]), "security": rng.choice(["curve", "none"]),
               "start_timeout_s": 60, "round_timeout_s": 60, "linger_s": 5}
    if decentralized and "consensus_every" not in train and rng.random() < 0.3:
        network["on_peer_failure"] = "continue"
    config = {"name": f"c{index}", "seed": rng.randrange(1, 1000), "topology": topology, "algorithm": algorithm,
              "compressor": compressor, "model": model, "data": data, "train": train, "network": network,
              "device": "cpu"}
    if algorithm == "choco":
        config["algorithm"] = {"name": "choco", "consensus_step": rng.choice([0.3, 0.8, 1.0])}
    if model["kind"] not in ("mlp", "softmax"):
        model["threads"] = 1
    if rng.random() < 0.1:
        refused(rng, config)
    return config


def refused(rng, config):
    """Turns the config into one of the combinations docs/config.md says the loader refuses."""
    change = rng.choice(["dpsgd codec", "allreduce sparse", "isgq dcd", "async allreduce", "average momentum",
                         "lenet5 synthetic", "continue allgather", "cuda mlp", "restart async"])
    t, net = config["train"], config["network"]
    t.pop("max_staleness", None)
    t.pop("consensus_every", None)
    t.pop("checkpoint_every", None)
    net.pop("on_peer_failure", None)
    if change == "dpsgd codec":
        config["algorithm"], config["compressor"] = "dpsgd", {"name": "qsgd", "bits": 4}
    elif change == "allreduce sparse":
        config["algorithm"], config["compressor"] = "allreduce", {"name": "topk", "ratio": 0.1}
    elif change == "isgq dcd":
        config["algorithm"], config["compressor"] = "dcd", {"name": "isgq"}
    elif change == "async allreduce":
        config["algorithm"], t["max_staleness"] = "allreduce", 1
    elif change == "average momentum":
        config["model"], t["momentum"] = {"kind": "lenet5", "buffers": "average"}, 0.9
    elif change == "lenet5 synthetic":
        config["model"] = {"kind": "lenet5"}
        config["data"] = {"dataset": "synthetic", "synthetic": {"train": 256, "test": 64, "dim": VECTOR_DIM,
                                                                "classes": VECTOR_CLASSES}}
    elif change == "continue allgather":
        config["algorithm"], net["on_peer_failure"] = "allgather", "continue"
    elif change == "cuda mlp":
        config["model"], config["device"] = {"kind": "mlp", "hidden": [8]}, "cuda"
    else:
        config["algorithm"], t["max_staleness"] = "dcd", 1
        net.update(on_peer_failure="continue", restart=1)


def free_ports(n):
    """A base port whose n ports are free now, below the kernel's ephemeral range."""
    for _ in range(200):
        base = random.randrange(15000, 28000)
        sockets = []
        try:
            for p in range(base, base + n):
                s = socket.socket()
                sockets.append(s)
                s.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
    raise RuntimeError("no free port range found")


# --- running one ---------------------------------------------------------------------------------------

def run_one(qgossip, work, config, timeout):
    """Runs a config; returns (outcome, detail): outcome is "ran", "refused" or "FINDING"."""
    name = config["name"]
    if config["network"]["transport"] == "tcp":
        config["topology"]["base_port"] = free_ports(nodes_of(config["topology"]))
    config["output"] = {"dir": os.path.join(work, "runs")}
    path = os.path.join(work, f"{name}.yaml")
    with open(path, "w") as f:
        json.dump(config, f, indent=1)
    run_dir = os.path.join(work, "runs", name)
    shutil.rmtree(run_dir, ignore_errors=True)
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(work, "cache"))
    try:
        p = subprocess.run([qgossip, "launch", path, "--plain", "--no-plot"], cwd=work, env=env,
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "FINDING", f"{path}: still running after {timeout} s"
    out = p.stdout + p.stderr
    started = os.path.isdir(run_dir) and any(f.startswith("node-") and f.endswith(".log") for f in os.listdir(run_dir))
    if p.returncode == 2 and not started and "error" in out:
        return "refused", first_error(out)
    if p.returncode == 3 and any_diverged(run_dir):
        return "diverged", first_error(out)
    if p.returncode != 0:
        return "FINDING", f"{path}: exit {p.returncode}\n{tail(out)}"
    v = subprocess.run([qgossip, "verify", run_dir], capture_output=True, text=True)
    verdict = v.stdout + v.stderr
    if v.returncode != 0 or not ("all equal" in verdict or "holds no copies" in verdict):
        return "FINDING", f"{path}: verify exit {v.returncode}\n{tail(verdict)}"
    return "ran", verdict.strip().splitlines()[-1]


def any_diverged(run_dir):
    """True when a node's summary says it diverged (exit 3: the training loss left train.diverge_loss)."""
    for f in os.listdir(run_dir):
        if f.startswith("node-") and f.endswith(".json"):
            with open(os.path.join(run_dir, f)) as j:
                if json.load(j).get("status") == "diverged":
                    return True
    return False


def first_error(text):
    for line in text.splitlines():
        if "error" in line:
            return line.strip()
    return text.strip().splitlines()[0] if text.strip() else ""


def tail(text, lines=15):
    return "\n".join(text.rstrip().splitlines()[-lines:])


def describe(config):
    a = config["algorithm"] if isinstance(config["algorithm"], str) else config["algorithm"]["name"]
    c = config["compressor"] if isinstance(config["compressor"], str) else config["compressor"]["name"]
    t = config["train"]
    return (f"n={nodes_of(config['topology'])} {config['topology']['graph']} {a}/{c} {config['model']['kind']}"
            f"{'(' + config['model']['path'] + ')' if 'path' in config['model'] else ''} "
            f"{t['schedule']['kind']} H={t['local_steps']} tau={t.get('max_staleness', 0)} "
            f"{config['network'].get('on_peer_failure', 'stop')}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--qgossip", required=True, help="the qgossip binary (e.g. build/qgossip)")
    ap.add_argument("--seed", type=int, default=1, help="the draw's seed (default 1)")
    ap.add_argument("--count", type=int, default=30, help="configs to draw and run (default 30)")
    ap.add_argument("--only", type=int, action="append", help="run only draw INDEX (repeatable)")
    ap.add_argument("--work", help="work folder (default: a temporary one, removed unless --keep)")
    ap.add_argument("--keep", action="store_true", help="keep the work folder (configs, runs, logs)")
    ap.add_argument("--timeout", type=float, default=120, help="seconds one run may take (default 120)")
    args = ap.parse_args(argv)
    qgossip = os.path.abspath(args.qgossip)
    if not os.access(qgossip, os.X_OK):
        ap.error(f"--qgossip {args.qgossip}: not an executable file")
    work = os.path.abspath(args.work) if args.work else tempfile.mkdtemp(prefix="qgossip-configs-")
    os.makedirs(work, exist_ok=True)
    prepare(work)
    rng = random.Random(args.seed)
    counts = {"ran": 0, "refused": 0, "diverged": 0, "FINDING": 0}
    start = time.monotonic()
    for i in range(args.count):
        config = draw_config(rng, i)
        if args.only and i not in args.only:
            continue
        t0 = time.monotonic()
        outcome, detail = run_one(qgossip, work, config, args.timeout)
        counts[outcome] += 1
        print(f"[{i:4d}] {outcome:8s} {time.monotonic() - t0:5.1f} s  {describe(config)}: {detail}", flush=True)
    print(f"valid_configs: seed {args.seed}: {sum(counts.values())} configs in {time.monotonic() - start:.0f} s: "
          f"{counts['ran']} ran to the end with every copy equal, {counts['refused']} refused at load, "
          f"{counts['diverged']} diverged (exit 3), {counts['FINDING']} findings")
    if not args.keep and not args.work:
        shutil.rmtree(work, ignore_errors=True)
    elif counts["FINDING"] or args.keep:
        print(f"valid_configs: configs and runs kept in {work}")
    return 1 if counts["FINDING"] else 0


if __name__ == "__main__":
    sys.exit(main())
