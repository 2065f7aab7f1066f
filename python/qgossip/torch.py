"""The torch side of qgossip (docs/python.md): a module's parameters in one flat float32 tensor that
the node's rounds move, and an optimizer wrapper for loops that prefer that shape."""
import torch


class _RoundSync:
    """A model on a device other than the CPU: the node works on a host copy, copied once each way per
    round (before it reads the parameters, after it has written them back)."""

    def __init__(self, host, device_flat):
        self.host, self.device_flat = host, device_flat

    def to_host(self):
        self.host.copy_(self.device_flat)

    def to_device(self):
        self.device_flat.copy_(self.host)


class _Attached:
    def __init__(self, host, round_sync=None):
        self.host, self.round_sync = host, round_sync


def attach_module(core, model, state=b""):
    params = list(model.parameters())
    if not params:
        raise ValueError("attach: the model has no parameters")
    for name, p in model.named_parameters():
        if p.dtype != torch.float32:
            raise TypeError(f"attach: parameter {name} is {p.dtype}; qgossip gossips float32 parameters")
    devices = {p.device for p in params}
    if len(devices) != 1:
        raise ValueError(f"attach: the parameters are on several devices ({sorted(map(str, devices))})")
    device = devices.pop()
    with torch.no_grad():
        host = torch.cat([p.detach().reshape(-1).to("cpu") for p in params]).contiguous()
    core.attach(host.numpy(), state)
    flat = host if device.type == "cpu" else host.to(device)
    offset = 0
    for p in params:
        n = p.numel()
        p.data = flat[offset:offset + n].view_as(p)
        offset += n
    return _Attached(host, None if device.type == "cpu" else _RoundSync(host, flat))


class wrap:
    """An optimizer whose step() is the optimizer's step, then the node's: for loops written as
    `opt.step()`. Everything else is the optimizer's."""

    def __init__(self, optimizer, node):
        self.optimizer, self.node = optimizer, node

    def step(self, closure=None):
        result = self.optimizer.step(closure)
        self.node.step()
        return result

    def __getattr__(self, name):
        return getattr(self.optimizer, name)
