#!/usr/bin/python3
"""Checks the rules of the house that a reader should not have to take on trust (docs/design.md):

  layers     an include never runs from a lower layer up to a higher one (LAYERS below, lowest
             first; areas in one layer may include each other);
  cycles     no two files include each other, directly or through others;
  rooms      inside node/run, an include never runs from a lower room up to a higher one (RUN_ROOMS),
             and no two files' stems include each other (an interface's .cpp including the headers of
             its implementations, which include the interface: an upward arrow);
  attacks    a hostile node's attacks stay apart from the honest code (docs/security.md): no file of
             node/run, gossip/ or algorithms/ but ATTACK_DOORS includes node/attack/ or names the
             forger, attack_spec or poison_labels in its code (comments may);
  length     no function in any source folder is longer than 80 lines.

Usage: scripts/check_design.py [REPO_ROOT]     (exit 0: all hold; 1: each breach listed, file:line)

What it reads: the #include "..." lines of every .hpp/.cpp/.cu/.cuh under the source folders
(system headers <...> are not the project's). A function's length is counted from the line of its
opening brace to its closing one, for every block at namespace scope whose header has a parameter
list (free functions, out-of-class members, constructors with their initializer lists); members
defined inside a class body are not counted.
"""
import os
import re
import sys

SOURCE_DIRS = ("core", "kernels", "algorithms", "topology", "gossip", "node", "python")
SUFFIXES = (".hpp", ".cpp", ".cu", ".cuh", ".h")
# Lowest first. Generated headers (build/.../qgossip/...) sit below everything.
LAYERS = [
    ["qgossip", "core"],
    ["kernels/cpu"],
    ["kernels/cuda"],
    ["algorithms/compress", "topology", "gossip", "gossip/exchange"],
    ["algorithms", "gossip/zmq", "gossip/inproc"],
    ["node/data", "node/optim", "node/attack"],
    ["node/models"],
    ["node/config"],
    ["node/membership"],
    ["node/checkpoint", "node/log"],
    ["node/run"],
    ["node/launch"],
    ["node/cli"],
    ["python"],
]
# node/run's own rooms, lowest first (docs/design.md, "A node, and the round as a table of
# contents"): an include inside node/run stays in its room or runs down to a lower one. Every file
# of node/run (by its stem) is in exactly one room.
RUN_ROOMS = [
    ("control", ["run_control", "start_up"]),
    ("parts", ["message_codec", "message_inbox", "learner", "plan", "resume", "node_network", "departures",
               "halt_agreement", "start_check", "returns", "returns_join", "node_membership", "local_training",
               "link_events", "loss_screen", "round_thread"]),
    ("patterns", ["round_pattern", "gossip_round", "ring_round", "edge_messages", "async_gossip_round"]),
    ("set-up", ["pattern_factory", "hostile_round", "links", "node_setup", "consensus_probe"]),
    ("loop", ["round_steps", "round_checkpoint", "round_driver", "node_runner", "node_session"]),
]
# The only files outside node/attack/ (and the layers above node/run) that may know a hostile node:
# the set-up that builds it and the round pattern that wraps the honest one.
ATTACK_DOORS = ("node/run/node_setup.hpp", "node/run/node_setup.cpp", "node/run/hostile_round.hpp",
                "node/run/hostile_round.cpp")
ATTACK_DIRS = ("node/run/", "gossip/", "algorithms/")
ATTACK_NAMES = re.compile(r"\b(forger|attack_spec|poison_labels)\b")
LENGTH_LIMIT = 80
LENGTH_DIRS = SOURCE_DIRS
INCLUDE = re.compile(r'\s*#\s*include\s+"([^"]+)"')


def area(path):
    parts = path.split("/")
    if len(parts) > 2 and (parts[0] in ("node", "gossip", "kernels") or (parts[0], parts[1]) == ("algorithms", "compress")):
        return parts[0] + "/" + parts[1]
    return parts[0]


def level(a):
    for i, layer in enumerate(LAYERS):
        if a in layer:
            return i
    return None


def sources(root):
    for d in SOURCE_DIRS:
        for dirpath, _, files in os.walk(os.path.join(root, d)):
            for f in sorted(files):
                if f.endswith(SUFFIXES):
                    yield os.path.relpath(os.path.join(dirpath, f), root)


def includes(root, path):
    with open(os.path.join(root, path), errors="replace") as f:
        for number, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if m and "/" in m.group(1):
                yield number, m.group(1)


def check_layers(root, files, problems):
    for path in files:
        here = area(path)
        for number, target in includes(root, path):
            there = area(target)
            lo, hi = level(here), level(there)
            if lo is None:
                problems.append(f"{path}:{number}: area '{here}' is in no layer of scripts/check_design.py")
            elif hi is None:
                problems.append(f"{path}:{number}: includes {target}, whose area '{there}' is in no layer")
            elif hi > lo:
                problems.append(f"{path}:{number}: {here} (layer {lo}) includes {target} from the higher {there} (layer {hi})")


def run_room(path):
    """(index, name) of the node/run room of `path`, or None when it has none."""
    stem = os.path.splitext(os.path.basename(path))[0]
    for i, (name, stems) in enumerate(RUN_ROOMS):
        if stem in stems:
            return i, name
    return None


def check_run_rooms(root, files, problems):
    for path in files:
        if area(path) != "node/run":
            continue
        here = run_room(path)
        if here is None:
            problems.append(f"{path}:1: in no room of node/run (RUN_ROOMS in scripts/check_design.py)")
            continue
        for number, target in includes(root, path):
            if area(target) != "node/run":
                continue
            there = run_room(target)
            if there is not None and there[0] > here[0]:
                problems.append(f"{path}:{number}: node/run's {here[1]} room includes {target} from the higher "
                                f"{there[1]} room")


def check_run_stems(root, files, problems):
    """Inside node/run: a stem whose files include a stem whose files include it back."""
    stem = lambda p: os.path.splitext(p)[0]
    edges = {}
    for path in files:
        if area(path) == "node/run":
            for number, target in includes(root, path):
                if area(target) == "node/run" and stem(target) != stem(path):
                    edges.setdefault(stem(path), {}).setdefault(stem(target), (path, number))
    for a, targets in sorted(edges.items()):
        for b, (path, number) in sorted(targets.items()):
            if a in edges.get(b, {}) and a < b:
                back_path, back_number = edges[b][a]
                problems.append(f"{path}:{number}: includes {b}.hpp, whose {back_path}:{back_number} includes "
                                f"{os.path.basename(a)} back (an upward arrow: move one side to a file of its own)")


def check_attacks_apart(root, files, problems):
    for path in files:
        if not path.startswith(ATTACK_DIRS) or path in ATTACK_DOORS:
            continue
        for number, target in includes(root, path):
            if target.startswith("node/attack/"):
                problems.append(f"{path}:{number}: includes {target}: only {', '.join(ATTACK_DOORS)} may")
        with open(os.path.join(root, path), errors="replace") as f:
            for number, raw in enumerate(f, 1):
                m = ATTACK_NAMES.search(STRIP.sub('""', raw))
                if m:
                    problems.append(f"{path}:{number}: names {m.group(1)}, which only the hostile node's files "
                                    f"({', '.join(ATTACK_DOORS)}) may")


def check_cycles(root, files, problems):
    graph = {p: [t for _, t in includes(root, p) if os.path.exists(os.path.join(root, t))] for p in files}
    state, stack = {}, []

    def visit(p):
        state[p] = "open"
        stack.append(p)
        for q in graph.get(p, []):
            if state.get(q) == "open":
                problems.append("include cycle: " + " -> ".join(stack[stack.index(q):] + [q]))
            elif q not in state:
                visit(q)
        stack.pop()
        state[p] = "done"

    sys.setrecursionlimit(10000)
    for p in files:
        if p not in state:
            visit(p)


STRIP = re.compile(r'"(\\.|[^"\\])*"|\'(\\.|[^\'\\])*\'|//.*$')


def blocks(lines):
    """(first line, last line, header text) of every brace block opened at namespace depth: functions,
    and also namespaces and classes, which the caller tells apart by their header."""
    depth, namespaces, start, header = 0, 0, None, []
    for i, raw in enumerate(lines):
        line = STRIP.sub('""', raw)
        if depth == namespaces and start is None:
            header = (header + [line])[-6:]
        for ch in line:
            if ch == "{":
                if depth == namespaces and start is None:
                    text = " ".join(header)
                    if re.search(r"\bnamespace\b[^;()]*$", text):
                        namespaces += 1
                    else:
                        start = i
                        head = text
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth < namespaces:
                    namespaces = depth
                if start is not None and depth == namespaces:
                    yield start, i, head
                    start, header = None, []
        if line.strip().endswith((";", "}")) and start is None:
            header = []


def check_lengths(root, files, problems):
    for path in files:
        if not path.startswith(LENGTH_DIRS) or not path.endswith(".cpp"):
            continue
        with open(os.path.join(root, path), errors="replace") as f:
            lines = f.read().split("\n")
        for first, last, head in blocks(lines):
            if "(" not in head or re.search(r"\b(struct|class|enum|union)\b[^(]*\{", head):
                continue  # a type, an array or an initializer, not a function
            length = last - first + 1
            if length > LENGTH_LIMIT:
                problems.append(f"{path}:{first + 1}: a function of {length} lines (at most {LENGTH_LIMIT})")


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    files = list(sources(root))
    problems = []
    check_layers(root, files, problems)
    check_cycles(root, files, problems)
    check_run_rooms(root, files, problems)
    check_run_stems(root, files, problems)
    check_attacks_apart(root, files, problems)
    check_lengths(root, files, problems)
    for p in problems:
        print(p)
    print(f"check_design: {len(files)} files, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
