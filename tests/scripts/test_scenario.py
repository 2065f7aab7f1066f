#!/usr/bin/env python3
"""Tests for scripts/scenario.py (the scenario files of scripts/cluster.sh --scenario): the format,
every kind of bad input with its FILE:LINE:COL message, the CPU quota arithmetic, the command line,
the committed configs/scenarios/, and cluster.sh's refusals before it creates anything (no root
needed: validation comes before the root check, and the root check is tested as an unprivileged user).

Run: python3 tests/scripts/test_scenario.py
"""
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import scenario  # noqa: E402

SCENARIO_PY = os.path.join(ROOT, "scripts", "scenario.py")
CLUSTER = os.path.join(ROOT, "scripts", "cluster.sh")
COMMITTED = os.path.join(ROOT, "configs", "scenarios")


class FileCase(unittest.TestCase):
    """Writes scenario texts to files in a temporary directory (readable by everyone, for the
    unprivileged cluster.sh test)."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        os.chmod(self.tmp, 0o755)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def write(self, text, name="s.yaml"):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(textwrap.dedent(text))
        os.chmod(path, 0o644)
        return path

    def load(self, text):
        return scenario.load(self.write(text))

    def error(self, text, nodes=None, cpus=2):
        """The message of the ScenarioError that loading text (and planning for nodes) raises."""
        path = self.write(text)
        with self.assertRaises(scenario.ScenarioError) as cm:
            s = scenario.load(path)
            if nodes is not None:
                s.plan(nodes, cpus)
        return str(cm.exception).replace(path, "F")


class Format(FileCase):
    def test_a_nodes_keys_replace_the_defaults_one_by_one(self):
        s = self.load("""\
            default: {rate: 100mbit, delay: 50ms}
            nodes:
              2: {rate: 1mbit}
              3: {cpu_share: 0.5}
            """)
        self.assertEqual({k: v.value for k, v in s.settings(2).items()}, {"rate": 10**6, "delay": 50_000})
        self.assertEqual({k: v.value for k, v in s.settings(3).items()},
                         {"rate": 10**8, "delay": 50_000, "cpu_share": 0.5})
        self.assertEqual({k: v.value for k, v in s.settings(0).items()}, {"rate": 10**8, "delay": 50_000})

    def test_units_are_tcs_decimal_ones(self):
        s = self.load("nodes: {0: {rate: 2.5mbit, delay: 500us}, 1: {rate: 1gbit, delay: 1s}, "
                      "2: {rate: 8kbit, delay: 0.5ms}, 3: {rate: 9000bit}}\n")
        got = [(p.rate_bits, p.delay_us) for p in s.plan(4, 2)]
        self.assertEqual(got, [(2_500_000, 500), (10**9, 10**6), (8000, 500), (9000, None)])

    def test_both_keys_are_optional(self):
        self.assertEqual(self.load("default: {rate: 10mbit}\n").nodes, {})
        self.assertEqual(self.load("nodes: {1: {rate: 10mbit}}\n").default, {})
        self.assertEqual([p.rate_bits for p in self.load("{}\n").plan(2, 2)], [None, None])

    def test_describe_is_one_line_grouping_ranks_with_the_same_settings(self):
        self.assertEqual(self.load("default: {rate: 100mbit}\nnodes: {2: {rate: 1mbit}, 6: {rate: 1mbit}}\n")
                         .describe(), "rate 100mbit; ranks 2,6: rate 1mbit")
        self.assertEqual(self.load("nodes: {3: {cpu_share: 0.2}}\n").describe(), "rank 3: cpu_share 0.2")
        self.assertEqual(self.load("default: {delay: 50ms, rate: 100mbit}\n").describe(), "rate 100mbit, delay 50ms")
        self.assertEqual(self.load("{}\n").describe(), "unshaped")

    def test_committed_scenarios(self):
        want = {"uniform-10mbit": "rate 10mbit", "straggler": "rank 3: cpu_share 0.2",
                "two-slow-links": "rate 100mbit; ranks 2,6: rate 1mbit", "far": "rate 100mbit, delay 50ms"}
        for name, line in want.items():
            s = scenario.load(os.path.join(COMMITTED, name + ".yaml"))
            self.assertEqual(s.describe(), line)
            s.plan(8, 2)
        straggler = scenario.load(os.path.join(COMMITTED, "straggler.yaml")).plan(8, 2)
        # 8 nodes on 2 cores at 0.2 of the fair share: 0.2 * 2/8 = 5 % of one CPU.
        self.assertEqual([(p.quota_us, p.period_us) for p in straggler],
                         [(None, None)] * 3 + [(5000, 100_000)] + [(None, None)] * 4)


class Quota(FileCase):
    def quota(self, share, n, cpus):
        return [(p.quota_us, p.period_us) for p in self.load(f"nodes: {{0: {{cpu_share: {share}}}}}\n").plan(n, cpus)][0]

    def test_quota_is_the_share_of_the_fair_share_over_a_100ms_period(self):
        self.assertEqual(self.quota(0.2, 8, 2), (5000, 100_000))
        self.assertEqual(self.quota(1, 4, 2), (50_000, 100_000))
        self.assertEqual(self.quota(1, 1, 2), (200_000, 100_000))  # one node may use both CPUs
        self.assertEqual(self.quota(0.5, 3, 16), (266_667, 100_000))

    def test_a_quota_under_1ms_stretches_the_period_instead(self):
        # 0.1 * 2/32 = 0.625 % of a CPU: 1 ms per 160 ms.
        self.assertEqual(self.quota(0.1, 32, 2), (1000, 160_000))

    def test_below_a_tenth_of_a_percent_of_a_cpu_is_refused(self):
        self.assertEqual(self.error("nodes:\n  5: {cpu_share: 0.01}\n", nodes=64, cpus=2),
                         "F:2:18: rank 5: cpu_share 0.01 of a fair share of 2 CPUs / 64 nodes is 0.031% of one "
                         "CPU: expected at least 0.1 % (a cgroup v1 quota of 1 ms per 1 s period)")

    def test_a_default_cpu_share_too_small_names_the_first_rank(self):
        self.assertTrue(self.error("default: {cpu_share: 0.01}\n", nodes=64, cpus=2).startswith("F:1:22: rank 0: "))


class Churn(FileCase):
    """churn: what qgossip launch --churn does to the nodes (node/config/churn_file.hpp reads it too)."""

    def test_events_are_read_and_described(self):
        s = self.load("nodes:\n  3: {cpu_share: 0.2}\nchurn:\n  - {rank: 3, at_s: 10, down_s: 2.5, how: kill}\n"
                      "  - {rank: 5, at_s: 20, down_s: 4, how: stop}\n  - {rank: 1, at_s: 0, down_s: 1}\n")
        self.assertEqual([e[1:] for e in s.churn], [(3, 10.0, 2.5, "kill"), (5, 20.0, 4.0, "stop"), (1, 0.0, 1.0, "kill")])
        self.assertEqual(s.describe(), "rank 3: cpu_share 0.2; churn rank 3 kill at 10 s for 2.5 s, rank 5 stop at 20 s "
                                       "for 4 s, rank 1 kill at 0 s for 1 s")
        self.assertEqual(scenario.main(["has-churn", self.write("churn: [{rank: 0, at_s: 1, down_s: 1}]\n")]), 0)
        self.assertEqual(scenario.main(["has-churn", self.write("nodes: {1: {rate: 1mbit}}\n")]), 1)

    def test_bad_events(self):
        def check(text, want, nodes=None):
            self.assertEqual(self.error(text, nodes), want)
        check("churn: {rank: 1}\n", "F:1:8: churn: expected a list of {rank, at_s, down_s, how}")
        check("churn:\n  - {rank: 1, at_s: 2}\n", "F:2:5: churn[0]: down_s is missing")
        check("churn:\n  - {rank: 1, at_s: -2, down_s: 1}\n", "F:2:21: churn[0].at_s: expected seconds >= 0, received '-2'")
        check("churn:\n  - {rank: 1, at_s: 2, down_s: 0}\n", "F:2:32: churn[0].down_s: expected seconds > 0, received '0'")
        check("churn:\n  - {rank: x, at_s: 2, down_s: 1}\n", "F:2:12: churn[0].rank: expected a rank >= 0, received 'x'")
        check("churn:\n  - {rank: 1, at_s: 2, down_s: 1, how: pause}\n",
              "F:2:40: churn[0].how: expected kill or stop, received 'pause'")
        check("churn:\n  - {rank: 1, at_s: 2, down_s: 1, when: 3}\n",
              "F:2:35: churn[0]: unknown key 'when': expected one of rank, at_s, down_s, how")
        check("churn:\n  - {rank: 7, at_s: 2, down_s: 1}\n",
              "F:2:12: churn: rank 7 does not exist in this run: expected a rank in 0..3 (the run has 4 nodes)", nodes=4)


class Hostile(FileCase):
    """hostile: the ranks that send attacks (node/config/hostile_file.hpp reads it, and checks each
    attack's parameters)."""

    def test_entries_are_read_and_described(self):
        s = self.load("hostile:\n  - {rank: 5, attack: flip}\n  - {rank: 6, attack: alie, z: 1.5, from_round: 9}\n")
        self.assertEqual([e[1:] for e in s.hostile], [(5, "flip"), (6, "alie")])
        self.assertEqual(s.describe(), "hostile rank 5 flip, rank 6 alie")
        self.assertEqual(scenario.main(["has-launch-lists", self.write("hostile: [{rank: 0, attack: nan}]\n")]), 0)
        self.assertEqual(scenario.main(["has-launch-lists", self.write("churn: [{rank: 0, at_s: 1, down_s: 1}]\n")]), 0)
        self.assertEqual(scenario.main(["has-launch-lists", self.write("nodes: {1: {rate: 1mbit}}\n")]), 1)

    def test_bad_entries(self):
        def check(text, want, nodes=None):
            self.assertEqual(self.error(text, nodes), want)
        check("hostile: {rank: 1}\n", "F:1:10: hostile: expected a list of {rank, attack, from_round, ...}")
        check("hostile:\n  - {rank: 1}\n", "F:2:5: hostile[0]: attack is missing")
        check("hostile:\n  - {rank: 1, attack: flop}\n", "F:2:23: hostile[0].attack: expected one of flip, scale, "
              "noise, nan, label_flip, alie, ipm, dissensus, equivocate, adaptive, received 'flop'")
        check("hostile:\n  - {rank: 7, attack: flip}\n",
              "F:2:12: hostile: rank 7 does not exist in this run: expected a rank in 0..3 (the run has 4 nodes)", nodes=4)


class BadInput(FileCase):
    """Every rejected input, with the exact FILE:LINE:COL message (columns count from 1)."""

    def check(self, text, want, nodes=None):
        self.assertEqual(self.error(text, nodes), want)

    def test_a_rank_the_run_does_not_have(self):
        self.check("default: {rate: 10mbit}\nnodes:\n  1: {rate: 1mbit}\n  6: {rate: 1mbit}\n",
                   "F:4:3: rank 6 does not exist in this run: expected a rank in 0..3 (the run has 4 nodes)", nodes=4)

    def test_ranks_must_be_decimal_integers_from_0(self):
        self.check("nodes:\n  -1: {rate: 1mbit}\n", "F:2:3: rank '-1': expected a rank, a decimal integer >= 0")
        self.check("nodes:\n  two: {rate: 1mbit}\n", "F:2:3: rank 'two': expected a rank, a decimal integer >= 0")
        self.check("nodes:\n  '3': {rate: 1mbit}\n", "F:2:3: rank '3': expected a rank, a decimal integer >= 0")
        self.check("nodes:\n  0x3: {rate: 1mbit}\n", "F:2:3: rank '0x3': expected a rank, a decimal integer >= 0")

    def test_rates_must_be_above_zero(self):
        self.check("default: {rate: 0mbit}\n", "F:1:17: rate '0mbit': expected a rate > 0 (at least 1 bit)")
        self.check("default: {rate: -5mbit}\n", "F:1:17: rate '-5mbit': expected a rate > 0 (at least 1 bit)")

    def test_rates_need_a_tc_bit_unit_and_8kbit(self):
        unit = ("expected rate as a number > 0 and one of bit, kbit, mbit, gbit, e.g. 10mbit (tc's decimal "
                "units; only bit rates: tc's mbps means bytes)")
        self.check("default: {rate: 10}\n", f"F:1:17: rate '10': {unit}")
        self.check("default: {rate: 10mbps}\n", f"F:1:17: rate '10mbps': {unit}")
        self.check("default: {rate: 4kbit}\n", "F:1:17: rate '4kbit': expected at least 8kbit (below it tbf cannot "
                                               "pass a full-size packet in a second)")
        self.check("default: {rate: [10mbit]}\n", f"F:1:17: {unit}")

    def test_delays_must_be_above_zero_with_a_unit(self):
        self.check("nodes:\n  0: {delay: 0ms}\n", "F:2:14: delay '0ms': expected a delay > 0 (at least 1 us)")
        self.check("nodes:\n  0: {delay: -50ms}\n", "F:2:14: delay '-50ms': expected a delay > 0 (at least 1 us)")
        self.check("nodes:\n  0: {delay: 0.1us}\n", "F:2:14: delay '0.1us': expected a delay > 0 (at least 1 us)")
        self.check("nodes:\n  0: {delay: 50}\n",
                   "F:2:14: delay '50': expected delay as a number > 0 and one of us, ms, s, e.g. 50ms")

    def test_cpu_share_must_be_in_0_1(self):
        self.check("nodes: {3: {cpu_share: 0}}\n", "F:1:24: cpu_share 0: expected a cpu_share > 0")
        self.check("nodes: {3: {cpu_share: -0.2}}\n", "F:1:24: cpu_share -0.2: expected a cpu_share > 0")
        self.check("nodes: {3: {cpu_share: .nan}}\n", "F:1:24: cpu_share .nan: expected a cpu_share > 0")
        self.check("nodes: {3: {cpu_share: 1.5}}\n", "F:1:24: cpu_share 1.5: expected at most 1 (1 = the node's "
                                                     "whole fair share of the CPUs, online CPUs / n nodes)")
        expected = ("expected cpu_share as a number in (0, 1]: a fraction of the node's fair share of the CPUs, "
                    "e.g. 0.2")
        self.check("nodes: {3: {cpu_share: 20%}}\n", f"F:1:24: cpu_share '20%': {expected}")
        self.check("nodes: {3: {cpu_share: true}}\n", f"F:1:24: cpu_share 'true': {expected}")
        self.check("nodes: {3: {cpu_share: }}\n", f"F:1:23: {expected}")  # PyYAML: an empty value starts after the colon

    def test_unknown_keys(self):
        self.check("default: {rate: 1mbit}\nlinks: {}\n", "F:2:1: unknown key 'links': expected one of default, nodes, churn, hostile")
        self.check("default: {rate: 1mbit, latency: 5ms}\n",
                   "F:1:24: unknown key 'latency': expected one of rate, delay, cpu_share")
        self.check("nodes:\n  2:\n    rate: 1mbit\n    cpu: 0.5\n",
                   "F:4:5: unknown key 'cpu': expected one of rate, delay, cpu_share")

    def test_keys_given_twice(self):
        self.check("nodes:\n  2: {rate: 1mbit}\n  2: {rate: 2mbit}\n", "F:3:3: '2' is given twice: expected each key once")
        self.check("default: {rate: 1mbit, rate: 2mbit}\n", "F:1:24: 'rate' is given twice: expected each key once")
        self.check("default: {}\ndefault: {}\n", "F:2:1: 'default' is given twice: expected each key once")

    def test_wrong_shapes(self):
        self.check("- rate: 1mbit\n", "F:1:1: expected a mapping with the keys default and/or nodes")
        self.check("default: 10mbit\n", "F:1:10: expected a mapping of node settings: {rate: 10mbit, delay: 50ms, "
                                        "cpu_share: 0.5} (each optional)")
        self.check("nodes:\n  - {rate: 1mbit}\n", "F:2:3: expected a mapping of rank: settings, e.g. {3: {cpu_share: 0.2}}")
        self.check("nodes:\n", "F:1:7: expected a mapping of rank: settings, e.g. {3: {cpu_share: 0.2}}")

    def test_empty_and_broken_files(self):
        self.check("", "F:1:1: expected a mapping with the keys default and/or nodes (the file is empty)")
        self.check("# only a comment\n", "F:1:1: expected a mapping with the keys default and/or nodes (the file is empty)")
        self.check("default: {rate: 1mbit\nnodes: {}\n", "F:2:6: invalid YAML: expected ',' or '}', but got ':'")
        self.check("default: {}\n---\nnodes: {}\n", "F:2:1: invalid YAML: but found another document")

    def test_a_missing_file(self):
        path = os.path.join(self.tmp, "none.yaml")
        with self.assertRaises(scenario.ScenarioError) as cm:
            scenario.load(path)
        self.assertEqual(str(cm.exception), f"{path}: cannot read: No such file or directory")


class CommandLine(FileCase):
    def run_py(self, *args):
        return subprocess.run([sys.executable, SCENARIO_PY, *args], capture_output=True, text=True, timeout=30)

    def test_validate(self):
        good = self.write("default: {rate: 100mbit}\nnodes: {6: {rate: 1mbit}}\n")
        r = self.run_py("validate", good)
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, "", ""))
        self.assertEqual(self.run_py("validate", good, "--nodes", "7").returncode, 0)
        r = self.run_py("validate", good, "--nodes", "4")
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stderr, f"{good}:2:9: rank 6 does not exist in this run: expected a rank in 0..3 "
                                   "(the run has 4 nodes)\n")

    def test_describe_and_plan(self):
        path = self.write("default: {rate: 10mbit}\nnodes: {1: {cpu_share: 0.5, delay: 2ms}}\n")
        self.assertEqual(self.run_py("describe", path).stdout, "rate 10mbit; rank 1: delay 2ms, cpu_share 0.5\n")
        r = self.run_py("plan", path, "--nodes", "2", "--cpus", "2")
        self.assertEqual(r.stdout, "0 10000000 - - - -\n1 10000000 2000 50000 100000 0.5\n")
        r = self.run_py("plan", path, "--nodes", "2", "--cpus", "2", "--json")
        self.assertIn('"quota_us": 50000', r.stdout)

    def test_bad_arguments_and_help(self):
        path = self.write("{}\n")
        self.assertEqual(self.run_py("plan", path).returncode, 2)  # --nodes required
        self.assertEqual(self.run_py("validate", path, "--nodes", "0").returncode, 2)
        r = self.run_py("--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("cpu_share", r.stdout)


class ClusterRefusals(FileCase):
    """cluster.sh --scenario stops with exit 2 before creating any namespace or cgroup."""

    def setUp(self):
        super().setUp()
        if not (shutil.which("ip") and shutil.which("tc")):
            self.skipTest("cluster.sh needs iproute2 (ip, tc)")
        self.prefix = f"qgu{os.getpid()}x"

    def cluster(self, *args, user=None):
        argv = ["bash", CLUSTER, "--prefix", self.prefix, *args]
        if user is not None:
            argv = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", "--inh-caps=-all", *argv]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=self.tmp)
        self.assertFalse(self.left_behind(), "cluster.sh created something before refusing")
        return r

    def left_behind(self):
        names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
        return [n for n in names if n.startswith(self.prefix)] + \
            [d for d in ("/sys/fs/cgroup/cpu/" + self.prefix + "-cpu",) if os.path.exists(d)]

    def test_not_with_rate_or_latency(self):
        path = self.write("default: {rate: 10mbit}\n")
        for opt in (["--rate", "1mbit"], ["--latency", "5ms"]):
            r = self.cluster("--scenario", path, *opt, "--ranks", "2", "--", "true")
            self.assertEqual(r.returncode, 2)
            self.assertIn("--scenario sets each node's rate and delay itself", r.stderr)

    def test_a_bad_scenario_is_reported_at_its_line(self):
        path = self.write("default: {rate: 10mbit}\nnodes:\n  2: {cpu_share: 2}\n")
        r = self.cluster("--scenario", path, "--ranks", "4", "--", "true")
        self.assertEqual((r.returncode, r.stderr), (2, f"{path}:3:18: cpu_share 2: expected at most 1 (1 = the node's "
                                                       "whole fair share of the CPUs, online CPUs / n nodes)\n"))
        r = self.cluster("--scenario", path.replace("s.yaml", "none.yaml"), "--ranks", "4", "--", "true")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--scenario: no such file", r.stderr)

    def test_a_rank_beyond_the_ranks(self):
        path = self.write("nodes:\n  3: {cpu_share: 0.2}\n")
        r = self.cluster("--scenario", path, "--ranks", "3", "--", "true")
        self.assertEqual((r.returncode, r.stderr), (2, f"{path}:2:3: rank 3 does not exist in this run: expected a "
                                                       "rank in 0..2 (the run has 3 nodes)\n"))

    def test_a_rank_beyond_the_launchs_topology(self):
        # The launch form takes n from `qgossip topology RUN_YAML --json`; a stand-in answers for it.
        fake = self.write('#!/bin/sh\necho \'{"n": 2, "topology": {"graph": "ring", "n": 2, '
                          '"nodes": [{"host": "127.0.0.1", "port": 1}, {"host": "127.0.0.1", "port": 2}]}}\'\n',
                          "qgossip")
        os.chmod(fake, 0o755)
        run_yaml = self.write("name: x\n", "run.yaml")
        path = self.write("default: {rate: 10mbit}\nnodes:\n  2: {rate: 1mbit}\n")
        r = self.cluster("--scenario", path, "--qgossip", fake, run_yaml)
        self.assertEqual((r.returncode, r.stderr), (2, f"{path}:3:3: rank 2 does not exist in this run: expected a "
                                                       "rank in 0..1 (the run has 2 nodes)\n"))

    @unittest.skipUnless(shutil.which("setpriv"), "no setpriv (util-linux) to run as an unprivileged user")
    def test_without_root_it_says_so_before_anything_starts(self):
        path = self.write("nodes: {1: {cpu_share: 0.5}}\n")
        user = None if os.geteuid() != 0 else 65534  # nobody
        r = self.cluster("--scenario", path, "--ranks", "2", "--", "true", user=user)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("cluster.sh: needs root: creating network namespaces takes CAP_NET_ADMIN and CAP_SYS_ADMIN, "
                      f"as do the scenario's tc qdiscs and cgroup cpu quotas ({path})", r.stderr)


if __name__ == "__main__":
    unittest.main()
