"""pytest set-up for the Python module's tests (docs/python.md): where the build is, and a run
folder per test. Run by CTest (`python` test) as
/usr/bin/python3 -m pytest tests/python --build BUILD_DIR."""
import os
import sys

import pytest


def pytest_addoption(parser):
    parser.addoption("--build", default=os.environ.get("QGOSSIP_BUILD", "build"), help="the CMake build folder")


@pytest.fixture(scope="session")
def build(request):
    path = os.path.abspath(request.config.getoption("--build"))
    package = os.path.join(path, "python")
    if not os.path.isdir(os.path.join(package, "qgossip")):
        pytest.fail(f"{package}/qgossip is missing: build the target qgossip_python first")
    if package not in sys.path:
        sys.path.insert(0, package)
    os.environ["PYTHONPATH"] = package + os.pathsep + os.environ.get("PYTHONPATH", "")
    return path
