// SPDX-License-Identifier: MPL-2.0
/* maintain_profile.js -- runs Firefox's own Places maintenance
 * (PlacesDBUtils.checkAndFixDatabase: integrity, coherence fixes, expiration)
 * on a profile, so a test can check that it had nothing to fix in what we
 * wrote.  Run: firefox-esr --xpcshell -g GRE -a GRE/browser maintain_profile.js DIR
 * (tests/make-profile.sh --maintain does this).  Exit 0 when every task
 * succeeded. */
"use strict";
{
  let env = __LOCATION__.parent;
  env.append("profile_env.js");
  load(env.path);
}
const { PlacesDBUtils } = ChromeUtils.importESModule("resource://gre/modules/PlacesDBUtils.sys.mjs");

const dir = arguments[0];

let rc = pe_main(async () => {
  pe_useProfile(dir);
  let tasks = await PlacesDBUtils.checkAndFixDatabase();
  for (let [name, result] of tasks) {
    if (!result.succeeded) {
      throw new Error(name + " failed: " + result.logs.join("; "));
    }
  }
}, 90);
quit(rc);
