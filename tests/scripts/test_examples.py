#!/usr/bin/env python3
"""The README's and the --help texts' examples, run: an example that stops working fails CI (issue 31).

Every `build/qgossip ...` line of the README's code blocks whose words are all concrete (no RUN.yaml,
NAME, FILE or /path/ placeholder) runs; a `launch` runs shortened (a few rounds over ipc://, its output
in a temporary folder), with the example's own config and --set arguments. Every subcommand's --help
example of --set runs on configs/demo.yaml with that --set, and the "Example:" lines run with their
output folders moved to a temporary one.

Run: /usr/bin/python3 tests/scripts/test_examples.py BUILD_DIR     (BUILD_DIR holds the qgossip binary)
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = None  # set from argv in __main__
SUBCOMMANDS = ["launch", "run", "topology", "keys", "shards", "codec", "logs", "verify", "plot"]
PLACEHOLDER = re.compile(r"^[A-Z][A-Z_]*(\.yaml)?$|/path/|^runs/(NAME|A|B)$|[\[\]<>]")
# A launch example runs this long: the example's config and options, a few rounds.
SHORT = ["--set", "train.epochs=0.01", "--set", "network.transport=ipc", "--plain", "--no-plot"]


def readme_commands():
    """The README's `build/qgossip` lines (comments cut), as word lists, placeholders left out."""
    text = open(os.path.join(ROOT, "README.md")).read()
    out = []
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S):
        for line in block.splitlines():
            line = line.split("  #")[0].strip()
            if not line.startswith("build/qgossip "):
                continue
            words = shlex.split(line)
            if not any(PLACEHOLDER.search(w) for w in words[1:]):
                out.append(words)
    return out


def qgossip(*args, cwd=ROOT, timeout=300):
    p = subprocess.run([os.path.join(BUILD, "qgossip"), *args], cwd=cwd, capture_output=True, text=True,
                       timeout=timeout, env=dict(os.environ, XDG_CACHE_HOME=os.path.join(BUILD, "test-cache")))
    return p.returncode, p.stdout + p.stderr


class ExamplesTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.out = ["--set", f"output.dir={self.tmp.name}"]

    def tearDown(self):
        self.tmp.cleanup()

    def test_the_readme_commands_run(self):
        commands = readme_commands()
        self.assertTrue(any(c[1] == "launch" for c in commands), "no concrete launch example found")
        for words in commands:
            args = words[1:]
            if args[0] == "launch":
                args = args + self.out + SHORT
            with self.subTest(example=" ".join(words)):
                code, output = qgossip(*args)
                self.assertEqual(code, 0, output[-3000:])

    def test_the_demo_runs_shortened(self):
        # The README's first command trains configs/demo.yaml (scripts/demo.sh builds, then launches it).
        code, output = qgossip("launch", "configs/demo.yaml", *self.out, *SHORT)
        self.assertEqual(code, 0, output[-3000:])
        self.assertIn("all equal", output)

    def test_each_help_example_of_set_runs(self):
        for sub in SUBCOMMANDS:
            code, text = qgossip(sub, "--help")
            self.assertEqual(code, 0, text)
            for example in re.findall(r"e\.g\. (--set \S+)", text):
                setting = example.split()[1]
                with self.subTest(command=sub, example=example):
                    args = {
                        # SHORT's epochs come last and win: the example's value is still parsed and checked.
                        "launch": ["launch", "configs/demo.yaml", *self.out, "--set", setting, *SHORT],
                        "run": None,  # one node of a launch: the launch's case covers its --set
                        "topology": ["topology", "configs/demo.yaml", "--set", setting],
                        "keys": ["keys", "--config", "configs/demo.yaml", "--set",
                                 f"output.dir={os.path.join(self.tmp.name, 'keys')}", "--set", setting],
                        "shards": ["shards", "--config", "configs/demo.yaml", "--out", self.tmp.name, "--epochs",
                                   "1", "--set", setting],
                    }.get(sub)
                    if args is None:
                        continue
                    code, output = qgossip(*args)
                    self.assertEqual(code, 0, output[-3000:])

    def test_each_help_example_line_runs(self):
        for sub in SUBCOMMANDS:
            _, text = qgossip(sub, "--help")
            for line in re.findall(r"Example: (qgossip [^|\n]*)", text):
                words = shlex.split(line)[1:]
                if any(PLACEHOLDER.search(w) or w.startswith("run.yaml") for w in words):
                    continue
                # Output folders under runs/ go to the temporary folder instead.
                words = [os.path.join(self.tmp.name, w) if w.startswith("runs/") else w for w in words]
                with self.subTest(example=line):
                    code, output = qgossip(*words)
                    self.assertEqual(code, 0, output[-3000:])


class ConfigCommentsTest(unittest.TestCase):
    """A shipped config's comment that names another config by its algorithm names the right one
    (configs/dcd-8bit.yaml called configs/demo.yaml ECD-PSGD, which is CHOCO-SGD: issue 31, item 10)."""

    NAMES = {"dpsgd": "D-PSGD", "dcd": "DCD-PSGD", "ecd": "ECD-PSGD", "choco": "CHOCO-SGD", "naive": "naive"}

    def test_configs_named_in_comments_have_the_algorithm_said(self):
        import yaml
        folder = os.path.join(ROOT, "configs")
        checked = 0
        for name in sorted(os.listdir(folder)):
            if not name.endswith(".yaml"):
                continue
            text = open(os.path.join(folder, name)).read()
            comments = " ".join(line.lstrip("# ") for line in text.splitlines() if line.startswith("#"))
            for other, said in re.findall(r"configs/([\w.-]+\.yaml)\s*\(([A-Za-z-]+)\)", comments):
                algorithm = yaml.safe_load(open(os.path.join(folder, other)))["algorithm"]
                algorithm = algorithm["name"] if isinstance(algorithm, dict) else algorithm
                with self.subTest(config=name, names=other):
                    self.assertEqual(self.NAMES.get(algorithm, algorithm), said)
                checked += 1
        self.assertGreater(checked, 0)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: test_examples.py BUILD_DIR")
    BUILD = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
