"""qgossip for your own training loop: gossip as a step after your optimizer's (docs/python.md).

    node = qgossip.Node("run.yaml")        # rank from QGOSSIP_RANK or SLURM_PROCID, or rank=
    node.attach(model)                      # a torch.nn.Module (float32, bf16, fp16), or a float32 buffer
    for batch in data:
        loss = ...; loss.backward(); opt.step(); opt.zero_grad()
        node.step()                         # every train.local_steps calls: one gossip round
    node.close()

The native part, qgossip._core, knows nothing of torch: a model is one float32 buffer (a bf16 or fp16
module's rounds work on a float32 host copy of its parameters). The torch side
is qgossip.torch. Errors of the node (a neighbour that failed, a config it refuses) are
qgossip.NodeError (its `exit` is the node's exit code) or ValueError (bad input); Ctrl-C during a round
stops the node cleanly and raises KeyboardInterrupt.
"""
import functools
import os

from qgossip._core import NodeError

__all__ = ["Node", "NodeError"]

_STATE_FORMAT = "qgossip-node-state-1"


def _rank_from_environment(names=("QGOSSIP_RANK", "SLURM_PROCID")):
    for name in names:
        value = os.environ.get(name)
        if value is not None:
            try:
                return int(value)
            except ValueError:
                raise ValueError(f"{name}={value!r}: expected the node's rank, an integer") from None
    raise ValueError("no rank: pass rank=, or set " + " or ".join(names) + " (qgossip launch --exec sets QGOSSIP_RANK)")


class Node:
    """One node of a run, driven by this program's loop (the run YAML's model is this program's)."""

    def __init__(self, config=None, rank=None, overrides=(), group=None):
        """group: a torch.distributed process group (gloo) of the processes that make this node, which
        train data-parallel among themselves; its rank 0 runs the node (docs/python.md, "Groups").
        Without rank= or group=, the node's group is found (qgossip.placement.how_started): a group of
        `qgossip launch --exec` (topology.group_size > 1); under torchrun without QGOSSIP_RANK,
        torchrun's node, or topology.group_size consecutive ranks; under a Slurm step of more tasks
        than nodes, the tasks of a host, or topology.group_size consecutive tasks."""
        from qgossip import _core, placement

        config = config if config is not None else os.environ.get("QGOSSIP_CONFIG")
        if config is None:
            raise ValueError("no run YAML: pass config=, or set QGOSSIP_CONFIG")
        # qgossip launch --exec: its --set options, and its progress protocol on stdout.
        launched = [s for s in os.environ.get("QGOSSIP_SETS", "").split("\n") if s]
        progress = os.environ.get("QGOSSIP_PROGRESS") == "1"
        sets = launched + [str(o) for o in overrides]
        self.group = None  # the process group of this node's processes (for their DDP); None: one process
        run_shape = functools.cache(lambda: _core.run_shape(str(config), sets))  # (n, group_size), read once
        way = placement.how_started(rank, group, run_shape)
        if way == "alone":
            rank = _rank_from_environment() if rank is None else int(rank)
            self._core = _core.Node(str(config), rank, sets, progress)
        else:
            from qgossip import group as groups  # torch: only for a node of several processes

            if way == "given":
                rank = _rank_from_environment(("QGOSSIP_RANK", "GROUP_RANK")) if rank is None else int(rank)
                node_group = self.group = group
            else:
                nodes, group_size = run_shape()
                rank, size, node_group, self.group = groups.find_group(way, nodes, group_size)
                if way == "slurm" and group_size == 0:  # a group a host: what {from: slurm} places
                    sets.append(f"topology.group_size={size}")
            self._core = groups.speaker_or_member(lambda: _core.Node(str(config), rank, sets, progress), node_group,
                                                  rank)
        self._attached = None  # what attach() keeps alive: the flat parameters and their device copy
        self._state = b""  # load_state_dict's, for attach

    def attach(self, model):
        """Makes the node's rounds move `model`'s parameters: a torch.nn.Module (its parameters then
        live in one flat tensor of their dtype, float32, bfloat16 or float16, each p.data a view of it),
        or a writable float32 buffer."""
        if self._core.attached:
            raise ValueError("attach: this node already has a model (attach once per node)")
        if hasattr(model, "parameters") and callable(model.parameters):
            from qgossip import torch as qtorch

            self._attached = qtorch.attach_module(self._core, model, self._state)
        else:
            self._core.attach(model, self._state)
            self._attached = model
        self._state = b""

    def _require_open(self, what):
        """A ValueError for `what` (a method's name) on a node not attached yet, or closed already."""
        if self._core.closed:
            raise ValueError(f"{what}: the node is closed")
        if not self._core.attached:
            raise ValueError(f"{what}: attach a model first (node.attach(model))")

    def _on_host(self, call):
        """call(), for a call that may read or write the parameters: a model on a device has its
        parameters copied to the host before and back after (once each); returns what call returns."""
        sync = getattr(self._attached, "round_sync", None)
        if sync is not None:
            sync.to_host()
        result = call()
        if sync is not None:
            sync.to_device()
        return result

    def step(self):
        """After your optimizer's step: every train.local_steps calls runs one round."""
        self._require_open("step")
        if (self._core.steps + 1) % self._core.local_steps == 0:
            self._on_host(self._core.step)  # a round will read the parameters
        else:
            self._core.step()

    def mix(self, rounds):
        """`rounds` rounds that only mix, now: your parameters take no step (nor the outer step of
        train.outer), each node's model moves to its neighbours', and the ranks' models come closer
        together (CHOCO-SGD keeps their mean). Call it at a round boundary (a multiple of
        train.local_steps steps), on every node with the same rounds: before an evaluation, or before
        close() for models that agree (docs/python.md)."""
        self._require_open("mix")
        self._on_host(lambda: self._core.mix(int(rounds)))

    def settle(self):
        """With train.overlap: lands the round in flight now, its mix added to your parameters (call it
        before you evaluate them, or save them); without it, or between rounds, nothing
        (docs/algorithms.md, "Overlapped rounds")."""
        self._require_open("settle")
        self._on_host(self._core.settle)

    def log(self, loss=None, **metrics):
        """Your training loss, averaged into the node's CSV rows (train_loss), and any numbers of your
        own (node.log(loss, val_loss=2.3)): each name a column of the CSV after the node's own (the mean
        since the previous row, empty when none was logged) and a key of the node's summary (the
        latest). The columns are fixed at the CSV's first row: log each name from the first round on."""
        self._require_open("log")
        if loss is not None:
            self._core.log(float(loss))
        for name, value in metrics.items():
            self._core.log_metric(name, float(value))

    def state_dict(self):
        """The node's state after its latest round (its round, its algorithm's model and copies, its
        codec's and optimizer's state, the steps since), to save beside your own: torch.save({"model":
        model.state_dict(), "opt": opt.state_dict(), "node": node.state_dict()}, path). Every node
        saves at the same step; the CSV rows so far are forced to the disk."""
        self._require_open("state_dict")
        state = self._on_host(self._core.state)  # train.overlap: the round in flight lands first
        return {"format": _STATE_FORMAT, "rank": self.rank, "round": self.round, "steps": self.steps,
                "state": state}

    def load_state_dict(self, state):
        """Continue from a state_dict() of an earlier process of this run and rank: call it before
        attach(), with your model's and optimizer's own state loaded as you saved them. Every node of the
        run continues from the state of the same step. attach() then checks it (another run or rank, a
        damaged state: ValueError), and the node goes on from its round, its CSV cut back to the rows
        written when it was saved."""
        if self._core.attached:
            raise ValueError("load_state_dict: call it before attach() (the node continues from it as it starts)")
        if not isinstance(state, dict) or state.get("format") != _STATE_FORMAT or not isinstance(
                state.get("state"), (bytes, bytearray)):
            raise ValueError("load_state_dict: expected what node.state_dict() returned (a dict with format "
                             f"{_STATE_FORMAT!r})")
        self._state = bytes(state["state"])

    def close(self):
        """Leaves the run once the neighbours have finished too; writes the node's summary. Returns the
        node's exit code (0: ok). With train.overlap the round in flight lands first, into the
        parameters (a model on a device gets them back)."""
        return self._on_host(self._core.close)

    def __enter__(self):
        return self

    def __exit__(self, kind, error, traceback):
        """Without an exception, close(). With one, the node ends at once, its neighbours told as of a
        failed node: `failed`, its summary's error naming the exception (KeyboardInterrupt:
        `interrupted`). The exception goes on."""
        if self._core.attached and not self._core.closed:
            if kind is None:
                self.close()
            elif issubclass(kind, KeyboardInterrupt):
                self._core.end(True, f"interrupted (KeyboardInterrupt in the program's loop) after round {self.round}")
            else:
                self._core.end(False, f"the program's loop raised {kind.__name__}: {error} (after round {self.round})")
        return False

    rank = property(lambda self: self._core.rank)
    nodes = property(lambda self: self._core.nodes, doc="the run's number of nodes (the topology's n)")
    round = property(lambda self: self._core.round, doc="the last round run (0: none yet)")
    steps = property(lambda self: self._core.steps, doc="calls of step() so far")
    done = property(lambda self: self._core.done,
                    doc="True once the node has ended by itself, its rounds over before your loop (asynchronous "
                        "gossip: every neighbour finished and it caught up with them); its summary is written, "
                        "later step() calls do nothing, and close() returns how it ended: stop your loop")
    local_steps = property(lambda self: self._core.local_steps)
    output_dir = property(lambda self: self._core.output_dir, doc="where the node's log, CSV and summary go")
