#!/usr/bin/env python3
"""Fails when a source comment or a document names a repository file that does not exist.

Usage: scripts/check_comment_paths.py [REPO_ROOT]     (default: the repository holding this script)
Exit 0 when every path named exists; 1 with one line per missing path, `FILE:LINE: PATH does not
exist`; 2 when REPO_ROOT is not a directory. CTest runs it as the `comment_paths` test.

What is read (the tracked files, from `git ls-files`; without git, every file under REPO_ROOT but
.git/, build*/ and runs/):
  C++ (.cpp .hpp .h .cc .cu .cuh, and .in templates)  // and /* */ comments; string, character and
                                                       raw string literals are skipped
  Python (.py)                                         # comments and docstrings
  CMake (CMakeLists.txt, .cmake) and shell (.sh)       # comments outside quotes
  a file without extension that starts with #!         as Python or shell, by its interpreter
  Markdown: README.md and docs/**/*.md                 the whole text, and the targets of links
                                                       [text](target), resolved from the file's folder

What counts as a repository path (a word of letters, digits and _ . - / with at least one '/'):
  - its first part is an entry at the top of the repository (node/, docs/, scripts/, README.md, ...);
  - and it names a file (its last part has an extension: node/run/round_steps.hpp, docs/failures.md)
    or a folder by its trailing '/' (gossip/zmq/). A bare `node/log` is prose-ambiguous and skipped;
  - a simple brace list stands for each of its words: node/launch/progress.{hpp,cpp} is checked as
    node/launch/progress.hpp and node/launch/progress.cpp;
  - a sentence's final '.' is not part of it.
What is never a repository path (skipped):
  - URLs (from the scheme's "://" to the next space) and words that start with '/', '.', '~' or
    follow one of ':@$': /usr/include/..., ./build/qgossip, ~/.cache/..., $HOME/x, host:path;
  - patterns: a word with any of < > * ? [ ] $ % =, an unbalanced brace or braces without a comma:
    node-<r>.csv, runs/<name>/, algorithms/*, shard-{r}.npy written as a format;
  - anything whose first part is not at the top of the repository: runs/..., build/..., the
    generated qgossip/build_config.hpp, a data set's train-images-idx3-ubyte, /dev/shm/...
A capitalised document named bare (the shared notes' DESIGN, ALGORITHMS and STYLE, each with .md)
must exist at the top of the repository: the shared notes are not in it, so a comment cites docs/.
A path that is named on purpose although it is gone (a note on what was removed) is written as
prose instead, e.g. "the old json_writer", or with a pattern character.
PENDING below lists stale paths in files that other work owns at the moment: they are printed as
"pending" and do not fail the check; remove an entry once its file is fixed (the check says when).
Standard library only.
"""
import ast
import io
import os
import re
import subprocess
import sys
import tokenize

# (file, path named in it): stale, to be fixed by the work that owns the file now (node/run/* and
# node/config/* are being reworked as this check lands).
PENDING = set()
CXX_EXT = (".cpp", ".hpp", ".h", ".cc", ".cu", ".cuh", ".in")
HASH_EXT = (".cmake", ".sh")
# Candidate words: maximal runs of path characters, pattern characters and brace lists.
WORD = re.compile(r"[\w.\-/{},<>*?\[\]$%=]+")
PATTERN_CHARS = set("<>*?[]$%=")
URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://\S*")
MD_LINK = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
BRACES = re.compile(r"\{([^{}]*)\}")


def expand_braces(word):
    """The words a simple brace list stands for; [] when the braces are not simple lists."""
    m = BRACES.search(word)
    if not m:
        return [] if "{" in word or "}" in word else [word]
    if "," not in m.group(1):  # {r}: a format's placeholder, not a list
        return []
    out = []
    for alt in m.group(1).split(","):
        out += expand_braces(word[:m.start()] + alt + word[m.end():])
    return out


def split_outside_braces(word):
    parts, depth, start = [], 0, 0
    for i, c in enumerate(word):
        depth += c == "{"
        depth -= c == "}"
        if c == "," and depth == 0:
            parts.append(word[start:i])
            start = i + 1
    parts.append(word[start:])
    return parts


def candidate_paths(text, top):
    """The repository paths named in one line of text (see the rules at the top)."""
    text = URL.sub(" ", text)
    found = []
    for m in WORD.finditer(text):
        before = text[m.start() - 1] if m.start() > 0 else " "
        if before in ":@$~":
            continue
        for piece in split_outside_braces(m.group(0)):
            if not piece or PATTERN_CHARS & set(piece) or piece[0] in "./-{":
                continue
            for path in expand_braces(piece):
                path = path.rstrip(".-,")
                if "/" not in path or path.split("/", 1)[0] not in top:
                    continue
                last = path.rstrip("/").rsplit("/", 1)[-1]
                if path.endswith("/") or re.search(r"\.[A-Za-z0-9]+$", last):
                    found.append(path)
    return found


# ---- comments, by language: each yields (line number, text) ---------------------------------------

def cxx_comments(source):
    """// and /* */ comments, skipping "strings", 'c' characters and R"d(raw strings)d"."""
    i, line, n = 0, 1, len(source)
    while i < n:
        c = source[i]
        if c == "\n":
            line += 1
            i += 1
        elif source.startswith("//", i):
            end = source.find("\n", i)
            end = n if end < 0 else end
            yield line, source[i + 2:end]
            i = end
        elif source.startswith("/*", i):
            end = source.find("*/", i + 2)
            end = n if end < 0 else end
            for k, text in enumerate(source[i + 2:end].split("\n")):
                yield line + k, text
            line += source.count("\n", i, end)
            i = end + 2
        elif c == "R" and source.startswith('R"', i) and (i == 0 or not (source[i - 1].isalnum() or source[i - 1] == "_")):
            m = re.match(r'R"([^()\\ ]{0,16})\(', source[i:])
            if not m:
                i += 1
                continue
            end = source.find(")" + m.group(1) + '"', i)
            end = n if end < 0 else end + len(m.group(1)) + 2
            line += source.count("\n", i, end)
            i = end
        elif c in "\"'":
            if c == "'" and i > 0 and source[i - 1].isalnum():  # a digit separator: 1'000'000
                i += 1
                continue
            j = i + 1
            while j < n and source[j] != c and source[j] != "\n":
                j += 2 if source[j] == "\\" else 1
            i = j + 1
        else:
            i += 1


def python_comments(source):
    """# comments and the docstrings of the module, classes and functions."""
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                yield tok.start[0], tok.string[1:]
    except (tokenize.TokenError, SyntaxError):
        pass
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                for k, text in enumerate(first.value.value.split("\n")):
                    yield first.lineno + k, text


def hash_comments(source):
    """# comments of CMake and shell files: a '#' outside quotes that starts a word ($# and ${#x} do not)."""
    for number, text in enumerate(source.split("\n"), 1):
        quote = None
        for i, c in enumerate(text):
            if quote:
                if c == "\\" and quote == '"':
                    continue
                if c == quote:
                    quote = None
            elif c in "\"'":
                quote = c
            elif c == "#" and (i == 0 or text[i - 1] in " \t;(") and not text[max(0, i - 2):i].endswith("${"):
                yield number, text[i + 1:]
                break


def markdown_lines(source):
    for number, text in enumerate(source.split("\n"), 1):
        yield number, text


# ---- the check -------------------------------------------------------------------------------

def tracked_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True, check=True).stdout
        return [f for f in out.decode().split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if x != ".git" and x != "runs" and not x.startswith("build")]
            files += [os.path.relpath(os.path.join(d, x), root) for x in names]
        return files


def comments_of(rel, source):
    name = os.path.basename(rel)
    if "." not in name and source.startswith("#!"):
        interpreter = source.split("\n", 1)[0]
        return python_comments(source) if "python" in interpreter else hash_comments(source)
    if rel.endswith(".md"):
        if rel == "README.md" or rel.startswith("docs/"):
            return markdown_lines(source)
        return iter(())
    if rel.endswith(CXX_EXT):
        return cxx_comments(source)
    if rel.endswith(".py"):
        return python_comments(source)
    if name == "CMakeLists.txt" or rel.endswith(HASH_EXT):
        return hash_comments(source)
    return iter(())


def link_problems(rel, number, text, root):
    """Markdown links whose target, from the file's folder, does not exist."""
    for m in MD_LINK.finditer(text):
        target = m.group(1).split("#", 1)[0]
        if not target or re.match(r"[A-Za-z][A-Za-z0-9+.\-]*:", target):
            continue
        path = os.path.normpath(os.path.join(os.path.dirname(rel), target))
        if not os.path.exists(os.path.join(root, path)):
            yield f"{rel}:{number}: {target} does not exist (link)"


# A document named bare, by its capitalised name alone (NAME followed by .md): it must be one at
# the top of the repository (README.md). The project's shared design notes live outside it; a comment
# cites what the repository holds (docs/design.md), or names the outside one by its folder.
BARE_DOC = re.compile(r"(?<![\w/.\-])([A-Z][A-Z_]*\.md)\b")


def bare_document_problems(rel, number, text, root):
    for name in BARE_DOC.findall(text):
        if not os.path.exists(os.path.join(root, name)):
            yield f"{rel}:{number}: {name} is not in this repository (cite docs/, e.g. docs/design.md)"


def check(root, pending=frozenset()):
    """(problems, pending found): `FILE:LINE: PATH does not exist` lines; those of `pending` apart."""
    files = tracked_files(root)
    top = {f.split("/", 1)[0] for f in files}
    problems, waiting = [], []
    for rel in sorted(files):
        full = os.path.join(root, rel)
        try:
            with open(full, encoding="utf-8") as f:
                source = f.read()
        except (OSError, UnicodeDecodeError):
            continue
        for number, text in comments_of(rel, source):
            for path in candidate_paths(text, top):
                if not os.path.exists(os.path.join(root, path)):
                    (waiting if (rel, path) in pending else problems).append(f"{rel}:{number}: {path} does not exist")
            problems += bare_document_problems(rel, number, text, root)
            if rel.endswith(".md"):
                problems += link_problems(rel, number, text, root)
    return problems, waiting


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not os.path.isdir(root):
        print(f"check_comment_paths: {root}: not a directory", file=sys.stderr)
        return 2
    problems, waiting = check(root, PENDING)
    for p in waiting:
        print(f"pending (owned elsewhere): {p}", file=sys.stderr)
    for rel, path in sorted(PENDING):
        if not any(w.startswith(rel + ":") and w.endswith(f" {path} does not exist") for w in waiting):
            print(f"check_comment_paths: PENDING entry ({rel}, {path}) is fixed; remove it", file=sys.stderr)
    for p in problems:
        print(p)
    if problems:
        print(f"check_comment_paths: {len(problems)} path(s) named in comments or docs do not exist", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
