#!/usr/bin/python3
"""The language-model peers (bench/peers/lm_peer.py): DDP, DiLoCo and Streaming DiLoCo, two ranks each
on loopback (gloo), the tiny model of examples/python/lm.py on a small text for 32 steps. Each
starts, trains (its validation loss falls), and reports; DDP's and DiLoCo's ranks end with the same
model; Streaming DiLoCo with one fragment, no delay and α = 0 is DiLoCo bit for bit (the same
operations in the same order: the check that its schedule and merge are what the paper's reduce
to); with four fragments it sends DiLoCo's bytes in sixteen syncs instead of four. All seeded and
synchronous (every all-reduce completes before its result is used): the figures are the same on
every run, so nothing here can flake. Not timed: the race is scripts/tta.py's."""
import json
import os
import socket
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PEER = os.path.join(REPO, "bench", "peers", "lm_peer.py")
TEXT = "/usr/share/common-licenses/GPL-3"
COMMON = ["--text", TEXT, "--steps", "32", "--batch", "4", "--local-steps", "8", "--warmup", "4"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(mode, out, *extra, world=2):
    port = free_port()
    procs = [subprocess.Popen([sys.executable, PEER, "--mode", mode, "--rank", str(r), "--world", str(world),
                               "--master-port", str(port), "--out", out] + COMMON + list(extra),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for r in range(world)]
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    for p, said in zip(procs, outputs):
        assert p.returncode == 0, said
    return [json.load(open(os.path.join(out, f"lm-{r}.json"))) for r in range(world)]


def check_learns(results):
    for r in results:
        assert r["val_loss"] < r["first_val_loss"] - 0.5, r


def main():
    sys.path.insert(0, os.path.join(REPO, "bench", "peers"))
    import torch
    from streaming_diloco import fragments_of

    # The split: every tensor once, in order, none empty, none above the mean by more than one tensor.
    params = [torch.zeros(n) for n in (300, 10, 10, 500, 40, 40, 100, 7)]
    runs = fragments_of(params, 4)
    assert [p for run in runs for p in run] == params and len(runs) == 4 and all(runs)
    sizes = [sum(p.numel() for p in run) for run in runs]
    assert max(sizes) <= sum(sizes) / 4 + max(p.numel() for p in params), sizes

    with tempfile.TemporaryDirectory() as tmp:
        ddp = run("ddp", os.path.join(tmp, "ddp"))
        check_learns(ddp)
        assert ddp[0]["model_sum"] == ddp[1]["model_sum"] and ddp[0]["syncs"] == 32, ddp

        diloco = run("diloco", os.path.join(tmp, "diloco"))
        check_learns(diloco)
        assert diloco[0]["model_sum"] == diloco[1]["model_sum"] and diloco[0]["syncs"] == 4, diloco
        d = diloco[0]["parameters"]
        assert diloco[0]["bytes_sent"] == 4 * 4 * d  # 4 syncs of 2(n−1)/n · 4d bytes, n = 2
        assert ddp[0]["bytes_sent"] == 32 * 4 * d

        plain = run("streaming", os.path.join(tmp, "plain"), "--fragments", "1", "--delay", "0", "--alpha", "0")
        for s, dl in zip(plain, diloco):
            assert (s["val_loss"], s["model_sum"]) == (dl["val_loss"], dl["model_sum"]), (s, dl)

        streaming = run("streaming", os.path.join(tmp, "streaming"), "--fragments", "4", "--delay", "2")
        check_learns(streaming)
        for s in streaming:
            assert s["syncs"] == 16 and s["fragments"] == 4, s
            assert s["bytes_sent"] == diloco[0]["bytes_sent"], s  # each fragment synced 4 times: d floats 4 times
        print("validation loss after 32 steps, from", ddp[0]["first_val_loss"], "- DDP", ddp[0]["val_loss"],
              "DiLoCo", diloco[0]["val_loss"], "Streaming DiLoCo (4 fragments, τ 2, α 0.5)",
              [s["val_loss"] for s in streaming])

    bad = subprocess.run([sys.executable, PEER, "--mode", "streaming", "--rank", "0", "--world", "1", "--out", "/tmp",
                          "--delay", "16", "--local-steps", "16"] + COMMON[:4], capture_output=True, text=True)
    assert bad.returncode != 0 and "--delay 16: expected 0 to H − 1 = 15" in bad.stderr, bad.stderr
    print("ok")


if __name__ == "__main__":
    main()
