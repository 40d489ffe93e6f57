#!/bin/sh
# SPDX-License-Identifier: MPL-2.0
# run.sh RESULTFILE -- the xpcshell suite: starts the servers when they are
# built, runs tests/test_idl_consistency.py, then every test file listed in
# xpcshell.toml with the real browser engine, each in a fresh profile and
# under a timeout:
#   firefox-esr --xpcshell -g GRE -a GRE/browser -f head.js -f test_x.js -e 'run_tasks(T)'
# then the extension in a headless browser (extension_test.sh).
# Writes "P passed, F failed" to RESULTFILE and prints "xpcshell: P passed, F failed".
# Environment: PICL_BUILD (default ./build), FIREFOX (firefox-esr), PICL_GRE
# (/usr/lib/firefox-esr), XPC_TIMEOUT seconds per file (90), XPC_TESTS (a
# space-separated subset of test files; the word "extension" for the headless
# extension test), XPC_KEEP=1 keeps the logs and profiles.
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
out=${1:-/dev/null}
build=${PICL_BUILD:-$src/build}
ff=${FIREFOX:-firefox-esr}
gre=${PICL_GRE:-/usr/lib/firefox-esr}
per=${XPC_TIMEOUT:-90}
pass=0; fail=0

finish() {
    [ "$out" = /dev/null ] || { mkdir -p "$(dirname "$out")"; echo "$pass passed, $fail failed" > "$out"; }
    echo "xpcshell: $pass passed, $fail failed"
    [ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
    exit $?
}

work=$(mktemp -d "${TMPDIR:-/tmp}/picl-xpcshell.XXXXXX")
pids=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null; done
    for p in $pids; do wait "$p" 2>/dev/null; done
    if [ -n "$XPC_KEEP" ]; then echo "xpcshell: logs and profiles kept in $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- the IDL <-> PiCLService consistency test (python, no browser) -------
if command -v python3 >/dev/null 2>&1; then
    python3 "$src/tests/test_idl_consistency.py" "$src" "$work/idl.result"
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$work/idl.result" 2>/dev/null | tail -n 1)
    if [ -n "$line" ]; then
        pass=$((pass + ${line%% passed*})); r=${line#*passed, }; fail=$((fail + ${r%% failed*}))
    else
        echo "FAIL test_idl_consistency.py: no result"; fail=$((fail + 1))
    fi
fi

if ! command -v "$ff" >/dev/null 2>&1; then
    echo "FAIL xpcshell: $ff not found"; fail=$((fail + 1)); finish
fi
export MOZ_CRASHREPORTER_DISABLE=1 MOZ_DISABLE_CONTENT_SANDBOX=1
export PICL_SRCDIR="$src" PICL_BUILD="$build"
export PICL_LIB="${PICL_LIB:-$build/libpicl.so}"
export PICL_FIREFOX="$ff" PICL_GRE="$gre"

# ---- servers: on free loopback ports, when built -------------------------
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}
wait_port() {   # wait_port PORT PID: up to 10 s for a listener
    i=0
    while [ $i -lt 100 ]; do
        kill -0 "$2" 2>/dev/null || return 1
        python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $1), 0.2)" 2>/dev/null && return 0
        sleep 0.1; i=$((i + 1))
    done
    return 1
}
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/secret"
if [ -x "$build/picl-storage" ]; then
    sport=$(free_port); mkdir -p "$work/storage"
    "$build/picl-storage" --listen "127.0.0.1:$sport" --data "$work/storage" \
        --secret-file "$work/secret" --node "http://127.0.0.1:$sport" > "$work/storage.log" 2>&1 &
    spid=$!; pids="$pids $spid"
    if wait_port "$sport" "$spid"; then
        export PICL_STORAGE="http://127.0.0.1:$sport"
    else
        echo "FAIL xpcshell: picl-storage did not start"; tail -n 5 "$work/storage.log"; fail=$((fail + 1))
    fi
fi
if [ -x "$build/picl-keyserver" ]; then
    kport=$(free_port); mkdir -p "$work/keyserver"
    "$build/picl-keyserver" --listen "127.0.0.1:$kport" --data "$work/keyserver" \
        --secret-file "$work/secret" ${PICL_STORAGE:+--storage-node "$PICL_STORAGE"} \
        > "$work/keyserver.log" 2>&1 &
    kpid=$!; pids="$pids $kpid"
    if wait_port "$kport" "$kpid"; then
        export PICL_KEYSERVER="http://127.0.0.1:$kport" PICL_KEYSERVER_DATA="$work/keyserver"
    else
        echo "FAIL xpcshell: picl-keyserver did not start"; tail -n 5 "$work/keyserver.log"; fail=$((fail + 1))
    fi
fi

# ---- the test files ------------------------------------------------------
# The manifest is read as TOML (Python's tomllib): each ["test_x.js"] table is a test.
tests=${XPC_TESTS:-$(python3 -c 'import sys, tomllib
print(" ".join(k for k in tomllib.load(open(sys.argv[1], "rb")) if k != "DEFAULT"))' "$here/xpcshell.toml")}
[ -n "$tests" ] || { echo "FAIL xpcshell: no test listed in $here/xpcshell.toml"; fail=$((fail + 1)); }
for t in $tests; do
    [ "$t" = extension ] && continue
    prof="$work/profile-${t%.js}"
    log="$work/${t%.js}.log"
    PICL_XPC_PROFILE="$prof" PICL_XPC_TEST="$t" PICL_XPC_WORK="$work" \
        timeout -k 5 "$per" "$ff" --xpcshell -g "$gre" -a "$gre/browser" \
        -f "$here/head.js" -f "$here/$t" -e "run_tasks($((per - 5)))" > "$log" 2>&1
    rc=$?
    line=$(sed -n 's/^RESULT | [^:]*: \([0-9]* passed, [0-9]* failed\).*/\1/p' "$log" | tail -n 1)
    grep -E '^TEST-(UNEXPECTED-FAIL|FAIL)' -A3 "$log" | head -n 40
    if [ -z "$line" ]; then
        echo "FAIL $t: no result (exit $rc)"; tail -n 15 "$log"
        fail=$((fail + 1)); continue
    fi
    p=${line%% passed*}; r=${line#*passed, }; f=${r%% failed*}
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "FAIL $t: exit $rc after its tests passed (unclean shutdown?)"; tail -n 10 "$log"; f=1
    fi
    pass=$((pass + p)); fail=$((fail + f))
    echo "$t: $line"
done

# ---- the extension in a headless browser ---------------------------------
if [ -z "$XPC_TESTS" ] || echo " $XPC_TESTS " | grep -q ' extension '; then
    "$here/extension_test.sh" "$work" > "$work/extension.out" 2>&1
    cat "$work/extension.out"
    line=$(sed -n 's/^extension: \([0-9]* passed, [0-9]* failed\)$/\1/p' "$work/extension.out" | tail -n 1)
    if [ -n "$line" ]; then
        pass=$((pass + ${line%% passed*})); r=${line#*passed, }; fail=$((fail + ${r%% failed*}))
    else
        echo "FAIL extension_test.sh: no result"; fail=$((fail + 1))
    fi
fi
finish
