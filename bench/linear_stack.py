"""The program of bench/memory_bench.py and bench/rejoin_bench.py: a stack of L bias-free Linear(W, W)
layers (L·W² parameters), run by the bench itself as a worker process (--worker --layers L --width W
--out PATH, and each bench's own worker options)."""
import argparse
import sys


def shape(params):
    """L layers of W x W with L·W² close to params: W = 8192 (67 M a layer) above 200 M, else 4 layers."""
    layers = 4 if params < 200e6 else max(1, round(params / 8192 ** 2))
    width = int(round((params / layers) ** 0.5))
    return layers, width


def build(torch, layers, width, dtype=None):
    """The stack, made in dtype (torch's default when None: no float32 copy on the way)."""
    return torch.nn.Sequential(*[torch.nn.Linear(width, width, bias=False, dtype=dtype) for _ in range(layers)])


def add_worker_arguments(p):
    """The hidden options that make the bench its own worker."""
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--layers", type=int, help=argparse.SUPPRESS)
    p.add_argument("--width", type=int, help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)


def worker_command(script, layers, width, out):
    """The command line of script's worker for a stack of layers x width, writing to out."""
    return [sys.executable, script, "--worker", "--layers", str(layers), "--width", str(width), "--out", out]
