// SPDX-License-Identifier: MPL-2.0
/* test_sendtab.js -- other devices through the browser binding: this
 * process (device A) and a peer process on a second profile (device B) sync
 * their clients records; B lists A, sends A a tab, A's next sync receives it
 * once (observer topic "picl:tabs:received", getReceivedTabs) and the
 * command is gone; a tab that is not a web page is refused before anything
 * is sent.  Needs the servers run.sh starts. */
"use strict";

do_get_profile();
const { PiCLService, PICL_STATUS } = picl_import("PiCLService.sys.mjs");
const EMAIL = picl_email("sendtab");
const PW = "send tab test password";
const WORK = Services.env.get("PICL_XPC_WORK") || PathUtils.tempDir;
const B_DIR = PathUtils.join(WORK, "sendtab-profile-b-" + Date.now());

registerCleanupFunction(() => PiCLService._shutdown());

async function onB(ops) {
  let r = await picl_peer(B_DIR, ops);
  r.forEach((x, i) => Assert.ok(!(x && x.error), "peer op " + ops[i].op + ": " + JSON.stringify(x)));
  return r;
}

add_task(async function test_send_tab_between_browsers() {
  PiCLService.keyserverURL = picl_servers().keyserver;
  await PiCLService.createAccount(EMAIL, PW);
  await PiCLService.verifyEmail(await picl_mail_code(EMAIL, "X-Verify-Code"));
  await PiCLService.signIn(EMAIL, PW);
  let s = JSON.parse(await PiCLService.sync(["clients"]));
  Assert.equal(s.collections.clients.uploaded, 1, "A's clients record uploaded: " + JSON.stringify(s));
  Assert.deepEqual(s.received, [], "nothing received yet");

  /* B signs in, syncs its record, lists A and sends it a tab */
  let [, , , listed] = await onB([{ op: "configure" }, { op: "call", method: "signIn", args: [EMAIL, PW] },
                                  { op: "sync", collections: ["clients"] },
                                  { op: "call", method: "getRemoteTabs", args: [] }]);
  Assert.equal(listed.devices.length, 1, "B sees one other device: " + JSON.stringify(listed));
  let idA = listed.devices[0].id;
  Assert.equal(idA.length, 12);
  await onB([{ op: "configure" },
             { op: "call", method: "sendTab", args: [idA, "https://sent.example/from-b", "From B"] }]);

  /* A's view of B, then the sync that receives the tab */
  let remote = await PiCLService.getRemoteTabs();
  Assert.equal(remote.devices.length, 1, "A sees B");
  Assert.notEqual(remote.devices[0].id, idA);
  let told = [];
  let obs = (subject, topic, data) => told.push(JSON.parse(data));
  Services.obs.addObserver(obs, "picl:tabs:received");
  s = JSON.parse(await PiCLService.sync(["clients"]));
  Assert.equal(s.received.length, 1, "one tab received: " + JSON.stringify(s));
  Assert.equal(s.received[0].uri, "https://sent.example/from-b");
  Assert.equal(s.received[0].title, "From B");
  Assert.equal(s.received[0].from, remote.devices[0].id);
  Assert.equal(told.length, 1, "observers told once");
  Assert.equal(told[0][0].uri, "https://sent.example/from-b");
  /* once: the next sync receives nothing, the list keeps the one tab */
  s = JSON.parse(await PiCLService.sync(["clients"]));
  Assert.deepEqual(s.received, []);
  Services.obs.removeObserver(obs, "picl:tabs:received");
  Assert.equal(told.length, 1);
  let got = await PiCLService.getReceivedTabs();
  Assert.equal(got.length, 1);
  Assert.equal(got[0].uri, "https://sent.example/from-b");

  /* not a web page, or no such device: refused, nothing sent */
  await Assert.rejects(PiCLService.sendTab(remote.devices[0].id, "javascript:alert(1)", ""),
                       e => e.result == PICL_STATUS.INVALID_ARGUMENT);
  await Assert.rejects(PiCLService.sendTab("nobody", "https://x.example/", ""),
                       e => e.result == PICL_STATUS.NOT_FOUND && /no device/.test(e.message));
  await Assert.rejects(PiCLService.sendTab("", "https://x.example/", ""),
                       e => e.result == PICL_STATUS.INVALID_ARGUMENT);
});
