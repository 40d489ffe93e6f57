#!/bin/sh
# SPDX-License-Identifier: MPL-2.0
# check-style.sh SRCDIR RESULTFILE -- style by tool: every C file is laid out
# as .clang-format says (clang-format --dry-run), and every source file names
# its licence with an SPDX line among its first two lines.
src=$1; out=$2
pass=0; fail=0
cd "$src" || exit 1
fmt=${CLANG_FORMAT:-clang-format}
if ! command -v "$fmt" >/dev/null 2>&1; then
    echo "style: needs clang-format (./bootstrap installs it)" >&2
    echo "0 passed, 1 failed" > "$out"; exit 1
fi
# the tracked files of a checkout; every file of an unpacked tarball
if [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$(pwd -P)" ]; then
    files=$(git ls-files | sort -u)
else
    files=$(find . -path './build*' -prune -o -path './autom4te.cache' -prune -o -type f -print | sed 's#^\./##' | sort -u)
fi
for f in $(echo "$files" | grep -E '\.[ch]$'); do
    [ -f "$f" ] || continue
    if "$fmt" --style=file --dry-run -Werror "$f" >/dev/null 2>&1; then
        pass=$((pass + 1))
    else
        echo "style: $f is not laid out as .clang-format says (run: clang-format -i $f)"; fail=$((fail + 1))
    fi
done
for f in $(echo "$files" | grep -E '\.(c|h|js|mjs|py|sh|idl)$|(^|/)(bootstrap|moz\.build|Makefile\.in|configure\.ac|run)$' | grep -vE '^tests/vectors/|^fuzz/corpus/'); do
    [ -f "$f" ] || continue
    if head -n 2 "$f" | grep -q 'SPDX-License-Identifier: MPL-2\.0'; then
        pass=$((pass + 1))
    else
        echo "style: $f has no 'SPDX-License-Identifier: MPL-2.0' line at its top"; fail=$((fail + 1))
    fi
done
echo "$pass passed, $fail failed" > "$out"
echo "style: $pass passed, $fail failed"
[ $fail -eq 0 ]
