/* background.js -- PiCL's background script: shows sync progress on the toolbar button; under the headless test, exercises browser.picl and reports. */
"use strict";

browser.picl.onProgress.addListener((phase, collection, done, total, message) => {
  if (phase == "status") {
    browser.browserAction.setBadgeText({ text: /started/.test(message) ? "…" : "" });
    browser.browserAction.setTitle({ title: "PiCL: " + message });
  }
});

/* The error's picl_status code, from the "(picl N)" suffix api.js adds. */
function codeOf(e) {
  let m = /\(picl (\d+)\)$/.exec(String(e && e.message));
  return m ? Number(m[1]) : null;
}

async function attempt(f) {
  try {
    return { ok: true, value: await f() };
  } catch (e) {
    return { ok: false, result: codeOf(e), message: String(e.message) };
  }
}

/* tests/xpcshell/run.sh (extension step) sets PICL_EXT_TEST: every call
 * below goes through the Experiment to PiCLService and libpicl. */
async function selfTest(cfg) {
  let r = {};
  r.library = await attempt(() => browser.picl.libraryInfo());
  r.stateBefore = await attempt(() => browser.picl.getState());
  r.badName = await attempt(() => browser.picl.getCollectionClass("no such!"));
  r.badClass = await attempt(() => browser.picl.setCollectionClass("passwords", "C"));
  if (cfg.keyserver) {
    r.setURL = await attempt(() => browser.picl.setKeyserverURL(cfg.keyserver));
    r.signInUnknown = await attempt(() => browser.picl.signIn("nobody-" + Date.now() + "@example.com",
                                                               "not the password"));
    r.syncSignedOut = await attempt(() => browser.picl.sync([]));
    if (cfg.email) {
      r.create = await attempt(() => browser.picl.createAccount(cfg.email, "extension test password"));
      r.stateCreated = await attempt(() => browser.picl.getState());
      r.syncUnverified = await attempt(() => browser.picl.sync([]));
    }
  }
  r.stateAfter = await attempt(() => browser.picl.getState());
  await browser.picl.testReport(JSON.stringify(r));
}

browser.picl.testConfig().then(cfg => {
  if (cfg) {
    return selfTest(cfg);
  }
  return null;
}).catch(e => browser.picl.testReport(JSON.stringify({ error: String(e) })).catch(() => {}));
