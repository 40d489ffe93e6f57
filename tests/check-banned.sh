#!/bin/sh
# SPDX-License-Identifier: MPL-2.0
# check-banned.sh SRCDIR RESULTFILE -- the banned-function check of STYLE.md:
# unbounded or error-swallowing C library calls may not appear in our sources.
# A line may opt out with a "banned-ok:" comment saying why.
src=$1; out=$2
banned='\b(strcpy|strcat|strncat|sprintf|vsprintf|gets|atoi|atol|atof|strtok|tmpnam|mktemp|alloca)[[:space:]]*\('
pass=0; fail=0
for f in $(cd "$src" && find components server-stub tests/unit bench fuzz -name '*.[ch]' 2>/dev/null | sort); do
    hits=$(grep -nE "$banned" "$src/$f" | grep -v 'banned-ok:')
    if [ -n "$hits" ]; then
        echo "banned function in $f:"; echo "$hits"; fail=$((fail + 1))
    else
        pass=$((pass + 1))
    fi
done
echo "$pass passed, $fail failed" > "$out"
echo "banned: $pass passed, $fail failed"
[ $fail -eq 0 ]
