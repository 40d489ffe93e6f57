// SPDX-License-Identifier: MPL-2.0
/* test_stretch_upgrade.js -- the stretch upgrade through PiCLService
 * (keyserver.md 9): an account registered with weaker stretching (the spec's
 * own values, the weakest a browser accepts: xpcshell has no test floor) is
 * signed in to by a browser configured for stronger stretching; the sign-in
 * re-stretches the account silently with the same password, kB is kept, and
 * every class-B record (passwords) still decrypts on a second device, and
 * what that device adds decrypts here.  Stretching outside the accepted range
 * is refused.  Needs the servers run.sh starts. */
"use strict";

do_get_profile();
const { PiCLService, PICL_STATUS } = picl_import("PiCLService.sys.mjs");
const { Sqlite } = ChromeUtils.importESModule("resource://gre/modules/Sqlite.sys.mjs");
const S = PICL_STATUS;
const WEAK_PARAMS = PICL_STATUS.WEAK_PARAMS;
const EMAIL = picl_email("stretch");
const PW = "stretch me further please";
const N = 12;
const WORK = Services.env.get("PICL_XPC_WORK") || PathUtils.tempDir;
const B_DIR = PathUtils.join(WORK, "peer-stretch-" + Date.now());
const guid = i => "{stretch-" + String(i).padStart(2, "0") + "}";
/* the spec's values (keyserver.md 2), and stronger ones inside its 4x ceiling */
const SPEC = { pbkdf2Rounds1: 20000, scryptN: 65536, scryptR: 8, scryptP: 1, pbkdf2Rounds2: 20000 };
const STRONG = { pbkdf2Rounds1: 40000, scryptN: 65536, scryptR: 8, scryptP: 1, pbkdf2Rounds2: 40000 };
let kB0 = "";

registerCleanupFunction(() => PiCLService._shutdown());

async function status() {
  return JSON.parse(await PiCLService._status());
}

/* "r1|N|r|p|r2" of the account as the keyserver stores it (its database,
 * read-only). */
async function accountParams() {
  let path = PathUtils.join(picl_servers().data, "keyserver.db");
  let db = await Sqlite.openConnection({ path, readOnly: true });
  try {
    let rows = await db.execute("SELECT pbkdf2_rounds_1, scrypt_n, scrypt_r, scrypt_p, pbkdf2_rounds_2 FROM accounts" +
                                " WHERE CAST(email AS TEXT) = :e", { e: EMAIL });
    Assert.equal(rows.length, 1, "one account row for " + EMAIL);
    let r = rows[0];
    return ["pbkdf2_rounds_1", "scrypt_n", "scrypt_r", "scrypt_p", "pbkdf2_rounds_2"]
      .map(c => r.getResultByName(c)).join("|");
  } finally {
    await db.close();
  }
}

/* How many of the N logins Services.logins holds, each with its password. */
async function loginsPresent() {
  let n = 0;
  for (let i = 0; i < N; i++) {
    let [l] = await Services.logins.searchLoginsAsync({ guid: guid(i) });
    if (l) {
      Assert.equal(l.password, "secret-" + i, "login " + i + " decrypted as it was");
      n++;
    }
  }
  return n;
}

add_task(async function test_out_of_range_refused() {
  PiCLService.keyserverURL = picl_servers().keyserver;
  await Assert.rejects(PiCLService._configure({ stretching: { ...SPEC, pbkdf2Rounds1: 1000 } }),
                       { result: WEAK_PARAMS }, "below the spec's values");
  await Assert.rejects(PiCLService._configure({ stretching: { ...SPEC, scryptN: 65536 * 8 } }),
                       { result: S.UNSUPPORTED }, "above 4 times them");
  await Assert.rejects(PiCLService._configure({ stretching: { ...SPEC, scryptR: "eight" } }),
                       { result: S.INVALID_ARGUMENT }, "not a number");
});

add_task(async function test_weak_account_with_class_b_data() {
  await PiCLService.createAccount(EMAIL, PW);
  await PiCLService.verifyEmail(await picl_mail_code(EMAIL, "X-Verify-Code"));
  Assert.equal(await accountParams(), "20000|65536|8|1|20000", "registered with the spec's stretching");
  for (let i = 0; i < N; i++) {
    await picl_ops.addLogin({ origin: "https://stretch" + i + ".example", username: "u" + i,
                              password: "secret-" + i, guid: guid(i) });
  }
  let s = JSON.parse(await PiCLService.sync(["passwords"]));
  Assert.equal(s.status, "ok", "first sync: " + JSON.stringify(s));
  Assert.equal(s.collections.passwords.uploaded, N);
  Assert.equal(PiCLService.getCollectionClass("passwords"), "B", "passwords are class B");
  kB0 = (await status()).kB_fp;
  Assert.equal(kB0.length, 32);
  await PiCLService.signOut();
});

add_task(async function test_sign_in_upgrades_silently() {
  await PiCLService._configure({ stretching: STRONG });
  /* a wrong password upgrades nothing */
  await Assert.rejects(PiCLService.signIn(EMAIL, "not the password"), { result: S.WRONG_PASSWORD });
  Assert.equal(await accountParams(), "20000|65536|8|1|20000", "unchanged after a wrong password");
  let said = [];
  let obs = (phase, collection, done, total, message) => said.push(message);
  PiCLService.addObserver(obs);
  await PiCLService.signIn(EMAIL, PW);
  PiCLService.removeObserver(obs);
  Assert.equal(PiCLService.signedInEmail, EMAIL, "signed in");
  Assert.equal(await accountParams(), "40000|65536|8|1|40000", "re-stretched with the configured parameters");
  Assert.ok(said.includes("strengthening the password stretching"), "only a progress note: " + JSON.stringify(said));
  Assert.equal((await status()).kB_fp, kB0, "kB kept");
});

add_task(async function test_every_class_b_record_still_decrypts() {
  /* a new device with the spec's stretching signs in with the same
   * password (no downgrade), downloads and decrypts every class-B record,
   * and adds one of its own */
  let [, , sync, dump, , sync2] = await picl_peer(B_DIR, [
    { op: "configure" }, { op: "call", method: "signIn", args: [EMAIL, PW] },
    { op: "sync", collections: ["passwords"] }, { op: "dump" },
    { op: "addLogin", origin: "https://peer.example", username: "peer", password: "secret-peer",
      guid: "{stretch-peer}" },
    { op: "sync", collections: ["passwords"] }]);
  Assert.equal(sync.status, "ok", "the second device's sync: " + JSON.stringify(sync));
  for (let i = 0; i < N; i++) {
    let l = dump.passwords[guid(i)];
    Assert.equal(l && l.password, "secret-" + i, "login " + i + " on the second device");
  }
  Assert.equal(sync2.status, "ok", "the second device's upload: " + JSON.stringify(sync2));
  Assert.equal(await accountParams(), "40000|65536|8|1|40000", "a weaker client does not weaken the account");
  /* this device decrypts what the other encrypted, and still has its own */
  let s = JSON.parse(await PiCLService.sync(["passwords"]));
  Assert.equal(s.status, "ok", "this device's sync: " + JSON.stringify(s));
  let [l] = await Services.logins.searchLoginsAsync({ guid: "{stretch-peer}" });
  Assert.equal(l && l.password, "secret-peer", "the second device's login decrypted here");
  Assert.equal(await loginsPresent(), N, "every login as it was");
});
