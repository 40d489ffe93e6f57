#!/bin/sh
# SPDX-License-Identifier: MPL-2.0
# browse.sh PROFILE WWWDIR PAGE... -- a real headless firefox-esr on PROFILE
# opens each PAGE of WWWDIR, served over HTTP on a free loopback port, and
# runs until the browser's own session store has written them all, with
# their titles, to PROFILE/sessionstore-backups/recovery.jsonlz4 (read back
# with read_session.js); then the browser is stopped (SIGTERM: as after a
# crash, the recovery file is the session) and the server with it.
# Prints the port on stdout; exit 0 when the session held every page within
# BROWSE_TIMEOUT seconds (60), 1 otherwise (firefox's log on stderr).
# Sets a few prefs in PROFILE/user.js: no first-run pages, no network
# besides the loopback server, session written every 500 ms.
here=$(cd "$(dirname "$0")" && pwd)
ff=${FIREFOX:-firefox-esr}
gre=${PICL_GRE:-/usr/lib/firefox-esr}
prof=$1; www=$2; shift 2
[ -d "$prof" ] && [ -d "$www" ] && [ $# -gt 0 ] || { echo "usage: $0 PROFILE WWWDIR PAGE..." >&2; exit 2; }
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
python3 -m http.server --bind 127.0.0.1 --directory "$www" "$port" >/dev/null 2>&1 &
hp=$!
cat >> "$prof/user.js" <<PREFS
user_pref("browser.sessionstore.interval", 500);
user_pref("browser.shell.checkDefaultBrowser", false);
user_pref("browser.startup.homepage_override.mstone", "ignore");
user_pref("browser.aboutwelcome.enabled", false);
user_pref("datareporting.policy.dataSubmissionEnabled", false);
user_pref("toolkit.telemetry.reportingpolicy.firstRun", false);
user_pref("app.update.disabledForTesting", true);
user_pref("network.captive-portal-service.enabled", false);
user_pref("network.connectivity-service.enabled", false);
user_pref("browser.safebrowsing.update.enabled", false);
user_pref("services.settings.server", "http://127.0.0.1:9/");
PREFS
urls=""
for p in "$@"; do urls="$urls http://127.0.0.1:$port/$p"; done
MOZ_CRASHREPORTER_DISABLE=1 timeout -k 5 $((${BROWSE_TIMEOUT:-60} + 30)) \
    "$ff" --headless --no-remote --profile "$prof" $urls > "$prof.firefox.log" 2>&1 &
fp=$!
rec="$prof/sessionstore-backups/recovery.jsonlz4"
rc=1; i=0
while [ $i -lt "${BROWSE_TIMEOUT:-60}" ] && kill -0 $fp 2>/dev/null; do
    sleep 1; i=$((i + 1))
    [ -f "$rec" ] || continue
    seen=$("$ff" --xpcshell -g "$gre" -a "$gre/browser" "$here/read_session.js" "$rec" 2>/dev/null) || continue
    missing=0
    for p in "$@"; do
        echo "$seen" | grep -q "^http://127.0.0.1:$port/$p|..*" || missing=1
    done
    [ $missing -eq 0 ] && { rc=0; break; }
done
kill -TERM $fp 2>/dev/null; wait $fp 2>/dev/null
kill $hp 2>/dev/null; wait $hp 2>/dev/null
[ $rc -eq 0 ] || { echo "browse.sh: the session did not hold every page after $i s:" >&2; echo "$seen" >&2; tail -n 20 "$prof.firefox.log" >&2; }
echo "$port"
exit $rc
