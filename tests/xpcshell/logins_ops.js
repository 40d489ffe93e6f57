// SPDX-License-Identifier: MPL-2.0
/* logins_ops.js -- picl_ops for the login deletion tests (test_logins_deleted.js
 * and its peer): delete a saved login as the user does, and read logins.json
 * the way Firefox's own password sync reads it, tombstones included. */
"use strict";

/* Services.logins.removeLoginAsync on the login with this GUID (the user
 * deleting it in about:logins); resolves to the GUID. */
picl_ops.removeLogin = async function ({ guid }) {
  await Services.logins.initializationPromise;
  let [l] = await Services.logins.searchLoginsAsync({ guid });
  if (!l) {
    throw new Error("no saved login " + guid);
  }
  await Services.logins.removeLoginAsync(l);
  return guid;
};

/* {guid: {deleted, syncCounter, everSynced}} for every entry of logins.json,
 * as services-sync's passwords engine sees them (LoginManagerStorage). */
picl_ops.loginsSync = async function () {
  await Services.logins.initializationPromise;
  const { LoginManagerStorage } = ChromeUtils.importESModule("resource://passwordmgr/passwordstorage.sys.mjs");
  let storage = LoginManagerStorage.create();
  let out = {};
  for (let l of await storage.getAllLogins(true)) {
    l.QueryInterface(Ci.nsILoginMetaInfo);
    out[l.guid] = { deleted: await storage.loginIsDeletedAsync(l.guid), syncCounter: l.syncCounter,
                    everSynced: l.everSynced };
  }
  return out;
};
