// SPDX-License-Identifier: MPL-2.0
/* dump_profile.js -- writes what Firefox itself reads from a profile (the
 * bookmark tree with tags and keywords, history with visits, the decrypted
 * logins) as one JSON file, through PlacesUtils and Services.logins.
 * Run: firefox-esr --xpcshell -g GRE -a GRE/browser dump_profile.js DIR OUT.json [PRIMARY_PASSWORD]
 * With a primary password, Firefox checks it by changing it to "" (there is
 * no prompt in xpcshell): the profile is left WITHOUT its primary password.
 * (tests/make-profile.sh --dump does this).  Exit 0 on success. */
"use strict";
{
  let env = __LOCATION__.parent;
  env.append("profile_env.js");
  load(env.path);
}

const dir = arguments[0];
const out = arguments[1];
const primary = arguments.length > 2 ? arguments[2] : null;

const TYPES = { 1: "bookmark", 2: "folder", 3: "separator" };
const { PlacesSyncUtils } = ChromeUtils.importESModule("resource://gre/modules/PlacesSyncUtils.sys.mjs");

/* Flattens the tree under root________ (tags folder excluded, as Sync does). */
async function dumpBookmarks() {
  const PU = PlacesUtils;
  let tree = await PU.promiseBookmarksTree(PU.bookmarks.rootGuid, { includeItemIds: false });
  let list = [];
  let walk = async (node, parentGuid) => {
    if (node.guid == PU.bookmarks.tagsGuid) {
      return;
    }
    let b = await PU.bookmarks.fetch(node.guid);
    let e = {
      guid: node.guid,
      type: TYPES[b.type] || String(b.type),
      parentGuid: parentGuid,
      index: b.index,
      title: b.title,
      dateAdded: b.dateAdded.getTime(),
      lastModified: b.lastModified.getTime(),
    };
    if (b.url) {
      e.url = b.url.href;
      e.tags = PU.tagging.getTagsForURI(Services.io.newURI(b.url.href)).sort();
      let kw = await PU.keywords.fetch({ url: b.url.href });
      e.keyword = kw ? kw.keyword : null;
      /* found by URL = url_hash right (Places looks URLs up by hash) */
      let same = [];
      await PU.bookmarks.fetch({ url: b.url.href }, x => same.push(x.guid));
      e.byUrl = same.includes(node.guid);
    }
    if (node.children) {
      e.children = node.children.map(c => c.guid).filter(g => g != PU.bookmarks.tagsGuid);
    }
    list.push(e);
    for (let c of node.children || []) {
      await walk(c, node.guid);
    }
  };
  await walk(tree, null);
  return list;
}

/* Every page with its visits, newest visit first. */
async function dumpHistory() {
  const PU = PlacesUtils;
  let db = await PU.promiseDBConnection();
  let rows = await db.execute("SELECT guid FROM moz_places ORDER BY id");
  let list = [];
  for (let r of rows) {
    let info = await PU.history.fetch(r.getResultByName("guid"), { includeVisits: true });
    if (!info) {
      continue;
    }
    let byUrl = await PU.history.fetch(info.url.href);
    /* what Firefox's own history sync would upload (keeps unknown fields) */
    let syncInfo = await PlacesSyncUtils.history.fetchURLInfoForGuid(info.guid);
    let syncVisits = await PlacesSyncUtils.history.fetchVisitsForURL(info.url.href);
    list.push({
      guid: info.guid,
      url: info.url.href,
      byUrl: !!byUrl && byUrl.guid == info.guid,
      syncUnknownFields: syncInfo && syncInfo.unknownFields ? JSON.parse(syncInfo.unknownFields) : null,
      syncVisits,
      title: info.title,
      frecency: info.frecency,
      visits: (info.visits || []).map(v => ({ date: v.date.getTime(), transition: v.transition })),
    });
  }
  /* the per-page counters Firefox keeps, as Places' own queries see them */
  let counts = await db.execute(
    "SELECT guid, visit_count, last_visit_date, foreign_count, hidden FROM moz_places");
  let byGuid = {};
  for (let c of counts) {
    byGuid[c.getResultByName("guid")] = {
      visit_count: c.getResultByName("visit_count"),
      last_visit_date: c.getResultByName("last_visit_date"),
      foreign_count: c.getResultByName("foreign_count"),
      hidden: c.getResultByName("hidden"),
    };
  }
  for (let p of list) {
    Object.assign(p, byGuid[p.guid] || {});
  }
  return list;
}

async function dumpLogins() {
  await Services.logins.initializationPromise;
  let token = Cc["@mozilla.org/security/internalkeytoken;1"].getService(Ci.nsIPKCS11Token);
  if (token.hasPassword && !token.isLoggedIn) {
    if (primary === null) {
      return { locked: true };
    }
    try {
      token.changePassword(primary, ""); /* throws on a wrong password */
    } catch (e) {
      return { locked: true, wrongPassword: true };
    }
  }
  let all = await Services.logins.getAllLogins();
  return all.map(l => {
    l.QueryInterface(Ci.nsILoginMetaInfo);
    return {
      guid: l.guid,
      hostname: l.origin,
      formSubmitURL: l.formActionOrigin,
      httpRealm: l.httpRealm,
      username: l.username,
      password: l.password,
      usernameField: l.usernameField,
      passwordField: l.passwordField,
      timeCreated: l.timeCreated,
      timePasswordChanged: l.timePasswordChanged,
      timeLastUsed: l.timeLastUsed,
      timesUsed: l.timesUsed,
    };
  });
}

/* What Firefox's own password sync sees in logins.json, tombstones included
 * (its LoginManagerStorage, as services-sync's passwords engine reads it):
 * [{guid, deleted, syncCounter, everSynced}], or null when locked. */
async function dumpLoginsSync(logins) {
  if (!Array.isArray(logins)) {
    return null;
  }
  const { LoginManagerStorage } = ChromeUtils.importESModule("resource://passwordmgr/passwordstorage.sys.mjs");
  let storage = LoginManagerStorage.create();
  let out = [];
  for (let l of await storage.getAllLogins(true)) {
    l.QueryInterface(Ci.nsILoginMetaInfo);
    out.push({ guid: l.guid, deleted: await storage.loginIsDeletedAsync(l.guid),
               syncCounter: l.syncCounter, everSynced: l.everSynced });
  }
  return out;
}

let rc = pe_main(async () => {
  pe_useProfile(dir);
  let result = {
    bookmarks: await dumpBookmarks(),
    history: await dumpHistory(),
    logins: await dumpLogins(),
  };
  result.loginsSync = await dumpLoginsSync(result.logins);
  await IOUtils.writeUTF8(out, JSON.stringify(result, null, 1));
}, 90);
quit(rc);
