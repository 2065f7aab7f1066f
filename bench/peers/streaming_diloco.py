"""Streaming DiLoCo (Douillard et al. 2025, "Streaming DiLoCo with overlapping communication",
arXiv 2501.18512; torchft's `fragment_sync_delay` and `fragment_update_alpha`):

    the parameters split into P fragments (contiguous runs of the model's tensors, of about equal size)
    fragment p syncs every H inner steps, at steps t ≡ (p + 1)·H/P (mod H): staggered, so one fragment's
        bytes are on the wire at a time and the peak bandwidth falls about P-fold
    at its sync step:      Δ_p = θ_global,p − θ_local,p, its all-reduce started (asynchronous)
    τ inner steps later:   the all-reduce waited for, θ_global,p ← OuterOpt_p(θ_global,p, mean Δ_p)
                           θ_local,p ← α·θ_local,p + (1 − α)·θ_global,p      (the merge)

so the bytes of a sync travel while the next τ inner steps compute. Each fragment has an outer
optimizer of its own (SGD, Nesterov momentum), as in the paper. With P = 1, τ = 0 and α = 0 this is
DiLoCo (bench/peers/diloco.py) operation for operation: the test checks that the two end bit for bit
equal (tests/scripts/test_lm_peers.py).
"""
import time

import torch
import torch.distributed as dist

from diloco import pseudo_gradient, set_gradients


def fragments_of(params, count):
    """The model's tensors in order, cut into `count` runs of about equal numel (none empty)."""
    total = sum(p.numel() for p in params)
    if not 1 <= count <= len(params):
        raise ValueError(f"--fragments {count}: expected 1 to {len(params)} (the model's tensors)")
    runs, current, filled = [], [], 0
    for i, p in enumerate(params):
        current.append(p)
        filled += p.numel()
        left_tensors, left_runs = len(params) - i - 1, count - len(runs) - 1
        if left_runs > 0 and (filled >= total * (len(runs) + 1) / count or left_tensors == left_runs):
            runs.append(current)
            current = []
    runs.append(current)
    return runs


class Fragment:
    def __init__(self, local, outer_lr, outer_momentum):
        self.local = local
        self.globals = [p.detach().clone().requires_grad_(True) for p in local]
        self.numel = sum(p.numel() for p in local)
        self.buffer = torch.zeros(self.numel, dtype=torch.float32)
        self.outer = torch.optim.SGD(self.globals, lr=outer_lr, momentum=outer_momentum,
                                     nesterov=outer_momentum > 0)
        self.work = None       # the all-reduce in flight
        self.apply_at = None   # the step after which its result is merged


class StreamingDiLoCo:
    def __init__(self, model, local_steps, fragments, delay, alpha, outer_lr, outer_momentum):
        if not 0 <= delay < local_steps:
            raise ValueError(f"--delay {delay}: expected 0 to H − 1 = {local_steps - 1} (a fragment's next sync "
                             "starts H steps after its last)")
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"--alpha {alpha}: expected a merge factor in [0, 1]")
        self.H, self.delay, self.alpha = local_steps, delay, alpha
        self.fragments = [Fragment(run, outer_lr, outer_momentum)
                          for run in fragments_of(list(model.parameters()), fragments)]
        count = len(self.fragments)
        self.offsets = [((p + 1) * local_steps // count) % local_steps for p in range(count)]
        self.comm_s = 0.0   # seconds the loop waited for all-reduces (starting one, finishing one)
        self.syncs = 0      # fragment syncs completed
        self.floats_sent = 0  # floats all-reduced, over all syncs

    def after_step(self, t, world):
        """Inner step t (1-based) is done: merge the syncs due now, then start those due now."""
        for f in self.fragments:
            if f.work is not None and t >= f.apply_at:
                self._finish(f, world)
        for f, offset in zip(self.fragments, self.offsets):
            if t % self.H == offset:
                self._start(f, world, t)
                if self.delay == 0:
                    self._finish(f, world)

    def finish(self, world):
        """The run's end: every sync still in flight merged."""
        for f in self.fragments:
            if f.work is not None:
                self._finish(f, world)

    def _start(self, f, world, t):
        pseudo_gradient(f.buffer, f.globals, f.local)
        start = time.perf_counter()
        f.work = dist.all_reduce(f.buffer, op=dist.ReduceOp.SUM, async_op=True) if world > 1 else True
        self.comm_s += time.perf_counter() - start
        f.apply_at = t + self.delay
        self.floats_sent += f.numel

    def _finish(self, f, world):
        start = time.perf_counter()
        if world > 1:
            f.work.wait()
        self.comm_s += time.perf_counter() - start
        f.work = None
        with torch.no_grad():
            f.buffer.div_(world)
            set_gradients(f.globals, f.buffer)
        f.outer.step()
        with torch.no_grad():
            for g, p in zip(f.globals, f.local):
                if self.alpha == 0.0:
                    p.copy_(g)
                else:
                    p.mul_(self.alpha).add_(g, alpha=1.0 - self.alpha)
        self.syncs += 1
