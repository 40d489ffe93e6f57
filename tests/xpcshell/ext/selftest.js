// SPDX-License-Identifier: MPL-2.0
/* selftest.js -- test-only background script of the headless extension test: drives browser.picl and the real popup page (in a tab) and reports what it saw as JSON. */
"use strict";

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

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

/* ms since the self-test started, per step (printed by extension_test.sh) */
const T0 = Date.now();
const times = {};
function mark(step) {
  times[step] = Date.now() - T0;
}

/* Polls f() until it returns something truthy (up to ms). */
async function waitFor(what, f, ms = 30000) {
  let t0 = Date.now();
  for (;;) {
    let v = await f();
    if (v) {
      return v;
    }
    if (Date.now() - t0 > ms) {
      throw new Error("timed out waiting for " + what);
    }
    await sleep(50);
  }
}

/* ---- the popup page, opened in a tab ------------------------------------ */

let win = null;
const $ = id => win.document.getElementById(id);

async function openPopup() {
  let url = browser.runtime.getURL("popup.html");
  let tab = await browser.tabs.create({ url });
  win = await waitFor("the popup page", () =>
    browser.extension.getViews({ type: "tab" }).find(w => w.location.href == url && w.document.readyState == "complete"));
  await waitFor("the popup's first render", () => $("status").textContent != "…");
  return tab;
}

/* What the popup shows now. */
function view() {
  let m = $("message");
  let cs = win.getComputedStyle(m);
  return {
    status: $("status").textContent,
    statusClass: $("status").className,
    message: m.textContent,
    messageClass: m.className,
    messageCode: m.dataset.code || null,
    messageColor: cs.color,
    messageBackground: cs.backgroundColor,
    messageRole: m.getAttribute("role"),
    messageLive: m.getAttribute("aria-live"),
    lastSync: $("lastsync").hidden ? null : $("lastsync").textContent,
    classesUnknownNote: !$("classes-unknown").hidden,
    hidden: Object.fromEntries(["signin", "forgot", "verify", "keys", "account", "change", "confirm-move"]
      .map(id => [id, $(id).hidden])),
  };
}

/* The popup's devices, recovery key and recent activity. */
function securityView() {
  return {
    hidden: $("security").hidden,
    devices: Array.from(win.document.querySelectorAll("#devices li")).map(li => li.textContent),
    rkState: $("rk-state").textContent,
    rkKey: $("rk-key").hidden ? null : $("rk-key").textContent,
    rkRemoveHidden: $("rk-remove").hidden,
    events: Array.from(win.document.querySelectorAll("#events li")).map(li => li.dataset.type),
  };
}

/* The popup's list of other devices' tabs. */
function remoteTabsView() {
  return {
    state: $("remote-tabs-state").textContent,
    devices: Array.from(win.document.querySelectorAll("#remote-tabs li.remote-device")).map(li => ({
      id: li.dataset.id,
      text: li.firstChild.textContent,
      tabs: Array.from(li.querySelectorAll("a.remote-tab")).map(a => ({ text: a.textContent, href: a.href,
                                                                           target: a.target })),
    })),
  };
}

/* Runs an action in the popup (a click, a submit) and waits until the
 * popup is idle again with a message shown. */
async function act(f) {
  f();
  let during = { busy: win.document.body.getAttribute("aria-busy"), syncDisabled: $("sync").disabled };
  await waitFor("the popup to finish", () =>
    win.document.body.getAttribute("aria-busy") != "true" && $("message").textContent);
  return Object.assign(view(), { during, syncDisabled: $("sync").disabled });
}

function fill(values) {
  for (let [id, v] of Object.entries(values)) {
    $(id).value = v;
  }
}

function submit(id) {
  $(id).requestSubmit();
}

function click(id) {
  $(id).click();
}

function chooseClass(collection, cls) {
  let sel = $("class-" + collection);
  sel.value = cls;
  sel.dispatchEvent(new win.Event("change"));
}

/* ---- the test ------------------------------------------------------------- */

async function popupFlows(cfg, r) {
  const PW = "extension test password";
  const PW2 = "extension test password 2";
  const PW3 = "extension test password 3";
  let tab = await openPopup();
  r.popupStart = view();

  /* an error, then a success: distinct styles, one live region */
  fill({ keyserver: cfg.keyserver, email: "nobody-" + Date.now() + "@example.com", password: "not it" });
  r.popupSignInUnknown = await act(() => submit("signin"));
  fill({ email: cfg.email, password: PW });
  r.popupCreate = await act(() => click("do-create"));
  mark("created");
  r.stateCreated = await attempt(() => browser.picl.getState());
  r.syncUnverified = await attempt(() => browser.picl.sync([]));

  /* verify with the mailed code in a reopened popup (the password typed at
   * sign-up is gone): the keys come with the verification, or the popup
   * asks for the password once */
  let code = await waitFor("the verification mail", () => browser.picltest.mailCode(cfg.email, "X-Verify-Code"));
  await browser.tabs.remove(tab.id);
  tab = await openPopup();
  r.popupReopened = view();
  fill({ code });
  r.popupVerified = await act(() => submit("verify"));
  r.stateVerified = await attempt(() => browser.picl.getState());
  r.popupVerify = r.popupVerified;
  if (!$("keys").hidden) {
    fill({ "keys-password": PW });
    r.popupVerify = await act(() => submit("keys"));
  }
  mark("verified");

  /* sync now: "last synced" from the service */
  let t0 = Date.now();
  r.popupSync = await act(() => click("sync"));
  r.syncWindow = [t0, Date.now()];
  mark("synced");
  r.stateSynced = await attempt(() => browser.picl.getState());
  /* devices, the recovery key and recent activity (client.md 7) */
  r.security = securityView();
  /* another device's open tabs, listed in the popup as links */
  r.remoteBefore = remoteTabsView();
  r.peer = await attempt(() => browser.picltest.peerTabs(cfg.email, PW, "phone", [
    { title: "Phone page", url: "https://phone.example/page" }, { title: "", url: "https://phone.example/untitled" }]));
  await win.render();
  r.remoteTabs = remoteTabsView();
  /* this browser's own open tabs, from SessionStore's live state: a page of
   * the keyserver (a loopback http server) opened, Sync now, and the other
   * device lists it */
  r.ownPageURL = cfg.keyserver + "/picl-selftest-page";
  let page = await browser.tabs.create({ url: r.ownPageURL, active: false });
  await waitFor("the page to load", async () => (await browser.tabs.get(page.id)).status == "complete");
  r.ownTabsSync = await act(() => click("sync"));
  r.peerSees = await attempt(() => browser.picltest.peerList());
  await browser.tabs.remove(page.id);
  fill({ "rk-password": "wrong password" });
  r.rkWrong = Object.assign(await act(() => click("rk-create")), securityView());
  fill({ "rk-password": PW });
  r.rkCreate = Object.assign(await act(() => click("rk-create")), securityView());
  r.rkExists = await attempt(() => browser.picl.getRecoveryKeyExists());
  mark("recovery key");
  let now = Date.now();
  r.relativeTimes = {
    locale: browser.i18n.getUILanguage(),
    s10: win.relativeTime(now - 10e3, now),
    m3: win.relativeTime(now - 3 * 60e3, now),
    h2: win.relativeTime(now - 2 * 3600e3, now),
    d1: win.relativeTime(now - 86400e3, now),
    d3: win.relativeTime(now - 3 * 86400e3, now),
  };

  /* a class move asks first; Cancel changes nothing */
  chooseClass("bookmarks", "B");
  r.moveAsk = Object.assign(view(), { title: $("confirm-title").textContent, text: $("confirm-text").textContent });
  await sleep(300);
  r.moveAskState = await attempt(() => browser.picl.getState());
  click("confirm-no");
  r.moveCancel = Object.assign(view(), { select: $("class-bookmarks").value });
  r.moveCancelState = await attempt(() => browser.picl.getState());
  chooseClass("passwords", "A");
  r.moveAskA = { title: $("confirm-title").textContent, text: $("confirm-text").textContent };
  click("confirm-no");
  chooseClass("bookmarks", "B");
  r.moveDone = await act(() => click("confirm-yes"));
  r.moveDoneState = await attempt(() => browser.picl.getState());
  mark("moved");

  /* change password: the new one twice */
  click("show-change");
  r.changeForm = view();
  fill({ "old-password": PW, "new-password": PW2, "new-password2": PW2 + "x" });
  r.changeMismatch = await act(() => submit("change"));
  fill({ "new-password2": PW2 });
  r.changeDone = await act(() => submit("change"));
  r.signOut = await act(() => click("signout"));
  r.stateSignedOut = await attempt(() => browser.picl.getState());
  fill({ email: cfg.email, password: PW });
  r.signInOld = await act(() => submit("signin"));
  fill({ password: PW2 });
  r.signInNew = await act(() => submit("signin"));
  mark("password changed");

  /* forgot password: send a code, then code + new password twice */
  await act(() => click("signout"));
  click("show-forgot");
  await waitFor("the forgot form", () => !$("forgot").hidden);
  r.forgotForm = Object.assign(view(), { email: $("forgot-email").value });
  r.forgotSent = await act(() => click("send-code"));
  let rcode = await waitFor("the reset mail", () => browser.picltest.mailCode(cfg.email, "X-Recovery-Code"));
  fill({ "reset-code": rcode, "reset-password": PW3, "reset-password2": PW3 + "x" });
  r.resetMismatch = await act(() => submit("forgot"));
  fill({ "reset-password2": PW3 });
  r.resetDone = await act(() => submit("forgot"));
  r.stateReset = await attempt(() => browser.picl.getState());
  mark("password reset");
  await browser.tabs.remove(tab.id);
}

async function selfTest(cfg) {
  let r = {};
  r.hooks = { testReport: typeof browser.picl.testReport, testConfig: typeof browser.picl.testConfig };
  r.toolbar = await attempt(() => waitFor("the toolbar button", async () => {
    let b = await browser.picltest.toolbarButton();
    return b && b.area && b.toolbarImage ? b : null;
  }, 10000));
  if (!r.toolbar.ok) {
    r.toolbar.value = await browser.picltest.toolbarButton();
  }

  /* libpicl that cannot load: a clear error, in the API and in the popup */
  await browser.picltest.setPref("services.picl.libraryPath", cfg.badLib);
  r.nolibState = await attempt(() => browser.picl.getState());
  r.nolibInfo = await attempt(() => browser.picl.libraryInfo());
  let tab = await openPopup();
  r.nolibPopup = view();
  await browser.picltest.setPref("services.picl.libraryPath", cfg.lib);
  await win.render();
  r.libPopup = view();
  await browser.tabs.remove(tab.id);
  mark("library error");

  r.library = await attempt(() => browser.picl.libraryInfo());
  r.stateBefore = await attempt(() => browser.picl.getState());
  r.badName = await attempt(() => browser.picl.getCollectionClass("no such!"));
  r.badClass = await attempt(() => browser.picl.setCollectionClass("passwords", "C"));
  if (cfg.keyserver) {
    r.setURL = await attempt(() => browser.picl.setKeyserverURL(cfg.keyserver));
    r.signInUnknown = await attempt(() => browser.picl.signIn("nobody-" + Date.now() + "@example.com",
                                                               "not the password"));
    r.syncSignedOut = await attempt(() => browser.picl.sync([]));
    if (cfg.email && r.library.ok && !(r.library.value.missing || []).length) {
      try {
        await popupFlows(cfg, r);
      } catch (e) {
        r.popupError = String(e && e.message || e);
        r.popupLast = win ? view() : null;
      }
    }
  }
  r.stateAfter = await attempt(() => browser.picl.getState());
  mark("end");
  r.times = times;
  await browser.picltest.report(JSON.stringify(r));
}

browser.picltest.config().then(cfg => {
  if (cfg) {
    return selfTest(cfg);
  }
  return null;
}).catch(e => browser.picltest.report(JSON.stringify({ error: String(e && e.message || e) })).catch(() => {}));
