// SPDX-License-Identifier: MPL-2.0
/* test_devices.js -- PiCLService's devices, security events and recovery key (client.md 7): the browser names itself, renameDevice, getDevices, signOutDevice refusing an unknown id, getSecurityEvents newest first, a removed device refused at its next request (a second browser), createRecoveryKey (wrong password refused), getRecoveryKeyExists, removeRecoveryKey, and a password reset with the recovery key that keeps kB and a class-B login (read on a new device after the reset; a wrong key refused, nothing changed). */
"use strict";

do_get_profile();
const { PiCLService, PICL_STATUS } = picl_import("PiCLService.sys.mjs");
const S = PICL_STATUS;
const EMAIL = picl_email("devices");
const PW = "correct horse battery staple";
const PW2 = "another horse battery staple";
const KEY_RE = /^([A-Z2-7]{4}-){12}[A-Z2-7]{4}$/;

registerCleanupFunction(() => PiCLService._shutdown());

async function status() {
  return JSON.parse(await PiCLService._status());
}

add_task(async function test_devices_events_recovery_key() {
  PiCLService.keyserverURL = picl_servers().keyserver;
  await PiCLService.createAccount(EMAIL, PW);
  await PiCLService.verifyEmail(await picl_mail_code(EMAIL, "X-Verify-Code"));
  let kB = (await status()).kB_fp;
  Assert.equal(kB.length, 32);

  let d = await PiCLService.getDevices();
  Assert.equal(d.devices.length, 1);
  Assert.equal(d.devices[0].current, true);
  Assert.equal(d.devices[0].type, "browser");
  Assert.ok(d.devices[0].name.startsWith("Firefox "), "named after the profile: " + d.devices[0].name);
  Assert.ok(d.devices[0].lastAccessAt >= d.devices[0].createdAt);
  await PiCLService.renameDevice("kitchen");
  d = await PiCLService.getDevices();
  Assert.equal(d.devices[0].name, "kitchen");
  await Assert.rejects(PiCLService.signOutDevice("0123456789abcdef0123456789abcdef"), { result: S.INVALID_ARGUMENT },
                       "no such device");
  await Assert.rejects(PiCLService.renameDevice(""), { result: S.INVALID_ARGUMENT }, "an empty name");

  let ev = await PiCLService.getSecurityEvents();
  /* verifying here also registered the class map */
  Assert.deepEqual(ev.events.map(e => e.type), ["classmap.changed", "account.verified", "login", "account.created"]);
  Assert.equal(ev.events[2].address, "127.0.0.1");
  Assert.ok(ev.events[2].device.startsWith("Firefox "), "the sign-in names the device: " + ev.events[2].device);
  Assert.equal(ev.events[0].device, ev.events[2].device, "the class map came from this device");

  Assert.equal(await PiCLService.getRecoveryKeyExists(), false);
  await Assert.rejects(PiCLService.createRecoveryKey("wrong password"), { result: S.WRONG_PASSWORD });
  Assert.equal(await PiCLService.getRecoveryKeyExists(), false, "no key after a wrong password");
  let key = await PiCLService.createRecoveryKey(PW);
  Assert.ok(KEY_RE.test(key), "13 groups of 4: " + key);
  Assert.equal(await PiCLService.getRecoveryKeyExists(), true);
  await PiCLService.removeRecoveryKey();
  Assert.equal(await PiCLService.getRecoveryKeyExists(), false);
  key = await PiCLService.createRecoveryKey(PW);

  /* a wrong key: refused, the password is unchanged */
  await PiCLService.forgotPassword(EMAIL);
  let wrong = key.replace(/^[A-Z2-7]/, c => (c == "A" ? "B" : "A"));
  await Assert.rejects(PiCLService.completePasswordResetWithRecoveryKey(await picl_mail_code(EMAIL, "X-Recovery-Code"),
                                                                        PW2, wrong),
                       { result: S.INVALID_CODE }, "a wrong recovery key");
  await Assert.rejects(PiCLService.completePasswordResetWithRecoveryKey("12345678", PW2, "not a key"),
                       { result: S.INVALID_ARGUMENT }, "not a key at all");
  await PiCLService.signIn(EMAIL, PW);
  Assert.equal((await status()).kB_fp, kB);

  /* the right key: kB (class B) survives, the key is used up; a class-B
   * login synced before the reset decrypts afterwards on a new device */
  await picl_ops.addLogin({ origin: "https://rk.example", username: "rk", password: "pw-rk", guid: "{rk-login-1}" });
  Assert.equal(JSON.parse(await PiCLService.sync(["passwords"])).collections.passwords.uploaded, 1);
  Assert.equal(PiCLService.getCollectionClass("passwords"), "B");
  await PiCLService.forgotPassword(EMAIL);
  await PiCLService.completePasswordResetWithRecoveryKey(await picl_mail_code(EMAIL, "X-Recovery-Code"), PW2, key);
  Assert.equal((await status()).kB_fp, kB, "kB kept");
  Assert.equal(await PiCLService.getRecoveryKeyExists(), false, "single-use");
  ev = await PiCLService.getSecurityEvents();
  Assert.deepEqual(ev.events.slice(0, 3).map(e => e.type), ["login", "recoveryKey.used", "password.reset"]);
  let dir = PathUtils.join(Services.env.get("PICL_XPC_WORK") || PathUtils.tempDir, "peer-rk-" + Date.now());
  let [, , sync, dump] = await picl_peer(dir, [{ op: "configure" }, { op: "call", method: "signIn", args: [EMAIL, PW2] },
                                               { op: "sync", collections: ["passwords"] }, { op: "dump" }]);
  Assert.equal(sync && sync.status, "ok", "a new device after the reset: " + JSON.stringify(sync));
  let l = dump && dump.passwords && dump.passwords["{rk-login-1}"];
  Assert.equal(l && l.password, "pw-rk", "the class-B login survived the reset");
  await PiCLService.destroyAccount(PW2);
});

/* device remove through PiCLService: a second browser (a peer profile) signed
 * out from this one is refused at its next request (TOKEN, "sign in again")
 * and uploads nothing; the account shows it gone and a device.destroyed event. */
add_task(async function test_removed_device_refused() {
  const TOKEN = S.TOKEN;
  const email = picl_email("devremove");
  const dir = PathUtils.join(Services.env.get("PICL_XPC_WORK") || PathUtils.tempDir, "peer-devremove-" + Date.now());
  await PiCLService.createAccount(email, PW);
  await PiCLService.verifyEmail(await picl_mail_code(email, "X-Verify-Code"));
  let [, , theirs] = await picl_peer(dir, [{ op: "configure" }, { op: "call", method: "signIn", args: [email, PW] },
                                           { op: "call", method: "getDevices" }]);
  let peer = theirs && theirs.devices && theirs.devices.find(d => d.current);
  Assert.ok(peer && peer.id, "the second browser lists itself: " + JSON.stringify(theirs));
  let d = await PiCLService.getDevices();
  Assert.equal(d.devices.length, 2, "two devices");
  await PiCLService.signOutDevice(peer.id);
  d = await PiCLService.getDevices();
  Assert.deepEqual(d.devices.map(x => x.current), [true], "only this one left");
  let ev = await PiCLService.getSecurityEvents();
  Assert.equal(ev.events[0].type, "device.destroyed");

  let [, added, list, sync] = await picl_peer(dir, [
    { op: "configure" },
    { op: "addLogin", origin: "https://removed.example", username: "r", password: "pw-r", guid: "{devremove-1}" },
    { op: "call", method: "getDevices" }, { op: "sync", collections: ["passwords"] }]);
  Assert.equal(added, "{devremove-1}");
  Assert.equal(list && list.result, TOKEN, "the removed device is refused: " + JSON.stringify(list));
  Assert.ok(list && /sign in again|signed out/i.test(list.error), "and told why: " + JSON.stringify(list));
  Assert.equal(sync && sync.result, TOKEN, "its sync is refused: " + JSON.stringify(sync));
  /* nothing went up */
  Assert.equal(JSON.parse(await PiCLService.sync(["passwords"])).status, "ok");
  let [l] = await Services.logins.searchLoginsAsync({ guid: "{devremove-1}" });
  Assert.ok(!l, "the removed device's login never reached the account");
  await PiCLService.destroyAccount(PW);
});
