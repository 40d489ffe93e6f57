#!/usr/bin/env python3
# SPDX-License-Identifier: MPL-2.0
"""longfuncs.py [--max N] [PATH...] -- the C functions longer than N lines
(default 100), longest first: "lines file:line name".  A function is counted
from the line of its opening brace to the line of its closing brace, both
included (the body); the house style puts both braces of a function in
column 0, which is what this reads.  PATH is a file or a folder (searched for
*.c); default components/ and server-stub/ of the source tree.  Exit 0 always:
a measurement (the lead's closing note shows it before and after).
Example: scripts/longfuncs.py --max 80 components/client"""
import os
import re
import sys

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def functions(path):
    """Yields (name, first line of the body, body lines) for path's functions."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        lines = fh.read().split("\n")
    i = 0
    while i < len(lines):
        if lines[i] == "{" and i > 0:
            # the signature: the lines above back to one starting in column 0
            j = i - 1
            while j > 0 and (lines[j].startswith((" ", "\t")) or not lines[j]) and not lines[j - 1].endswith((";", "}")):
                j -= 1
            sig = " ".join(lines[j:i])
            m = NAME.search(sig.split("(")[0] + "(") if "(" in sig else None
            k = i + 1
            while k < len(lines) and lines[k] != "}" and not lines[k].startswith("};"):
                k += 1
            if m and "=" not in sig.split("(")[0]:  # not an initialiser
                yield m.group(1), i + 1, k - i + 1
            i = k
        i += 1


def main(argv):
    args = argv[1:]
    limit = 100
    if args[:1] == ["--max"] and len(args) > 1:
        limit = int(args[1])
        args = args[2:]
    if args[:1] in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    paths = args or [os.path.join(SRC, "components"), os.path.join(SRC, "server-stub")]
    files = []
    for p in paths:
        if os.path.isdir(p):
            for dirpath, _, names in os.walk(p):
                files += [os.path.join(dirpath, n) for n in names if n.endswith(".c")]
        else:
            files.append(p)
    found = []
    for f in sorted(files):
        for name, line, n in functions(f):
            if n > limit:
                found.append((n, "%s:%d" % (os.path.relpath(f, SRC), line), name))
    for n, where, name in sorted(found, key=lambda x: (-x[0], x[1])):
        print("%4d %s %s" % (n, where, name))
    print("functions over %d lines: %d" % (limit, len(found)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
