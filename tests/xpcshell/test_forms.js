// SPDX-License-Identifier: MPL-2.0
/* test_forms.js -- form history between two browsers through the live
 * FormHistory store (sync(["forms"])): entries made on either side reach
 * the other with the same GUIDs, a deletion travels, and what a sync writes
 * is not sent back.  Needs the servers run.sh starts. */
"use strict";

do_get_profile();
const OPS = [PathUtils.join(picl_srcdir(), "tests", "xpcshell", "forms_ops.js")];
load(OPS[0]);
const { PiCLService } = picl_import("PiCLService.sys.mjs");
const EMAIL = picl_email("forms");
const PW = "forms test password";
const WORK = Services.env.get("PICL_XPC_WORK") || PathUtils.tempDir;
const B_DIR = PathUtils.join(WORK, "forms-profile-b-" + Date.now());

registerCleanupFunction(() => PiCLService._shutdown());

async function onB(ops) {
  let r = await picl_peer(B_DIR, ops, 60, OPS);
  r.forEach((x, i) => Assert.ok(!(x && x.error), "peer op " + ops[i].op + ": " + JSON.stringify(x)));
  return r;
}

add_task(async function test_forms_both_ways() {
  PiCLService.keyserverURL = picl_servers().keyserver;
  await PiCLService.createAccount(EMAIL, PW);
  await PiCLService.verifyEmail(await picl_mail_code(EMAIL, "X-Verify-Code"));
  await PiCLService.signIn(EMAIL, PW);
  await picl_ops.formsAdd({ entries: [["email", "a@b.org"], ["q", "caf\u00e9"]] });
  let s = JSON.parse(await PiCLService.sync(["forms"]));
  Assert.equal(s.collections.forms.uploaded, 2, "A's entries uploaded: " + JSON.stringify(s));

  let [, , , , b] = await onB([{ op: "configure" }, { op: "call", method: "signIn", args: [EMAIL, PW] },
                               { op: "formsAdd", entries: [["city", "Paris"]] },
                               { op: "sync", collections: ["forms"] }, { op: "formsDump" }]);
  Assert.deepEqual(b.entries, ["city=Paris", "email=a@b.org", "q=caf\u00e9"]);
  s = JSON.parse(await PiCLService.sync(["forms"]));
  Assert.equal(s.collections.forms.applied, 1, "B's entry applied on A");
  Assert.equal(s.collections.forms.uploaded, 0, "nothing sent back");
  let a = await picl_ops.formsDump();
  Assert.deepEqual(a.entries, b.entries);
  Assert.deepEqual(a.guids, b.guids, "the same GUIDs on both sides");
  /* applying wrote nothing that counts as a local change */
  s = JSON.parse(await PiCLService.sync(["forms"]));
  Assert.equal(s.collections.forms.uploaded, 0);

  /* deleted on A, gone on B */
  await picl_ops.formsRemove({ fieldname: "q", value: "caf\u00e9" });
  s = JSON.parse(await PiCLService.sync(["forms"]));
  Assert.equal(s.collections.forms.uploaded, 1, "the deletion uploaded: " + JSON.stringify(s));
  [, , , b] = await onB([{ op: "configure" }, { op: "call", method: "signIn", args: [EMAIL, PW] },
                         { op: "sync", collections: ["forms"] }, { op: "formsDump" }]);
  Assert.deepEqual(b.entries, ["city=Paris", "email=a@b.org"]);
});
