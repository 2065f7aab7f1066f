"""The torch side of qgossip (docs/python.md): a module's parameters in one flat tensor that the
node's rounds move, and an optimizer wrapper for loops that prefer that shape."""
import torch

# The parameters' dtypes attach takes. The node computes in float32: a bf16 or fp16 model's rounds
# work on a float32 host copy, widened exactly from the parameters and rounded back into them.
_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


class _RoundSync:
    """A model on a device other than the CPU, or of a dtype other than float32: the node works on a
    float32 host copy, copied once each way per round (before it reads the parameters, after it has
    written them back; torch's copy rounds to the nearest, ties to even)."""

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
        if p.dtype not in _DTYPES:
            raise TypeError(f"attach: parameter {name} is {p.dtype}; qgossip gossips float32, bfloat16 or "
                            "float16 parameters")
    dtypes = {p.dtype for p in params}
    if len(dtypes) != 1:
        raise TypeError(f"attach: the parameters are of several dtypes ({sorted(map(str, dtypes))}); "
                        "qgossip gossips one flat tensor of one dtype")
    dtype = dtypes.pop()
    devices = {p.device for p in params}
    if len(devices) != 1:
        raise ValueError(f"attach: the parameters are on several devices ({sorted(map(str, devices))})")
    device = devices.pop()
    with torch.no_grad():
        host = torch.cat([p.detach().reshape(-1).to("cpu", torch.float32) for p in params]).contiguous()
    core.attach(host.numpy(), state)
    on_host = device.type == "cpu" and dtype == torch.float32
    flat = host if on_host else host.to(device, dtype)  # exact: host holds the parameters' own values
    offset = 0
    for p in params:
        n = p.numel()
        p.data = flat[offset:offset + n].view_as(p)
        offset += n
    return _Attached(host, None if on_host else _RoundSync(host, flat))


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
