// SPDX-License-Identifier: MPL-2.0
/* test_jank.js -- the main thread is never blocked for more than 50 ms
 * during a sync of 2 000 bookmarks: upload from this profile, download and
 * apply on a second one (a peer process). Needs the servers run.sh starts.
 * "Blocked" is measured as the longest gap between 5 ms timer ticks minus
 * the time the thread waited for a CPU (/proc/thread-self/schedstat), so
 * other builds running on the same machine do not count; the plain
 * wall-clock gap is reported beside it. */
"use strict";

do_get_profile();
const { PiCLService } = picl_import("PiCLService.sys.mjs");
const EMAIL = picl_email("jank");
const PW = "jank test password";
const N = 2000;
const LIMIT_MS = 50;
const B_DIR = PathUtils.join(Services.env.get("PICL_XPC_WORK") || PathUtils.tempDir, "jank-profile-b-" + Date.now());

registerCleanupFunction(() => PiCLService._shutdown());

add_task(async function test_setup() {
  PiCLService.keyserverURL = picl_servers().keyserver;
  await PiCLService.createAccount(EMAIL, PW);
  await PiCLService.verifyEmail(await picl_mail_code(EMAIL, "X-Verify-Code"));
  await PiCLService.signIn(EMAIL, PW);
  Assert.equal(await picl_ops.addBookmarks({ n: N, folderGuid: "fldrJank0001", prefix: "jank" }), N);
});

add_task(async function test_upload_2000_without_jank() {
  let { summary, maxGap, maxBlocked } = await picl_ops.syncMeasured({ collections: ["bookmarks"] });
  info("upload of " + N + " bookmarks: " + JSON.stringify(summary.collections.bookmarks) +
       ", main thread blocked at most " + maxBlocked.toFixed(1) + " ms (longest wall-clock gap " +
       maxGap.toFixed(1) + " ms)");
  Assert.equal(summary.status, "ok");
  Assert.greaterOrEqual(summary.collections.bookmarks.uploaded, N, "all bookmarks uploaded");
  Assert.less(maxBlocked, LIMIT_MS, "main thread never blocked for " + LIMIT_MS + " ms during the upload");
});

add_task(async function test_download_2000_without_jank() {
  let r = await picl_peer(B_DIR, [
    { op: "configure" }, { op: "call", method: "signIn", args: [EMAIL, PW] },
    { op: "syncMeasured", collections: ["bookmarks"] }, { op: "dump" },
  ], 80);
  Assert.ok(!r[1], "B signed in: " + JSON.stringify(r[1]));
  let { summary, maxGap, maxBlocked } = r[2];
  info("download of " + N + " bookmarks: " + JSON.stringify(summary && summary.collections.bookmarks) +
       ", main thread blocked at most " + (maxBlocked || 0).toFixed(1) + " ms (longest wall-clock gap " +
       (maxGap || 0).toFixed(1) + " ms)");
  Assert.equal(summary && summary.status, "ok");
  let dumped = r[3].bookmarks;
  Assert.equal(dumped.fldrJank0001.children.length, N, "all 2000 bookmarks applied on B, in their folder");
  Assert.equal(dumped[dumped.fldrJank0001.children[N - 1]].bmkUri, "https://jank.example/" + (N - 1), "in order");
  Assert.less(maxBlocked, LIMIT_MS, "B's main thread never blocked for " + LIMIT_MS + " ms during download and apply");
});
