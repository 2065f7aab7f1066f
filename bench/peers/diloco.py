"""DiLoCo's outer step (Douillard et al. 2023, "DiLoCo: Distributed Low-Communication Training of
Language Models", Algorithm 1; the same structure as torchft's DiLoCo):

    every H inner steps:  Δ = θ_global − mean_over_ranks(θ_local)      (the pseudo-gradient)
                          θ_global ← OuterOpt(θ_global, Δ)               (SGD, Nesterov momentum)
                          θ_local  ← θ_global                            (every rank restarts from it)

The inner optimizer (and its state) stays on each rank between outer steps, as in the paper. Δ travels
as one flat float32 buffer in one all-reduce (gloo's ring: each rank sends 2(n−1)/n · 4d bytes).
"""
import time

import torch
import torch.distributed as dist


def pseudo_gradient(buffer, global_params, local_params):
    """Writes θ_global − θ_local into the flat buffer, tensor after tensor."""
    with torch.no_grad():
        offset = 0
        for g, p in zip(global_params, local_params):
            k = p.numel()
            buffer[offset:offset + k].copy_((g - p).reshape(-1))
            offset += k


def set_gradients(global_params, buffer):
    """Each global tensor's .grad from its slice of the flat buffer (a copy: the buffer is reused)."""
    offset = 0
    for g in global_params:
        k = g.numel()
        g.grad = buffer[offset:offset + k].view_as(g).clone()
        offset += k


class DiLoCo:
    """Holds θ_global (a copy of the model's parameters) and the outer optimizer.

    model:  the rank's local model (its parameters are θ_local, trained by the inner optimizer)
    global_model: a module of the same architecture whose parameters are θ_global; evaluate this one
    """

    def __init__(self, model, global_model, outer_lr, outer_momentum, nesterov=True):
        self.model = model
        self.global_model = global_model
        with torch.no_grad():
            for g, p in zip(global_model.parameters(), model.parameters()):
                g.copy_(p)
        self.global_params = list(global_model.parameters())
        self.local_params = list(model.parameters())
        self.numel = sum(p.numel() for p in self.local_params)
        self.buffer = torch.zeros(self.numel, dtype=torch.float32)
        self.outer = torch.optim.SGD(self.global_params, lr=outer_lr, momentum=outer_momentum,
                                     nesterov=nesterov and outer_momentum > 0)
        self.comm_s = 0.0  # seconds spent in the all-reduce, cumulative
        self.syncs = 0

    def sync(self, world):
        """The outer step: all-reduce the pseudo-gradient, step θ_global, reset θ_local to it."""
        pseudo_gradient(self.buffer, self.global_params, self.local_params)
        with torch.no_grad():
            start = time.perf_counter()
            if world > 1:
                dist.all_reduce(self.buffer, op=dist.ReduceOp.SUM)
            self.comm_s += time.perf_counter() - start
            self.buffer.div_(world)
            set_gradients(self.global_params, self.buffer)
        self.outer.step()
        with torch.no_grad():
            for g, p in zip(self.global_params, self.local_params):
                p.copy_(g)
        self.syncs += 1
