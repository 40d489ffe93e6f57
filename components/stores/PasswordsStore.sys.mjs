// SPDX-License-Identifier: MPL-2.0
/* PasswordsStore.sys.mjs -- PiCL's live passwords store: saved logins as Firefox Sync passwords records, through Services.logins and the login storage Firefox's own password sync uses. */

/*
 * The store contract is PiCLStores.sys.mjs's.  Change tracking: the
 * "passwordmgr-storage-changed" notifications (PiCLStores passes them to
 * observe()) feed the tracker (logins by GUID; a removal becomes a
 * tombstone), and Firefox's own sync bookkeeping in logins.json is read and
 * kept as its sync engine does (LoginManagerStorage): a deleted login that
 * was ever synced stays as a tombstone entry with syncCounter > 0 until
 * uploaded, also when deleted while PiCL was not loaded; markSynced()
 * resets the counters; incoming records are written fromSync (deletions
 * become tombstones with nothing to upload).  The login manager encrypts;
 * passwords never leave this module except as records to the caller.
 */


function loginToRecord(login) {
  login.QueryInterface(Ci.nsILoginMetaInfo);
  let rec = {
    id: login.guid,
    hostname: login.origin,
    username: login.username || "",
    password: login.password || "",
    usernameField: login.usernameField || "",
    passwordField: login.passwordField || "",
    timeCreated: login.timeCreated,
    timePasswordChanged: login.timePasswordChanged,
    timeLastUsed: login.timeLastUsed,
    timesUsed: login.timesUsed,
  };
  if (login.formActionOrigin !== null && login.formActionOrigin !== undefined) {
    rec.formSubmitURL = login.formActionOrigin;
  }
  if (login.httpRealm !== null && login.httpRealm !== undefined) {
    rec.httpRealm = login.httpRealm;
  }
  return rec;
}

function recordToLogin(r) {
  if (typeof r.hostname != "string" || !r.hostname || typeof r.password != "string" || !r.password) {
    throw new Error("passwords: record " + r.id + " needs hostname and password");
  }
  let hasForm = typeof r.formSubmitURL == "string";
  let hasRealm = typeof r.httpRealm == "string" && r.httpRealm;
  if (!hasForm && !hasRealm) {
    throw new Error("passwords: record " + r.id + " has neither formSubmitURL nor httpRealm");
  }
  let login = Cc["@mozilla.org/login-manager/loginInfo;1"].createInstance(Ci.nsILoginInfo);
  login.init(r.hostname, hasRealm ? null : r.formSubmitURL, hasRealm ? r.httpRealm : null,
             typeof r.username == "string" ? r.username : "", r.password,
             typeof r.usernameField == "string" ? r.usernameField : "",
             typeof r.passwordField == "string" ? r.passwordField : "");
  login.QueryInterface(Ci.nsILoginMetaInfo);
  login.guid = r.id;
  for (let k of ["timeCreated", "timePasswordChanged", "timeLastUsed", "timesUsed"]) {
    if (Number.isFinite(r[k]) && r[k] > 0) {
      login[k] = r[k];
    }
  }
  return login;
}

/* The login storage Firefox's own password sync uses (services-sync's
 * passwords engine): it sees the tombstones Firefox keeps for deleted logins
 * that were ever synced ({guid, deleted, syncCounter > 0 until uploaded}) and
 * takes sync's writes (fromSync: no change counted). */
function loginStorage() {
  const { LoginManagerStorage } = ChromeUtils.importESModule("resource://passwordmgr/passwordstorage.sys.mjs");
  return LoginManagerStorage.create();
}

export class PasswordsStore {
  constructor(stores) {
    this.stores = stores;
    this.name = "passwords";
    this.snap = null;
    this.counters = null;    /* guid -> Firefox's syncCounter when changes() read it */
    /* logins apply() wrote while the tracker is reset: they are what the
     * server has, so a reset does not report them again (a stale "change"
     * would win over a deletion made elsewhere meanwhile) */
    this.appliedSinceReset = null;   /* a Set once loaded (<profile>/picl/passwords-applied.json) */
    this.applying = false;
  }

  _appliedPath() {
    return PathUtils.join(PathUtils.profileDir, "picl", "passwords-applied.json");
  }

  async _loadApplied() {
    if (!this.appliedSinceReset) {
      let ids = [];
      try {
        ids = await IOUtils.readJSON(this._appliedPath());
      } catch (e) {
        ids = [];      /* none yet, or unreadable: report everything, as reset says */
      }
      this.appliedSinceReset = new Set(Array.isArray(ids) ? ids.filter(x => typeof x == "string") : []);
    }
    return this.appliedSinceReset;
  }

  async _saveApplied() {
    let path = this._appliedPath();
    if (!this.appliedSinceReset || !this.appliedSinceReset.size) {
      await IOUtils.remove(path, { ignoreAbsent: true });
      return;
    }
    await IOUtils.writeJSON(path, Array.from(this.appliedSinceReset), { tmpPath: path + ".tmp" });
  }

  async _liveMap() {
    await Services.logins.initializationPromise;
    let map = new Map();
    for (let l of await Services.logins.getAllLogins()) {
      let rec = loginToRecord(l);
      map.set(rec.id, rec);
    }
    return map;
  }

  /* Live logins as records, and Firefox's sync counters (tombstones too). */
  async _scan() {
    await Services.logins.initializationPromise;
    let storage = loginStorage();
    let live = new Map();
    let counters = new Map();
    let deleted = new Set();
    for (let l of await storage.getAllLogins(true)) {
      l.QueryInterface(Ci.nsILoginMetaInfo);
      counters.set(l.guid, l.syncCounter);
      if (await storage.loginIsDeletedAsync(l.guid)) {
        deleted.add(l.guid);
      } else {
        let rec = loginToRecord(l);
        live.set(rec.id, rec);
      }
    }
    return { live, counters, deleted };
  }

  async changes() {
    let snap = this.stores.tracker.snapshot("passwords");
    let { live, counters, deleted } = await this._scan();
    let ids = new Set();
    if (snap.reset) {
      let applied = await this._loadApplied();
      for (let id of live.keys()) {
        if (!applied.has(id)) {
          ids.add(id);
        }
      }
    }
    for (let id of Object.keys(snap.changed)) {
      ids.add(id);
    }
    /* deleted in Firefox and not uploaded yet, seen by us or not (the
     * deletion may predate this session) */
    for (let id of deleted) {
      if (counters.get(id) > 0) {
        ids.add(id);
      }
    }
    let out = [];
    for (let id of ids) {
      out.push(live.has(id) ? live.get(id) : { id, deleted: true });
    }
    this.snap = snap;
    this.counters = counters;
    return out;
  }

  async all() {
    return Array.from((await this._liveMap()).values());
  }

  async markSynced(records) {
    if (!this.snap) {
      return;
    }
    /* as Firefox's sync after an upload: the counted changes are done
     * (a tombstone stays, with syncCounter 0; everSynced is set) */
    let storage = loginStorage();
    for (let r of records) {
      let counter = this.counters ? this.counters.get(r.id) : 0;
      if (counter > 0) {
        await storage.resetSyncCounter(r.id, counter);
      }
    }
    await this.stores.tracker.clear("passwords", this.snap, records.map(r => r.id));
    if (!this.stores.tracker.snapshot("passwords").reset && (await this._loadApplied()).size) {
      this.appliedSinceReset.clear();
      await this._saveApplied();
    }
  }

  /* Keeps the snapshot: the service resets before it marks what that
   * snapshot reported (the engine's reset came before its changes()). */
  async reset() {
    this.appliedSinceReset = new Set();
    await this._saveApplied();
    await this.stores.tracker.reset("passwords");
  }

  async wipe() {
    this.snap = null;
    this.appliedSinceReset = new Set();
    await this._saveApplied();
    await Services.logins.initializationPromise;
    this.applying = true;
    try {
      /* fully: no tombstones, which would delete the logins everywhere */
      await loginStorage().removeAllUserFacingLoginsAsync(true);
    } finally {
      this.applying = false;
    }
    await this.stores.tracker.reset("passwords");
  }

  async _byGuid(guid) {
    let found = await Services.logins.searchLoginsAsync({ guid });
    return found.length ? found[0] : null;
  }

  /* Adds, modifies (by GUID, or the same origin/realm/username under another
   * GUID) and removes logins; the login manager encrypts them. */
  async apply(records) {
    await Services.logins.initializationPromise;
    let storage = loginStorage();
    /* validate everything before the first write */
    let work = records.map(r => {
      if (!r || typeof r.id != "string" || !r.id) {
        throw new Error("passwords: a record without an id");
      }
      return r.deleted ? { r } : { r, login: recordToLogin(r) };
    });
    let applied = await this._loadApplied();
    if (this.stores.tracker.snapshot("passwords").reset) {
      for (let { r } of work) {
        applied.add(r.id);
      }
      await this._saveApplied();
    }
    this.applying = true;
    try {
      for (let { r, login } of work) {
        let cur = await this._byGuid(r.id);
        if (!login) {
          if (cur) {
            /* as Firefox's sync deletes: a tombstone with nothing to upload */
            await storage.removeLoginAsync(cur, true);
          }
          continue;
        }
        /* a login that came from sync: its later deletion is kept as a tombstone */
        login.everSynced = true;
        if (!cur) {
          let same = await Services.logins.searchLoginsAsync({
            origin: login.origin,
            formActionOrigin: login.formActionOrigin,
            httpRealm: login.httpRealm,
          });
          cur = same.find(l => l.username == login.username) || null;
        }
        if (cur) {
          await storage.modifyLoginAsync(cur, login, true);
        } else {
          await Services.logins.addLogins([login]);
        }
      }
    } finally {
      this.applying = false;
    }
    return records.length;
  }

  /* passwordmgr-storage-changed: subject is the login (add/remove), an
   * nsIArray [old, new] (modify) or of removed logins (removeAll*). */
  observe(subject, topic, data) {
    if (this.applying) {
      return;
    }
    let note = (l, deleted) => {
      try {
        l.QueryInterface(Ci.nsILoginMetaInfo);
        this.stores.tracker.note("passwords", l.guid, deleted);
      } catch (e) {
        /* not a login: ignore */
      }
    };
    let arr = () => {
      let out = [];
      try {
        let a = subject.QueryInterface(Ci.nsIArray);
        for (let i = 0; i < a.length; i++) {
          out.push(a.queryElementAt(i, Ci.nsILoginInfo));
        }
      } catch (e) {
        /* not an array */
      }
      return out;
    };
    switch (data) {
      case "addLogin":
        note(subject, false);
        break;
      case "modifyLogin": {
        let [oldL, newL] = arr();
        if (oldL && newL) {
          oldL.QueryInterface(Ci.nsILoginMetaInfo);
          newL.QueryInterface(Ci.nsILoginMetaInfo);
          if (oldL.guid != newL.guid) {
            note(oldL, true);
          }
          note(newL, false);
        }
        break;
      }
      case "removeLogin":
        note(subject, true);
        break;
      case "removeAllLogins":
        for (let l of arr()) {
          note(l, true);
        }
        break;
      default:
        break;
    }
  }
}
