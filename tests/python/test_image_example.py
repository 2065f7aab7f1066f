"""The image example (examples/python/image.py, docs/python.md) as a user runs it: four Python nodes
started by `qgossip launch --exec`, the program's own CNN, augmentation, label smoothing, SGD with
Nesterov momentum under a one-cycle schedule, and its own evaluation in the node's CSV. Seeded
throughout, and synchronous gossip does not depend on timing: the figures are the same on every
run, so the bounds below cannot flake."""
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_four_python_image_nodes_learn_fashion_mnist_and_log_their_own_evaluation(build, tmp_path):
    example = os.path.join(REPO, "examples", "python", "image.py")
    program = " ".join([sys.executable, example, "--steps", "96", "--batch", "32", "--eval-every", "48",
                        "--eval-examples", "500"])
    launch = subprocess.run([os.path.join(build, "qgossip"), "launch", os.path.join(REPO, "examples/python/image.yaml"),
                             "--exec", program, "--set", f"output.dir={tmp_path}", "--set", "network.security=none",
                             "--plain", "--no-plot"], capture_output=True, text=True, timeout=300)
    assert launch.returncode == 0, launch.stdout + launch.stderr
    assert "all equal" in launch.stdout + launch.stderr  # the launcher's qgossip verify
    for r in range(4):
        result = json.load(open(tmp_path / "image" / f"image-{r}.json"))
        print(f"rank {r}: test accuracy {result['test_acc']:.3f} after {result['steps']} steps of {result['batch']}")
        assert result["exit"] == 0 and result["rounds"] == 12  # 96 steps, a round every 8
        assert result["test_acc"] > 0.6, result  # 10 classes: chance is 0.1
        rows = (tmp_path / "image" / f"node-{r}.csv").read_text().splitlines()
        header = rows[0].split(",")
        assert header[-2:] == ["val_loss", "val_acc"]
        logged = [row.split(",")[header.index("val_acc")] for row in rows[1:]]
        # Step 1's evaluation is in round 1's row; step 48's, logged after its node.step() ran round 6,
        # in round 7's; the rows between have none.
        assert logged[0] and logged[6] and not any(logged[1:6]), logged
