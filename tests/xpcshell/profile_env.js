// SPDX-License-Identifier: MPL-2.0
/* profile_env.js -- shared by make_profile.js and dump_profile.js: points
 * xpcshell at a profile directory and shuts Firefox's services down cleanly
 * (see tests/xpcshell/README, "xpcshell mode"). */
"use strict";

/* Registers ProfD/ProfLD/TmpD = dir and announces the profile. */
function pe_useProfile(path) {
  let profd = Cc["@mozilla.org/file/local;1"].createInstance(Ci.nsIFile);
  profd.initWithPath(path);
  if (!profd.exists()) {
    profd.create(Ci.nsIFile.DIRECTORY_TYPE, 0o700);
  }
  let tmpd = profd.clone();
  tmpd.append("tmp");
  let provider = {
    getFile(prop, persistent) {
      persistent.value = true;
      if (prop == "ProfD" || prop == "ProfLD" || prop == "ProfDS" || prop == "ProfLDS") {
        return profd.clone();
      }
      if (prop == "TmpD") {
        if (!tmpd.exists()) {
          tmpd.create(Ci.nsIFile.DIRECTORY_TYPE, 0o700);
        }
        return tmpd.clone();
      }
      throw Components.Exception("", Cr.NS_ERROR_FAILURE);
    },
    QueryInterface: ChromeUtils.generateQI(["nsIDirectoryServiceProvider"]),
  };
  Services.dirsvc.QueryInterface(Ci.nsIDirectoryService).registerProvider(provider);
  Services.obs.notifyObservers(null, "profile-do-change", "xpcshell-do-get-profile");
  Services.obs.notifyObservers(null, "profile-after-change", "xpcshell-do-get-profile");
  /* PSM opens (and creates) key4.db/cert9.db in ProfD on first use */
  Cc["@mozilla.org/psm;1"].getService(Ci.nsISupports);
  return profd;
}

const { PlacesUtils } = ChromeUtils.importESModule("resource://gre/modules/PlacesUtils.sys.mjs");

/* Resolves after ms milliseconds (a timer, so the event loop keeps running). */
function pe_sleep(ms) {
  return new Promise(resolve => {
    let t = Cc["@mozilla.org/timer;1"].createInstance(Ci.nsITimer);
    t.initWithCallback(() => resolve(), ms, Ci.nsITimer.TYPE_ONE_SHOT);
    pe_sleep.timers.push(t);
  });
}
pe_sleep.timers = [];

/* Walks the shutdown phases in order so Places closes, logins.json is saved
 * and the Rust login store lets go before xpcom-shutdown. */
async function pe_shutdown() {
  /* nsIAppStartup.SHUTDOWN_PHASE_*: 1 quit-application (AppShutdownConfirmed),
   * 2 profile-change-net-teardown, 3 profile-change-teardown,
   * 4 profile-before-change, 5 -qm, 6 -telemetry, 7 xpcom-will-shutdown */
  for (let phase = 1; phase <= 7; phase++) {
    Services.startup.advanceShutdownPhase(phase);
  }
}

/* Runs async fn to completion with a deadline; sets the exit code. */
function pe_main(fn, seconds) {
  let done = false;
  let rc = 0;
  fn().finally(() => pe_shutdown()).then(
    () => { done = true; },
    e => { dump("ERROR: " + e + "\n" + (e && e.stack ? e.stack : "") + "\n"); rc = 1; done = true; }
  );
  let deadline = Date.now() + (seconds || 60) * 1000;
  Services.tm.spinEventLoopUntil("picl-profile", () => done || Date.now() > deadline);
  if (!done) {
    dump("ERROR: timed out\n");
    rc = 2;
  }
  return rc;
}
