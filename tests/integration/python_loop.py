"""A Python program's training loop for the shell tests that start Python nodes (netns_smoke.sh
under scripts/cluster.sh --exec, slurm_test.sh under srun): a seeded small model, every node from
the same initial values, each its own data, the module's Node() taking its rank and run YAML from
the environment (the launcher's QGOSSIP_RANK, or Slurm's SLURM_PROCID with QGOSSIP_CONFIG); a node
of several processes (topology.group_size) trains with DDP inside its group.
Usage: /usr/bin/python3 python_loop.py STEPS DIM      (exits with the node's exit code)"""
import sys

import torch

import qgossip

steps, dim = int(sys.argv[1]), int(sys.argv[2])
torch.manual_seed(0)  # the same initial model on every node
model = torch.nn.Sequential(torch.nn.Linear(dim, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
node = qgossip.Node()
node.attach(model)
# A node of several processes (topology.group_size): data-parallel inside its group.
net = model if node.group is None else torch.nn.parallel.DistributedDataParallel(model, process_group=node.group)
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
g = torch.Generator().manual_seed(node.rank if node.group is None else 1000 + torch.distributed.get_rank())
for step in range(steps):
    x = torch.randn(16, dim, generator=g)
    loss = torch.nn.functional.cross_entropy(net(x), x[:, :4].argmax(1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    node.step()
    node.log(loss.item())
raise SystemExit(node.close())
