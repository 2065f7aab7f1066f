"""Where a process stands (python/qgossip/placement.py), from the variables a launcher gives: each
case sets the environment a launcher would (torchrun's, a Slurm step's, qgossip launch's) and checks
the gossip rank and group found, or the refusal naming both numbers. No process group is made."""
import pytest


@pytest.fixture
def placement(build, monkeypatch):
    for name in ("QGOSSIP_RANK", "QGOSSIP_GROUP_SIZE", "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE",
                 "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    for name in [n for n in __import__("os").environ if n.startswith("SLURM_")]:
        monkeypatch.delenv(name)
    from qgossip import placement
    return placement


def slurm_step(monkeypatch, procid, tasks, per_node, nodeid, localid, hosts="gpu[1-4]"):
    for name, value in {"SLURM_PROCID": procid, "SLURM_STEP_NUM_TASKS": tasks, "SLURM_STEP_TASKS_PER_NODE": per_node,
                        "SLURM_NODEID": nodeid, "SLURM_LOCALID": localid, "SLURM_STEP_NODELIST": hosts}.items():
        monkeypatch.setenv(name, str(value))


def test_how_a_process_was_started(placement, monkeypatch):
    never = lambda: pytest.fail("the run's shape is read only under Slurm")
    assert placement.how_started(None, None, never) == "alone"
    assert placement.how_started(3, None, never) == "alone"
    assert placement.how_started(None, object(), never) == "given"
    monkeypatch.setenv("QGOSSIP_RANK", "1")
    assert placement.how_started(None, None, never) == "alone"
    monkeypatch.setenv("QGOSSIP_GROUP_SIZE", "2")
    assert placement.how_started(None, None, never) == "launched"
    monkeypatch.delenv("QGOSSIP_GROUP_SIZE")
    monkeypatch.delenv("QGOSSIP_RANK")
    for name in placement.TORCHRUN:
        monkeypatch.setenv(name, "0")
    assert placement.how_started(None, None, never) == "torchrun"
    for name in placement.TORCHRUN:
        monkeypatch.delenv(name)
    slurm_step(monkeypatch, 0, 8, "2(x4)", 0, 0)
    assert placement.how_started(None, None, lambda: (8, 0)) == "alone"  # one task a node, as before groups
    assert placement.how_started(None, None, lambda: (8, 1)) == "alone"
    assert placement.how_started(None, None, lambda: (4, 0)) == "slurm"  # more tasks than nodes: a group a host
    assert placement.how_started(None, None, lambda: (4, 2)) == "slurm"


def test_a_slurm_steps_task_as_torchrun_would_name_it(placement, monkeypatch):
    slurm_step(monkeypatch, 5, 8, "2(x4)", 2, 1)
    assert placement.slurm_environment(0) == {"RANK": 5, "LOCAL_RANK": 1, "WORLD_SIZE": 8, "LOCAL_WORLD_SIZE": 2,
                                              "GROUP_RANK": 2}
    assert (placement.os.environ["MASTER_ADDR"], placement.os.environ["MASTER_PORT"]) == ("gpu1", "29500")
    assert placement.group_of(placement.slurm_environment(0), 4, 0) == (2, 2)  # a group a host
    assert placement.group_of(placement.slurm_environment(4), 2, 4) == (1, 4)  # groups of 4 across two hosts
    slurm_step(monkeypatch, 2, 5, "3,2", 0, 2, hosts="a,b")
    with pytest.raises(ValueError, match=r"SLURM_STEP_TASKS_PER_NODE=3,2: one group per host needs the same number"):
        placement.slurm_environment(0)


def test_groups_of_a_world_and_the_refusals_naming_both_numbers(placement):
    env = {"RANK": 5, "LOCAL_RANK": 1, "WORLD_SIZE": 8, "LOCAL_WORLD_SIZE": 4, "GROUP_RANK": 1}
    assert placement.group_of(env, 2, 0) == (1, 4)
    assert placement.group_of(env, 4, 2) == (2, 2)
    assert placement.group_of(env, 8, 1) == (5, 1)
    with pytest.raises(ValueError, match=r"WORLD_SIZE=8, but the run's topology.n=3 groups of topology.group_size=2 "
                                         r"processes make 6"):
        placement.group_of(env, 3, 2)
    with pytest.raises(ValueError, match=r"RANK=5 is not one of GROUP_RANK=0's ranks 0..3"):
        placement.group_of(dict(env, GROUP_RANK=0), 2, 0)
