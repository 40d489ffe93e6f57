// SPDX-License-Identifier: MPL-2.0
/* test_account.js -- the account life cycle through PiCLService against
 * the live keyserver and storage server (run.sh starts them): create,
 * verify, sign out/in, change password, destroy, the observer, and every
 * rejection path (wrong password, unknown account, account exists, bad
 * code, unverified, network, signed out). */
"use strict";

do_get_profile();
const { PiCLService, PICL_STATUS } = picl_import("PiCLService.sys.mjs");
const S = PICL_STATUS;
const EMAIL = picl_email("account");
const PW = "correct horse battery staple";
const PW2 = "another fine password";

registerCleanupFunction(() => PiCLService._shutdown());

add_task(async function test_servers_running() {
  let s = picl_servers();
  Assert.ok(/^http:\/\/127\.0\.0\.1:\d+$/.test(s.keyserver), "keyserver on loopback: " + s.keyserver);
  PiCLService.keyserverURL = s.keyserver;
  Assert.equal(PiCLService.keyserverURL, s.keyserver);
});

add_task(async function test_create_and_verify() {
  let events = [];
  let obs = { onProgress: (phase, collection, done, total, message) => events.push({ phase, message }) };
  PiCLService.addObserver(obs);
  await PiCLService.createAccount(EMAIL, PW);
  Assert.equal(PiCLService.signedInEmail, EMAIL, "signed in after create");
  Assert.equal(PiCLService.verified, false, "not verified yet");
  await Assert.rejects(PiCLService.createAccount(EMAIL, PW), { result: S.ACCOUNT_EXISTS }, "account exists");
  await Assert.rejects(PiCLService.sync([]), { result: S.UNVERIFIED }, "sync needs a verified account");
  await Assert.rejects(PiCLService.verifyEmail("0".repeat(64)), { result: S.INVALID_CODE }, "wrong code");
  Assert.equal(PiCLService.verified, false, "still not verified after a wrong code");
  let code = await picl_mail_code(EMAIL, "X-Verify-Code");
  await PiCLService.verifyEmail(code);
  Assert.equal(PiCLService.verified, true, "verified");
  PiCLService.removeObserver(obs);
  Assert.ok(events.some(e => e.phase == "account"), "account notifications (stretching) reached the observer");
  info("account events: " + JSON.stringify(events));
});

add_task(async function test_sign_out_and_in() {
  await PiCLService.signOut();
  Assert.equal(PiCLService.signedInEmail, "", "signed out");
  await Assert.rejects(PiCLService.sync([]), { result: S.STATE }, "sync while signed out");
  await Assert.rejects(PiCLService.signIn(EMAIL, "wrong password"), { result: S.WRONG_PASSWORD, message: /password/i });
  Assert.equal(PiCLService.signedInEmail, "", "still signed out after a wrong password");
  await Assert.rejects(PiCLService.signIn(picl_email("nobody"), PW), { result: S.UNKNOWN_ACCOUNT });
  await PiCLService.signIn(EMAIL, PW);
  Assert.equal(PiCLService.signedInEmail, EMAIL);
  Assert.equal(PiCLService.verified, true);
});

add_task(async function test_network_error() {
  let good = PiCLService.keyserverURL;
  await PiCLService.signOut();
  PiCLService.keyserverURL = "http://127.0.0.1:9";
  await Assert.rejects(PiCLService.signIn(EMAIL, PW), { result: S.NETWORK }, "nothing listens on port 9");
  PiCLService.keyserverURL = good;
  await PiCLService.signIn(EMAIL, PW);
  Assert.equal(PiCLService.signedInEmail, EMAIL);
});

add_task(async function test_storage_unreachable() {
  await PiCLService._configure({ storageURL: "http://127.0.0.1:9/1.5/1" });
  try {
    await Assert.rejects(PiCLService.sync([]), { result: S.NETWORK }, "sync with the storage server down");
  } finally {
    await PiCLService._configure({ storageURL: "" });
  }
  Assert.equal(JSON.parse(await PiCLService.sync([])).status, "ok", "syncs again once it is back");
});

add_task(async function test_change_password() {
  await Assert.rejects(PiCLService.changePassword("not it", PW2), { result: S.WRONG_PASSWORD });
  await PiCLService.changePassword(PW, PW2);
  await PiCLService.signOut();
  await Assert.rejects(PiCLService.signIn(EMAIL, PW), { result: S.WRONG_PASSWORD }, "old password refused");
  await PiCLService.signIn(EMAIL, PW2);
  Assert.equal(PiCLService.signedInEmail, EMAIL);
});

add_task(async function test_sync_and_observer() {
  const { PlacesUtils } = ChromeUtils.importESModule("resource://gre/modules/PlacesUtils.sys.mjs");
  await PlacesUtils.bookmarks.insert({ parentGuid: PlacesUtils.bookmarks.menuGuid, url: "https://obs.example/",
                                       title: "something to upload" });
  let events = [];
  let obs = (phase, collection, done, total, message) => events.push([phase, collection]);
  PiCLService.addObserver(obs);
  let summary = JSON.parse(await PiCLService.sync([]));
  PiCLService.removeObserver(obs);
  Assert.ok(summary && typeof summary == "object" && summary.collections, "a JSON summary with collections");
  Assert.ok(events.some(e => e[0] == "status"), "status notifications");
  Assert.ok(events.some(e => e[0] == "upload" && e[1] == "bookmarks"), "upload progress from the C engine");
  Assert.equal(summary.status, "ok");
  info("sync summary: " + JSON.stringify(summary) + " events: " + JSON.stringify(events.slice(0, 20)));
});

add_task(async function test_destroy() {
  await Assert.rejects(PiCLService.destroyAccount("not it"), { result: S.WRONG_PASSWORD });
  Assert.equal(PiCLService.signedInEmail, EMAIL, "a failed destroy changes nothing");
  await PiCLService.destroyAccount(PW2);
  Assert.equal(PiCLService.signedInEmail, "", "signed out after destroy");
  await Assert.rejects(PiCLService.signIn(EMAIL, PW2), { result: S.UNKNOWN_ACCOUNT }, "account gone");
});
