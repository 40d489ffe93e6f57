#!/bin/sh
# SPDX-License-Identifier: MPL-2.0
# fuzz-replay.sh RESULTFILE CORPUSDIR BIN... -- replays the seed corpus of each
# fuzz target (CORPUSDIR/<target>/) through its replay binary (fuzz/replay.c
# linked with fuzz/<target>.c by a plain C compiler; no libFuzzer needed),
# writes "P passed, F failed" (inputs) to RESULTFILE and prints it.  A binary
# that dies on an input counts that input as failed and is named with it; a
# sanitizer report (SAN=1 builds) fails the target; a target without a
# corpus fails too.
out=$1; corpus=$2; shift 2
pass=0; fail=0
if [ "$SAN" = 1 ]; then
    export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
    export LSAN_OPTIONS="suppressions=$PICL_SRCDIR/tests/lsan.supp:print_suppressions=0"
fi
for t in "$@"; do
    name=$(basename "$t")
    log="$t.log"
    if [ ! -d "$corpus/$name" ] || [ -z "$(ls "$corpus/$name")" ]; then
        echo "FAIL $name: no seed corpus in $corpus/$name"; fail=$((fail + 1)); continue
    fi
    "$t" "$corpus/$name" > "$log" 2>&1
    rc=$?
    line=$(grep -E '^replay: [0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
    ok=$(grep -c '^ok ' "$log")
    bad=0
    if [ -z "$line" ]; then
        last=$(grep '^replay: running ' "$log" | tail -n 1 | sed 's/^replay: running //')
        echo "FAIL $name: died on ${last:-startup} (exit $rc)"; tail -n 30 "$log"
        bad=1
    else
        bad=$(echo "$line" | sed -E 's/.*passed, ([0-9]+) failed/\1/')
    fi
    if grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$log"; then
        echo "FAIL $name: sanitizer report"; grep -E -A12 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$log" | head -n 40
        [ "$bad" -eq 0 ] && bad=1
    fi
    if [ $rc -ne 0 ] && [ "$bad" -eq 0 ]; then
        echo "FAIL $name: exit $rc"; tail -n 20 "$log"; bad=1
    fi
    pass=$((pass + ok)); fail=$((fail + bad))
    echo "$name: $ok inputs replayed, $bad failed"
done
echo "$pass passed, $fail failed" > "$out"
echo "fuzz-replay[$(basename "$(dirname "$out")")/$(basename "$out")]: $pass passed, $fail failed"
[ $fail -eq 0 ] && [ $pass -gt 0 ]
