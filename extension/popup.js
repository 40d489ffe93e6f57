/* popup.js -- the PiCL popup: sign in / create / verify, status, class per collection, sync now. */
"use strict";

const $ = id => document.getElementById(id);
const COLLECTIONS = ["bookmarks", "history", "passwords"];

function say(text) {
  $("message").textContent = text || "";
}

async function run(f) {
  say("");
  try {
    await f();
  } catch (e) {
    say(e.message);
  }
  await render();
}

async function render() {
  let st = await browser.picl.getState();
  $("status").textContent = st.signedInEmail
    ? "Signed in as " + st.signedInEmail + (st.verified ? "" : " (not verified)")
    : "Signed out" + (st.keyserverURL ? " — keyserver " + st.keyserverURL : "");
  $("signin").hidden = !!st.signedInEmail;
  if (!$("keyserver").value) {
    $("keyserver").value = st.keyserverURL || "";
  }
  $("verify").hidden = !st.signedInEmail || st.verified;
  $("account").hidden = !st.signedInEmail;
  let table = $("classes");
  while (table.rows.length > 1) {
    table.deleteRow(1);
  }
  for (let c of COLLECTIONS) {
    let row = table.insertRow();
    row.insertCell().textContent = c;
    let sel = document.createElement("select");
    for (let cls of ["A", "B"]) {
      let o = document.createElement("option");
      o.value = cls;
      o.textContent = cls == "A" ? "A (survives a reset)" : "B (password only)";
      sel.append(o);
    }
    sel.value = st.classes[c];
    sel.addEventListener("change", () => run(() => browser.picl.setCollectionClass(c, sel.value)));
    row.insertCell().append(sel);
  }
}

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
  });
});
$("do-create").addEventListener("click", () => run(async () => {
  await useKeyserver();
  await browser.picl.createAccount($("email").value, $("password").value);
}));
$("verify").addEventListener("submit", ev => {
  ev.preventDefault();
  run(async () => {
    await browser.picl.verifyEmail($("code").value);
    /* the keys are fetched at a sign-in of a verified account */
    let st = await browser.picl.getState();
    if ($("password").value) {
      await browser.picl.signIn(st.signedInEmail, $("password").value);
    } else {
      say("Verified. Sign out and sign in again to fetch the keys.");
    }
  });
});
$("signout").addEventListener("click", () => run(() => browser.picl.signOut()));
$("sync").addEventListener("click", () => run(async () => {
  let summary = await browser.picl.sync([]);
  say("Synced: " + Object.entries(summary.collections || {})
    .map(([c, s]) => c + " ↓" + (s.downloaded || 0) + " ↑" + (s.uploaded || 0)).join(", "));
}));
browser.picl.onProgress.addListener((phase, collection, done, total) => {
  if (phase != "status") {
    $("status").textContent = phase + " " + collection + " " + done + (total >= 0 ? "/" + total : "");
  }
});
render().catch(e => say(e.message));
