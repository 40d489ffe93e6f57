#!/bin/sh
# SPDX-License-Identifier: MPL-2.0
# ctcheck.sh [BUILDDIR] -- constant-time check of SRP (issue 3) under valgrind memcheck.
#
# Builds tests/ct/ctcheck_srp.c together with components/crypto/srp.c compiled
# with -DPICL_CTCHECK (same optimisation as the normal build), links it with
# BUILDDIR/libpicl.a, and runs it under memcheck with the secrets (password,
# a, b, verifier) marked undefined.  Any "conditional jump depends on
# uninitialised value" or "use of uninitialised value" is a branch or an
# index on a secret, and fails the check.
#
# A control run pushes the same secret through mpz_powm_sec's mpz wrapper,
# which memcheck must flag: if it does not, the check itself is broken.
# Exit status 0 = clean; logs in BUILDDIR/ct/.
set -u
B=${1:-build}
src=$(cd "$(dirname "$0")/.." && pwd)
out="$B/ct"
mkdir -p "$out" || exit 1
CC=${CC:-gcc}
VALGRIND=${VALGRIND:-valgrind}

if [ ! -f "$B/libpicl.a" ]; then
    echo "ctcheck: $B/libpicl.a missing (run make first)" >&2
    exit 1
fi
command -v "$VALGRIND" >/dev/null 2>&1 || { echo "ctcheck: valgrind not found" >&2; exit 1; }

CFLAGS="-std=gnu11 -g -O2 -D_GNU_SOURCE -DPICL_BUILDING -DPICL_CTCHECK \
 -Wall -Wextra -Werror -Wno-unused-parameter -Wshadow -Wvla \
 -I$src/components -I$src $(pkg-config --cflags nss)"
LIBS="$B/libpicl.a $(pkg-config --libs nss jansson libcurl sqlite3 2>/dev/null || pkg-config --libs nss) -lgmp -lscrypt -lpthread"

# shellcheck disable=SC2086
if ! $CC $CFLAGS -o "$out/ctcheck_srp" "$src/tests/ct/ctcheck_srp.c" \
        "$src/components/crypto/srp.c" $LIBS; then
    echo "ctcheck: build failed" >&2
    exit 1
fi

VG="$VALGRIND --tool=memcheck --error-exitcode=99 --track-origins=yes --num-callers=40"
fails=0
for mode in verifier client server all; do
    log="$out/$mode.log"
    $VG "$out/ctcheck_srp" "$mode" > "$log" 2>&1
    rc=$?
    errs=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$log" | tail -n 1)
    if [ "$rc" -eq 0 ] && [ "${errs:-1}" = 0 ]; then
        echo "ctcheck srp $mode: clean"
    else
        echo "ctcheck srp $mode: FAILED (exit $rc, ${errs:-?} memcheck errors; $log)"
        grep -E -A14 'Conditional jump|uninitialised value' "$log" | head -n 60
        fails=$((fails + 1))
    fi
done

# The control must be caught, else the harness proves nothing.
log="$out/control.log"
$VG "$out/ctcheck_srp" control > "$log" 2>&1
errs=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$log" | tail -n 1)
if [ "${errs:-0}" -gt 0 ]; then
    echo "ctcheck control (mpz_powm_sec via mpz_import/export): $errs findings, as expected"
else
    echo "ctcheck control: memcheck saw NOTHING in a known-leaky path: the check is broken"
    fails=$((fails + 1))
fi

[ $fails -eq 0 ] && echo "ctcheck: clean" && exit 0
echo "ctcheck: $fails failed"
exit 1
