"""`pip install .` as a user installs qgossip (docs/python.md, "Installing"): a fresh venv that sees
Debian's torch, setuptools and wheel (--system-site-packages), `pip install --no-build-isolation
--no-index` from the checkout, reusing the suite's build through QGOSSIP_BUILD_DIR (setup.py: nothing
is compiled twice). Then, outside the checkout and without PYTHONPATH, the installed `qgossip`
command launches the language-model example's four nodes from the installed module for two rounds,
and its verify finds every copy equal."""
import os
import shutil
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_pip_install_from_the_checkout_then_train_from_the_installed_package(build, tmp_path):
    venv = tmp_path / "env"
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    pip = subprocess.run([str(venv / "bin" / "pip"), "install", "--no-build-isolation", "--no-index", REPO],
                         env=dict(env, QGOSSIP_BUILD_DIR=build), capture_output=True, text=True, timeout=1800)
    assert pip.returncode == 0, pip.stdout[-3000:] + pip.stderr[-3000:]

    app = tmp_path / "app"  # the user's own folder, nothing of the checkout's on any path
    app.mkdir()
    for name in ("lm.py", "corpus.py", "lm.yaml"):
        shutil.copy(os.path.join(REPO, "examples", "python", name), app)
    python = str(venv / "bin" / "python")
    where = subprocess.run([python, "-c", "import qgossip, qgossip._core; print(qgossip.__file__)"], cwd=app, env=env,
                           capture_output=True, text=True)
    assert where.returncode == 0 and where.stdout.startswith(str(venv)), where.stdout + where.stderr

    program = f"{python} lm.py --text /usr/share/common-licenses/GPL-3 --steps 32 --batch 8"
    launch = subprocess.run([str(venv / "bin" / "qgossip"), "launch", "lm.yaml", "--exec", program,
                             "--set", "output.dir=out", "--plain", "--no-plot"],
                            cwd=app, env=env, capture_output=True, text=True, timeout=600)
    said = launch.stdout + launch.stderr
    assert launch.returncode == 0, said
    assert "all equal" in said, said
