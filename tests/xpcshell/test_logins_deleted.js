// SPDX-License-Identifier: MPL-2.0
/* test_logins_deleted.js -- a saved login deleted in the browser
 * (Services.logins.removeLoginAsync) is deleted on the other device, both
 * ways, through PiCLService and the live passwords store: Firefox keeps the
 * deletion as a tombstone in logins.json, the store uploads it (also when it
 * was made while PiCL was not loaded), an incoming tombstone is applied as
 * Firefox's own sync applies it, and nothing comes back.  Needs the servers
 * run.sh starts. */
"use strict";

do_get_profile();
{
  let f = PathUtils.join(picl_srcdir(), "tests", "xpcshell", "logins_ops.js");
  load(f);
}
const OPS_FILE = PathUtils.join(picl_srcdir(), "tests", "xpcshell", "logins_ops.js");
const { PiCLService } = picl_import("PiCLService.sys.mjs");
const { PiCLStores } = picl_import("PiCLStores.sys.mjs");
const EMAIL = picl_email("logins-deleted");
const PW = "logins deleted password 1";
const WORK = Services.env.get("PICL_XPC_WORK") || PathUtils.tempDir;
const B_DIR = PathUtils.join(WORK, "logins-deleted-b-" + Date.now());

registerCleanupFunction(() => PiCLService._shutdown());

/* Runs ops on profile B (a fresh process: PiCL is loaded only by a sync op). */
async function onB(ops) {
  let r = await picl_peer(B_DIR, ops, 60, [OPS_FILE]);
  r.forEach((x, i) => Assert.ok(!(x && x.error), "peer op " + ops[i].op + ": " + JSON.stringify(x)));
  return r;
}

async function syncA() {
  let s = JSON.parse(await PiCLService.sync(["passwords"]));
  Assert.equal(s.status, "ok", "A's sync: " + JSON.stringify(s));
  return s.collections.passwords;
}

add_task(async function test_setup() {
  PiCLService.keyserverURL = picl_servers().keyserver;
  await PiCLService.createAccount(EMAIL, PW);
  await PiCLService.verifyEmail(await picl_mail_code(EMAIL, "X-Verify-Code"));
  await PiCLService.signIn(EMAIL, PW);
  await picl_ops.addLogin({ origin: "https://one.example", username: "alice", password: "pw-1", guid: "{del-1}" });
  await picl_ops.addLogin({ origin: "https://two.example", username: "carol", password: "pw-2", guid: "{del-2}" });
  await picl_ops.addLogin({ origin: "https://three.example", username: "dave", password: "pw-3", guid: "{del-3}" });
  Assert.equal((await syncA()).uploaded, 3, "A uploads its three logins");
  /* Firefox's bookkeeping after an upload: counted changes done, everSynced */
  let fs = await picl_ops.loginsSync();
  for (let g of ["{del-1}", "{del-2}", "{del-3}"]) {
    Assert.deepEqual(fs[g], { deleted: false, syncCounter: 0, everSynced: true }, g + " after the upload");
  }
  let [, , s, b] = await onB([{ op: "configure" }, { op: "call", method: "signIn", args: [EMAIL, PW] },
                              { op: "sync", collections: ["passwords"] }, { op: "dump" }]);
  Assert.equal(s.collections.passwords.applied, 3);
  Assert.deepEqual(Object.keys(b.passwords).sort(), ["{del-1}", "{del-2}", "{del-3}"], "B has A's logins");
});

add_task(async function test_deleted_on_b_before_picl_loads() {
  /* B: the user deletes {del-1} in a session where PiCL is not loaded */
  let [, fs, s, b, after] = await onB([
    { op: "removeLogin", guid: "{del-1}" }, { op: "loginsSync" },
    { op: "sync", collections: ["passwords"] }, { op: "dump" }, { op: "loginsSync" }]);
  Assert.deepEqual(fs["{del-1}"], { deleted: true, syncCounter: 1, everSynced: true },
                   "Firefox keeps a tombstone for a synced login");
  Assert.equal(s.collections.passwords.uploaded, 1, "B uploads the deletion");
  Assert.ok(!("{del-1}" in b.passwords), "gone on B");
  Assert.deepEqual(after["{del-1}"], { deleted: true, syncCounter: 0, everSynced: true },
                   "the tombstone stays, uploaded, as Firefox's sync leaves it");
  Assert.equal((await syncA()).applied, 1, "A applies the tombstone");
  let a = await picl_ops.dump();
  Assert.deepEqual(Object.keys(a.passwords).sort(), ["{del-2}", "{del-3}"], "{del-1} is gone on A");
  Assert.equal((await Services.logins.searchLoginsAsync({ guid: "{del-1}" })).length, 0,
               "the login manager does not find it");
  let fa = await picl_ops.loginsSync();
  Assert.deepEqual(fa["{del-1}"], { deleted: true, syncCounter: 0, everSynced: true },
                   "applied as Firefox's sync applies a deletion: nothing to upload");
  Assert.deepEqual(await PiCLStores.get("passwords").changes(), [], "not a local change on A");
});

add_task(async function test_deleted_on_a_while_observed() {
  let [l] = await Services.logins.searchLoginsAsync({ guid: "{del-2}" });
  await Services.logins.removeLoginAsync(l);
  let fa = await picl_ops.loginsSync();
  Assert.deepEqual(fa["{del-2}"], { deleted: true, syncCounter: 1, everSynced: true }, "a tombstone on A");
  Assert.deepEqual(await PiCLStores.get("passwords").changes(), [{ id: "{del-2}", deleted: true }],
                   "the deletion is A's one change");
  Assert.equal((await syncA()).uploaded, 1, "A uploads it");
  fa = await picl_ops.loginsSync();
  Assert.deepEqual(fa["{del-2}"], { deleted: true, syncCounter: 0, everSynced: true }, "uploaded");
  let [s, b, fb] = await onB([{ op: "sync", collections: ["passwords"] }, { op: "dump" }, { op: "loginsSync" }]);
  Assert.equal(s.collections.passwords.applied, 1);
  Assert.deepEqual(Object.keys(b.passwords), ["{del-3}"], "{del-2} is gone on B");
  Assert.deepEqual(fb["{del-2}"], { deleted: true, syncCounter: 0, everSynced: true }, "B's tombstone is done");
});

add_task(async function test_nothing_comes_back() {
  let [s1] = await onB([{ op: "sync", collections: ["passwords"] }]);
  Assert.equal(s1.collections.passwords.uploaded, 0, "B uploads nothing more");
  let s = await syncA();
  Assert.equal(s.uploaded, 0, "A uploads nothing more");
  let a = await picl_ops.dump();
  Assert.deepEqual(Object.keys(a.passwords), ["{del-3}"], "only the login nobody deleted is left");
  /* a never-synced login deleted locally is simply gone: no tombstone, no upload */
  await picl_ops.addLogin({ origin: "https://local.example", username: "eve", password: "pw-l", guid: "{del-l}" });
  let [l] = await Services.logins.searchLoginsAsync({ guid: "{del-l}" });
  await Services.logins.removeLoginAsync(l);
  Assert.ok(!("{del-l}" in (await picl_ops.loginsSync())), "Firefox removed it outright");
});
