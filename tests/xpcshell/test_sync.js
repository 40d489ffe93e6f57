// SPDX-License-Identifier: MPL-2.0
/* test_sync.js -- two profiles (this xpcshell process and peer processes on
 * a second profile) syncing bookmarks, history and logins both ways through
 * the live stores; class moves; a password reset (class A survives, class B
 * is gone). Needs the servers run.sh starts. */
"use strict";

do_get_profile();
const { PiCLService, PICL_STATUS } = picl_import("PiCLService.sys.mjs");
const { PlacesUtils } = ChromeUtils.importESModule("resource://gre/modules/PlacesUtils.sys.mjs");
const BM = PlacesUtils.bookmarks;
const EMAIL = picl_email("sync");
const PW = "sync test password 1";
const PW_RESET = "sync test password 2";
const T0 = Date.UTC(2025, 5, 1, 10, 0, 0);
const WORK = Services.env.get("PICL_XPC_WORK") || PathUtils.tempDir;
const B_DIR = PathUtils.join(WORK, "sync-profile-b-" + Date.now());
const C_DIR = PathUtils.join(WORK, "sync-profile-c-" + Date.now());

registerCleanupFunction(() => PiCLService._shutdown());

/* Runs ops on profile B; fails the test on any op error. */
async function onB(ops, dir = B_DIR) {
  let r = await picl_peer(dir, ops);
  r.forEach((x, i) => Assert.ok(!(x && x.error), "peer op " + ops[i].op + ": " + JSON.stringify(x)));
  return r;
}

async function localDump() {
  return picl_ops.dump();
}

add_task(async function test_setup_account() {
  PiCLService.keyserverURL = picl_servers().keyserver;
  await PiCLService.createAccount(EMAIL, PW);
  await PiCLService.verifyEmail(await picl_mail_code(EMAIL, "X-Verify-Code"));
  Assert.equal(PiCLService.verified, true);
  /* the keys are fetched at a sign-in of a verified account */
  await PiCLService.signIn(EMAIL, PW);
});

add_task(async function test_a_to_b() {
  await BM.insert({ parentGuid: BM.toolbarGuid, type: BM.TYPE_FOLDER, title: "From A", guid: "fldrFromA001" });
  await BM.insert({ parentGuid: "fldrFromA001", url: "https://a.example/", title: "A page", guid: "bmkFromA0001" });
  await PlacesUtils.history.insert({ url: "https://a.example/visited", title: "Visited on A",
                                     visits: [{ date: new Date(T0), transition: 1 }] });
  await picl_ops.addLogin({ origin: "https://login.a.example", username: "alice", password: "pw-a",
                            guid: "{login-from-a}" });
  let s = JSON.parse(await PiCLService.sync([]));
  Assert.equal(s.status, "ok", "A's first sync: " + JSON.stringify(s));
  Assert.greater(s.collections.bookmarks.uploaded, 0, "bookmarks uploaded");
  Assert.equal(s.collections.passwords.uploaded, 1, "one login uploaded");
  Assert.equal(s.collections.history.uploaded, 1, "one page uploaded");

  let [, , , b] = await onB([{ op: "configure" }, { op: "call", method: "signIn", args: [EMAIL, PW] },
                             { op: "sync", collections: [] }, { op: "dump" }]);
  Assert.equal(b.bookmarks.bmkFromA0001.bmkUri, "https://a.example/", "A's bookmark on B");
  Assert.equal(b.bookmarks.bmkFromA0001.parentid, "fldrFromA001");
  Assert.equal(b.bookmarks.fldrFromA001.parentid, "toolbar", "in the same folder on the toolbar");
  let page = Object.values(b.history).find(h => h.histUri == "https://a.example/visited");
  Assert.ok(page, "A's visit on B");
  Assert.deepEqual(page && page.visits, [{ date: T0 * 1000, type: 1 }], "with its date and type");
  Assert.equal(page && page.title, "Visited on A");
  let login = b.passwords["{login-from-a}"];
  Assert.ok(login, "A's login on B");
  Assert.equal(login && login.username, "alice");
  Assert.equal(login && login.password, "pw-a", "decrypted by B's login manager");
});

add_task(async function test_b_to_a_and_edits_both_ways() {
  await onB([
    { op: "addBookmark", guid: "bmkFromB0001", url: "https://b.example/", title: "B page", parentGuid: "fldrFromA001" },
    { op: "addVisit", url: "https://b.example/visited", title: "Visited on B", date: T0 + 60000 },
    { op: "addLogin", origin: "https://login.b.example", username: "bob", password: "pw-b", guid: "{login-from-b}" },
    { op: "sync", collections: [] },
  ]);
  let s = JSON.parse(await PiCLService.sync([]));
  Assert.equal(s.status, "ok");
  let a = await localDump();
  Assert.equal(a.bookmarks.bmkFromB0001 && a.bookmarks.bmkFromB0001.parentid, "fldrFromA001", "B's bookmark on A");
  Assert.deepEqual(a.bookmarks.fldrFromA001.children, ["bmkFromA0001", "bmkFromB0001"], "folder order");
  Assert.ok(Object.values(a.history).some(h => h.histUri == "https://b.example/visited"), "B's visit on A");
  Assert.equal(a.passwords["{login-from-b}"] && a.passwords["{login-from-b}"].password, "pw-b", "B's login on A");
  Assert.deepEqual(JSON.parse(await PiCLService.sync([])).collections.bookmarks.uploaded, 0,
                   "applied records are not uploaded back");

  /* edits on A: rename, delete, a new password */
  await BM.update({ guid: "bmkFromB0001", title: "B page (renamed on A)" });
  await BM.remove("bmkFromA0001");
  let [cur] = await Services.logins.searchLoginsAsync({ guid: "{login-from-b}" });
  let changed = cur.clone();
  changed.password = "pw-b-2";
  changed.QueryInterface(Ci.nsILoginMetaInfo).timePasswordChanged = Date.now() + 1000;
  await Services.logins.modifyLoginAsync(cur, changed);
  Assert.equal(JSON.parse(await PiCLService.sync([])).status, "ok");
  let [, b] = await onB([{ op: "sync", collections: [] }, { op: "dump" }]);
  Assert.equal(b.bookmarks.bmkFromB0001.title, "B page (renamed on A)", "rename reached B");
  Assert.ok(!b.bookmarks.bmkFromA0001, "deletion reached B");
  Assert.deepEqual(b.bookmarks.fldrFromA001.children, ["bmkFromB0001"]);
  Assert.equal(b.passwords["{login-from-b}"].password, "pw-b-2", "new password reached B");
});

add_task(async function test_failed_local_apply_resets_and_recovers() {
  await onB([{ op: "addBookmark", guid: "bmkApplyFail", url: "https://apply-fail.example/", title: "x",
               parentGuid: "fldrFromA001" }, { op: "sync", collections: ["bookmarks"] }]);
  const { PiCLStores } = picl_import("PiCLStores.sys.mjs");
  let bs = PiCLStores.get("bookmarks");
  let realApply = bs.apply;
  bs.apply = async () => {
    throw new Error("disk full (injected)");
  };
  let events = [];
  let obs = (phase, collection, done, total) => events.push([phase, collection, done, total]);
  PiCLService.addObserver(obs);
  try {
    await Assert.rejects(PiCLService.sync(["bookmarks"]),
                         { result: PICL_STATUS.DATABASE, message: /disk full \(injected\).*next sync/ },
                         "a failed local apply rejects with DATABASE and says what happens next");
  } finally {
    bs.apply = realApply;
    PiCLService.removeObserver(obs);
  }
  Assert.equal(await BM.fetch("bmkApplyFail"), null, "nothing applied");
  Assert.ok(events.some(e => e[0] == "apply" && e[1] == "bookmarks"), "apply progress was notified");
  let s = JSON.parse(await PiCLService.sync(["bookmarks"]));
  Assert.equal(s.status, "ok");
  Assert.ok(await BM.fetch("bmkApplyFail"), "the next sync downloaded the record again and applied it");
});

add_task(async function test_class_moves() {
  Assert.equal(PiCLService.getCollectionClass("bookmarks"), "A");
  await PiCLService.setCollectionClass("bookmarks", "B");
  Assert.equal(PiCLService.getCollectionClass("bookmarks"), "B", "moved to B");
  await Assert.rejects(PiCLService.setCollectionClass("bookmarks", "X"), { result: PICL_STATUS.INVALID_ARGUMENT });
  await PiCLService.setCollectionClass("passwords", "A");
  Assert.equal(PiCLService.getCollectionClass("passwords"), "A", "passwords moved to A");
  let [, st, b] = await onB([{ op: "sync", collections: [] }, { op: "state" }, { op: "dump" }]);
  Assert.deepEqual(st.classes, ["B", "A", "A"], "B sees the new classes (bookmarks, history, passwords)");
  Assert.ok(b.bookmarks.bmkFromB0001, "B's data still readable after the move");
  /* a record written under the new class reaches the other side */
  await BM.insert({ parentGuid: BM.menuGuid, url: "https://after-move.example/", title: "after move",
                    guid: "bmkAfterMov1" });
  await PiCLService.sync(["bookmarks"]);
  let [, b2] = await onB([{ op: "sync", collections: ["bookmarks"] }, { op: "dump" }]);
  Assert.ok(b2.bookmarks.bmkAfterMov1, "a bookmark written under class B reached B");
  /* back to the defaults for the reset test */
  await PiCLService.setCollectionClass("bookmarks", "A");
  await PiCLService.setCollectionClass("passwords", "B");
  Assert.deepEqual(["bookmarks", "history", "passwords"].map(c => PiCLService.getCollectionClass(c)), ["A", "A", "B"]);
  await PiCLService.sync([]);
});

add_task(async function test_password_reset_class_a_survives() {
  /* a third device that never had any data resets the password */
  let [, email, , c] = await onB([{ op: "configure" },
                                  { op: "resetWithMail", email: EMAIL, newPassword: PW_RESET },
                                  { op: "sync", collections: [] }, { op: "dump" }], C_DIR);
  Assert.equal(email, EMAIL, "signed in after the reset");
  Assert.ok(c.bookmarks.bmkFromB0001 && c.bookmarks.bmkAfterMov1, "class A (bookmarks) survives the reset");
  Assert.ok(Object.values(c.history).some(h => h.histUri == "https://a.example/visited"), "class A (history) survives");
  Assert.deepEqual(Object.keys(c.passwords), [], "class B (passwords) is gone");
  /* the old password no longer works */
  await PiCLService.signOut();
  await Assert.rejects(PiCLService.signIn(EMAIL, PW), { result: PICL_STATUS.WRONG_PASSWORD });
  await PiCLService.signIn(EMAIL, PW_RESET);
  Assert.equal(PiCLService.signedInEmail, EMAIL);
});
