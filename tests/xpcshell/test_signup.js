// SPDX-License-Identifier: MPL-2.0
/* test_signup.js -- signing up signs the device in (client.md 7), through
 * PiCLService and across restarts: createAccount -> restart -> the account is
 * still signed in -> verifyEmail -> the keys are on the device without the
 * password -> restart -> sync works, with no signIn in between. */
"use strict";

do_get_profile();
const { PiCLService, PICL_STATUS } = picl_import("PiCLService.sys.mjs");
const S = PICL_STATUS;
const EMAIL = picl_email("signup");
const PW = "correct horse battery staple";

registerCleanupFunction(() => PiCLService._shutdown());

/* A browser restart as the service sees it: the worker and the C object are
 * gone and nothing is cached; the next call loads the state from disk. */
async function restart() {
  await PiCLService._shutdown();
  PiCLService._state = { keyserverURL: "", email: "", verified: false, classes: {} };
  let st = JSON.parse(await PiCLService._status());
  return st;
}

add_task(async function test_signup_survives_restart_and_needs_no_second_password() {
  PiCLService.keyserverURL = picl_servers().keyserver;
  await PiCLService.createAccount(EMAIL, PW);
  Assert.equal(PiCLService.signedInEmail, EMAIL, "signed in right after createAccount");
  Assert.equal(PiCLService.verified, false);

  let st = await restart();
  Assert.equal(st.signedIn, true, "still signed in after a restart");
  Assert.equal(st.email, EMAIL);
  Assert.equal(PiCLService.signedInEmail, EMAIL, "signedInEmail after a restart");
  Assert.equal(st.hasKeys, false, "no keys before the email is verified");
  await Assert.rejects(PiCLService.sync([]), { result: S.UNVERIFIED }, "sync waits for the verification");

  st = await restart();
  Assert.equal(st.signedIn, true, "a refused sync signs nobody out");
  let code = await picl_mail_code(EMAIL, "X-Verify-Code");
  await PiCLService.verifyEmail(code);
  Assert.equal(PiCLService.verified, true);
  st = JSON.parse(await PiCLService._status());
  Assert.equal(st.hasKeys, true, "verifyEmail fetched kA and kB without the password");
  Assert.equal(st.kB_fp.length, 32);
  let kB = st.kB_fp;

  st = await restart();
  Assert.equal(st.hasKeys, true, "the keys survive a restart");
  Assert.equal(st.kB_fp, kB);
  let summary = JSON.parse(await PiCLService.sync([]));
  Assert.equal(summary.status, "ok", "sync after sign-up, verify and two restarts, no signIn");
  Assert.equal(PiCLService.getCollectionClass("passwords"), "B", "class B usable: the class map has kB");

  /* the keys are the account's: a fresh password sign-in sees the same kB */
  await PiCLService.signOut();
  await PiCLService.signIn(EMAIL, PW);
  Assert.equal(JSON.parse(await PiCLService._status()).kB_fp, kB, "same kB as a password sign-in");
  await PiCLService.destroyAccount(PW);
});
