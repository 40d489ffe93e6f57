// SPDX-License-Identifier: MPL-2.0
/* test_stores.js -- the live store hooks (PiCLStores.sys.mjs) on a real
 * profile: records in the records.md formats, change tracking, apply through
 * PlacesUtils / Services.logins, markSynced, reset, wipe, bad records. */
"use strict";

do_get_profile();
const { PiCLStores } = picl_import("PiCLStores.sys.mjs");
const { PlacesUtils } = ChromeUtils.importESModule("resource://gre/modules/PlacesUtils.sys.mjs");
const BM = PlacesUtils.bookmarks;
const T0 = Date.UTC(2024, 0, 15, 12, 0, 0);

function byId(records) {
  let m = {};
  for (let r of records) {
    m[r.id] = r;
  }
  return m;
}
function ids(records) {
  return records.map(r => r.id).sort();
}

add_task(async function test_init() {
  await PiCLStores.init();
  await Services.logins.initializationPromise;
  Assert.ok(PiCLStores.get("bookmarks") && PiCLStores.get("history") && PiCLStores.get("passwords"));
  Assert.equal(PiCLStores.get("addons"), null, "no store for an unknown collection");
  registerCleanupFunction(() => PiCLStores.shutdown());
});

add_task(async function test_bookmarks_records_and_tracking() {
  let bs = PiCLStores.get("bookmarks");
  /* a fresh profile: the four roots are new */
  let first = await bs.changes();
  Assert.deepEqual(ids(first), ["menu", "mobile", "toolbar", "unfiled"], "roots are new");
  await bs.markSynced(first);
  Assert.deepEqual(await bs.changes(), [], "nothing after markSynced");

  let folder = await BM.insert({ parentGuid: BM.menuGuid, type: BM.TYPE_FOLDER, title: "F",
                                 guid: "fldrAAAAAAAA", dateAdded: new Date(T0) });
  let bm = await BM.insert({ parentGuid: folder.guid, url: "https://example.com/a", title: "A",
                             guid: "bmkAAAAAAAAA", dateAdded: new Date(T0 + 1000) });
  await BM.insert({ parentGuid: folder.guid, type: BM.TYPE_SEPARATOR, guid: "sepAAAAAAAAA",
                    dateAdded: new Date(T0 + 2000) });
  PlacesUtils.tagging.tagURI(Services.io.newURI(bm.url.href), ["t2", "t1"]);
  await PlacesUtils.keywords.insert({ keyword: "kw", url: bm.url.href });

  let ch = byId(await bs.changes());
  Assert.deepEqual(Object.keys(ch).sort(), ["bmkAAAAAAAAA", "fldrAAAAAAAA", "menu", "sepAAAAAAAAA"],
                   "new items and their parent are changes");
  Assert.deepEqual(ch.bmkAAAAAAAAA, {
    id: "bmkAAAAAAAAA", type: "bookmark", parentid: "fldrAAAAAAAA", parentName: "F",
    dateAdded: T0 + 1000, title: "A", bmkUri: "https://example.com/a", tags: ["t1", "t2"], keyword: "kw",
  }, "bookmark record");
  Assert.deepEqual(ch.fldrAAAAAAAA, {
    id: "fldrAAAAAAAA", type: "folder", parentid: "menu", parentName: "menu", dateAdded: T0,
    title: "F", children: ["bmkAAAAAAAAA", "sepAAAAAAAAA"],
  }, "folder record");
  Assert.equal(ch.sepAAAAAAAAA.type, "separator");
  Assert.equal(ch.menu.parentid, "places", "roots hang under places");
  Assert.deepEqual(ch.menu.children, ["fldrAAAAAAAA"]);

  /* a change made after changes() survives markSynced */
  let reported = await bs.changes();
  await BM.update({ guid: "bmkAAAAAAAAA", title: "A2" });
  await bs.markSynced(reported);
  let left = await bs.changes();
  Assert.deepEqual(ids(left), ["bmkAAAAAAAAA"], "the edit made during the sync is still pending");
  Assert.equal(left[0].title, "A2");
  await bs.markSynced(left);
  Assert.deepEqual(await bs.changes(), []);

  /* a deletion is a tombstone */
  await BM.remove("sepAAAAAAAAA");
  let del = byId(await bs.changes());
  Assert.deepEqual(del.sepAAAAAAAAA, { id: "sepAAAAAAAAA", deleted: true }, "tombstone");
  await bs.markSynced(Object.values(del));
  Assert.deepEqual(await bs.changes(), []);

  let all = byId(await bs.all());
  Assert.ok(all.bmkAAAAAAAAA && all.fldrAAAAAAAA && all.toolbar && !all.sepAAAAAAAAA && !all.places,
            "all(): live records, no tombstones, no places root");
});

add_task(async function test_bookmarks_apply() {
  let bs = PiCLStores.get("bookmarks");
  let incoming = [
    { id: "fldrBBBBBBBB", type: "folder", parentid: "toolbar", parentName: "toolbar", title: "Remote",
      children: ["bmkBBBBBBBB2", "bmkBBBBBBBB1"], dateAdded: T0 + 10 },
    { id: "bmkBBBBBBBB1", type: "bookmark", parentid: "fldrBBBBBBBB", parentName: "Remote", title: "B1",
      bmkUri: "https://b1.example/", tags: ["rt"], keyword: "b1", dateAdded: T0 + 11 },
    { id: "bmkBBBBBBBB2", type: "bookmark", parentid: "fldrBBBBBBBB", parentName: "Remote", title: "B2",
      bmkUri: "https://b2.example/", tags: [], dateAdded: T0 + 12 },
    { id: "bmkOrphan001", type: "bookmark", parentid: "fldrNOWHERE1", title: "orphan",
      bmkUri: "https://orphan.example/", dateAdded: T0 + 13 },
    { id: "bmkAAAAAAAAA", type: "bookmark", parentid: "fldrAAAAAAAA", title: "A3",
      bmkUri: "https://example.com/a3", tags: ["t1"], dateAdded: T0 + 1000 },
  ];
  Assert.equal(await bs.apply(incoming), 5);
  let f = await BM.fetch("fldrBBBBBBBB");
  Assert.equal(f.parentGuid, BM.toolbarGuid);
  Assert.equal(f.title, "Remote");
  let b2 = await BM.fetch("bmkBBBBBBBB2");
  let b1 = await BM.fetch("bmkBBBBBBBB1");
  Assert.equal(b2.index, 0, "children order follows the record");
  Assert.equal(b1.index, 1);
  Assert.equal(b1.url.href, "https://b1.example/");
  Assert.deepEqual(PlacesUtils.tagging.getTagsForURI(Services.io.newURI("https://b1.example/")), ["rt"]);
  let kw = await PlacesUtils.keywords.fetch("b1");
  Assert.equal(kw && kw.url.href, "https://b1.example/", "keyword applied");
  Assert.equal((await BM.fetch("bmkOrphan001")).parentGuid, BM.unfiledGuid, "orphan goes to unfiled");
  let a = await BM.fetch("bmkAAAAAAAAA");
  Assert.equal(a.title, "A3");
  Assert.equal(a.url.href, "https://example.com/a3");
  Assert.deepEqual(PlacesUtils.tagging.getTagsForURI(Services.io.newURI("https://example.com/a3")), ["t1"]);
  Assert.deepEqual(await bs.changes(), [], "applied records are not local changes");

  await bs.apply([{ id: "bmkBBBBBBBB2", deleted: true }]);
  Assert.equal(await BM.fetch("bmkBBBBBBBB2"), null, "tombstone applied");
  Assert.deepEqual(await bs.changes(), [], "an applied tombstone is no local change");

  /* a bad record is refused before anything is written */
  let before = await bs.all();
  await Assert.rejects(bs.apply([
    { id: "bmkCCCCCCCC1", type: "bookmark", parentid: "menu", title: "ok", bmkUri: "https://c.example/" },
    { id: "bmkCCCCCCCC2", type: "weird", parentid: "menu" },
  ]), /unknown type/);
  await Assert.rejects(bs.apply([{ type: "bookmark", parentid: "menu" }]), /without an id/);
  Assert.deepEqual(await bs.all(), before, "nothing changed after a rejected batch");
});

add_task(async function test_bookmarks_reset_and_wipe() {
  let bs = PiCLStores.get("bookmarks");
  await bs.reset();
  let all = ids(await bs.all());
  Assert.deepEqual(ids(await bs.changes()), all, "after reset every live record is a change");
  await bs.wipe();
  Assert.equal(await BM.fetch("bmkAAAAAAAAA"), null, "wipe removed the bookmarks");
  Assert.deepEqual(ids(await bs.all()), ["menu", "mobile", "toolbar", "unfiled"], "only roots left");
});

add_task(async function test_history() {
  let hs = PiCLStores.get("history");
  let first = await hs.changes();
  Assert.deepEqual(first, [], "no history yet (reset, but empty)");
  await hs.markSynced(first);
  await PlacesUtils.history.insert({ url: "https://h.example/1", title: "H1",
                                     visits: [{ date: new Date(T0), transition: 1 },
                                              { date: new Date(T0 + 5000), transition: 2 }] });
  await do_timeout_promise(50);
  let ch = await hs.changes();
  Assert.equal(ch.length, 1, "one changed page");
  let rec = ch[0];
  Assert.equal(rec.histUri, "https://h.example/1");
  Assert.equal(rec.title, "H1");
  Assert.deepEqual(rec.visits, [{ date: (T0 + 5000) * 1000, type: 2 }, { date: T0 * 1000, type: 1 }],
                   "visits newest first, dates in microseconds");
  await hs.markSynced(ch);
  Assert.deepEqual(await hs.changes(), []);

  /* incoming: a new page and more visits for ours, one duplicate visit */
  await hs.apply([
    { id: "histRemote01", histUri: "https://h.example/remote", title: "R",
      visits: [{ date: (T0 + 100) * 1000, type: 1 }] },
    { id: rec.id, histUri: rec.histUri, title: "H1",
      visits: [{ date: (T0 + 5000) * 1000, type: 2 }, { date: (T0 + 9000) * 1000, type: 1 }] },
  ]);
  await do_timeout_promise(50);
  let page = await PlacesUtils.history.fetch("histRemote01", { includeVisits: true });
  Assert.ok(page, "the remote page exists under its GUID");
  Assert.equal(page.url.href, "https://h.example/remote");
  let mine = await PlacesUtils.history.fetch(rec.id, { includeVisits: true });
  Assert.equal(mine.visits.length, 3, "one new visit, the duplicate skipped");
  Assert.deepEqual(await hs.changes(), [], "applied history is not a local change");

  /* local removal -> tombstone; incoming tombstone removes */
  await PlacesUtils.history.remove("https://h.example/1");
  await do_timeout_promise(50);
  Assert.deepEqual(await hs.changes(), [{ id: rec.id, deleted: true }], "history tombstone");
  await hs.markSynced([{ id: rec.id, deleted: true }]);
  await hs.apply([{ id: "histRemote01", deleted: true }]);
  Assert.equal(await PlacesUtils.history.fetch("histRemote01"), null, "incoming tombstone applied");
  await Assert.rejects(hs.apply([{ id: "histBad00001", title: "x" }]), /histUri/);
  await Assert.rejects(hs.apply([{ id: "histBad00002", histUri: "not a url", visits: [] }]), /could not apply/);
});

function newLogin(origin, user, pass, guid) {
  let l = Cc["@mozilla.org/login-manager/loginInfo;1"].createInstance(Ci.nsILoginInfo);
  l.init(origin, origin, null, user, pass, "u", "p");
  if (guid) {
    l.QueryInterface(Ci.nsILoginMetaInfo).guid = guid;
  }
  return l;
}

add_task(async function test_passwords() {
  let ps = PiCLStores.get("passwords");
  let first = await ps.changes();
  Assert.deepEqual(first, []);
  await ps.markSynced(first);
  await Services.logins.addLoginAsync(newLogin("https://l.example", "alice", "s3cret", "{guid-login-1}"));
  let ch = await ps.changes();
  Assert.equal(ch.length, 1);
  let r = ch[0];
  Assert.equal(r.id, "{guid-login-1}");
  Assert.equal(r.hostname, "https://l.example");
  Assert.equal(r.formSubmitURL, "https://l.example");
  Assert.ok(!("httpRealm" in r), "a form login has no httpRealm");
  Assert.equal(r.username, "alice");
  Assert.equal(r.password, "s3cret");
  Assert.equal(r.usernameField, "u");
  Assert.ok(r.timePasswordChanged > 0 && r.timeCreated > 0);
  await ps.markSynced(ch);
  Assert.deepEqual(await ps.changes(), []);

  /* incoming: a new login and a change to ours; not local changes */
  await ps.apply([
    { id: "{guid-login-2}", hostname: "https://r.example", formSubmitURL: "https://r.example",
      username: "bob", password: "pw2", usernameField: "", passwordField: "",
      timeCreated: T0, timePasswordChanged: T0, timeLastUsed: T0, timesUsed: 3 },
    Object.assign({}, r, { password: "n3w", timePasswordChanged: r.timePasswordChanged + 1 }),
  ]);
  let got = await Services.logins.searchLoginsAsync({ guid: "{guid-login-2}" });
  Assert.equal(got.length, 1);
  Assert.equal(got[0].password, "pw2", "decrypted by the login manager");
  Assert.equal(got[0].QueryInterface(Ci.nsILoginMetaInfo).timesUsed, 3);
  Assert.equal((await Services.logins.searchLoginsAsync({ guid: "{guid-login-1}" }))[0].password, "n3w");
  Assert.deepEqual(await ps.changes(), [], "applied logins are not local changes");

  /* local removal is a tombstone; an incoming tombstone removes */
  await Services.logins.removeLoginAsync(got[0]);
  Assert.deepEqual(await ps.changes(), [{ id: "{guid-login-2}", deleted: true }]);
  await ps.apply([{ id: "{guid-login-1}", deleted: true }]);
  Assert.equal((await Services.logins.getAllLogins()).length, 0, "both gone");

  /* a bad record is refused before anything is written */
  await Assert.rejects(ps.apply([
    { id: "{guid-login-3}", hostname: "https://x.example", formSubmitURL: "", password: "x", username: "" },
    { id: "{guid-login-4}", hostname: "https://y.example", password: "" },
  ]), /needs hostname and password/);
  Assert.equal((await Services.logins.getAllLogins()).length, 0, "nothing added");
});

add_task(async function test_passwords_http_auth_login() {
  let ps = PiCLStores.get("passwords");
  await ps.markSynced(await ps.changes());
  let rec = { id: "{guid-auth-1}", hostname: "https://auth.example", httpRealm: "Members only",
              username: "dave", password: "pw-d", usernameField: "", passwordField: "",
              timeCreated: T0, timePasswordChanged: T0 + 1, timeLastUsed: T0 + 2, timesUsed: 7 };
  await ps.apply([rec]);
  let [l] = await Services.logins.searchLoginsAsync({ guid: "{guid-auth-1}" });
  Assert.equal(l.httpRealm, "Members only", "an HTTP auth login");
  Assert.equal(l.formActionOrigin, null, "without a form action");
  let back = (await ps.all()).find(r => r.id == "{guid-auth-1}");
  Assert.deepEqual(back, rec, "round-trips field for field");
  Assert.deepEqual(await ps.changes(), [], "not a local change");
  await ps.apply([{ id: "{guid-auth-1}", deleted: true }]);
});

add_task(async function test_tracker_persists() {
  await Services.logins.addLoginAsync(newLogin("https://p.example", "carol", "pw", "{guid-login-5}"));
  await PiCLStores.shutdown();
  await PiCLStores.init();
  let ch = await PiCLStores.get("passwords").changes();
  Assert.deepEqual(ids(ch), ["{guid-login-5}"], "pending changes survive a restart");
  let tracker = PathUtils.join(PathUtils.profileDir, "picl", "tracker.json");
  Assert.ok(await IOUtils.exists(tracker), "tracker file in <profile>/picl");
});
