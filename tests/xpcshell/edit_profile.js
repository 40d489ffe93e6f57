// SPDX-License-Identifier: MPL-2.0
/* edit_profile.js -- what a user does in the browser between two syncs, made
 * through the browser's own APIs: a new bookmark, a renamed one, a moved one,
 * a deleted one, a changed password, new visits.  ROUND (1 or 2) picks one of
 * two different sets of edits, so both devices can be edited in turn.
 * Run: firefox-esr --xpcshell -g GRE -a GRE/browser edit_profile.js DIR [ROUND]
 * (tests/make-profile.sh --edit DIR [ROUND]).  Exit 0 on success.
 * `edit_profile.js DIR remove-login USERNAME` instead only deletes the saved
 * logins of USERNAME, as the user does in about:logins
 * (Services.logins.removeLoginAsync); none found is a failure. */
"use strict";
{
  let env = __LOCATION__.parent;
  env.append("profile_env.js");
  load(env.path);
}

const dir = arguments[0];
const round = arguments[1] == "2" ? 2 : 1;
const T1 = Date.UTC(2024, 5, round, 12, 0, 0);
const E = round == 1
  ? { add: "bmkAdded0001", title: "Added later", rename: "bmkExample01", move: "bmkMDN000001",
      remove: "bmkToolbar01", page: "https://new-page.example/x", user: "bob", pw: "new-hunter3" }
  : { add: "bmkAdded0002", title: "Added on the other device", rename: "bmkFirefox01",
      move: "bmkAdded0001", remove: "bmkUnfiled01", page: "https://second.example/y",
      user: "alice@example.com", pw: "changed-again" };

async function removeLogins(user) {
  await Services.logins.initializationPromise;
  let gone = (await Services.logins.getAllLogins()).filter(l => l.username == user);
  if (!gone.length) {
    throw new Error("no saved login of " + user);
  }
  for (let l of gone) {
    await Services.logins.removeLoginAsync(l);
  }
}

let rc = arguments[1] == "remove-login" ? pe_main(async () => {
  pe_useProfile(dir);
  await removeLogins(arguments[2]);
}, 60) : pe_main(async () => {
  pe_useProfile(dir);
  const PU = PlacesUtils;
  await PU.bookmarks.insert({
    parentGuid: PU.bookmarks.toolbarGuid, url: "https://edited.example/" + round, title: E.title,
    guid: E.add, dateAdded: new Date(T1),
  });
  await PU.bookmarks.update({ guid: E.rename, title: "Renamed in round " + round });
  await PU.bookmarks.update({ guid: E.move, parentGuid: PU.bookmarks.unfiledGuid, index: 0 });
  await PU.bookmarks.remove(E.remove);
  await PU.history.insertMany([
    { url: "https://example.com/", title: "Example",
      visits: [{ date: new Date(T1 + 1000), transition: PU.history.TRANSITIONS.LINK }] },
    { url: E.page, title: "New page " + round,
      visits: [{ date: new Date(T1 + 2000), transition: PU.history.TRANSITIONS.TYPED }] },
  ]);
  await Services.logins.initializationPromise;
  let all = await Services.logins.getAllLogins();
  let login = all.find(l => l.username == E.user);
  let changed = login.clone();
  changed.password = E.pw;
  await Services.logins.modifyLoginAsync(login, changed);
}, 90);
quit(rc);
