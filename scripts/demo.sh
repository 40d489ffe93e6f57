#!/bin/sh
# SPDX-License-Identifier: MPL-2.0
# demo.sh BUILD_DIR [--keep] -- the PiCL story on a scratch server, one line a step:
# two Firefox profiles made by the browser itself sync through picl server,
# a collection moves between classes, and a password reset keeps class A
# while class B is lost by design.  Used by `make demo` and `picl demo`.
set -u
B=${1:?usage: demo.sh BUILD_DIR [--keep]}
KEEP=${2:-}
here=$(cd "$(dirname "$0")/.." && pwd)
PICL="$B/picl"
MKPROF="$here/tests/make-profile.sh"
[ -x "$PICL" ] || { echo "demo: $PICL is not built (run make first)" >&2; exit 1; }
command -v firefox-esr >/dev/null 2>&1 || { echo "demo: firefox-esr is missing (apt-get install firefox-esr; in the source tree ./bootstrap installs it)" >&2; exit 1; }
command -v python3 >/dev/null 2>&1 || { echo "demo: python3 is missing (apt-get install python3)" >&2; exit 1; }
T=$(mktemp -d /tmp/picl-demo-XXXXXX)
SERVER_PID=
cleanup() {
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
    if [ "$KEEP" = --keep ]; then echo "(kept $T)"; else rm -rf "$T"; fi
}
trap cleanup EXIT INT TERM
step() { printf '%s\n' "$*"; }
die() { printf 'demo FAILED: %s\n' "$*" >&2; exit 1; }
start=$(date +%s)

# counts "bookmarks logins visits" of a profile, as Firefox itself reads it
counts() {
    "$MKPROF" --dump "$1" "$T/dump.json" >/dev/null 2>&1 || die "Firefox could not read $1"
    python3 - "$T/dump.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
marks = sum(1 for x in d.get("bookmarks", []) if isinstance(x, dict) and x.get("type") == "bookmark")
visits = sum(len(p.get("visits", [])) for p in d.get("history", []))
print(marks, len(d.get("logins", [])), visits)
PY
}

export PICL_PASSWORD="correct horse battery staple"
EMAIL="demo@example.org"

"$PICL" server --data "$T/server" --listen 127.0.0.1:0 >"$T/server.out" 2>"$T/server.log" &
SERVER_PID=$!
URL=
for i in $(seq 50); do
    URL=$(sed -n 's/.*listening on \(http[^ ]*\).*/\1/p' "$T/server.out" 2>/dev/null)
    [ -n "$URL" ] && break
    sleep 0.1
done
[ -n "$URL" ] || die "picl server did not start: $(cat "$T/server.log")"
step "1. Started picl server (keyserver + storage server) at $URL, data in $T/server"

"$MKPROF" "$T/profile1" >/dev/null 2>&1 || die "Firefox could not create the sample profile"
set -- $(counts "$T/profile1")
step "2. Firefox made profile 1 with $1 bookmarks, $2 saved logins and $3 history visits"

"$PICL" --state "$T/state1" --quiet account create --server "$URL" --email "$EMAIL" >/dev/null || die "account create"
CODE=$(grep -h '^X-Verify-Code:' "$T"/server/mail/new/* | tr -d '\r' | awk '{print $2}' | tail -1)
"$PICL" --state "$T/state1" --quiet account verify --code "$CODE" >/dev/null || die "verify"
"$PICL" --state "$T/state1" --quiet login --email "$EMAIL" >/dev/null || die "login"
FP=$("$PICL" --state "$T/state1" --json status | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["kA_fp"][:8], d["kB_fp"][:8])')
step "3. Created $EMAIL, verified it with the code from the mail, signed in on device 1 (kA ${FP% *}..., kB ${FP#* }...)"

"$PICL" --state "$T/state1" --quiet sync --profile "$T/profile1" >"$T/sync1.txt" || die "sync of device 1: $(cat "$T/sync1.txt")"
step "4. Device 1 synced: bookmarks and history encrypted with kA (class A), passwords with kB (class B)"

"$MKPROF" --dump "$T/profile2" "$T/empty.json" >/dev/null 2>&1 || die "Firefox could not create profile 2"
"$PICL" --state "$T/state2" --quiet login --server "$URL" --email "$EMAIL" >/dev/null || die "login on device 2"
"$PICL" --state "$T/state2" --quiet sync --profile "$T/profile2" >/dev/null || die "sync of device 2"
set -- $(counts "$T/profile2")
step "5. Device 2 (a new, empty profile) signed in and synced: Firefox now sees $1 bookmarks, $2 logins, $3 visits"

"$PICL" --state "$T/state1" --quiet class set bookmarks B >/dev/null || die "class set B"
C2=$("$PICL" --state "$T/state2" class get bookmarks)
"$PICL" --state "$T/state2" --quiet sync --profile "$T/profile2" >/dev/null || die "sync after the move"
step "6. Moved bookmarks to class B on device 1 (re-encrypted under kB); device 2 sees class $C2 and keeps syncing"
"$PICL" --state "$T/state2" --quiet class set bookmarks A >/dev/null || die "class set A"
step "7. Moved bookmarks back to class A on device 2: class $("$PICL" --state "$T/state1" class get bookmarks) for device 1 too"

"$PICL" --state "$T/state3" --quiet password forgot --server "$URL" --email "$EMAIL" >/dev/null || die "forgot"
RCODE=$(grep -h '^X-Recovery-Code:' "$T"/server/mail/new/* | tr -d '\r' | awk '{print $2}' | tail -1)
PICL_NEW_PASSWORD="a brand new password" "$PICL" --state "$T/state3" --quiet password reset --code "$RCODE" >/dev/null || die "reset"
step "8. Forgot the password: reset it with the mailed code $RCODE on device 3 (kA kept, kB replaced)"

"$MKPROF" --dump "$T/profile3" "$T/empty.json" >/dev/null 2>&1 || die "Firefox could not create profile 3"
"$PICL" --state "$T/state3" --quiet sync --profile "$T/profile3" >/dev/null || die "sync of device 3"
set -- $(counts "$T/profile3")
step "9. Device 3 synced after the reset: $1 bookmarks and $3 visits (class A survived), $2 logins (class B is gone by design)"

if "$PICL" --state "$T/state1" --quiet sync --profile "$T/profile1" >/dev/null 2>"$T/old.txt"; then
    die "device 1 should have been signed out by the reset"
fi
step "10. Device 1 is told to sign in again: \"$(sed 's/^picl: //' "$T/old.txt" | head -1)\""
step "Done in $(( $(date +%s) - start )) s."
