#!/bin/sh
# SPDX-License-Identifier: MPL-2.0
# run-unit.sh RESULTFILE TEST... -- runs Check test binaries, sums their
# "Checks: N, Failures: F, Errors: E" lines, writes "P passed, F failed" to
# RESULTFILE and prints it.  A binary that crashes or prints no Check summary
# counts as one failure; a sanitizer report fails the test it came from.
out=$1; shift
pass=0; fail=0
if [ "$SAN" = 1 ]; then
    export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
    export LSAN_OPTIONS="suppressions=$PICL_SRCDIR/tests/lsan.supp:print_suppressions=0"
    export PICL_SLOW=0   # NSS and libscrypt are not instrumented: slow vectors add nothing here
fi
for t in "$@"; do
    name=$(basename "$t")
    log="$t${PICL_LOG_SUFFIX:-}.log"   # PICL_LOG_SUFFIX: a second pass (PostgreSQL) keeps both logs
    "$t" > "$log" 2>&1
    rc=$?
    line=$(grep -E '^[0-9]+%: Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+' "$log" | tail -n 1)
    if [ -z "$line" ]; then
        echo "FAIL $name: no Check summary (exit $rc)"; tail -n 20 "$log"
        fail=$((fail + 1)); continue
    fi
    n=$(echo "$line" | sed -E 's/.*Checks: ([0-9]+).*/\1/')
    f=$(echo "$line" | sed -E 's/.*Failures: ([0-9]+).*/\1/')
    e=$(echo "$line" | sed -E 's/.*Errors: ([0-9]+).*/\1/')
    bad=$((f + e))
    if grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$log"; then
        echo "FAIL $name: sanitizer report"; grep -E -A12 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$log" | head -n 40
        [ $bad -eq 0 ] && bad=1
    fi
    if [ $rc -ne 0 ] && [ $bad -eq 0 ]; then
        echo "FAIL $name: exit $rc"; tail -n 20 "$log"; bad=1
    fi
    grep -E ':[EF]:' "$log" | head -n 20
    pass=$((pass + n - (f + e))); fail=$((fail + bad))
    echo "$name: $line"
done
echo "$pass passed, $fail failed" > "$out"
echo "unit[$(basename "$(dirname "$out")")/$(basename "$out")]: $pass passed, $fail failed"
[ $fail -eq 0 ] && [ $pass -gt 0 ]
