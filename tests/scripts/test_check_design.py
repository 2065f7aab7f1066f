#!/usr/bin/env python3
"""Tests for scripts/check_design.py's rules on small synthetic trees: an include up the layers or
the rooms of node/run, two node/run stems that include each other (an upward arrow), and a hostile
node's names or includes outside its doors (node/run/node_setup, node/run/hostile_round). Each rule
is shown failing on a tree made to break it, and a tree that keeps it passes. Pure standard library.

Run: python3 tests/scripts/test_check_design.py
"""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "check_design.py")


def check(files):
    """check_design.py's problems on a tree of `files` ({path: text}), one string each."""
    with tempfile.TemporaryDirectory() as root:
        for path, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
            with open(os.path.join(root, path), "w") as f:
                f.write(text)
        done = subprocess.run([sys.executable, SCRIPT, root], capture_output=True, text=True)
        lines = done.stdout.strip().splitlines()
        assert lines and lines[-1].startswith("check_design:"), done.stdout + done.stderr
        return lines[:-1], done.returncode


class Rules(unittest.TestCase):
    def test_a_clean_tree_passes(self):
        problems, code = check({
            "node/run/round_pattern.hpp": "#pragma once\n",
            "node/run/gossip_round.hpp": '#include "node/run/round_pattern.hpp"\n',
            "node/run/pattern_factory.cpp": '#include "node/run/gossip_round.hpp"\n',
            "node/run/hostile_round.cpp": '#include "node/attack/forger.hpp"\nforger f;\n',
            "node/attack/forger.hpp": "class forger {};\n",
        })
        self.assertEqual((problems, code), ([], 0))

    def test_an_interface_whose_cpp_includes_its_implementations_is_an_upward_arrow(self):
        problems, code = check({
            "node/run/round_pattern.hpp": "#pragma once\n",
            "node/run/round_pattern.cpp": '#include "node/run/gossip_round.hpp"\n',
            "node/run/gossip_round.hpp": '#include "node/run/round_pattern.hpp"\n',
        })
        self.assertEqual(code, 1)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("upward arrow", problems[0])

    def test_the_honest_code_may_not_include_or_name_the_attacks(self):
        problems, code = check({
            "node/run/round_steps.cpp": '#include "node/attack/label_flip.hpp"\nvoid poison_labels();\n',
            "gossip/exchange.cpp": "// a comment may name the forger\nint x;\n",
            "algorithms/dpsgd.cpp": "attack_spec s;\n",
            "node/attack/label_flip.hpp": "#pragma once\n",
        })
        self.assertEqual(code, 1)
        self.assertEqual(len(problems), 3, problems)
        self.assertTrue(problems[0].startswith("algorithms/dpsgd.cpp:1: names attack_spec"), problems)
        self.assertTrue(problems[1].startswith("node/run/round_steps.cpp:1: includes node/attack/label_flip.hpp"))
        self.assertTrue(problems[2].startswith("node/run/round_steps.cpp:2: names poison_labels"))

    def test_a_node_run_file_in_no_room_and_an_include_up_the_rooms(self):
        problems, code = check({
            "node/run/mystery.cpp": "int x;\n",
            "node/run/learner.cpp": '#include "node/run/round_steps.hpp"\n',
            "node/run/round_steps.hpp": "#pragma once\n",
        })
        self.assertEqual(code, 1)
        self.assertTrue(any("in no room" in p for p in problems), problems)
        self.assertTrue(any("parts room includes node/run/round_steps.hpp from the higher loop room" in p
                            for p in problems), problems)


if __name__ == "__main__":
    unittest.main()
