"""A gossip node made of a group of processes (docs/python.md, "Groups"): the processes of one host,
or of one torchrun job, train data-parallel among themselves as the program already does (DDP, or its
own all-reduce), and one of them, the group's rank 0, the speaker, runs the node. At each round
boundary the speaker's round runs and the group's members receive its model (a broadcast inside the
group), so every member leaves step() with the same parameters. Before close() every member's model
hash goes to the speaker's summary, which `qgossip verify` checks against the node's model.

The two sides stand where qgossip._core.Node stands for a node of one process (qgossip.Node calls
them alike): _Speaker wraps the real node and tells the group after each boundary; _Member runs no
node and hears it. What the speaker tells, after each boundary (and at attach and close): a status
(_ROUND: its model follows; _FAILED: it raised, the members raise too; _DONE: the node ended by
itself, its final model follows, no boundary after it is told). The group's collectives must carry
CPU tensors: the node's own group is gloo (find_group), as is one passed to qgossip.Node(group=).
"""
import atexit
import os

import torch
import torch.distributed as dist

from qgossip import _core, placement

_ROUND, _FAILED, _DONE = 0, 1, 2


def find_group(way, nodes, group_size):
    """The group of this process, found as placement.how_started said ('launched', 'torchrun',
    'slurm'): initializes torch.distributed (gloo, env://) when the program has not, and makes the
    groups. Returns (gossip rank, processes a group, the node's gloo group, the group with the
    program's default backend for its DDP)."""
    if way == "launched":
        return _launched_group()
    env = placement.torchrun_environment() if way == "torchrun" else placement.slurm_environment(group_size)
    mine, size = placement.group_of(env, nodes, group_size, "torchrun" if way == "torchrun" else "the Slurm step")
    initialized = not dist.is_initialized()
    if initialized:
        dist.init_process_group("gloo", rank=env["RANK"], world_size=env["WORLD_SIZE"])
    node_group = program_group = None
    groups = []
    for g in range(nodes):  # every process makes every group, in the same order (new_group is collective)
        ranks = list(range(g * size, (g + 1) * size))
        made = dist.new_group(ranks, backend="gloo")
        made_program = made if dist.get_backend() == "gloo" else dist.new_group(ranks)
        groups += [made] if made_program is made else [made, made_program]
        if g == mine:
            node_group, program_group = made, made_program
    _destroy_at_exit(groups, initialized)
    return mine, size, node_group, program_group


def _destroy_at_exit(groups, world):
    """At the interpreter's exit, while it is still whole: destroys the groups made here (and the
    world, when it was initialized here). A gloo group left to the process's teardown can abort it,
    its worker threads destroyed joinable ("terminate called without an active exception")."""
    def destroy():
        if not dist.is_initialized():
            return  # the program destroyed every group itself
        for g in groups:
            if g in dist.distributed_c10d._pg_map:  # not destroyed by the program already
                dist.destroy_process_group(g)
        if world:
            dist.destroy_process_group()

    atexit.register(destroy)


def _launched_group():
    """A node of qgossip launch --exec with topology.group_size > 1: qgossip group-exec gave its
    processes torchrun's variables for a world of their own, which is the group."""
    size, env = int(os.environ["QGOSSIP_GROUP_SIZE"]), placement.torchrun_environment()
    if env["WORLD_SIZE"] != size:
        raise ValueError(f"QGOSSIP_GROUP_SIZE={size} but WORLD_SIZE={env['WORLD_SIZE']}: a launched group's world "
                         "is the group (qgossip group-exec sets both)")
    initialized = not dist.is_initialized()
    if initialized:
        dist.init_process_group("gloo")
    if dist.get_world_size() != size:
        raise ValueError(f"the program's torch.distributed world has {dist.get_world_size()} processes, but the "
                         f"launched group {size}: initialize it from the environment (env://)")
    world = dist.group.WORLD
    rank = int(os.environ["QGOSSIP_RANK"])
    node_group = world if dist.get_backend() == "gloo" else dist.new_group(backend="gloo")
    _destroy_at_exit([] if node_group is world else [node_group], initialized)
    return rank, size, node_group, world


class _Group:
    def __init__(self, group):
        self.group = group
        self.size = dist.get_world_size(group)
        self.index = dist.get_rank(group)
        ranks = [torch.zeros(1, dtype=torch.int64) for _ in range(self.size)]
        dist.all_gather(ranks, torch.tensor([dist.get_rank()], dtype=torch.int64), group=group)
        self.speaker_rank = int(ranks[0])  # broadcast's src is a global rank

    def broadcast(self, tensor):
        dist.broadcast(tensor, src=self.speaker_rank, group=self.group)
        return tensor

    def tell(self, *values):
        return self.broadcast(torch.tensor(values, dtype=torch.int64)).tolist()

    def hashes(self, flat):
        """Every member's model hash, in group order (the speaker's first)."""
        mine = _core.model_hash(flat.numpy())
        signed = mine - (1 << 64) if mine >= (1 << 63) else mine
        got = [torch.zeros(1, dtype=torch.int64) for _ in range(self.size)]
        dist.all_gather(got, torch.tensor([signed], dtype=torch.int64), group=self.group)
        return [int(h) % (1 << 64) for h in got]


def _tensor(params):
    """The flat parameters qgossip.torch attaches (a NumPy view of them) as a tensor on their memory."""
    return params if isinstance(params, torch.Tensor) else torch.from_numpy(params)


def speaker_or_member(make_core, group, rank):
    """The group's rank 0 makes the node (make_core()) and tells the others whether it started and its
    local_steps and n; returns the side this process stands on."""
    g = _Group(group)
    if g.index == 0:
        try:
            core = make_core()
        except BaseException:
            g.tell(_FAILED, 0, 0)
            raise
        g.tell(_ROUND, core.local_steps, core.nodes)
        return _Speaker(core, g)
    status, local_steps, nodes = g.tell(0, 0, 0)
    if status != _ROUND:
        raise ValueError(f"the group's speaker (its rank 0, gossip rank {rank}) could not start the node: see its error")
    return _Member(g, rank, local_steps, nodes)


class _Speaker:
    """The real node, telling the group after each boundary (attach, step, mix, close)."""

    def __init__(self, core, group):
        self._core, self._group, self._flat = core, group, None
        self._done_told = self._closed_told = False

    def __getattr__(self, name):
        return getattr(self._core, name)

    def attach(self, params, state=b""):
        self._core.attach(params, state)
        self._flat = _tensor(params)
        self._group.broadcast(self._flat)  # every member starts from the group's model

    def _after(self, call):
        try:
            call()
        except BaseException:
            self._group.tell(_FAILED)
            raise
        self._done_told = self._core.done
        self._group.tell(_DONE if self._core.done else _ROUND)
        self._group.broadcast(self._flat)
        if self._done_told:  # the node's end: its members' models now, not after the loop trained on
            self._core.set_group_hashes(self._group.hashes(self._flat))

    def step(self):
        if self._done_told:
            return
        if (self._core.steps + 1) % self._core.local_steps:
            self._core.step()
            return
        self._after(self._core.step)

    def mix(self, rounds):
        self._after(lambda: self._core.mix(rounds))

    def close(self):
        if self._closed_told:
            return self._core.close()
        if not self._done_told:  # (ended by itself: the hashes were taken then)
            hashes = self._group.hashes(self._flat)  # every member takes part, as in every collective here
            if not self._core.closed:
                self._core.set_group_hashes(hashes)
        exit_code = self._core.close()
        self._closed_told = True
        self._group.tell(exit_code)
        return exit_code


class _Member:
    """A process of the group other than the speaker: it runs no node, and hears the speaker's."""

    def __init__(self, group, rank, local_steps, nodes):
        self._group, self.rank, self.local_steps, self.nodes = group, rank, local_steps, nodes
        self._flat, self.steps, self.round, self.done, self.closed = None, 0, 0, False, False
        self.output_dir = None  # the node's log, CSV and summary are the speaker's

    attached = property(lambda self: self._flat is not None)

    def attach(self, params, state=b""):
        if state:
            raise ValueError("load_state_dict: a group's state is its speaker's (its rank 0): load it there")
        self._flat = _tensor(params)
        self._group.broadcast(self._flat)

    def _hear(self):
        (status,) = self._group.tell(0)
        if status == _FAILED:
            error = _core.NodeError(f"the group's speaker (gossip rank {self.rank}) stopped: see its error")
            error.exit = 1
            self.closed = True
            raise error
        self._group.broadcast(self._flat)
        self.round += 1
        self.done = status == _DONE
        if self.done:
            self._group.hashes(self._flat)  # the speaker's summary takes them now

    def step(self):
        if self.done:
            return
        self.steps += 1
        if self.steps % self.local_steps == 0:
            self._hear()

    def mix(self, rounds):
        self._hear()
        self.round += int(rounds) - 1

    def log(self, loss):
        pass  # the group's CSV is the speaker's

    def log_metric(self, name, value):
        pass

    def state(self):
        raise ValueError("state_dict: a group's node state is its speaker's (its rank 0): save it there")

    def close(self):
        if self.closed:
            return 0
        if not self.done:
            self._group.hashes(self._flat)
        (exit_code,) = self._group.tell(0)
        self.closed = True
        return exit_code

    def end(self, interrupted, why):
        self.closed = True  # the speaker, if it still runs, waits in the group's next collective
        return 130 if interrupted else 1
