// SPDX-License-Identifier: MPL-2.0
/* test_restore.js -- the undo through PiCLService: deleting every saved
 * login is held by the mass-deletion guard (CONFLICT, observer topic
 * "picl:sync:mass-delete", nothing uploaded), let through with
 * allowMassDelete, then restoreCollection previews (nothing changed) and
 * brings every login back into Services.logins, and on a second device
 * (a peer profile) that had followed the deletion.  Needs the servers run.sh
 * starts. */
"use strict";

do_get_profile();
const { PiCLService, PICL_STATUS } = picl_import("PiCLService.sys.mjs");
const EMAIL = picl_email("restore");
const PW = "restore password 1";
const N = 30;
const guid = i => "{restore-" + String(i).padStart(2, "0") + "}";
let asOf = 0;
/* the second device: a peer browser profile */
const B_DIR = PathUtils.join(Services.env.get("PICL_XPC_WORK") || PathUtils.tempDir, "peer-restore-" + Date.now());

/* Syncs the passwords on the second device; how many of the N logins it
 * then holds, each checked against its password. */
async function onB(first) {
  let ops = first ? [{ op: "configure" }, { op: "call", method: "signIn", args: [EMAIL, PW] }] : [];
  let r = await picl_peer(B_DIR, [...ops, { op: "sync", collections: ["passwords"] }, { op: "dump" }]);
  let [sync, dump] = r.slice(-2);
  Assert.equal(sync && sync.status, "ok", "the second device's sync: " + JSON.stringify(sync));
  let n = 0;
  for (let i = 0; i < N; i++) {
    let l = dump && dump.passwords && dump.passwords[guid(i)];
    if (l) {
      Assert.equal(l.password, "pw-" + i, "login " + i + " on the second device as it was");
      n++;
    }
  }
  return n;
}

registerCleanupFunction(() => PiCLService._shutdown());

async function present() {
  let n = 0;
  for (let i = 0; i < N; i++) {
    let [l] = await Services.logins.searchLoginsAsync({ guid: guid(i) });
    if (l) {
      Assert.equal(l.password, "pw-" + i, "login " + i + " as it was");
      n++;
    }
  }
  return n;
}

add_task(async function test_setup() {
  PiCLService.keyserverURL = picl_servers().keyserver;
  await PiCLService.createAccount(EMAIL, PW);
  await PiCLService.verifyEmail(await picl_mail_code(EMAIL, "X-Verify-Code"));
  await PiCLService.signIn(EMAIL, PW);
  for (let i = 0; i < N; i++) {
    await picl_ops.addLogin({ origin: "https://restore" + i + ".example", username: "u" + i, password: "pw-" + i,
                              guid: guid(i) });
  }
  let s = JSON.parse(await PiCLService.sync(["passwords"]));
  Assert.equal(s.collections.passwords.uploaded, N);
  Assert.equal(s.status, "ok", "first sync: " + JSON.stringify(s));
  Assert.equal(await onB(true), N, "the second device has every login");
  await do_timeout_promise(1100);
  asOf = Math.floor(Date.now() / 1000);
  await do_timeout_promise(1100);
});

add_task(async function test_mass_delete_guard() {
  for (let i = 0; i < N; i++) {
    let [l] = await Services.logins.searchLoginsAsync({ guid: guid(i) });
    await Services.logins.removeLoginAsync(l);
  }
  let told = null;
  let obs = (subject, topic, data) => { told = JSON.parse(data); };
  Services.obs.addObserver(obs, "picl:sync:mass-delete");
  await Assert.rejects(PiCLService.sync(["passwords"]), e => e.result == PICL_STATUS.CONFLICT &&
                       /--allow-mass-delete/.test(e.message), "held by the guard");
  Services.obs.removeObserver(obs, "picl:sync:mass-delete");
  Assert.ok(told && told[0].collection == "passwords", "observer told: " + JSON.stringify(told));
  /* nothing went up: a preview of the restore to now has nothing to do */
  let p = JSON.parse(await PiCLService.restoreCollection("passwords", Date.now() / 1000, false));
  Assert.equal(p.delete.length, 0);
  Assert.equal(p.restore.length, 0);
  PiCLService.allowMassDelete = true;
  let s = JSON.parse(await PiCLService.sync(["passwords"]));
  PiCLService.allowMassDelete = false;
  Assert.equal(s.status, "ok", "allowed: " + JSON.stringify(s));
  Assert.equal(await present(), 0);
  Assert.equal(await onB(false), 0, "the second device followed the deletion");
});

add_task(async function test_restore_collection() {
  let p = JSON.parse(await PiCLService.restoreCollection("passwords", asOf, false));
  Assert.equal(p.applied, false);
  for (let i = 0; i < N; i++) {
    Assert.ok(p.restore.includes(guid(i)), guid(i) + " in the plan");
  }
  Assert.equal(await present(), 0, "a preview changes nothing");
  p = JSON.parse(await PiCLService.restoreCollection("passwords", asOf, true));
  Assert.equal(p.applied, true);
  Assert.equal(await present(), N, "every login back");
  Assert.equal(await onB(false), N, "every login back on the second device too");
  await Assert.rejects(PiCLService.restoreCollection("passwords", asOf - 40 * 86400, false),
                       e => /30 days/.test(e.message), "older than the server keeps");
});
