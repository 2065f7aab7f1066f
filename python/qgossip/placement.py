"""Where this process stands in a run: alone (one process, one node) or one of a group's processes,
and which group (docs/python.md, "Groups"). Read from the environment a launcher gives: qgossip launch
--exec (QGOSSIP_RANK, and QGOSSIP_GROUP_SIZE for a group), torchrun (RANK, LOCAL_RANK, WORLD_SIZE,
LOCAL_WORLD_SIZE, GROUP_RANK) or a Slurm step (SLURM_PROCID, its tasks per node and node list). Torch
is not imported here: a node of one process does not need it.
"""
import os

from qgossip import _core

TORCHRUN = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK")
MASTER_PORT = 29500  # torchrun's default: a Slurm step's groups meet there unless MASTER_PORT is set


def how_started(rank, group, shape):
    """'given' (group= passed), 'launched' (a group of qgossip launch --exec), 'torchrun', 'slurm'
    (a step whose nodes are groups of tasks) or 'alone' (one process a node: rank=, QGOSSIP_RANK, a
    Slurm step of one task a node). shape() is the run's (topology.n, topology.group_size)."""
    if group is not None:
        return "given"
    if rank is not None:
        return "alone"
    if "QGOSSIP_GROUP_SIZE" in os.environ:
        return "launched"
    if "QGOSSIP_RANK" in os.environ:
        return "alone"
    if all(name in os.environ for name in TORCHRUN):
        return "torchrun"
    if "SLURM_PROCID" in os.environ:
        nodes, group_size = shape()
        if group_size > 1 or (group_size == 0 and _slurm_int("SLURM_STEP_NUM_TASKS", "SLURM_NTASKS") != nodes):
            return "slurm"
    return "alone"


def torchrun_environment():
    """torchrun's variables as integers (all of them must be set)."""
    missing = [name for name in TORCHRUN if name not in os.environ]
    if missing:
        raise ValueError("torchrun's " + ", ".join(missing) + " not set: the group's processes need all of " +
                         ", ".join(TORCHRUN))
    try:
        return {name: int(os.environ[name]) for name in TORCHRUN}
    except ValueError:
        raise ValueError("torchrun's " + ", ".join(TORCHRUN) + " must be integers: " +
                         ", ".join(f"{n}={os.environ[n]!r}" for n in TORCHRUN)) from None


def _slurm_value(*names):
    for name in names:
        if name in os.environ:
            return name, os.environ[name]
    raise ValueError(f"a Slurm step's groups need {names[0]}, which is not set: run the program under srun")


def _slurm_int(*names):
    name, value = _slurm_value(*names)
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{name}={value!r}: expected a whole number") from None


def slurm_environment(group_size):
    """torchrun's variables for this task of a Slurm step (block distribution: a host's tasks are
    consecutive), and MASTER_ADDR (the step's first host) and MASTER_PORT (29500) set in os.environ
    when the program did not set them, for torch.distributed's env:// rendezvous. group_size 0 (one
    group per host) needs every host to run the same number of tasks."""
    host_names, hosts = _slurm_value("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST")
    count_names, counts = _slurm_value("SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE")
    per_host = _core.expand_tasks_per_node(counts)
    host = _slurm_int("SLURM_NODEID")
    if group_size == 0 and len(set(per_host)) > 1:
        raise ValueError(f"{count_names}={counts}: one group per host needs the same number of tasks on every "
                         "host; set topology.group_size")
    if not 0 <= host < len(per_host):
        raise ValueError(f"SLURM_NODEID={host}, but {count_names}={counts} counts {len(per_host)} hosts")
    os.environ.setdefault("MASTER_ADDR", _core.expand_hostlist(hosts)[0])
    os.environ.setdefault("MASTER_PORT", str(MASTER_PORT))
    return {"RANK": _slurm_int("SLURM_PROCID"), "LOCAL_RANK": _slurm_int("SLURM_LOCALID"),
            "WORLD_SIZE": _slurm_int("SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"), "LOCAL_WORLD_SIZE": per_host[host],
            "GROUP_RANK": host}


def group_of(env, nodes, group_size, launcher="torchrun"):
    """(gossip rank, processes a group) of the process env describes: groups of group_size consecutive
    ranks, or with group_size 0 the launcher's node (LOCAL_WORLD_SIZE processes, gossip rank
    GROUP_RANK). The world must be `nodes` groups: refused otherwise, naming both."""
    size = group_size or env["LOCAL_WORLD_SIZE"]
    what = f"topology.group_size={size}" if group_size else f"LOCAL_WORLD_SIZE={size}"
    world = env["WORLD_SIZE"]
    if world != nodes * size:
        raise ValueError(f"{launcher}'s world does not match the run: WORLD_SIZE={world}, but the run's topology.n="
                         f"{nodes} groups of {what} processes make {nodes * size}")
    mine = env["RANK"] // size
    if not group_size and mine != env["GROUP_RANK"]:
        raise ValueError(f"{launcher}'s RANK={env['RANK']} is not one of GROUP_RANK={env['GROUP_RANK']}'s ranks "
                         f"{env['GROUP_RANK'] * size}..{(env['GROUP_RANK'] + 1) * size - 1}: the group's processes "
                         "must have consecutive ranks")
    return mine, size
