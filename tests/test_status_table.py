#!/usr/bin/env python3
# SPDX-License-Identifier: MPL-2.0
"""test_status_table.py SRCDIR RESULTFILE [BUILD_DIR] -- the one status table
(components/status.def) and everything made from it:
  * scripts/gen-status.py, run into an empty directory, writes exactly the
    checked-in picl_status.h, PiCLStatus.sys.mjs, PiCLStatus.js and
    nsIPiCLStatus.idl (a hand edit, or a row added without regenerating, fails);
  * the generator refuses a renumbered, duplicated or malformed table and an
    unknown exit code, and --check notices a stale file (the checks can fail);
  * no JS file copies a status number by hand (the bindings import the table);
  * with BUILD_DIR: libpicl's picl_strerror() gives each row's message and
    "unknown error" past the table (status.c reads status.def).
Prints one line per failed check and "status: P passed, F failed"; writes the
last line's counts to RESULTFILE."""
import ctypes
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile

GENERATED = ["components/picl_status.h", "components/PiCLStatus.sys.mjs", "components/PiCLStatus.js",
             "idl/nsIPiCLStatus.idl"]


def main():
    src = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    out = sys.argv[2] if len(sys.argv) > 2 else None
    build = sys.argv[3] if len(sys.argv) > 3 else None
    gen = os.path.join(src, "scripts", "gen-status.py")
    passed = failed = 0

    def check(ok, what):
        nonlocal passed, failed
        if ok:
            passed += 1
        else:
            failed += 1
            print("status FAIL:", what)

    def run(*args):
        return subprocess.run([sys.executable, gen] + list(args), capture_output=True, text=True)

    with open(os.path.join(src, "components", "status.def"), encoding="utf-8") as fh:
        table = fh.read()
    spec = importlib.util.spec_from_file_location("gen_status", gen)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rows = mod.parse(table)
    check(len(rows) >= 36 and rows[6][:2] == ("ERROR_DECRYPT", 6) and rows[35][:2] == ("ERROR_INTEGRITY", 35),
          "status.def keeps the ABI numbers (DECRYPT 6, INTEGRITY 35): %r" % (rows[6:7] + rows[35:36],))

    tmp = tempfile.mkdtemp(prefix="picl-status.")
    try:
        # 1. the checked-in files are what the generator writes
        r = run("--out", os.path.join(tmp, "fresh"))
        check(r.returncode == 0, "gen-status.py failed: %s" % r.stderr.strip())
        for rel in GENERATED:
            try:
                with open(os.path.join(tmp, "fresh", rel), encoding="utf-8") as a, \
                        open(os.path.join(src, rel), encoding="utf-8") as b:
                    same = a.read() == b.read()
            except OSError as e:
                same = False
                print("status: %s" % e)
            check(same, "%s is not what scripts/gen-status.py writes from components/status.def "
                        "(run scripts/gen-status.py)" % rel)
        r = run("--check")
        check(r.returncode == 0, "gen-status.py --check on the tree: %s" % r.stdout.strip())

        # 2. --check notices a stale file; bad tables are refused, nothing written
        stale = os.path.join(tmp, "stale")
        shutil.copytree(os.path.join(tmp, "fresh"), stale)
        js = os.path.join(stale, "components", "PiCLStatus.sys.mjs")
        with open(js, encoding="utf-8") as fh:
            text = fh.read()
        with open(js, "w", encoding="utf-8") as fh:
            fh.write(text.replace("WRONG_PASSWORD: 18,", "WRONG_PASSWORD: 81,"))
        r = run("--out", stale, "--check")
        check(r.returncode == 1 and "components/PiCLStatus.sys.mjs" in r.stdout
              and "picl_status.h" not in r.stdout, "--check names the one stale file: %r" % r.stdout)

        first = 'PICL_STATUS_ROW(ERROR_INVALID_ARGUMENT, 1,'
        bad_tables = {
            "renumbered": (table.replace(first, 'PICL_STATUS_ROW(ERROR_INVALID_ARGUMENT, 2,', 1), "numbered 2"),
            "duplicate name": (table.replace("PICL_STATUS_ROW(ERROR_NO_MEMORY,", "PICL_STATUS_ROW(ERROR_INVALID_ARGUMENT,", 1),
                               "twice"),
            "unknown exit code": (table.replace(first + " USAGE,", first + " SOMETIMES,", 1), "SOMETIMES"),
            "malformed row": (table.replace('"invalid argument",', '"invalid" "argument",', 1), "malformed"),
            "quote in a string": (table.replace('"invalid argument",', '"invalid \\" argument",', 1), "malformed"),
        }
        for what, (text, expect) in sorted(bad_tables.items()):
            check(text != table, "self-test: the %s mutation applies" % what)
            path = os.path.join(tmp, "bad.def")
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
            dest = os.path.join(tmp, "bad-" + what.replace(" ", "-"))
            r = run("--def", path, "--out", dest)
            check(r.returncode == 2 and expect in r.stderr and not os.path.exists(dest),
                  "a table with a %s is refused and nothing written (rc %d, %r)" % (what, r.returncode, r.stderr))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    # 3. no hand copies of the numbers in the JS bindings
    js_files = []
    for d in ("components", "extension", "tests/xpcshell"):
        for dirpath, _, files in os.walk(os.path.join(src, d)):
            js_files += [os.path.join(dirpath, f) for f in files if f.endswith((".js", ".mjs"))]
    generated = {os.path.join(src, g) for g in GENERATED}
    for path in sorted(set(js_files) - generated):
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        copies = []
        for name, number, *_ in rows[1:]:
            short = name[len("ERROR_"):]
            if re.search(r"\b(PICL_ERROR_|PICL_STATUS\.)?%s\s*[:=]\s*%d\b" % (short, number), text):
                copies.append("%s=%d" % (short, number))
        check(not copies, "%s copies status numbers by hand (%s): import PiCLStatus instead"
              % (os.path.relpath(path, src), ", ".join(copies)))

    # 4. the library's messages are the table's
    lib = os.path.join(build, "libpicl.so") if build else None
    if lib and os.path.exists(lib):
        so = ctypes.CDLL(lib)
        so.picl_strerror.restype = ctypes.c_char_p
        so.picl_strerror.argtypes = [ctypes.c_int]
        wrong = [(n, so.picl_strerror(n)) for _, n, _, msg, _ in rows if so.picl_strerror(n) != msg.encode()]
        check(not wrong, "picl_strerror differs from status.def: %r" % wrong[:3])
        check(so.picl_strerror(len(rows)) == b"unknown error", "picl_strerror(PICL_STATUS_COUNT_) is 'unknown error'")

    line = "%d passed, %d failed" % (passed, failed)
    if out:
        with open(out, "w") as fh:
            fh.write(line + "\n")
    print("status: " + line)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
