/* test_prefs.js -- preferences between two browsers through the live
 * Services.prefs store (sync(["prefs"])): the allow-listed preferences set
 * on one reach the other, a reset to the default travels, and a preference
 * off the list (browser.download.dir, a path) never leaves the device.
 * Needs the servers run.sh starts. */
"use strict";

do_get_profile();
const OPS = [PathUtils.join(picl_srcdir(), "tests", "xpcshell", "forms_ops.js")];
load(OPS[0]);
const { PiCLService } = picl_import("PiCLService.sys.mjs");
const EMAIL = picl_email("prefs");
const PW = "prefs test password";
const WORK = Services.env.get("PICL_XPC_WORK") || PathUtils.tempDir;
const B_DIR = PathUtils.join(WORK, "prefs-profile-b-" + Date.now());
const NAMES = ["browser.tabs.warnOnClose", "layout.spellcheckDefault", "intl.accept_languages",
               "browser.download.dir"];

registerCleanupFunction(() => PiCLService._shutdown());

async function onB(ops) {
  let r = await picl_peer(B_DIR, ops, 60, OPS);
  r.forEach((x, i) => Assert.ok(!(x && x.error), "peer op " + ops[i].op + ": " + JSON.stringify(x)));
  return r;
}

add_task(async function test_prefs_both_ways() {
  PiCLService.keyserverURL = picl_servers().keyserver;
  await PiCLService.createAccount(EMAIL, PW);
  await PiCLService.verifyEmail(await picl_mail_code(EMAIL, "X-Verify-Code"));
  await PiCLService.signIn(EMAIL, PW);
  await picl_ops.prefsSet({ values: { "browser.tabs.warnOnClose": true, "layout.spellcheckDefault": 0,
                                      "intl.accept_languages": "fr, en", "browser.download.dir": "/home/a" } });
  let s = JSON.parse(await PiCLService.sync(["prefs"]));
  Assert.equal(s.collections.prefs.uploaded, 1, "A's record uploaded: " + JSON.stringify(s));

  let [, , , b] = await onB([{ op: "configure" }, { op: "call", method: "signIn", args: [EMAIL, PW] },
                             { op: "sync", collections: ["prefs"] }, { op: "prefsGet", names: NAMES }]);
  Assert.deepEqual(b, { "browser.tabs.warnOnClose": true, "layout.spellcheckDefault": 0,
                        "intl.accept_languages": "fr, en", "browser.download.dir": null });

  /* B changes one, resets another to its default: A follows */
  await onB([{ op: "configure" }, { op: "call", method: "signIn", args: [EMAIL, PW] },
             { op: "prefsSet", values: { "layout.spellcheckDefault": 2 } },
             { op: "call", method: "sync", args: [["prefs"]] }]);
  Services.prefs.clearUserPref("intl.accept_languages");
  s = JSON.parse(await PiCLService.sync(["prefs"]));
  Assert.equal(s.collections.prefs.applied, 1, JSON.stringify(s));
  let a = await picl_ops.prefsGet({ names: NAMES });
  Assert.equal(a["layout.spellcheckDefault"], 2);
  Assert.equal(a["browser.download.dir"], "/home/a", "A's own path kept");
});
