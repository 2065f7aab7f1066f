#!/usr/bin/env python3
"""Tests for scripts/check_comment_paths.py: what counts as a repository path in a comment or a
document, which comments are read in each language, and the report on a small synthetic tree.
Pure standard library.

Run: python3 tests/scripts/test_check_comment_paths.py
"""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "check_comment_paths.py")
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import check_comment_paths as ccp  # noqa: E402

TOP = {"node", "docs", "core", "README.md", "scripts"}


class CandidatePaths(unittest.TestCase):
    def paths(self, text):
        return ccp.candidate_paths(text, TOP)

    def test_files_and_folders_are_paths(self):
        self.assertEqual(self.paths("see node/run/round_steps.hpp and docs/failures.md."),
                         ["node/run/round_steps.hpp", "docs/failures.md"])
        self.assertEqual(self.paths("backends under `node/launch/` (node/log/run_log.hpp's header)"),
                         ["node/launch/", "node/log/run_log.hpp"])
        self.assertEqual(self.paths("node/launch/progress.{hpp,cpp}"),
                         ["node/launch/progress.hpp", "node/launch/progress.cpp"])
        self.assertEqual(self.paths("core/json.hpp,core/hash.hpp"), ["core/json.hpp", "core/hash.hpp"])

    def test_what_is_not_a_repository_path(self):
        for text in ("https://github.com/nlohmann/json/blob/develop/docs/README.md",
                     "/usr/include/nlohmann/json.hpp", "./build/qgossip", "~/.cache/node/x.json",
                     "$HOME/docs/x.md", "host:docs/x.md", "runs/<name>/node-<r>.csv", "node/*.hpp",
                     "node/run/round_{r}.csv", "build/compile_commands.json", "runs/demo/run.json",
                     "qgossip/build_config.hpp", "the node/log folder", "encode/decode time",
                     "../docs/x.md"):
            self.assertEqual(self.paths(text), [], text)


class Comments(unittest.TestCase):
    def test_cxx_comments_skip_strings_and_raw_strings(self):
        source = '\n'.join([
            '#include "node/log/gone.hpp"  // see node/a.hpp',
            'auto u = "tcp://x // not/a.hpp"; auto c = \'"\'; int k = 1\'000;',
            'auto r = R"(// node/raw.hpp)";  /* node/b.hpp',
            '   node/c.hpp */ int x;',
        ])
        self.assertEqual(list(ccp.cxx_comments(source)),
                         [(1, " see node/a.hpp"), (3, " node/b.hpp"), (4, "   node/c.hpp ")])

    def test_hash_comments_skip_quotes_and_shell_counts(self):
        source = 'echo "# not node/a.sh"  # node/b.sh\nn=$#; m=${#x}\n# node/c.cmake'
        self.assertEqual(list(ccp.hash_comments(source)), [(1, " node/b.sh"), (3, " node/c.cmake")])

    def test_python_comments_and_docstrings(self):
        source = '"""Module: node/a.py\nand node/b.py."""\nx = "# node/not.py"  # node/c.py\n' \
                 'def f():\n    """node/d.py"""\n'
        found = sorted(ccp.python_comments(source))
        self.assertEqual(found, [(1, "Module: node/a.py"), (2, "and node/b.py."), (3, " node/c.py"), (5, "node/d.py")])


class Check(unittest.TestCase):
    def tree(self, files):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        for rel, text in files.items():
            path = os.path.join(tmp.name, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        return tmp.name

    def test_missing_paths_are_listed_with_file_and_line(self):
        root = self.tree({
            "core/a.hpp": "#pragma once\n// uses core/b.hpp and core/gone.hpp\n",
            "core/b.hpp": "// node-<r>.csv, https://x.org/core/gone.hpp\n",
            "docs/x.md": "See [b](../core/b.hpp), [gone](gone.md), [web](https://e.org/a.md), core/old.md.\n",
            "README.md": "docs/x.md\n",
            "scripts/s.sh": "#!/bin/sh\necho hi  # core/gone.sh\n",
            "build/junk.hpp": "// core/never_read.hpp\n",
        })
        problems, pending = ccp.check(root, {("core/a.hpp", "core/gone.hpp")})
        self.assertEqual(problems, ["docs/x.md:1: core/old.md does not exist",
                                    "docs/x.md:1: gone.md does not exist (link)",
                                    "scripts/s.sh:2: core/gone.sh does not exist"])
        self.assertEqual(pending, ["core/a.hpp:2: core/gone.hpp does not exist"])

    def test_a_bare_document_must_be_in_the_repository(self):
        # Issue 28, item 6: 18 comments cited the shared design notes, which are not in the repository.
        root = self.tree({
            "core/a.hpp": "// see DESIGN.md, \"The wire\"; README.md; ../shared/STYLE.md; docs/x.md\n",
            "docs/x.md": "Notation as in shared/ALGORITHMS.md.\n",
            "README.md": "docs/x.md\n",
        })
        problems, _ = ccp.check(root)
        self.assertEqual(problems, ["core/a.hpp:1: DESIGN.md is not in this repository (cite docs/, e.g. docs/design.md)"])

    def test_exit_status(self):
        good = self.tree({"core/a.hpp": "// core/a.hpp\n"})
        bad = self.tree({"core/a.hpp": "// core/z.hpp\n"})
        run = lambda root: subprocess.run([sys.executable, SCRIPT, root], capture_output=True, text=True)
        self.assertEqual(run(good).returncode, 0)
        r = run(bad)
        self.assertEqual(r.returncode, 1)
        self.assertIn("core/a.hpp:1: core/z.hpp does not exist", r.stdout)
        self.assertEqual(run(os.path.join(good, "absent")).returncode, 2)


if __name__ == "__main__":
    unittest.main()
