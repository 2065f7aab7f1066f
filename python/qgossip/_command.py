"""The `qgossip` command of an installed package (pyproject.toml's script): the native command that
`pip install` put beside the module, qgossip/bin/qgossip, run with the same arguments."""
import os
import sys
from pathlib import Path


def main():
    command = Path(__file__).resolve().parent / "bin" / "qgossip"
    if not command.exists():
        sys.exit(f"qgossip: {command} is missing: this package was not installed by pip install (docs/python.md)")
    os.execv(str(command), [str(command)] + sys.argv[1:])
