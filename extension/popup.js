// SPDX-License-Identifier: MPL-2.0
/* popup.js -- the PiCL popup: sign in / create / verify, forgot and change password, status and last sync, class per collection (a move is confirmed first), sync now, devices, recovery key, security events and other devices' open tabs. */
"use strict";

const $ = id => document.getElementById(id);
const COLLECTIONS = ["bookmarks", "history", "passwords"];
const LOCALE = browser.i18n.getUILanguage();

let state = null;          /* the last browser.picl.getState() */
let forgotOpen = false;    /* the forgot-password form replaces the sign-in form */
let pendingMove = null;    /* {collection, cls, select} waiting for confirmation */
let unavailable = false;   /* the message line shows why PiCL cannot start */

/* One message line, a polite live region; kind "error", "success" or "info"
 * (popup.css styles them apart).  An API error's "(picl N)" suffix moves
 * to data-code. */
function say(text, kind = "info") {
  let m = $("message");
  let code = /\s*\(picl (\d+)\)$/.exec(text || "");
  m.textContent = code ? text.slice(0, code.index) : text || "";
  m.className = text ? kind : "";
  if (code) {
    m.dataset.code = code[1];
  } else {
    delete m.dataset.code;
  }
}

/* Runs an action; f resolves to the success text (or nothing).  The page
 * is aria-busy, and its buttons and selects disabled (no second click
 * queues the same operation again), until the action and the re-render
 * are done. */
async function run(f) {
  document.body.setAttribute("aria-busy", "true");
  let controls = Array.from(document.querySelectorAll("button, select"));
  for (let c of controls) {
    c.disabled = true;
  }
  say("");
  let ok = false;
  try {
    let text = await f();
    if (text) {
      say(text, "success");
    }
    ok = true;
  } catch (e) {
    say(e.message, "error");
  }
  try {
    await render();
  } finally {
    for (let c of controls) {
      c.disabled = false;
    }
    document.body.removeAttribute("aria-busy");
  }
  return ok;
}

/* "just now", "3 minutes ago", "yesterday", ... */
function relativeTime(then, now) {
  let s = Math.round((now - then) / 1000);
  if (Math.abs(s) < 45) {
    return "just now";
  }
  let rtf = new Intl.RelativeTimeFormat(LOCALE, { numeric: "auto" });
  const units = [["year", 365 * 86400], ["month", 30 * 86400], ["week", 7 * 86400], ["day", 86400],
                 ["hour", 3600], ["minute", 60]];
  for (let [unit, n] of units) {
    if (Math.abs(s) >= n) {
      return rtf.format(-Math.round(s / n), unit);
    }
  }
  return rtf.format(s > 0 ? -1 : 1, "minute");
}

function showLastSync() {
  let el = $("lastsync");
  if (!state || !state.signedInEmail) {
    el.hidden = true;
    return;
  }
  el.hidden = false;
  if (state.lastSyncTime > 0) {
    el.textContent = "Last synced: " + relativeTime(state.lastSyncTime, Date.now());
    el.title = new Date(state.lastSyncTime).toLocaleString(LOCALE);
  } else {
    el.textContent = "Not synced yet";
    el.title = "";
  }
}

/* libpicl cannot be loaded (or the service cannot start): say so and why
 * (in the live message line), and offer nothing that needs it. */
function showUnavailable(e) {
  state = null;
  unavailable = true;
  let msg = String(e && e.message || e);
  $("status").className = "error";
  $("status").textContent = "PiCL cannot start.";
  say(/^PiCL /.test(msg) ? msg : "PiCL cannot start: " + msg, "error");
  for (let id of ["signin", "forgot", "verify", "keys", "account", "lastsync"]) {
    $(id).hidden = true;
  }
}

async function render() {
  let st;
  try {
    st = await browser.picl.getState();
  } catch (e) {
    showUnavailable(e);
    return;
  }
  state = st;
  if (unavailable) {
    unavailable = false;
    say("");
  }
  let signedIn = !!st.signedInEmail;
  $("status").className = "";
  $("status").textContent = signedIn
    ? "Signed in as " + st.signedInEmail + (st.verified ? "" : " (not verified)")
    : "Signed out" + (st.keyserverURL ? " — keyserver " + st.keyserverURL : "");
  if (signedIn) {
    forgotOpen = false;
  }
  $("signin").hidden = signedIn || forgotOpen;
  $("forgot").hidden = signedIn || !forgotOpen;
  if (!$("keyserver").value) {
    $("keyserver").value = st.keyserverURL || "";
  }
  $("verify").hidden = !signedIn || st.verified;
  /* verified, but no keys here (verified elsewhere, or the popup was closed
   * since sign-up on a keyserver that needs the password again) */
  $("keys").hidden = !signedIn || !st.verified || !!st.hasKeys;
  $("account").hidden = !signedIn;
  showLastSync();
  $("classes-unknown").hidden = !!st.classesKnown;
  hideMove();
  let table = $("classes");
  while (table.rows.length > 1) {
    table.deleteRow(1);
  }
  for (let c of COLLECTIONS) {
    let row = table.insertRow();
    row.insertCell().textContent = c;
    let sel = document.createElement("select");
    sel.id = "class-" + c;
    sel.setAttribute("aria-label", "security class of " + c);
    for (let cls of ["A", "B"]) {
      let o = document.createElement("option");
      o.value = cls;
      o.textContent = cls == "A" ? "A (survives a reset)" : "B (password only)";
      sel.append(o);
    }
    sel.value = st.classes[c];
    sel.addEventListener("change", () => askMove(c, sel));
    row.insertCell().append(sel);
  }
  await renderSecurity(signedIn && st.verified && st.hasKeys);
}

/* ---- devices, recovery key, security events (client.md 7) ------------------ */

const EVENT_TEXT = {
  "account.created": "account created", "account.verified": "email verified", "login": "signed in",
  "login.failed": "failed sign-in", "password.changed": "password changed", "password.reset": "password reset",
  "device.destroyed": "device signed out", "recoveryKey.created": "recovery key created",
  "recoveryKey.used": "recovery key used", "classmap.changed": "classes changed",
};

async function renderSecurity(show) {
  $("security").hidden = !show;
  if (!show) {
    return;
  }
  let devices, events, exists;
  try {
    [devices, events, exists] = await Promise.all([browser.picl.getDevices(), browser.picl.getSecurityEvents(),
                                                   browser.picl.getRecoveryKeyExists()]);
  } catch (e) {
    $("rk-state").textContent = "Devices and activity are unavailable: " + e.message;
    return;
  }
  let ul = $("devices");
  ul.textContent = "";
  for (let d of devices.devices) {
    let li = document.createElement("li");
    li.className = "device";
    li.textContent = (d.name || "(unnamed)") + " — " + (d.type || "?") + ", last active " +
      relativeTime(d.lastAccessAt * 1000, Date.now());
    if (d.current) {
      li.append(" (this device)");
    } else {
      let b = document.createElement("button");
      b.type = "button";
      b.id = "remove-" + d.id;
      b.textContent = "Sign out";
      b.addEventListener("click", () => run(async () => {
        await browser.picl.signOutDevice(d.id);
        return (d.name || "The device") + " is signed out: it stops syncing at its next request.";
      }));
      li.append(" ", b);
    }
    ul.append(li);
  }
  $("rk-state").textContent = exists
    ? "A recovery key is set: a forgotten password keeps your class B data."
    : "No recovery key: a forgotten password loses your class B data.";
  $("rk-remove").hidden = !exists;
  let ol = $("events");
  ol.textContent = "";
  for (let e of events.events.slice(0, 10)) {
    let li = document.createElement("li");
    li.className = "event";
    li.dataset.type = e.type;
    li.textContent = (EVENT_TEXT[e.type] || e.type) + ", " + relativeTime(e.time * 1000, Date.now()) +
      (e.device ? " — " + e.device : "") + (e.address ? " (" + e.address + ")" : "");
    ol.append(li);
  }
  await renderRemoteTabs();
}

/* The open tabs of the account's other devices (the tabs collection, read
 * from the server): one item per device, its pages as links. */
async function renderRemoteTabs() {
  let ul = $("remote-tabs");
  ul.textContent = "";
  let remote;
  try {
    remote = await browser.picl.getRemoteTabs();
  } catch (e) {
    $("remote-tabs-state").textContent = "Other devices' tabs are unavailable: " + e.message;
    return;
  }
  let devices = remote.devices.filter(d => d.tabs.length);
  $("remote-tabs-state").textContent = devices.length ? "" : "No open tabs on other devices yet.";
  for (let d of devices) {
    let li = document.createElement("li");
    li.className = "remote-device";
    li.dataset.id = d.id;
    /* lastSeen: SyncStorage seconds */
    li.append((d.name || "(unnamed)") + ", last seen " + relativeTime(Number(d.lastSeen) * 1000, Date.now()));
    let pages = document.createElement("ul");
    for (let tab of d.tabs) {
      let item = document.createElement("li");
      let a = document.createElement("a");
      a.className = "remote-tab";
      a.href = tab.url;       /* http(s) only: the service checks every URL */
      a.target = "_blank";
      a.rel = "noopener noreferrer";
      a.textContent = tab.title || tab.url;
      a.title = tab.url;
      item.append(a);
      pages.append(item);
    }
    li.append(pages);
    ul.append(li);
  }
}

$("rk-create").addEventListener("click", () => {
  let pw = $("rk-password").value;
  if (!pw) {
    say("Enter your password to create a recovery key.", "error");
    return;
  }
  run(async () => {
    let key = await browser.picl.createRecoveryKey(pw);
    $("rk-password").value = "";
    $("rk-key").textContent = key;
    $("rk-key").hidden = false;
    return "Write this recovery key down and keep it safe, away from this computer: it is shown only now.";
  });
});
$("rk-remove").addEventListener("click", () => run(async () => {
  await browser.picl.removeRecoveryKey();
  $("rk-key").hidden = true;
  return "Recovery key removed.";
}));

/* ---- moving a collection between classes: confirmed first ---------------- */

function moveExplanation(c, cls) {
  if (cls == "B") {
    return "Class B is encrypted with a key made from your password that never leaves your devices, " +
      "so the keyserver cannot read it. If you forget your password, the " + c + " collection on the " +
      "server is lost for good, unless you have created a recovery key (this device keeps its own " +
      "copy). Every " + c + " record is encrypted again and uploaded.";
  }
  return "Class A is encrypted with a key the keyserver keeps for you: the " + c + " collection " +
    "survives a forgotten password (a reset), but whoever runs the keyserver could read it together " +
    "with the storage server. Every " + c + " record is encrypted again and uploaded.";
}

function askMove(c, sel) {
  let from = state && state.classes[c];
  if (!from || sel.value == from) {
    hideMove();
    return;
  }
  if (pendingMove && pendingMove.select != sel) {
    pendingMove.select.value = state.classes[pendingMove.collection];
  }
  pendingMove = { collection: c, cls: sel.value, select: sel };
  $("confirm-title").textContent = "Move " + c + " from class " + from + " to class " + sel.value + "?";
  $("confirm-text").textContent = moveExplanation(c, sel.value);
  $("confirm-yes").textContent = "Move " + c + " to class " + sel.value;
  $("confirm-move").hidden = false;
  $("confirm-no").focus();
}

function hideMove() {
  pendingMove = null;
  $("confirm-move").hidden = true;
}

$("confirm-no").addEventListener("click", () => {
  let p = pendingMove;
  hideMove();
  if (p) {
    p.select.value = state.classes[p.collection];
    say("Nothing was changed: " + p.collection + " stay in class " + p.select.value + ".", "info");
  }
});
$("confirm-yes").addEventListener("click", () => {
  let p = pendingMove;
  hideMove();
  if (p) {
    run(async () => {
      await browser.picl.setCollectionClass(p.collection, p.cls);
      return p.collection + " moved to class " + p.cls + ".";
    });
  }
});

/* ---- account ------------------------------------------------------------- */

/* The keyserver typed in the form, before an account call. */
async function useKeyserver() {
  let url = $("keyserver").value.trim();
  if (url) {
    await browser.picl.setKeyserverURL(url);
  }
}
$("signin").addEventListener("submit", ev => {
  ev.preventDefault();
  run(async () => {
    await useKeyserver();
    await browser.picl.signIn($("email").value, $("password").value);
    return "Signed in as " + $("email").value + ".";
  });
});
$("do-create").addEventListener("click", () => run(async () => {
  await useKeyserver();
  await browser.picl.createAccount($("email").value, $("password").value);
  return "Account created. Enter the code mailed to " + $("email").value + ".";
}));
$("verify").addEventListener("submit", ev => {
  ev.preventDefault();
  run(async () => {
    await browser.picl.verifyEmail($("code").value);
    $("code").value = "";
    /* the keys are fetched at a sign-in of a verified account */
    let st = await browser.picl.getState();
    if (st.hasKeys) {
      return "Email verified; this device has the keys.";
    }
    if ($("password").value) {
      await browser.picl.signIn(st.signedInEmail, $("password").value);
      return "Email verified; signed in.";
    }
    return "Email verified. Enter your password to fetch the keys.";
  });
});
$("keys").addEventListener("submit", ev => {
  ev.preventDefault();
  run(async () => {
    let pw = $("keys-password").value;
    $("keys-password").value = "";
    await browser.picl.signIn(state.signedInEmail, pw);
    return "Signed in; this device has the keys.";
  });
});
$("signout").addEventListener("click", () => run(async () => {
  await browser.picl.signOut();
  return "Signed out.";
}));
$("sync").addEventListener("click", () => run(async () => {
  let summary = await browser.picl.sync([]);
  return "Synced: " + Object.entries(summary.collections || {})
    .map(([c, s]) => c + " ↓" + (s.downloaded || 0) + " ↑" + (s.uploaded || 0)).join(", ");
}));

/* Two new-password fields must agree; returns the error text or "". */
function newPasswordProblem(a, b) {
  if (!a) {
    return "Enter a new password.";
  }
  if (a != b) {
    return "The two new passwords differ; nothing was changed.";
  }
  return "";
}

/* change password: current + new twice */
$("show-change").addEventListener("click", () => {
  $("change").hidden = false;
  $("old-password").focus();
});
$("change-cancel").addEventListener("click", () => {
  $("change").hidden = true;
  for (let id of ["old-password", "new-password", "new-password2"]) {
    $(id).value = "";
  }
});
$("change").addEventListener("submit", ev => {
  ev.preventDefault();
  let old = $("old-password").value;
  let problem = old ? newPasswordProblem($("new-password").value, $("new-password2").value)
                    : "Enter your current password.";
  if (problem) {
    say(problem, "error");
    return;
  }
  run(async () => {
    await browser.picl.changePassword(old, $("new-password").value);
    for (let id of ["old-password", "new-password", "new-password2"]) {
      $(id).value = "";
    }
    $("change").hidden = true;
    return "Password changed. Your data stays readable with the new password.";
  });
});

/* forgot password: send a code, then the code + the new password twice */
$("show-forgot").addEventListener("click", () => {
  forgotOpen = true;
  $("forgot-email").value = $("email").value;
  say("");
  render();
});
$("forgot-cancel").addEventListener("click", () => {
  forgotOpen = false;
  for (let id of ["reset-code", "reset-password", "reset-password2"]) {
    $(id).value = "";
  }
  render();
});
$("send-code").addEventListener("click", () => {
  let email = $("forgot-email").value.trim();
  if (!email) {
    say("Enter the account's email.", "error");
    return;
  }
  run(async () => {
    await useKeyserver();
    await browser.picl.forgotPassword(email);
    return "A code was sent to " + email + ". Enter it below with a new password (twice).";
  });
});
$("forgot").addEventListener("submit", ev => {
  ev.preventDefault();
  let code = $("reset-code").value.trim();
  let problem = code ? newPasswordProblem($("reset-password").value, $("reset-password2").value)
                     : "Enter the code from the email (Send code first).";
  if (problem) {
    say(problem, "error");
    return;
  }
  let key = $("reset-recovery-key").value.trim();
  run(async () => {
    if (key) {
      await browser.picl.completePasswordResetWithRecoveryKey(code, $("reset-password").value, key);
    } else {
      await browser.picl.completePasswordReset(code, $("reset-password").value);
    }
    for (let id of ["reset-code", "reset-password", "reset-password2", "reset-recovery-key"]) {
      $(id).value = "";
    }
    forgotOpen = false;
    return key ? "Password reset with your recovery key; you are signed in and all your data is kept. " +
                 "The key is used up: create a new one."
               : "Password reset; you are signed in. Class A data is kept; class B data on the server was " +
                 "lost and is uploaded again from this device at the next sync.";
  });
});

browser.picl.onProgress.addListener((phase, collection, done, total) => {
  if (phase != "status" && state) {
    $("status").textContent = phase + " " + collection + " " + done + (total >= 0 ? "/" + total : "");
  }
});
setInterval(showLastSync, 30000);
render().catch(e => say(e.message, "error"));
