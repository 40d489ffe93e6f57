#!/bin/sh
# SPDX-License-Identifier: MPL-2.0
# make-profile.sh -- real Firefox profiles for the store tests, made and read
# by the browser itself (firefox-esr -xpcshell, tests/xpcshell/*.js):
#   make-profile.sh DIR [PRIMARY_PASSWORD]   create DIR with sample bookmarks,
#                                            visits and logins
#   make-profile.sh --dump DIR OUT.json [PW] what Firefox reads from DIR, as JSON
#                                            (PW: the primary password, which
#                                            Firefox then REMOVES from DIR)
#   make-profile.sh --maintain DIR           Firefox's Places maintenance on DIR
#   make-profile.sh --edit DIR [ROUND]       a user's edits between two syncs (1 or 2)
#   make-profile.sh --edit DIR remove-login USER   the user deletes USER's saved logins
# Each run is bounded by a timeout; exit 0 on success, 127 without firefox-esr.
here=$(cd "$(dirname "$0")" && pwd)
ff=${FIREFOX:-firefox-esr}
gre=${PICL_GRE:-/usr/lib/firefox-esr}
command -v "$ff" >/dev/null 2>&1 || { echo "make-profile.sh: $ff not found" >&2; exit 127; }
export MOZ_CRASHREPORTER_DISABLE=1
if [ "$1" = "--dump" ]; then
    [ $# -eq 3 ] || [ $# -eq 4 ] || { echo "usage: $0 --dump DIR OUT.json [PRIMARY_PASSWORD]" >&2; exit 2; }
    shift
    exec timeout 60 "$ff" --xpcshell -g "$gre" -a "$gre/browser" "$here/xpcshell/dump_profile.js" "$@"
fi
if [ "$1" = "--edit" ]; then
    [ $# -ge 2 ] && [ $# -le 4 ] || { echo "usage: $0 --edit DIR [ROUND | remove-login USERNAME]" >&2; exit 2; }
    shift
    exec timeout 60 "$ff" --xpcshell -g "$gre" -a "$gre/browser" "$here/xpcshell/edit_profile.js" "$@"
fi
if [ "$1" = "--maintain" ]; then
    [ $# -eq 2 ] || { echo "usage: $0 --maintain DIR" >&2; exit 2; }
    exec timeout 60 "$ff" --xpcshell -g "$gre" -a "$gre/browser" "$here/xpcshell/maintain_profile.js" "$2"
fi
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: $0 DIR [PRIMARY_PASSWORD]" >&2; exit 2; }
exec timeout 60 "$ff" --xpcshell -g "$gre" -a "$gre/browser" "$here/xpcshell/make_profile.js" "$@"
