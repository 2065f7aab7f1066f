"""A gossip node made of a group of processes (python/qgossip/group.py, docs/python.md "Groups"), under
torchrun as a user starts it: two torchrun jobs on this host stand for two hosts (--nnodes 2, static
rendezvous on loopback), two processes each, gloo; each job is one gossip node (its GROUP_RANK), found
without any QGOSSIP_ variable. Inside a job the two processes train with DDP over node.group; between
the jobs 3-bit CHOCO every 4 steps. Every member ends with its node's model, the summary holds both
members' hashes, and `qgossip verify` checks them and the copies. A world that does not match the run
is refused at start on every process, naming both numbers. Seeded and synchronous: the same on every
run. Debian's torchrun (torch 1.13 under Python 3.11) needs --redirects 1 --tee 1 (its defaults die
in to_map)."""
import json
import os
import socket
import subprocess
import sys
import textwrap

from test_node import write_config

WORKER = textwrap.dedent('''
    import json, os, sys, torch, torch.distributed as dist, qgossip
    config, out = sys.argv[1], sys.argv[2]
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(20, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    node = qgossip.Node(config)  # torchrun's node is the gossip node
    node.attach(model)
    ddp = torch.nn.parallel.DistributedDataParallel(model, process_group=node.group)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    w = torch.randn(20, 4, generator=torch.Generator().manual_seed(7))
    g = torch.Generator().manual_seed(100 + dist.get_rank())
    steps = [int(s) for s in os.environ.get("GROUP_STEPS", "").split(",") if s]  # per gossip rank; none: 40
    for step in range(steps[node.rank] if steps else 40):
        x = torch.randn(64, 20, generator=g)
        loss = torch.nn.functional.cross_entropy(ddp(x), (x @ w).argmax(1))
        opt.zero_grad(); loss.backward(); opt.step()
        node.step()
        node.log(loss.item())
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    result = {"rank": dist.get_rank(), "gossip_rank": node.rank, "round": node.round,
              "hash": "0x%016x" % qgossip._core.model_hash(flat.numpy()), "exit": node.close()}
    json.dump(result, open(f"{out}-{node.rank}-{dist.get_rank()}.json", "w"))
    dist.destroy_process_group()  # as torch asks of a program that initialized it
''')


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun_jobs(tmp_path, config, jobs=2, per_job=2):
    worker = tmp_path / "group_worker.py"
    worker.write_text(WORKER)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("QGOSSIP_")}
    procs = [subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--nnodes", str(jobs), "--nproc_per_node",
                               str(per_job), "--node_rank", str(j), "--master_addr", "127.0.0.1", "--master_port",
                               str(port), "--redirects", "1", "--tee", "1", "--log_dir", str(tmp_path / f"torchrun-{j}"),
                               str(worker), str(config), str(tmp_path / "result")],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for j in range(jobs)]
    return [(p.returncode, out) for p, out in ((p, p.communicate(timeout=300)[0]) for p in procs)]


def check_groups(build, tmp_path, nodes, per_node):
    """Every member ended with its node's model, the summaries hold the members' hashes, the nodes'
    models differ, and `qgossip verify` checks the copies and the members. Returns verify's output."""
    results = sorted((json.load(open(f)) for f in tmp_path.glob("result-*.json")),
                     key=lambda r: (r["gossip_rank"], r["rank"]))
    assert [r["gossip_rank"] for r in results] == [g for g in range(nodes) for _ in range(per_node)], results
    for gossip_rank in range(nodes):
        members = [r for r in results if r["gossip_rank"] == gossip_rank]
        summary = json.load(open(tmp_path / "runs" / "py" / f"node-{gossip_rank}.json"))
        assert summary["status"] == "ok" and summary["rounds"] == 10, summary
        assert summary.get("group_model_hashes", [summary["model_hash"]]) == [m["hash"] for m in members], summary
        assert [m["hash"] for m in members] == [summary["model_hash"]] * per_node, summary
        assert all(m["exit"] == 0 and m["round"] == 10 for m in members), members
    assert len({r["hash"] for r in results}) == nodes  # n nodes, n models (CHOCO's copies agree, not the models)
    verify = subprocess.run([os.path.join(build, "qgossip"), "verify", str(tmp_path / "runs" / "py")],
                            capture_output=True, text=True)
    said = verify.stdout + verify.stderr
    assert verify.returncode == 0 and "all equal" in said, said
    return said


def test_two_torchrun_jobs_are_two_gossip_nodes_of_two_processes_each(build, tmp_path):
    config = write_config(tmp_path, 2)
    for code, said in torchrun_jobs(tmp_path, config):
        assert code == 0, said
    said = check_groups(build, tmp_path, 2, 2)
    assert "4 members of the nodes' process groups compared with their node's model" in said, said


def test_topology_group_size_cuts_a_torchrun_world_into_smaller_groups(build, tmp_path):
    config = write_config(tmp_path, 4)  # 2 jobs of 2 processes, each process its own node (group_size 1)
    config.write_text(config.read_text().replace("n: 4}", "n: 4, group_size: 1}"))
    for code, said in torchrun_jobs(tmp_path, config):
        assert code == 0, said
    check_groups(build, tmp_path, 4, 1)


def test_qgossip_launch_starts_nodes_of_two_processes_each(build, tmp_path):
    """qgossip launch --exec with topology.group_size 2: each node is `qgossip group-exec`, its two
    processes a world of their own (torchrun's variables), the same worker as under torchrun."""
    config = write_config(tmp_path, 2)
    worker = tmp_path / "group_worker.py"
    worker.write_text(WORKER)
    launch = subprocess.run([os.path.join(build, "qgossip"), "launch", str(config), "--plain", "--no-plot",
                             "--set", "topology.group_size=2",
                             "--exec", f"{sys.executable} {worker} {config} {tmp_path / 'result'}"],
                            capture_output=True, text=True, timeout=300)
    said = launch.stdout + launch.stderr
    assert launch.returncode == 0, said
    assert "launching 2 nodes of 2 processes" in said, said
    assert "4 members of the nodes' process groups compared with their node's model" in check_groups(
        build, tmp_path, 2, 2)


def test_a_group_node_that_ends_by_itself_before_its_program_closes_it_still_records_its_members(build, tmp_path):
    """Asynchronous gossip: node 1 stops after 10 rounds; node 0 goes on, finds every neighbour
    finished, catches up and ends by itself (its summary written then, done), and its program closes
    it later: the members' hashes, taken as the node ended, reach the summary, and verify checks them.
    (Before, they were taken at close and dropped: the summary was already written.)"""
    config = write_config(tmp_path, 2, train=", max_staleness: 2")
    worker = tmp_path / "group_worker.py"
    worker.write_text(WORKER)
    launch = subprocess.run([os.path.join(build, "qgossip"), "launch", str(config), "--plain", "--no-plot",
                             "--set", "topology.group_size=2",
                             "--exec", f"{sys.executable} {worker} {config} {tmp_path / 'result'}"],
                            capture_output=True, text=True, timeout=300, env=dict(os.environ, GROUP_STEPS="200,40"))
    said = launch.stdout + launch.stderr
    assert launch.returncode == 0, said
    summary = json.load(open(tmp_path / "runs" / "py" / "node-0.json"))
    # Ended with its neighbours (a few catch-up rounds after node 1's 10), long before its loop's 50 rounds.
    assert summary["status"] == "ok" and summary["ended"] == "with its neighbours" and summary["rounds"] < 50, summary
    # Taken when the node ended (its model then), not at close: the loop trained on after it.
    assert summary["group_model_hashes"] == [summary["model_hash"]] * 2, summary
    assert "4 members of the nodes' process groups compared with their node's model" in said, said


def test_a_launched_group_whose_member_fails_ends_the_launch_naming_the_node(build, tmp_path):
    config = write_config(tmp_path, 2)
    worker = tmp_path / "dies.py"
    worker.write_text("import os, sys, time\nif os.environ['RANK'] == '1' and os.environ['QGOSSIP_RANK'] == '1':\n"
                      "    sys.exit(5)\ntime.sleep(120)\n")
    launch = subprocess.run([os.path.join(build, "qgossip"), "launch", str(config), "--plain", "--no-plot",
                             "--set", "topology.group_size=2", "--exec", f"{sys.executable} {worker}"],
                            capture_output=True, text=True, timeout=120)
    said = launch.stdout + launch.stderr
    assert launch.returncode != 0 and "node 1" in said and "exit 5" in said, said


def test_a_torchrun_world_that_does_not_match_the_run_is_refused_naming_both(build, tmp_path):
    config = write_config(tmp_path, 3)
    for code, said in torchrun_jobs(tmp_path, config):
        assert code != 0
        assert "WORLD_SIZE=4, but the run's topology.n=3 groups of LOCAL_WORLD_SIZE=2 processes make 6" in said, said
