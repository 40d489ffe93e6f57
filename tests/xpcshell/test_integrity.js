// SPDX-License-Identifier: MPL-2.0
/* test_integrity.js -- a record the storage server tampered with is loud in
 * the browser (client.md 7): PiCLService.sync rejects with INTEGRITY, names
 * the record (e.failed, the observer topic "picl:sync:failed-records", the
 * "integrity" progress notification) and leaves the local login as it was.
 * The storage server's database is edited behind its back, as a hostile
 * server would.  Needs the servers run.sh starts. */
"use strict";

do_get_profile();
const { PiCLService, PICL_STATUS } = picl_import("PiCLService.sys.mjs");
const { Sqlite } = ChromeUtils.importESModule("resource://gre/modules/Sqlite.sys.mjs");
const EMAIL = picl_email("integrity");
const PW = "integrity password 1";
const WORK = Services.env.get("PICL_XPC_WORK") || PathUtils.tempDir;

registerCleanupFunction(() => PiCLService._shutdown());

async function storageDb() {
  for (let p of [PathUtils.join(WORK, "storage", "storage.db"), PathUtils.join(WORK, "storage", "storage", "storage.db")]) {
    if (await IOUtils.exists(p)) {
      return p;
    }
  }
  throw new Error("no storage.db under " + WORK);
}

add_task(async function test_setup() {
  PiCLService.keyserverURL = picl_servers().keyserver;
  await PiCLService.createAccount(EMAIL, PW);
  await PiCLService.verifyEmail(await picl_mail_code(EMAIL, "X-Verify-Code"));
  await PiCLService.signIn(EMAIL, PW);
  await picl_ops.addLogin({ origin: "https://one.example", username: "u1", password: "pw-one", guid: "{login-one}" });
  let s = JSON.parse(await PiCLService.sync(["passwords"]));
  Assert.equal(s.status, "ok", "first sync: " + JSON.stringify(s));
  Assert.equal(s.collections.passwords.uploaded, 1);
});

add_task(async function test_tampered_login_is_named() {
  /* the IV rewritten: the first cleartext block would change under Sync 1.5 */
  let db = await Sqlite.openConnection({ path: await storageDb() });
  try {
    let rows = await db.execute("SELECT payload FROM bsos WHERE coll = 'passwords' AND id = '{login-one}'");
    Assert.equal(rows.length, 1);
    let p = JSON.parse(rows[0].getResultByName("payload"));
    p.IV = (p.IV[0] == "A" ? "B" : "A") + p.IV.slice(1);
    await db.execute("UPDATE bsos SET payload = :p WHERE coll = 'passwords' AND id = '{login-one}'",
                     { p: JSON.stringify(p) });
    await db.execute("UPDATE collections SET modified = (SELECT max(modified) + 1 FROM collections) " +
                     "WHERE name = 'passwords'");
    await db.execute("UPDATE users SET modified = (SELECT max(modified) FROM collections)");
    await db.execute("UPDATE bsos SET modified = (SELECT modified FROM collections WHERE name = 'passwords') " +
                     "WHERE coll = 'passwords' AND id = '{login-one}'");
  } finally {
    await db.close();
  }
  let seen = [];
  let obs = (phase, collection, done, total, message) => {
    if (phase == "integrity") {
      seen.push([collection, message]);
    }
  };
  let topic = null;
  let topicObs = (subject, t, data) => {
    topic = data;
  };
  PiCLService.addObserver(obs);
  Services.obs.addObserver(topicObs, "picl:sync:failed-records");
  let err = null;
  try {
    await PiCLService.sync(["passwords"]);
  } catch (e) {
    err = e;
  } finally {
    PiCLService.removeObserver(obs);
    Services.obs.removeObserver(topicObs, "picl:sync:failed-records");
  }
  Assert.ok(err, "the sync rejects");
  Assert.equal(err.result, PICL_STATUS.INTEGRITY, "with INTEGRITY: " + (err && err.message));
  Assert.deepEqual(err.failed, [{ collection: "passwords", id: "{login-one}", reason: "hmac mismatch" }]);
  Assert.deepEqual(JSON.parse(topic), err.failed, "the observer topic carries the same list");
  Assert.deepEqual(seen, [["passwords", "{login-one}: hmac mismatch (not applied)"]]);
  let logins = await Services.logins.searchLoginsAsync({ origin: "https://one.example" });
  Assert.equal(logins.length, 1);
  Assert.equal(logins[0].password, "pw-one", "the local login is unchanged");
});
