#!/bin/sh
# SPDX-License-Identifier: MPL-2.0
# summary.sh DIR -- adds up every "P passed, F failed" file in DIR and prints
# the one closing line of `make check`; fails when anything failed or nothing ran.
pass=0; fail=0
for f in "$1"/*; do
    [ -f "$f" ] || continue
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$f" | tail -n 1)
    [ -n "$line" ] || continue
    p=${line%% passed*}; r=${line#*passed, }; r=${r%% failed*}
    pass=$((pass + p)); fail=$((fail + r))
done
echo "total: $pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
