#!/usr/bin/env python3
"""Network and CPU scenarios: what scripts/cluster.sh --scenario applies to each node (docs/cluster.md,
"Scenarios"). This module reads, checks and describes a scenario file; it changes nothing on the host.

A scenario file is a YAML mapping with two optional keys:

    default: {rate: 100mbit, delay: 50ms, cpu_share: 0.5}   # every node
    nodes:                                                   # per rank: these keys replace the default's
      2: {rate: 1mbit}
      6: {rate: 1mbit, cpu_share: 0.2}

and two more, for `qgossip launch --scenario` (what happens to the nodes while they run; cluster.sh
passes the file on when it has either):

    churn: [{rank: 3, at_s: 10, down_s: 3, how: kill}]     # kill: SIGKILL, started again after down_s;
                                                            # stop: SIGSTOP, SIGCONT after down_s
    hostile: [{rank: 5, attack: flip, from_round: 1}]      # rank 5 sends an attack, holding its real key
                                                            # (docs/security.md; its parameters are checked
                                                            # by qgossip, node/config/hostile_file.hpp)

Per node, each key optional (absent = not shaped in that respect):
  rate       egress bandwidth, tc's decimal bit units: bit, kbit, mbit, gbit (10mbit = 10^7 bit/s), at least
             8kbit. tc tbf on the node's veth.
  delay      one-way delay added to everything the node sends: us, ms or s (50ms). A link r -> s is delayed
             by r's delay, a round trip r <-> s by delay(r) + delay(s).
  cpu_share  a number in (0, 1]: the node's CPU time as a fraction of its fair share of the machine,
             fair share = online CPUs / n nodes. A cgroup v1 cpu quota: cpu.cfs_quota_us =
             cpu_share * CPUs / n * cpu.cfs_period_us (period 100 ms; longer when the quota would be under
             the kernel's 1 ms minimum, up to 1 s).

Usage (exit 0 when valid, 2 with FILE:LINE:COL: what was expected):
  scenario.py validate FILE [--nodes N] [--cpus C]    check FILE (for a run of N nodes: every rank exists)
  scenario.py has-churn FILE                          exit 0 when FILE has a churn list, 1 when not
  scenario.py has-launch-lists FILE                   exit 0 when FILE has a churn or a hostile list, 1 when not
  scenario.py describe FILE                           one line for tables, e.g. "rate 100mbit; ranks 2,6: rate 1mbit"
  scenario.py plan FILE --nodes N [--cpus C] [--json] per rank: rank rate_bits delay_us quota_us period_us
                                                      cpu_share ("-" where unset); what cluster.sh applies
From Python (scripts/ on sys.path): scenario.load(path) -> Scenario; .check_nodes(n), .describe(), .plan(n, cpus).
"""
import argparse
import dataclasses
import json
import math
import os
import re
import sys

NODE_KEYS = ("rate", "delay", "cpu_share")
TOP_KEYS = ("default", "nodes", "churn", "hostile")
ATTACKS = ("flip", "scale", "noise", "nan", "label_flip", "alie", "ipm", "dissensus", "equivocate", "adaptive")
CHURN_KEYS = ("rank", "at_s", "down_s", "how")
RATE_UNITS = {"bit": 1, "kbit": 10**3, "mbit": 10**6, "gbit": 10**9}
DELAY_UNITS = {"us": 1, "ms": 10**3, "s": 10**6}
MIN_RATE_BITS = 8000  # below this tbf cannot pass a full-size (1514-byte) frame within a second
CFS_PERIOD_US = 100_000  # the kernel's default period (also what docker --cpus uses)
CFS_MIN_QUOTA_US = 1_000  # cgroup v1 refuses quotas below 1 ms
CFS_MAX_PERIOD_US = 1_000_000  # and periods above 1 s


class ScenarioError(Exception):
    """A bad scenario; the message reads FILE:LINE:COL: what was expected."""


@dataclasses.dataclass(frozen=True)
class Setting:
    """One key of a node's settings: the value in base units (bit/s, us, fraction), the text as written,
    and where it was written (a PyYAML mark)."""
    value: object
    text: str
    mark: object


@dataclasses.dataclass(frozen=True)
class NodePlan:
    """What one rank gets; None where the scenario leaves it unshaped."""
    rank: int
    rate_bits: int | None
    delay_us: int | None
    quota_us: int | None
    period_us: int | None
    cpu_share: float | None


@dataclasses.dataclass
class Scenario:
    path: str
    default: dict  # key -> Setting
    nodes: dict  # rank -> (mark of the rank key, {key -> Setting})
    churn: list = dataclasses.field(default_factory=list)  # (mark of the rank, rank, at_s, down_s, how)
    hostile: list = dataclasses.field(default_factory=list)  # (mark of the rank, rank, attack)

    def settings(self, rank):
        """The default's settings with rank's own on top."""
        merged = dict(self.default)
        merged.update(self.nodes.get(rank, (None, {}))[1])
        return merged

    def check_nodes(self, n):
        """Raises ScenarioError when the scenario names a rank a run of n nodes does not have."""
        for mark, rank, *_ in self.churn:
            if rank >= n:
                raise error(self.path, mark, f"churn: rank {rank} does not exist in this run: expected a rank in "
                                             f"0..{n - 1} (the run has {n} nodes)")
        for mark, rank, _ in self.hostile:
            if rank >= n:
                raise error(self.path, mark, f"hostile: rank {rank} does not exist in this run: expected a rank in "
                                             f"0..{n - 1} (the run has {n} nodes)")
        for rank, (mark, _) in sorted(self.nodes.items()):
            if rank >= n:
                raise error(self.path, mark, f"rank {rank} does not exist in this run: expected a rank in "
                                             f"0..{n - 1} (the run has {n} nodes)")

    def describe(self):
        """One line: the default's settings, then each group of ranks with the same own settings."""
        parts = [settings_text(self.default)] if self.default else []
        groups = {}
        for rank in sorted(self.nodes):
            groups.setdefault(settings_text(self.nodes[rank][1]), []).append(str(rank))
        for text, ranks in groups.items():
            parts.append(f"{'ranks' if len(ranks) > 1 else 'rank'} {','.join(ranks)}: {text or 'as default'}")
        if self.churn:
            parts.append("churn " + ", ".join(f"rank {r} {how} at {at:g} s for {down:g} s"
                                              for _, r, at, down, how in self.churn))
        if self.hostile:
            parts.append("hostile " + ", ".join(f"rank {r} {attack}" for _, r, attack in self.hostile))
        return "; ".join(parts) or "unshaped"

    def plan(self, n, cpus):
        """Every rank's settings for a run of n nodes on a machine of cpus online CPUs."""
        self.check_nodes(n)
        return [self.node_plan(rank, n, cpus) for rank in range(n)]

    def node_plan(self, rank, n, cpus):
        s = self.settings(rank)
        value = lambda key: s[key].value if key in s else None  # noqa: E731
        share = value("cpu_share")
        quota = period = None
        if share is not None:
            fraction = share * cpus / n  # of one CPU
            quota, period = cfs_quota(fraction)
            if quota is None:
                raise error(self.path, s["cpu_share"].mark,
                            f"rank {rank}: cpu_share {share:g} of a fair share of {cpus} CPUs / {n} nodes is "
                            f"{fraction:.3%} of one CPU: expected at least 0.1 % (a cgroup v1 quota of 1 ms per "
                            "1 s period)")
        return NodePlan(rank, value("rate"), value("delay"), quota, period, share)


def cfs_quota(fraction):
    """(quota_us, period_us) giving fraction of one CPU: period 100 ms, or longer (up to 1 s) when the
    quota would be under the kernel's 1 ms minimum; (None, None) when even 1 s is too short."""
    quota = round(fraction * CFS_PERIOD_US)
    if quota >= CFS_MIN_QUOTA_US:
        return quota, CFS_PERIOD_US
    period = round(CFS_MIN_QUOTA_US / fraction)
    if period > CFS_MAX_PERIOD_US:
        return None, None
    return CFS_MIN_QUOTA_US, period


def settings_text(settings):
    return ", ".join(f"{key} {settings[key].text}" for key in NODE_KEYS if key in settings)


def error(path, mark, what):
    """The ScenarioError for what was expected at mark (PyYAML marks count from 0)."""
    if mark is None:
        return ScenarioError(f"{path}:1:1: {what}")
    return ScenarioError(f"{path}:{mark.line + 1}:{mark.column + 1}: {what}")


# ---- reading -------------------------------------------------------------------------------------

def load(path):
    """The Scenario in the file at path; raises ScenarioError naming the line and column of the
    first thing that is not as expected."""
    root = compose(path)
    top = mapping(path, root, "a mapping with the keys default and/or nodes")
    scenario = Scenario(path, {}, {})
    for key_node, value_node in unique_items(path, top, lambda k: k.value):
        if key_node.value not in TOP_KEYS:
            raise error(path, key_node.start_mark, f"unknown key '{key_node.value}': expected one of "
                                                   f"{', '.join(TOP_KEYS)}")
        if key_node.value == "default":
            scenario.default = node_settings(path, value_node)
        elif key_node.value == "churn":
            scenario.churn = churn_list(path, value_node)
        elif key_node.value == "hostile":
            scenario.hostile = hostile_list(path, value_node)
        else:
            scenario.nodes = node_table(path, value_node)
    return scenario


def churn_list(path, node):
    """churn: [{rank, at_s, down_s, how: kill|stop}] (qgossip launch --churn applies it; its reader,
    node/config/churn_file.hpp, is the authority; this checks the same before anything starts)."""
    import yaml
    if not isinstance(node, yaml.SequenceNode):
        raise error(path, node.start_mark, "churn: expected a list of {rank, at_s, down_s, how}")
    events = []
    for i, item in enumerate(node.value):
        fields = {}
        for key_node, value_node in unique_items(path, mapping(path, item, "{rank, at_s, down_s, how}"),
                                                 lambda k: k.value):
            if key_node.value not in CHURN_KEYS:
                raise error(path, key_node.start_mark, f"churn[{i}]: unknown key '{key_node.value}': expected one of "
                                                       f"{', '.join(CHURN_KEYS)}")
            fields[key_node.value] = value_node
        for key in ("rank", "at_s", "down_s"):
            if key not in fields:
                raise error(path, item.start_mark, f"churn[{i}]: {key} is missing")
        rank = churn_number(path, fields["rank"], f"churn[{i}].rank", int, lambda v: v >= 0, "a rank >= 0")
        at_s = churn_number(path, fields["at_s"], f"churn[{i}].at_s", float, lambda v: v >= 0, "seconds >= 0")
        down_s = churn_number(path, fields["down_s"], f"churn[{i}].down_s", float, lambda v: v > 0, "seconds > 0")
        how = scalar_text(path, fields["how"], "kill or stop") if "how" in fields else "kill"
        if how not in ("kill", "stop"):
            raise error(path, fields["how"].start_mark, f"churn[{i}].how: expected kill or stop, received '{how}'")
        events.append((fields["rank"].start_mark, rank, at_s, down_s, how))
    return events


def hostile_list(path, node):
    """hostile: [{rank, attack, ...}]: the rank and the attack's name, checked before anything
    starts; the attack's parameters are qgossip's to check (node/config/hostile_file.hpp)."""
    import yaml
    if not isinstance(node, yaml.SequenceNode):
        raise error(path, node.start_mark, "hostile: expected a list of {rank, attack, from_round, ...}")
    entries = []
    for i, item in enumerate(node.value):
        fields = {k.value: v for k, v in unique_items(path, mapping(path, item, "{rank, attack, ...}"),
                                                          lambda k: k.value)}
        for key in ("rank", "attack"):
            if key not in fields:
                raise error(path, item.start_mark, f"hostile[{i}]: {key} is missing")
        rank = churn_number(path, fields["rank"], f"hostile[{i}].rank", int, lambda v: v >= 0, "a rank >= 0")
        attack = scalar_text(path, fields["attack"], "an attack")
        if attack not in ATTACKS:
            raise error(path, fields["attack"].start_mark, f"hostile[{i}].attack: expected one of {', '.join(ATTACKS)}, "
                                                           f"received '{attack}'")
        entries.append((fields["rank"].start_mark, rank, attack))
    return entries


def churn_number(path, node, what, kind, ok, expected):
    text = scalar_text(path, node, expected)
    try:
        value = kind(text)
    except ValueError:
        value = None
    if value is None or value != value or value in (float("inf"), float("-inf")) or not ok(value):
        raise error(path, node.start_mark, f"{what}: expected {expected}, received '{text}'")
    return value


def compose(path):
    """The file's YAML node tree (marks kept); one document, not empty."""
    import yaml

    try:
        with open(path) as f:
            root = yaml.compose(f, Loader=yaml.SafeLoader)
    except OSError as e:
        raise ScenarioError(f"{path}: cannot read: {e.strerror}") from None
    except yaml.MarkedYAMLError as e:
        raise error(path, e.problem_mark, f"invalid YAML: {e.problem}") from None
    if root is None:
        raise error(path, None, "expected a mapping with the keys default and/or nodes (the file is empty)")
    return root


def mapping(path, node, expected):
    import yaml

    if not isinstance(node, yaml.MappingNode):
        raise error(path, node.start_mark, f"expected {expected}")
    return node


def unique_items(path, node, key_of):
    """The (key, value) node pairs of a mapping node; a key given twice is an error at its second place."""
    seen = set()
    for key_node, value_node in node.value:
        key = key_of(key_node)
        if key in seen:
            raise error(path, key_node.start_mark, f"'{key_node.value}' is given twice: expected each key once")
        seen.add(key)
    return node.value


def node_table(path, node):
    """nodes: {rank: settings}."""
    table = {}
    what = "a mapping of rank: settings, e.g. {3: {cpu_share: 0.2}}"
    for key_node, value_node in unique_items(path, mapping(path, node, what), lambda k: rank_of(path, k)):
        table[rank_of(path, key_node)] = (key_node.start_mark, node_settings(path, value_node))
    return table


def rank_of(path, key_node):
    if key_node.tag != "tag:yaml.org,2002:int" or not re.fullmatch(r"[0-9]+", key_node.value):
        raise error(path, key_node.start_mark, f"rank '{key_node.value}': expected a rank, a decimal integer >= 0")
    return int(key_node.value)


def node_settings(path, node):
    """{rate, delay, cpu_share} of one node (or of the default)."""
    settings = {}
    what = "a mapping of node settings: {rate: 10mbit, delay: 50ms, cpu_share: 0.5} (each optional)"
    for key_node, value_node in unique_items(path, mapping(path, node, what), lambda k: k.value):
        key = key_node.value
        if key not in NODE_KEYS:
            raise error(path, key_node.start_mark, f"unknown key '{key}': expected one of {', '.join(NODE_KEYS)}")
        settings[key] = PARSERS[key](path, value_node)
    return settings


def scalar_text(path, node, expected):
    import yaml

    if not isinstance(node, yaml.ScalarNode) or node.tag == "tag:yaml.org,2002:null":
        raise error(path, node.start_mark, f"expected {expected}")
    return node.value


def with_unit(path, node, key, units, example):
    """A positive number followed by one of units, in the smallest unit (rounded)."""
    expected = f"{key} as a number > 0 and one of {', '.join(units)}, e.g. {example}"
    text = scalar_text(path, node, expected)
    m = re.fullmatch(r"([-+]?[0-9]+(?:\.[0-9]+)?)(" + "|".join(units) + ")", text)
    if not m:
        raise error(path, node.start_mark, f"{key} '{text}': expected {expected}")
    value = round(float(m.group(1)) * units[m.group(2)])
    if value <= 0:
        smallest = min(units, key=units.get)
        raise error(path, node.start_mark, f"{key} '{text}': expected a {key} > 0 (at least 1 {smallest})")
    return Setting(value, text, node.start_mark)


def parse_rate(path, node):
    s = with_unit(path, node, "rate", RATE_UNITS, "10mbit (tc's decimal units; only bit rates: tc's mbps means bytes)")
    if s.value < MIN_RATE_BITS:
        raise error(path, node.start_mark, f"rate '{s.text}': expected at least 8kbit (below it tbf cannot pass "
                                           "a full-size packet in a second)")
    return s


def parse_delay(path, node):
    return with_unit(path, node, "delay", DELAY_UNITS, "50ms")


def parse_cpu_share(path, node):
    expected = "cpu_share as a number in (0, 1]: a fraction of the node's fair share of the CPUs, e.g. 0.2"
    text = scalar_text(path, node, expected)
    if node.tag not in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float"):
        raise error(path, node.start_mark, f"cpu_share '{text}': expected {expected}")
    import yaml

    value = float(yaml.safe_load(text))
    if not math.isfinite(value) or value <= 0:
        raise error(path, node.start_mark, f"cpu_share {text}: expected a cpu_share > 0")
    if value > 1:
        raise error(path, node.start_mark, f"cpu_share {text}: expected at most 1 (1 = the node's whole fair "
                                           "share of the CPUs, online CPUs / n nodes)")
    return Setting(value, text, node.start_mark)


PARSERS = {"rate": parse_rate, "delay": parse_delay, "cpu_share": parse_cpu_share}


# ---- command line --------------------------------------------------------------------------------

def plan_lines(plans):
    dash = lambda v: "-" if v is None else f"{v:g}" if isinstance(v, float) else str(v)  # noqa: E731
    return [" ".join(dash(getattr(p, f.name)) for f in dataclasses.fields(p)) for p in plans]


def parse_args(argv):
    p = argparse.ArgumentParser(prog="scenario.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    v = sub.add_parser("validate", help="check FILE (exit 0: valid; 2: FILE:LINE:COL: what was expected)")
    v.add_argument("--nodes", type=int, help="the run's number of nodes: every rank named must exist")
    d = sub.add_parser("describe", help="one line: the scenario's settings, for tables")
    pl = sub.add_parser("plan", help="per rank: rank rate_bits delay_us quota_us period_us cpu_share ('-' = unset)")
    pl.add_argument("--nodes", type=int, required=True, help="the run's number of nodes")
    pl.add_argument("--json", action="store_true", help="a JSON list of objects instead of lines")
    for s in (v, pl):
        s.add_argument("--cpus", type=int, default=os.cpu_count(),
                       help="online CPUs, for cpu_share's fair share (default: this machine's, %(default)s)")
    c = sub.add_parser("has-churn", help="exit 0 when FILE has a churn: list (qgossip launch --churn), 1 when not")
    hl = sub.add_parser("has-launch-lists",
                        help="exit 0 when FILE has a churn: or a hostile: list (qgossip launch --scenario), 1 when not")
    for s in (v, d, pl, c, hl):
        s.add_argument("file", metavar="FILE")
    args = p.parse_args(argv)
    if getattr(args, "nodes", None) is not None and args.nodes < 1:
        p.error(f"--nodes {args.nodes}: expected at least 1")
    if getattr(args, "cpus", None) is not None and args.cpus < 1:
        p.error(f"--cpus {args.cpus}: expected at least 1")
    return args


def run(args):
    scenario = load(args.file)
    if args.command == "has-churn":
        return 0 if scenario.churn else 1
    if args.command == "has-launch-lists":
        return 0 if scenario.churn or scenario.hostile else 1
    if args.command == "describe":
        print(scenario.describe())
    elif args.command == "validate":
        if args.nodes is not None:
            scenario.plan(args.nodes, args.cpus)
    elif args.json:
        print(json.dumps([dataclasses.asdict(p) for p in scenario.plan(args.nodes, args.cpus)]))
    else:
        print("\n".join(plan_lines(scenario.plan(args.nodes, args.cpus))))


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        import yaml  # noqa: F401
    except ImportError:
        print("scenario.py: needs PyYAML (apt-get install python3-yaml)", file=sys.stderr)
        return 2
    try:
        return run(args) or 0
    except ScenarioError as e:
        print(e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
