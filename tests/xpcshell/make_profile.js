// SPDX-License-Identifier: MPL-2.0
/* make_profile.js -- creates a Firefox profile with sample bookmarks, visits
 * and logins through the browser's own APIs (PlacesUtils, Services.logins).
 * Run: firefox-esr --xpcshell -g GRE -a GRE/browser make_profile.js DIR [PRIMARY_PASSWORD]
 * (tests/make-profile.sh does this).  Exit 0 on success. */
"use strict";
{
  let env = __LOCATION__.parent;
  env.append("profile_env.js");
  load(env.path);
}

const dir = arguments[0];
const primary = arguments[1] || "";

const T0 = Date.UTC(2024, 0, 15, 12, 0, 0); /* fixed dates: reproducible fixtures */

async function addBookmarks() {
  const PU = PlacesUtils;
  let folder = await PU.bookmarks.insert({
    parentGuid: PU.bookmarks.menuGuid, type: PU.bookmarks.TYPE_FOLDER,
    title: "Sample Folder", guid: "fldrSample01", dateAdded: new Date(T0),
  });
  let a = await PU.bookmarks.insert({
    parentGuid: folder.guid, url: "https://example.com/", title: "Example",
    guid: "bmkExample01", dateAdded: new Date(T0 + 1000),
  });
  await PU.bookmarks.insert({
    parentGuid: folder.guid, type: PU.bookmarks.TYPE_SEPARATOR,
    guid: "sepSample001", dateAdded: new Date(T0 + 2000),
  });
  await PU.bookmarks.insert({
    parentGuid: folder.guid, url: "https://www.mozilla.org/en-US/firefox/",
    title: "Firefox", guid: "bmkFirefox01", dateAdded: new Date(T0 + 3000),
  });
  let sub = await PU.bookmarks.insert({
    parentGuid: folder.guid, type: PU.bookmarks.TYPE_FOLDER,
    title: "Nested", guid: "fldrNested01", dateAdded: new Date(T0 + 4000),
  });
  await PU.bookmarks.insert({
    parentGuid: sub.guid, url: "https://developer.mozilla.org/", title: "MDN",
    guid: "bmkMDN000001", dateAdded: new Date(T0 + 5000),
  });
  await PU.bookmarks.insert({
    parentGuid: PU.bookmarks.toolbarGuid, url: "https://news.ycombinator.com/",
    title: "HN", guid: "bmkToolbar01", dateAdded: new Date(T0 + 6000),
  });
  await PU.bookmarks.insert({
    parentGuid: PU.bookmarks.unfiledGuid, url: "https://unfiled.example.org/page?q=1",
    title: "Unfiled page", guid: "bmkUnfiled01", dateAdded: new Date(T0 + 7000),
  });
  await PU.bookmarks.insert({
    parentGuid: PU.bookmarks.mobileGuid, url: "https://mobile.example.net/",
    title: "Mobile", guid: "bmkMobile001", dateAdded: new Date(T0 + 8000),
  });
  PU.tagging.tagURI(Services.io.newURI(a.url.href), ["sample", "test"]);
  await PU.keywords.insert({ keyword: "ex", url: a.url.href });
}

async function addVisits() {
  const PU = PlacesUtils;
  const T = PU.history.TRANSITIONS;
  await PU.history.insertMany([
    { url: "https://example.com/", title: "Example",
      visits: [{ date: new Date(T0 - 3600e3), transition: T.TYPED },
               { date: new Date(T0 - 1800e3), transition: T.LINK }] },
    { url: "https://www.mozilla.org/en-US/firefox/", title: "Firefox",
      visits: [{ date: new Date(T0 - 7200e3), transition: T.BOOKMARK }] },
    { url: "https://history-only.example.org/a/b", title: "History only",
      visits: [{ date: new Date(T0 - 86400e3), transition: T.LINK },
               { date: new Date(T0 - 43200e3), transition: T.REDIRECT_PERMANENT },
               { date: new Date(T0 - 600e3), transition: T.RELOAD }] },
  ]);
}

async function addLogins() {
  await Services.logins.initializationPromise;
  let mk = (origin, formActionOrigin, httpRealm, user, pass, uf, pf) => {
    let li = Cc["@mozilla.org/login-manager/loginInfo;1"].createInstance(Ci.nsILoginInfo);
    li.init(origin, formActionOrigin, httpRealm, user, pass, uf, pf);
    return li;
  };
  await Services.logins.addLoginAsync(
    mk("https://accounts.example.com", "https://accounts.example.com", null,
       "alice@example.com", "s3cret-p\u00e4ss", "email", "pw"));
  await Services.logins.addLoginAsync(
    mk("https://intranet.example.org", null, "Intranet Realm", "bob", "hunter2", "", ""));
}

function setPrimary(pw) {
  /* Firefox 153 names the internal key token service this way; a new
   * key4.db has an empty password, which changePassword replaces. */
  let token = Cc["@mozilla.org/security/internalkeytoken;1"].getService(Ci.nsIPKCS11Token);
  token.changePassword("", pw);
}

let rc = pe_main(async () => {
  pe_useProfile(dir);
  /* key4.db is created by the browser's NSS when the profile is announced */
  if (primary) {
    setPrimary(primary);
  }
  await addBookmarks();
  await addVisits();
  await addLogins();
}, 90);
quit(rc);
