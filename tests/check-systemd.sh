#!/bin/sh
# SPDX-License-Identifier: MPL-2.0
# check-systemd.sh SRCDIR BUILDDIR RESULTFILE -- checks the systemd units of
# systemd/*.service.in: each, with @bindir@ pointing at BUILDDIR's programs,
# passes `systemd-analyze verify` without a warning; carries the hardening the
# README promises; names only options its program's --help lists; and its
# ExecStart line (credentials and state directory replaced by temporary ones)
# really starts the server.  A control unit whose program does not exist must
# fail the verify, or the check itself is broken.  Writes "P passed, F failed"
# to RESULTFILE.  Needs systemd-analyze (Debian package systemd, installed by
# ./bootstrap); works offline, as root or not, without a running systemd.
src=$1; build=$(cd "$2" && pwd); out=$3
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL systemd: $*"; fail=$((fail + 1)); }

tmp=$(mktemp -d /tmp/picl-systemd-XXXXXX) || exit 1
pids=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT

finish() {
    echo "$pass passed, $fail failed" > "$out"
    echo "systemd: $pass passed, $fail failed"
    [ $fail -eq 0 ] && [ $pass -gt 0 ]
    exit $?
}

units=$(ls "$src"/systemd/*.service.in 2>/dev/null)
if [ -z "$units" ]; then
    bad "no unit templates in $src/systemd"; finish
fi
if ! command -v systemd-analyze >/dev/null 2>&1; then
    bad "systemd-analyze not found: run ./bootstrap (Debian package systemd)"; finish
fi

# value of the last KEY= line of a unit
key() { sed -n "s/^$2=//p" "$1" | tail -n 1; }

for in in $units; do
    name=$(basename "$in" .in)
    unit="$tmp/$name"
    sed "s|@bindir@|$build|g" "$in" > "$unit"

    # 1. systemd's own check, with no warning at all (unknown keys only warn)
    msg=$(cd "$tmp" && systemd-analyze verify --man=no "./$name" 2>&1)
    rc=$?
    if [ $rc -eq 0 ] && [ -z "$msg" ]; then ok; else bad "$name: systemd-analyze verify (exit $rc): $msg"; fi

    # 2. hardening
    for kv in NoNewPrivileges=yes ProtectSystem=strict PrivateTmp=yes ProtectHome=yes \
              PrivateDevices=yes UMask=0077 CapabilityBoundingSet=; do
        if grep -qx "$kv" "$unit"; then ok; else bad "$name: no '$kv'"; fi
    done
    if grep -qx 'DynamicUser=yes' "$unit" || grep -qE '^User=[a-z]' "$unit"; then ok
    else bad "$name: runs as root (no DynamicUser=yes or User=)"; fi
    state=$(key "$unit" StateDirectory)
    exec_line=$(key "$unit" ExecStart)
    case "$exec_line" in
        *"--data /var/lib/$state "*) if [ -n "$state" ]; then ok; else bad "$name: no StateDirectory="; fi ;;
        *) bad "$name: --data is not the StateDirectory /var/lib/$state" ;;
    esac

    # 3. every option of ExecStart is one the program documents
    prog=$(echo "$exec_line" | cut -d' ' -f1)
    help=$("$prog" --help 2>&1)
    for opt in $(echo "$exec_line" | grep -oE -- '--[a-z][a-z-]*'); do
        if echo "$help" | grep -q -- "$opt "; then ok; else bad "$name: $prog --help has no $opt"; fi
    done

    # 4. the ExecStart line starts the server: environment defaults applied,
    # a free port, temporary state and credentials directories
    cred="$tmp/cred-$name"; data="$tmp/data-$name"
    mkdir -p "$cred" "$data" && chmod 700 "$cred"
    head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$cred/token-secret"
    cmd=$exec_line
    for e in $(sed -n 's/^Environment=//p' "$unit"); do
        v=${e#*=}; k=${e%%=*}
        case "$k" in PICL_LISTEN) v=127.0.0.1:0 ;; esac
        cmd=$(echo "$cmd" | sed "s|\${$k}|$v|g")
    done
    cmd=$(echo "$cmd" | sed -e "s|%d|$cred|g" -e "s|/var/lib/$state|$data|g")
    case "$cmd" in *'${'*|*%*) bad "$name: unexpanded variable or specifier in '$cmd'" ;; esac
    log="$tmp/$name.log"
    # shellcheck disable=SC2086 # the command line is split as systemd splits it
    $cmd > "$log" 2>&1 &
    pid=$!; pids="$pids $pid"
    up=0
    for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
        if grep -qE 'listening on port [1-9]|on port [1-9]' "$log"; then up=1; break; fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.25
    done
    if [ $up -eq 1 ] && kill -0 "$pid" 2>/dev/null; then ok
    else bad "$name: '$cmd' did not start: $(cat "$log")"; fi
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
done

# control: verify must catch a unit whose program is missing
sed "s|@bindir@|$tmp/nonexistent|g" "$(echo "$units" | head -n 1)" > "$tmp/picl-control.service"
if (cd "$tmp" && systemd-analyze verify --man=no ./picl-control.service) >/dev/null 2>&1; then
    bad "control: systemd-analyze verify accepted a unit whose ExecStart does not exist"
else
    ok
fi
finish
