"""The learning rate of a peer's optimizer (DDP's SGD, DiLoCo's inner SGD) as a function of the step,
with qgossip's formula (node/optim/lr_schedule.cpp), so that a peer and a node given the same schedule
step at the same rates:

    constant:  lr
    cosine:    lr · (f + (1 − f)·(1 + cos(π·min(epoch, E)/E))/2)     E = total_epochs, f = final_factor
    then, for epoch < warmup_epochs: × (warmup_start + (1 − warmup_start)·epoch/warmup_epochs)

qgossip's defaults: final_factor 0, warmup_epochs 0 (none), warmup_start 0.1; a node's cosine decays
over the run's train.epochs, a peer's over its --epochs. Optimizer step s (1-based over the run) takes
the rate at epoch (s − 1)/steps_per_epoch, as a node's local_training::gradient does.
"""
import math

KINDS = ("constant", "cosine")
DEFAULTS = {"final_factor": 0.0, "warmup_epochs": 0.0, "warmup_start": 0.1}  # lr_schedule_spec's


def describe(kind, lr, total_epochs):
    """The schedule a peer runs, as its summary records it (qgossip's field names)."""
    return dict({"kind": kind, "lr": lr, "total_epochs": total_epochs}, **DEFAULTS)


def lr_at(epoch, lr, kind="constant", total_epochs=1.0, final_factor=DEFAULTS["final_factor"],
          warmup_epochs=DEFAULTS["warmup_epochs"], warmup_start=DEFAULTS["warmup_start"]):
    """The rate at a (fractional) epoch; negative epochs count as 0, as in qgossip."""
    if kind not in KINDS:
        raise ValueError(f"schedule {kind!r}: expected one of {', '.join(KINDS)}")
    epoch = max(epoch, 0.0)
    rate = lr
    if kind == "cosine":
        progress = min(epoch, total_epochs) / total_epochs
        rate *= final_factor + (1.0 - final_factor) * 0.5 * (1.0 + math.cos(math.pi * progress))
    if epoch < warmup_epochs:
        rate *= warmup_start + (1.0 - warmup_start) * (epoch / warmup_epochs)
    return rate


def lr_of_step(step, steps_per_epoch, lr, kind="constant", total_epochs=1.0, **options):
    """The rate of optimizer step `step` (1-based): the schedule at epoch (step − 1)/steps_per_epoch."""
    return lr_at((step - 1) / steps_per_epoch, lr, kind, total_epochs, **options)
