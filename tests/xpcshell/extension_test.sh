#!/bin/sh
# SPDX-License-Identifier: MPL-2.0
# extension_test.sh WORKDIR -- the PiCL extension (a WebExtension Experiment,
# extension/) in a fresh profile of a headless firefox-esr.  Builds the
# shipped XPI and checks it holds no test hook; installs the test build
# (tests/xpcshell/ext/build_test_xpi.py: the shipped XPI plus the test-only
# picltest Experiment and selftest.js), whose self-test drives browser.picl
# and the real popup page, writes a JSON report to PICL_EXT_REPORT and quits
# the browser.  Prints one line per failed check and "extension: P passed, F
# failed".  Uses PICL_LIB, PICL_KEYSERVER and PICL_KEYSERVER_DATA (optional:
# the account flows need them), FIREFOX.
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
work=${1:?usage: extension_test.sh WORKDIR}
ff=${FIREFOX:-firefox-esr}
prof="$work/ext-profile"
shipped="$work/picl-shipped.xpi"
rm -rf "$prof"; mkdir -p "$prof/extensions"
if ! python3 "$src/extension/build-xpi.py" "$shipped" ||
   ! python3 "$here/ext/build_test_xpi.py" "$shipped" "$prof/extensions/picl@picl.invalid.xpi"; then
    echo "extension FAIL: cannot build the XPIs"; echo "extension: 0 passed, 1 failed"; exit 1
fi
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
user_pref("devtools.console.stdout.chrome", true);
user_pref("devtools.console.stdout.content", true);
user_pref("services.picl.libraryPath", "${PICL_LIB}");
PREFS
report="$work/ext-report.json"
rm -f "$report"
badlib="$work/no-such-dir/libpicl.so"
email="ext-$(date +%s)-$$@example.com"
cfg=$(python3 -c 'import json, sys; print(json.dumps(dict(zip(sys.argv[1::2], sys.argv[2::2]))))' \
      lib "$PICL_LIB" badLib "$badlib" keyserver "$PICL_KEYSERVER" keyserverData "$PICL_KEYSERVER_DATA" \
      picl "${PICL_BUILD:-$src/build}/picl" work "$work" \
      email "$email")
t0=$(date +%s)
PICL_EXT_TEST="$cfg" PICL_EXT_REPORT="$report" MOZ_CRASHREPORTER_DISABLE=1 PICL_LIB= \
    timeout -k 5 120 "$ff" --headless --no-remote --profile "$prof" about:blank > "$work/ext-firefox.log" 2>&1
rc=$?
echo "extension: firefox exited $rc after $(( $(date +%s) - t0 )) s"
python3 - "$report" "$cfg" "$shipped" <<'PY'
import glob, json, os, re, sys, zipfile
report, cfg, shipped = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
lib, ksdata = cfg["lib"], cfg["keyserverData"]
passed = failed = 0
def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("extension FAIL:", what)

# the shipped XPI: no test hook, a toolbar button with our icon in the navbar
with zipfile.ZipFile(shipped) as z:
    names = z.namelist()
    hooks = [n for n in names if re.search(rb"testReport|testConfig|PICL_EXT_|picltest", z.read(n))]
    check(not hooks, "the shipped XPI holds no test hook (found in %s)" % hooks)
    check(not [n for n in names if n.startswith("test/")], "the shipped XPI holds no test/ file: %s" % names)
    m = json.loads(z.read("manifest.json"))
    ba = m.get("browser_action", {})
    check(ba.get("default_area") == "navbar", "browser_action.default_area is navbar: %s" % ba)
    icons = set((ba.get("default_icon") or {}).values()) | set((m.get("icons") or {}).values())
    check(icons and all(i in names and z.read(i).lstrip().startswith(b"<!--") and b"<svg" in z.read(i)
                        for i in icons), "the icons are packed SVGs: %s" % icons)

try:
    r = json.load(open(report))
except Exception as e:
    r = None
    check(False, "no report from the self-test (%s)" % e)
if r is not None:
    check("error" not in r, "self-test error: %s" % r.get("error"))
    print("extension: self-test steps done after (ms): %s" % ", ".join("%s %s" % kv for kv in (r.get("times") or {}).items()))
    check(r.get("hooks") == {"testReport": "undefined", "testConfig": "undefined"},
          "browser.picl has no test hook: %s" % r.get("hooks"))
    tb = (r.get("toolbar") or {}).get("value") or {}
    check(tb.get("area") == "nav-bar" and tb.get("inNavBar") is True,
          "the button sits in the navigation toolbar, not the Extensions menu: %s" % tb)
    check("icons/picl.svg" in (tb.get("toolbarImage") or ""), "the button shows PiCL's icon: %s" % tb)

    # libpicl that cannot load: the API and the popup name both settings
    x = r.get("nolibState", {})
    msg = x.get("message", "")
    check(x.get("ok") is False and x.get("result") == 7, "getState without libpicl rejects with 7: %s" % x)
    for part in ("services.picl.libraryPath", "PICL_LIB", cfg["badLib"], "Tried", "No such file or directory"):
        check(part in msg, "the library error names %r: %s" % (part, msg))
    x = r.get("nolibInfo", {})
    check(x.get("ok") is False and cfg["badLib"] in x.get("message", "") and "PICL_LIB" in x.get("message", ""),
          "libraryInfo without libpicl: %s" % x)
    p = r.get("nolibPopup") or {}
    check(p.get("statusClass") == "error" and p.get("status") == "PiCL cannot start."
          and p.get("messageClass") == "error" and "services.picl.libraryPath" in p.get("message", "")
          and "PICL_LIB" in p.get("message", "") and cfg["badLib"] in p.get("message", ""),
          "the popup shows the library error: %s / %s" % (p.get("status"), p.get("message")))
    check("Signed out" not in p.get("status", ""), "the popup does not say Signed out without libpicl")
    check(all((p.get("hidden") or {}).get(k) for k in ("signin", "forgot", "verify", "account")),
          "no form without libpicl: %s" % p.get("hidden"))
    p = r.get("libPopup") or {}
    check(p.get("status", "").startswith("Signed out") and p.get("statusClass") == "" and p.get("message") == "" and
          (p.get("hidden") or {}).get("signin") is False,
          "once the pref is right the popup offers sign-in: %s" % p)

    lb = r.get("library", {})
    check(lb.get("ok"), "libraryInfo: %s" % lb)
    v = lb.get("value") or {}
    check(v.get("path") == lib and "services.picl.libraryPath" in (v.get("from") or ""),
          "library path from the pref: %r (%r)" % (v.get("path"), v.get("from")))
    check(bool((v.get("strerror") or {}).get("18")), "picl_strerror(18) through the Experiment")
    st = r.get("stateBefore", {}).get("value") or {}
    check(st.get("classes") == {"bookmarks": "A", "history": "A", "passwords": "B"},
          "default classes: %s" % st.get("classes"))
    check(st.get("signedInEmail") == "" and st.get("verified") is False and st.get("lastSyncTime") == 0,
          "signed out, never synced: %s" % st)
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
            check("popupError" not in r, "popup flows: %s (last view %s)" % (r.get("popupError"), r.get("popupLast")))

            # messages: an error and a success look different, in a live region
            e, s = r.get("popupSignInUnknown") or {}, r.get("popupCreate") or {}
            check(e.get("messageClass") == "error" and e.get("messageCode") == "21" and e.get("message")
                  and "(picl" not in e.get("message"), "a failed sign-in is an error message: %s" % e)
            check(s.get("messageClass") == "success" and cfg["email"] in s.get("message", ""),
                  "account created is a success message: %s" % s)
            check(e.get("messageColor") and e.get("messageColor") != s.get("messageColor")
                  and e.get("messageBackground") != s.get("messageBackground"),
                  "error and success styles differ: %s/%s vs %s/%s" % (e.get("messageColor"), e.get("messageBackground"),
                                                                       s.get("messageColor"), s.get("messageBackground")))
            check(e.get("messageRole") == "status" and e.get("messageLive") == "polite",
                  "the message is an aria-live status: %s %s" % (e.get("messageRole"), e.get("messageLive")))
            st = r.get("stateCreated", {}).get("value") or {}
            check(st.get("signedInEmail") == cfg["email"] and st.get("verified") is False,
                  "signed in, unverified, after createAccount: %s" % st)
            x = r.get("syncUnverified", {})
            check(x.get("ok") is False and x.get("result") == 19, "sync unverified rejects with UNVERIFIED (19): %s" % x)
            mails = [open(f, errors="replace").read() for f in glob.glob(os.path.join(ksdata, "mail", "new", "*"))]
            mails = [t for t in mails if cfg["email"] in t]
            for h in ("X-Verify-Code", "X-Recovery-Code"):
                n = len([t for t in mails if re.search("^" + h + ":", t, re.M)])
                check(n == 1, "the keyserver mailed one %s to %s (%d)" % (h, cfg["email"], n))
            x = r.get("popupReopened") or {}
            check(x.get("hidden", {}).get("verify") is False and x.get("hidden", {}).get("keys") is True,
                  "a reopened popup asks for the code: %s" % x.get("hidden"))
            x, st = r.get("popupVerified") or {}, r.get("stateVerified", {}).get("value") or {}
            check(st.get("verified") is True and x.get("hidden", {}).get("verify") is True
                  and x.get("hidden", {}).get("keys") is (st.get("hasKeys") is True),
                  "verified; the password is asked once exactly when the keys are missing: %s, %s" % (x, st))
            x = r.get("popupVerify") or {}
            check(x.get("status") == "Signed in as " + cfg["email"] and x.get("messageClass") == "success"
                  and x.get("lastSync") == "Not synced yet" and x.get("hidden", {}).get("keys") is True,
                  "verified, with the keys, from the popup: %s" % x)

            # last synced
            x = r.get("popupSync") or {}
            check(x.get("messageClass") == "success" and x.get("message", "").startswith("Synced:")
                  and x.get("lastSync") == "Last synced: just now", "sync now, last synced just now: %s" % x)
            check(r.get("popupVerify", {}).get("classesUnknownNote") is True and x.get("classesUnknownNote") is False
                  and (r.get("stateSynced", {}).get("value") or {}).get("classesKnown") is True,
                  "default classes are flagged until a sync reads the class map: %s -> %s"
                  % (r.get("popupVerify", {}).get("classesUnknownNote"), x.get("classesUnknownNote")))
            x2 = r.get("signInNew") or {}
            check(x2.get("classesUnknownNote") is True, "flagged again after a new sign-in: %s" % x2.get("classesUnknownNote"))
            check(x.get("during") == {"busy": "true", "syncDisabled": True} and x.get("syncDisabled") is False,
                  "while it syncs the popup is aria-busy and Sync now is disabled: %s, after %s"
                  % (x.get("during"), x.get("syncDisabled")))
            check((r.get("stateSynced", {}).get("value") or {}).get("hasKeys") is True, "the keys are here after the sync")
            t = (r.get("stateSynced", {}).get("value") or {}).get("lastSyncTime", 0)
            w = r.get("syncWindow") or [1, 0]
            check(w[0] <= t <= w[1], "lastSyncTime %s within the sync (%s..%s)" % (t, w[0], w[1]))
            rt = r.get("relativeTimes") or {}
            if str(rt.get("locale", "")).startswith("en"):
                want = {"s10": "just now", "m3": "3 minutes ago", "h2": "2 hours ago", "d1": "yesterday",
                        "d3": "3 days ago"}
                check(all(rt.get(k) == v for k, v in want.items()), "relative times: %s" % rt)

            # devices, recovery key, recent activity
            x = r.get("security") or {}
            check(x.get("hidden") is False and len(x.get("devices", [])) == 1
                  and "(this device)" in x["devices"][0] and "browser" in x["devices"][0]
                  and x["devices"][0].startswith("Firefox "),
                  "the popup lists this browser as the account's one device: %s" % x.get("devices"))
            check(x.get("rkState", "").startswith("No recovery key") and x.get("rkRemoveHidden") is True,
                  "no recovery key yet: %s" % x.get("rkState"))
            # (the first sync writes the first map, then adds the collections
            # it brings that the map lacks, in one more version: two changes)
            ev = x.get("events", [])
            check(ev[:4] == ["classmap.changed", "classmap.changed", "account.verified", "login"],
                  "recent activity, newest first: %s" % ev)
            # another device's open tabs (the picl command on the same account)
            x = r.get("remoteBefore") or {}
            check(x.get("devices") == [] and x.get("state", "").startswith("No open tabs"),
                  "no other device's tabs before: %s" % x)
            peer = r.get("peer") or {}
            check(peer.get("ok"), "a second device (picl) uploaded its open tabs: %s" % peer)
            devs = (r.get("remoteTabs") or {}).get("devices", [])
            check(len(devs) == 1 and devs[0].get("id") == peer.get("value")
                  and devs[0].get("text", "").startswith("phone, last seen "),
                  "the popup lists the other device: %s" % devs)
            check(devs and devs[0].get("tabs") == [
                      {"text": "Phone page", "href": "https://phone.example/page", "target": "_blank"},
                      {"text": "https://phone.example/untitled", "href": "https://phone.example/untitled",
                       "target": "_blank"}],
                  "its tabs as links, untitled ones by URL: %s" % devs)
            # this browser's own tabs, from SessionStore's live state, as the other device sees them
            seen = (r.get("peerSees") or {}).get("value") or {}
            urls = [t.get("url") for d in seen.get("devices", []) for t in d.get("tabs", [])]
            check((r.get("ownTabsSync") or {}).get("messageClass") == "success" and r.get("ownPageURL") in urls,
                  "the other device lists this browser's open page %s: %s / %s"
                  % (r.get("ownPageURL"), urls, r.get("ownTabsSync")))
            x = r.get("rkWrong") or {}
            check(x.get("messageClass") == "error" and x.get("messageCode") == "18" and x.get("rkKey") is None,
                  "a wrong password makes no recovery key: %s" % x)
            x = r.get("rkCreate") or {}
            check(x.get("messageClass") == "success"
                  and re.match(r"^([A-Z2-7]{4}-){12}[A-Z2-7]{4}$", x.get("rkKey") or "") is not None
                  and x.get("rkState", "").startswith("A recovery key is set") and x.get("rkRemoveHidden") is False
                  and (r.get("rkExists") or {}).get("value") is True
                  and x.get("events", [])[:2] == ["recoveryKey.created", "login"],
                  "the popup makes a recovery key and shows it once: %s" % x)

            # a class move is confirmed first
            x = r.get("moveAsk") or {}
            check(x.get("hidden", {}).get("confirm-move") is False, "moving bookmarks to B asks first: %s" % x)
            check("class B" in x.get("title", "") and "forget your password" in x.get("text", "")
                  and "lost" in x.get("text", "") and "recovery key" in x.get("text", ""),
                  "the question explains class B: %s / %s" % (x.get("title"), x.get("text")))
            cls = lambda k: ((r.get(k, {}).get("value") or {}).get("classes") or {}).get("bookmarks")
            check(cls("moveAskState") == "A", "nothing moved while asking: %s" % cls("moveAskState"))
            x = r.get("moveCancel") or {}
            check(x.get("select") == "A" and x.get("hidden", {}).get("confirm-move") is True
                  and cls("moveCancelState") == "A" and x.get("messageClass") == "info",
                  "Cancel keeps class A: %s, state %s" % (x, cls("moveCancelState")))
            x = r.get("moveAskA") or {}
            check("class A" in x.get("title", "") and "keyserver" in x.get("text", ""),
                  "the question explains class A: %s" % x)
            x = r.get("moveDone") or {}
            check(x.get("messageClass") == "success" and cls("moveDoneState") == "B",
                  "confirmed: bookmarks in class B: %s, state %s" % (x.get("message"), cls("moveDoneState")))

            # change password
            x = r.get("changeForm") or {}
            check(x.get("hidden", {}).get("change") is False, "the change-password form opens: %s" % x.get("hidden"))
            x = r.get("changeMismatch") or {}
            check(x.get("messageClass") == "error" and "differ" in x.get("message", ""),
                  "two different new passwords are refused: %s" % x)
            x = r.get("changeDone") or {}
            check(x.get("messageClass") == "success" and x.get("hidden", {}).get("change") is True,
                  "password changed (the old one was still valid after the refused attempt): %s" % x)
            x = r.get("signInOld") or {}
            check(x.get("messageClass") == "error" and x.get("messageCode") == "18",
                  "the old password is refused (WRONG_PASSWORD): %s" % x)
            x = r.get("signInNew") or {}
            check(x.get("messageClass") == "success" and x.get("status") == "Signed in as " + cfg["email"],
                  "the new password signs in: %s" % x)
            st = r.get("stateSignedOut", {}).get("value") or {}
            check(st.get("signedInEmail") == "" and st.get("lastSyncTime") == 0, "sign-out forgets the last sync: %s" % st)

            # forgot password
            x = r.get("forgotForm") or {}
            check(x.get("hidden", {}).get("forgot") is False and x.get("hidden", {}).get("signin") is True
                  and x.get("email") == cfg["email"], "the forgot-password form: %s" % x)
            x = r.get("forgotSent") or {}
            check(x.get("messageClass") == "success" and cfg["email"] in x.get("message", ""),
                  "a reset code was sent: %s" % x)
            x = r.get("resetMismatch") or {}
            check(x.get("messageClass") == "error" and "differ" in x.get("message", ""),
                  "two different new passwords are refused in the reset: %s" % x)
            x = r.get("resetDone") or {}
            check(x.get("messageClass") == "success" and x.get("status") == "Signed in as " + cfg["email"]
                  and "class B" in x.get("message", ""), "password reset with the mailed code: %s" % x)
            st = r.get("stateReset", {}).get("value") or {}
            check(st.get("signedInEmail") == cfg["email"] and st.get("verified") is True,
                  "signed in after the reset: %s" % st)
        else:
            print("extension: libpicl has no service yet (%s): account calls not checked" % v.get("missing"))
print("extension: %d passed, %d failed" % (passed, failed))
PY
