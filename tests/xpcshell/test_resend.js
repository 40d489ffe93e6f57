// SPDX-License-Identifier: MPL-2.0
/* test_resend.js -- PiCLService.resendVerification: an account whose
 * verification mail was lost (the keyserver stopped between creating the
 * account and mailing it) is mailed the code again and can be verified;
 * once verified there is nothing to resend (STATE). */
"use strict";

do_get_profile();
const { PiCLService, PICL_STATUS } = picl_import("PiCLService.sys.mjs");
const S = PICL_STATUS;
const EMAIL = picl_email("resend");
const PW = "correct horse battery staple";

registerCleanupFunction(() => PiCLService._shutdown());

/* The Maildir files addressed to email. */
async function mails_to(email) {
  let dir = PathUtils.join(picl_servers().data, "mail", "new");
  let out = [];
  for (let f of await IOUtils.getChildren(dir)) {
    let hdr = (await IOUtils.readUTF8(f)).split(/\r?\n\r?\n/)[0];
    if (/^X-Verify-Code:/mi.test(hdr) && hdr.includes(email)) {
      out.push(f);
    }
  }
  return out;
}

add_task(async function test_resend_after_a_lost_mail() {
  PiCLService.keyserverURL = picl_servers().keyserver;
  await PiCLService.createAccount(EMAIL, PW);
  let lost = await mails_to(EMAIL);
  Assert.equal(lost.length, 1, "the sign-up mailed one code");
  for (let f of lost) {
    await IOUtils.remove(f);
  }
  await PiCLService.resendVerification();
  Assert.equal((await mails_to(EMAIL)).length, 1, "mailed again");
  let code = await picl_mail_code(EMAIL, "X-Verify-Code");
  await PiCLService.verifyEmail(code);
  Assert.equal(PiCLService.verified, true);
  await Assert.rejects(PiCLService.resendVerification(), { result: S.STATE }, "verified: nothing to resend");
  await PiCLService.destroyAccount(PW);
});
