#!/usr/bin/env python3
# SPDX-License-Identifier: MPL-2.0
"""filecycles.py BUILD_DIR [FOLDER...] -- the call cycles between the .c files
of one folder: file A "calls" file B when A's object leaves undefined a symbol
that B's object defines (nm).  Prints, per folder, each group of files that
reach one another (a strongly connected component of that graph) with the
symbols on each edge inside it, then "cycles: N".  FOLDER defaults to every
folder under components/ and server-stub/ that BUILD_DIR/obj holds objects for
(components/ itself included); objects whose .c is gone from the source
tree are left out.  Exit 0 always: a measurement, not a check.
Example: scripts/filecycles.py build-check server-stub/keyserver"""
import os
import subprocess
import sys

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def symbols(obj):
    """(defined, undefined) global symbol sets of one object file."""
    out = subprocess.run(["nm", "-P", "-g", obj], check=True, capture_output=True,
                         text=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind in ("U", "w", "v"):
            undefined.add(name)
        else:
            defined.add(name)
    return defined, undefined


def graph(objdir, srcdir=None):
    """{file: {other file: sorted symbols it calls there}} for objdir/*.o
    (with srcdir: only the objects whose .c is still there, so a stale object
    of a renamed file is not counted)."""
    objs = sorted(f for f in os.listdir(objdir) if f.endswith(".o") and
                  (srcdir is None or os.path.exists(os.path.join(srcdir, f[:-2] + ".c"))))
    syms = {o[:-2] + ".c": symbols(os.path.join(objdir, o)) for o in objs}
    owner = {}
    for f, (defined, _) in syms.items():
        for s in defined:
            owner[s] = f
    edges = {f: {} for f in syms}
    for f, (_, undefined) in syms.items():
        for s in undefined:
            g = owner.get(s)
            if g and g != f:
                edges[f].setdefault(g, []).append(s)
    for f in edges:
        for g in edges[f]:
            edges[f][g].sort()
    return edges


def components_of(edges):
    """Strongly connected components with more than one file (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(out)


def default_folders(build):
    folders = []
    for top in ("components", "server-stub"):
        root = os.path.join(build, "obj", top)
        for dirpath, _, files in os.walk(root):
            if any(f.endswith(".o") for f in files):
                folders.append(os.path.relpath(dirpath, os.path.join(build, "obj")))
    return sorted(folders)


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 2
    build = argv[1]
    folders = argv[2:] or default_folders(build)
    total = 0
    for folder in folders:
        objdir = os.path.join(build, "obj", folder)
        if not os.path.isdir(objdir):
            print("%s: no objects in %s (build it first)" % (folder, objdir))
            continue
        edges = graph(objdir, os.path.join(SRC, folder))
        comps = components_of(edges)
        print("%s: %d files, %d cycle group%s" % (folder, len(edges), len(comps),
                                                    "" if len(comps) == 1 else "s"))
        for comp in comps:
            total += 1
            print("  cycle: " + " <-> ".join(comp))
            for f in comp:
                for g in comp:
                    if g in edges[f]:
                        print("    %s -> %s: %s" % (f, g, ", ".join(edges[f][g])))
    print("cycles: %d" % total)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
