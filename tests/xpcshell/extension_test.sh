#!/bin/sh
# extension_test.sh WORKDIR -- installs the PiCL extension (a WebExtension
# Experiment, extension/) into a fresh profile of a headless firefox-esr and
# checks that its background script's browser.picl.* calls reach
# PiCLService and libpicl and come back with real results.  The background
# script runs its self-test when PICL_EXT_TEST is set, writes a JSON report
# to PICL_EXT_REPORT and quits the browser.  Prints one line per check and
# "extension: P passed, F failed".  Uses PICL_LIB, PICL_KEYSERVER (optional),
# FIREFOX.
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
work=${1:?usage: extension_test.sh WORKDIR}
ff=${FIREFOX:-firefox-esr}
prof="$work/ext-profile"
rm -rf "$prof"; mkdir -p "$prof/extensions"
python3 "$src/extension/build-xpi.py" "$prof/extensions/picl@picl.invalid.xpi" || {
    echo "extension FAIL: cannot build the XPI"; echo "extension: 0 passed, 1 failed"; exit 1; }
cat > "$prof/user.js" <<PREFS
user_pref("xpinstall.signatures.required", false);
user_pref("extensions.experiments.enabled", true);
user_pref("extensions.autoDisableScopes", 0);
user_pref("extensions.enabledScopes", 15);
user_pref("extensions.update.enabled", false);
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
user_pref("services.picl.libraryPath", "${PICL_LIB}");
PREFS
report="$work/ext-report.json"
rm -f "$report"
cfg="{}"
email="ext-$(date +%s)-$$@example.com"
[ -n "$PICL_KEYSERVER" ] && cfg="{\"keyserver\": \"$PICL_KEYSERVER\", \"email\": \"$email\"}"
t0=$(date +%s)
PICL_EXT_TEST="$cfg" PICL_EXT_REPORT="$report" MOZ_CRASHREPORTER_DISABLE=1 PICL_LIB= \
    timeout -k 5 90 "$ff" --headless --no-remote --profile "$prof" about:blank > "$work/ext-firefox.log" 2>&1
rc=$?
echo "extension: firefox exited $rc after $(( $(date +%s) - t0 )) s"
python3 - "$report" "$PICL_LIB" "$cfg" "$PICL_KEYSERVER_DATA" <<'PY'
import glob, json, os, sys
report, lib, cfg, ksdata = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
passed = failed = 0
def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("extension FAIL:", what)
try:
    r = json.load(open(report))
except Exception as e:
    r = None
    check(False, "no report from the background script (%s)" % e)
if r is not None:
    check("error" not in r, "self-test error: %s" % r.get("error"))
    lb = r.get("library", {})
    check(lb.get("ok"), "libraryInfo: %s" % lb)
    v = lb.get("value") or {}
    check(v.get("path") == lib, "library path from the pref: %r" % v.get("path"))
    check(bool((v.get("strerror") or {}).get("18")), "picl_strerror(18) through the Experiment")
    st = r.get("stateBefore", {}).get("value") or {}
    check(st.get("classes") == {"bookmarks": "A", "history": "A", "passwords": "B"},
          "default classes: %s" % st.get("classes"))
    check(st.get("signedInEmail") == "" and st.get("verified") is False, "signed out: %s" % st)
    for k in ("badName", "badClass"):
        x = r.get(k, {})
        check(x.get("ok") is False and x.get("result") == 1, "%s rejects with INVALID_ARGUMENT (1): %s" % (k, x))
    if cfg.get("keyserver"):
        check(r.get("setURL", {}).get("ok"), "setKeyserverURL")
        after = r.get("stateAfter", {}).get("value") or {}
        check(after.get("keyserverURL") == cfg["keyserver"], "keyserverURL kept: %s" % after.get("keyserverURL"))
        if not v.get("missing"):
            x = r.get("signInUnknown", {})
            check(x.get("ok") is False and x.get("result") == 21,
                  "signIn of an unknown account rejects with UNKNOWN_ACCOUNT (21): %s" % x)
            x = r.get("syncSignedOut", {})
            check(x.get("ok") is False and x.get("result") == 29, "sync signed out rejects with STATE (29): %s" % x)
            check(r.get("create", {}).get("ok"), "createAccount through the Experiment: %s" % r.get("create"))
            st = r.get("stateCreated", {}).get("value") or {}
            check(st.get("signedInEmail") == cfg["email"] and st.get("verified") is False,
                  "signed in, unverified, after createAccount: %s" % st)
            x = r.get("syncUnverified", {})
            check(x.get("ok") is False and x.get("result") == 19, "sync unverified rejects with UNVERIFIED (19): %s" % x)
            mails = [f for f in glob.glob(os.path.join(ksdata, "mail", "new", "*"))
                     if cfg["email"] in open(f, errors="replace").read()]
            check(len(mails) == 1, "the keyserver mailed a verification code to %s (%d mails)" % (cfg["email"], len(mails)))
        else:
            print("extension: libpicl has no service yet (%s): account calls not checked" % v.get("missing"))
print("extension: %d passed, %d failed" % (passed, failed))
PY
