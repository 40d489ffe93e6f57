// SPDX-License-Identifier: MPL-2.0
/* peer.js -- a second device for the two-profile tests: runs the ops in
 * $PICL_PEER_OPS (see picl_ops in head.js) on the profile $PICL_XPC_PROFILE,
 * prints "PEER-RESULT <json array of results>" and shuts down cleanly.
 * Started by picl_peer() in head.js, never by run.sh. */
"use strict";

function peer_main(seconds) {
  do_get_profile();
  let ops = JSON.parse(Services.env.get("PICL_PEER_OPS") || "[]");
  let results = null;
  add_task(async function peer() {
    results = [];
    for (let o of ops) {
      results.push(await picl_op(o));
    }
    let { PiCLService } = picl_import("PiCLService.sys.mjs");
    await PiCLService._shutdown();
  });
  registerCleanupFunction(() => {
    dump("PEER-RESULT " + JSON.stringify(results) + "\n");
  });
  run_tasks(seconds);
}
