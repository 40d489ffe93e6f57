// SPDX-License-Identifier: MPL-2.0
/* test_tabs.js -- this browser's open tabs through the live TabsStore: the
 * session the browser wrote (IOUtils' mozLz4 writer, as SessionWriter does)
 * is uploaded as this device's tabs record and listed by another browser
 * (a peer process on a second profile, getRemoteTabs); a changed session is
 * uploaded again, an unchanged one is not; a corrupt session file is a clear
 * error with nothing uploaded; a huge session is trimmed to the record
 * limit, newest tabs first; sync([]) syncs clients, forms, prefs and tabs
 * too, in class A.  Needs the servers run.sh starts. */
"use strict";

do_get_profile();
const { PiCLService } = picl_import("PiCLService.sys.mjs");
const { tabsFromSession, TABS_RECORD_MAX } = picl_import("stores/TabsStore.sys.mjs");
const EMAIL = picl_email("tabs");
const PW = "tabs test password";
const WORK = Services.env.get("PICL_XPC_WORK") || PathUtils.tempDir;
const B_DIR = PathUtils.join(WORK, "tabs-profile-b-" + Date.now());
const T0 = Date.UTC(2024, 0, 15, 12, 0, 0);

registerCleanupFunction(() => PiCLService._shutdown());

async function onB(ops) {
  let r = await picl_peer(B_DIR, ops);
  r.forEach((x, i) => Assert.ok(!(x && x.error), "peer op " + ops[i].op + ": " + JSON.stringify(x)));
  return r;
}

/* A session of one window with tabs [url, title, lastAccessed offset]. */
function session(tabs) {
  return {
    version: ["sessionrestore", 1],
    windows: [{ tabs: tabs.map(([url, title, i]) => ({
      entries: [{ url: "https://start.example/" + i, title: "before" }, { url, title }],
      index: 2, lastAccessed: T0 + i * 1000, image: "",
    })), selected: 1 }],
    session: { lastUpdate: T0, startTime: T0, recentCrashes: 0 },
    _closedWindows: [], global: {},
  };
}

async function writeSession(file, tabs) {
  let path = PathUtils.join(PathUtils.profileDir, ...file.split("/"));
  await IOUtils.makeDirectory(PathUtils.parent(path), { ignoreExisting: true });
  await IOUtils.writeJSON(path, session(tabs), { compress: true });
  return path;
}

/* What B lists for A: [[url, title]] of A's device. */
async function listedOnB(idA) {
  let [, listed] = await onB([{ op: "configure" }, { op: "call", method: "getRemoteTabs", args: [] }]);
  let dev = listed.devices.find(d => d.id == idA);
  Assert.ok(dev, "B lists A: " + JSON.stringify(listed));
  return dev ? dev.tabs.map(t => [t.url, t.title]) : null;
}

add_task(async function test_tabs_between_browsers() {
  PiCLService.keyserverURL = picl_servers().keyserver;
  await PiCLService.createAccount(EMAIL, PW);
  await PiCLService.verifyEmail(await picl_mail_code(EMAIL, "X-Verify-Code"));
  await PiCLService.signIn(EMAIL, PW);
  await writeSession("sessionstore.jsonlz4", [["https://a.example/one", "One", 1], ["about:config", "Config", 2],
                                              ["https://b.example/two", "Two", 3]]);
  let s = JSON.parse(await PiCLService.sync(["clients", "tabs"]));
  Assert.equal(s.collections.tabs.uploaded, 1, "A's tabs uploaded at its first sync: " + JSON.stringify(s));
  Assert.equal(PiCLService.getCollectionClass("tabs"), "A", "tabs joined the class map as A");

  let [, , , listed] = await onB([{ op: "configure" }, { op: "call", method: "signIn", args: [EMAIL, PW] },
                                  { op: "sync", collections: ["clients"] },
                                  { op: "call", method: "getRemoteTabs", args: [] }]);
  Assert.equal(listed.devices.length, 1, "B sees A: " + JSON.stringify(listed));
  let idA = listed.devices[0].id;
  Assert.deepEqual(listed.devices[0].tabs.map(t => [t.url, t.title]),
                   [["https://b.example/two", "Two"], ["https://a.example/one", "One"]],
                   "A's web pages, newest first, about: pages left out");
  Assert.deepEqual(listed.devices[0].tabs[0].urlHistory, ["https://b.example/two", "https://start.example/3"]);

  /* unchanged: nothing uploaded; the browser writes a newer recovery file: uploaded */
  s = JSON.parse(await PiCLService.sync(["clients", "tabs"]));
  Assert.equal(s.collections.tabs.uploaded, 0, "an unchanged session is not uploaded again");
  await writeSession("sessionstore-backups/recovery.jsonlz4", [["https://c.example/three", "Three", 9]]);
  s = JSON.parse(await PiCLService.sync(["tabs"]));
  Assert.equal(s.collections.tabs.uploaded, 1, "the changed session is uploaded");
  Assert.deepEqual(await listedOnB(idA), [["https://c.example/three", "Three"]]);

  /* a corrupt session file (cut short, then not mozLz4): a clear error, nothing uploaded */
  let path = PathUtils.join(PathUtils.profileDir, "sessionstore-backups", "recovery.jsonlz4");
  let good = await IOUtils.read(path);
  for (let bad of [good.slice(0, 20), new TextEncoder().encode("{\"windows\": []}")]) {
    await IOUtils.write(path, bad);
    await IOUtils.setModificationTime(path, Date.now() + 5000);
    await Assert.rejects(PiCLService.sync(["tabs"]),
                         e => e.result == 4 && /recovery\.jsonlz4 is corrupt .*no tabs uploaded/.test(e.message),
                         "a corrupt session is refused by name");
    Assert.deepEqual(Array.from(await IOUtils.read(path)), Array.from(bad), "the file is left as it was");
  }
  Assert.deepEqual(await listedOnB(idA), [["https://c.example/three", "Three"]], "B still sees the last good upload");
  await IOUtils.write(path, good);
  await IOUtils.setModificationTime(path, Date.now() + 10000);
  s = JSON.parse(await PiCLService.sync(["tabs"]));
  Assert.equal(s.collections.tabs.uploaded, 0, "the good session again: the server has it already");

  /* sync([]) (the default) syncs the new collections too, each in class A */
  s = JSON.parse(await PiCLService.sync([]));
  for (let c of ["bookmarks", "history", "passwords", "clients", "forms", "prefs", "tabs"]) {
    Assert.ok(s.collections[c] && /^(ok|unchanged)$/.test(s.collections[c].status),
              c + " synced by default: " + JSON.stringify(s));
  }
  for (let c of ["clients", "forms", "prefs", "tabs"]) {
    Assert.equal(PiCLService.getCollectionClass(c), "A", c + " is class A");
  }
});

add_task(async function test_huge_session_trimmed() {
  let tabs = [];
  for (let i = 0; i < 400; i++) {
    tabs.push(["https://big.example/" + i, "t".repeat(1000), i]);
  }
  let out = tabsFromSession(session(tabs), "abcdefghijkl", "big");
  let size = new TextEncoder().encode(JSON.stringify({ id: "abcdefghijkl", clientName: "big", tabs: out })).length;
  Assert.lessOrEqual(size, TABS_RECORD_MAX, "within the record limit");
  Assert.greater(out.length, 100, "as many tabs as fit");
  Assert.less(out.length, 400);
  Assert.equal(out[0].urlHistory[0], "https://big.example/399", "the most recently used first");
  Assert.equal(out[out.length - 1].urlHistory[0], "https://big.example/" + (400 - out.length));
  Assert.throws(() => tabsFromSession({ tabs: [] }), /not a session/);
});
