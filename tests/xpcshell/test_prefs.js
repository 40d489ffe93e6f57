// SPDX-License-Identifier: MPL-2.0
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

/* An unchanged preference set is not uploaded again (markSynced keeps what
 * went up as the base); a record naming a path, a server, a URL or a
 * password, or a control pref, is refused name by name, told on
 * picl:prefs:refused, and nothing of it is set, even with a local control
 * pref allowing the name; the allowed preference in the same record is. */
add_task(async function test_prefs_refused_and_uploaded_once() {
  Services.prefs.setIntPref("layout.spellcheckDefault", 1);
  let s = JSON.parse(await PiCLService.sync(["prefs"]));
  Assert.equal(s.collections.prefs.uploaded, 1, "the change goes up");
  s = JSON.parse(await PiCLService.sync(["prefs"]));
  Assert.equal(s.collections.prefs.uploaded, 0, "unchanged: not uploaded again: " + JSON.stringify(s));

  const { PiCLStores } = picl_import("PiCLStores.sys.mjs");
  const HOSTILE = {
    "browser.download.dir": "/tmp/evil",                        /* a path */
    "network.proxy.http": "evil.example",                       /* a server */
    "app.update.url": "https://evil.example/update",            /* a URL */
    "signon.masterPasswordReprompt.timeout_ms": 1,              /* a password */
    "services.sync.prefs.sync.browser.download.dir": true,      /* a control pref */
  };
  for (let name of Object.keys(HOSTILE)) {
    Services.prefs.setBoolPref("services.sync.prefs.sync." + name, true);   /* even allowed locally */
  }
  let before = {};
  for (let name of Object.keys(HOSTILE)) {
    before[name] = Services.prefs.prefHasUserValue(name) ? String(Services.prefs.getPrefType(name)) : null;
  }
  let told = [];
  let obs = (subject, topic, data) => told.push(...JSON.parse(data));
  Services.obs.addObserver(obs, "picl:prefs:refused");
  let record = await PiCLStores.get("prefs").all();
  let value = Object.assign({}, record[0].value, HOSTILE, { "layout.spellcheckDefault": 2 });
  await PiCLStores.get("prefs").apply([{ id: record[0].id, value }]);
  Services.obs.removeObserver(obs, "picl:prefs:refused");
  Assert.deepEqual(told.map(r => r.name).sort(), Object.keys(HOSTILE).sort(), "each hostile name refused");
  Assert.ok(told.every(r => /not a preference Firefox syncs/.test(r.reason)), JSON.stringify(told));
  for (let name of Object.keys(HOSTILE)) {
    let now = Services.prefs.prefHasUserValue(name) ? String(Services.prefs.getPrefType(name)) : null;
    Assert.equal(now, before[name], name + " left as it was");
  }
  Assert.equal(Services.prefs.getStringPref("browser.download.dir", ""), "/home/a", "the local path kept");
  Assert.equal(Services.prefs.getIntPref("layout.spellcheckDefault"), 2, "the allowed one applied");
});
