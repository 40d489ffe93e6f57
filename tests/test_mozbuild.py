#!/usr/bin/env python3
# SPDX-License-Identifier: MPL-2.0
"""test_mozbuild.py SRCDIR RESULTFILE -- checks moz.build against the tree.

moz.build is Python syntax.  Every file it names (in SOURCES, XPIDL_SOURCES, EXPORTS,
EXTRA_JS_MODULES, XPCSHELL_TESTS_MANIFESTS, LOCAL_INCLUDES), in any branch,
must exist, and every .c file under components/ must be named in SOURCES.
Every list literal is sorted the way mozbuild's StrictOrderingOnAppendList
demands (case-insensitively), or Gecko's reader raises.
tests/xpcshell/xpcshell.toml must be valid TOML (tomllib) with Gecko's keys:
a [DEFAULT] table with head = "head.js", one ["test_x.js"] table per test,
each naming a file that exists.
Prints one line per check and "mozbuild: P passed, F failed"."""
import ast
import os
import sys
import tomllib

FILE_VARS = {"SOURCES", "XPIDL_SOURCES", "EXTRA_JS_MODULES",
             "XPCSHELL_TESTS_MANIFESTS", "LOCAL_INCLUDES", "UNIFIED_SOURCES", "EXPORTS"}


def names_in(tree):
    """Yields (var, string) for every string literal assigned or added to a
    file variable, e.g. SOURCES += ['a.c'] or SOURCES['x'] anywhere."""
    for node in ast.walk(tree):
        target = value = None
        if isinstance(node, ast.AugAssign):
            target, value = node.target, node.value
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        if target is None:
            continue
        if isinstance(target, ast.Subscript):
            target = target.value
        while isinstance(target, ast.Attribute):
            target = target.value
        if not isinstance(target, ast.Name) or target.id not in FILE_VARS:
            continue
        for sub in ast.walk(value):
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                yield target.id, sub.value


def check_manifest(src, check):
    """xpcshell.toml: valid TOML, Gecko's [DEFAULT] keys, one table per test
    file named exactly as the file (a bare [test_x.js] header would parse
    as the table "test_x" holding a key "js")."""
    here = os.path.join(src, "tests", "xpcshell")
    path = os.path.join(here, "xpcshell.toml")
    try:
        with open(path, "rb") as fh:
            doc = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as e:
        check(False, "cannot parse %s: %s" % (path, e))
        return
    default = doc.get("DEFAULT", {})
    check(default.get("head") == "head.js", "xpcshell.toml: [DEFAULT] head is not head.js")
    check(default.get("firefox-appdir") == "browser",
          "xpcshell.toml: [DEFAULT] firefox-appdir is not browser")
    tests = [k for k in doc if k != "DEFAULT"]
    check(bool(tests), "xpcshell.toml lists no test")
    for name in tests:
        check(name.startswith("test_") and name.endswith(".js") and isinstance(doc[name], dict),
              "xpcshell.toml: %r is not a [\"test_x.js\"] table" % name)
        check(os.path.exists(os.path.join(here, name)), "xpcshell.toml names %s, which does not exist" % name)
    check(tests == sorted(tests), "xpcshell.toml: tests are not sorted")


def main():
    src, out = sys.argv[1], sys.argv[2]
    passed = failed = 0

    def check(ok, what):
        nonlocal passed, failed
        if ok:
            passed += 1
        else:
            failed += 1
            print("mozbuild FAIL:", what)

    path = os.path.join(src, "moz.build")
    try:
        tree = ast.parse(open(path).read(), path)
    except (OSError, SyntaxError) as e:
        check(False, "cannot parse moz.build: %s" % e)
        tree = None
    named = {}
    if tree is not None:
        for var, name in names_in(tree):
            named.setdefault(var, set()).add(name.lstrip("/"))
            check(os.path.exists(os.path.join(src, name.lstrip("/"))),
                  "%s names %s, which does not exist" % (var, name))
        for node in ast.walk(tree):
            if isinstance(node, ast.List):
                items = [e.value for e in node.elts
                         if isinstance(e, ast.Constant) and isinstance(e.value, str)]
                check(items == sorted(items, key=str.lower),
                      "list at line %d is not sorted: %s" % (node.lineno, items))
    check_manifest(src, check)
    sources = named.get("SOURCES", set()) | named.get("UNIFIED_SOURCES", set())
    for root, _, files in os.walk(os.path.join(src, "components")):
        for f in sorted(files):
            if f.endswith(".c"):
                rel = os.path.relpath(os.path.join(root, f), src)
                check(rel in sources, "%s is not listed in SOURCES" % rel)
    check(bool(sources), "SOURCES is empty")
    with open(out, "w") as fh:
        fh.write("%d passed, %d failed\n" % (passed, failed))
    print("mozbuild: %d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
