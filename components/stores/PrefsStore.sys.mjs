// SPDX-License-Identifier: MPL-2.0
/* PrefsStore.sys.mjs -- PiCL's live preferences store: one Firefox Sync prefs record of the preferences Firefox itself syncs, through Services.prefs. */

/*
 * The store contract is PiCLStores.sys.mjs's.  The record is {id: PREFS_ID,
 * value: {name: value, or null for "at its default"}} of the preferences
 * whose services.sync.prefs.sync.<name> control pref is true (Firefox's own
 * allow-list), never one naming a path, server, URL, password or a control
 * pref.  What was last synced is kept in <profile>/picl/prefs-synced.json.
 * Incoming names off the list, and values of another type than the local
 * one, are refused and never set (observer topic "picl:prefs:refused",
 * data = JSON [{name, reason}]).
 */

const PREFS_ID = "ZWM4MDMwZjctYzIwYS00NjRmLTliMGUtMTNhM2E5ZTk3Mzg0";
const PREF_CONTROL = "services.sync.prefs.sync.";
const PREF_DENIED = /path|dir|server|url|uri|password|proxy|homepage|endpoint|token|cert|pinned|^services\.sync\./i;

export function prefAllowed(name) {
  let bare = name.startsWith("browser.urlbar.") ? name.slice(15) : name;
  if (PREF_DENIED.test(bare)) {
    return false;
  }
  return Services.prefs.getBoolPref(PREF_CONTROL + name, false);
}

export class PrefsStore {
  constructor(stores) {
    this.stores = stores;
    this.synced = null;
    this.reported = null;    /* the record changes() or all() last gave */
  }

  _path() {
    return PathUtils.join(PathUtils.profileDir, "picl", "prefs-synced.json");
  }

  _record() {
    let value = {};
    for (let ctl of Services.prefs.getChildList(PREF_CONTROL)) {
      let name = ctl.slice(PREF_CONTROL.length);
      if (!prefAllowed(name)) {
        continue;
      }
      let t = Services.prefs.getPrefType(name);
      value[name] = !Services.prefs.prefHasUserValue(name) ? null
        : t == Ci.nsIPrefBranch.PREF_BOOL ? Services.prefs.getBoolPref(name)
        : t == Ci.nsIPrefBranch.PREF_INT ? Services.prefs.getIntPref(name)
        : Services.prefs.getStringPref(name);
    }
    let sorted = {};
    for (let k of Object.keys(value).sort()) {
      sorted[k] = value[k];
    }
    return { id: PREFS_ID, value: sorted };
  }

  async _base() {
    try {
      return await IOUtils.readUTF8(this._path());
    } catch (e) {
      return "";
    }
  }

  async _save(rec) {
    await IOUtils.writeUTF8(this._path(), rec ? JSON.stringify(rec) : "", { tmpPath: this._path() + ".tmp" });
  }

  async changes() {
    let rec = this._record();
    this.reported = rec;
    return JSON.stringify(rec) == (await this._base()) ? [] : [rec];
  }

  async all() {
    this.reported = this._record();
    return [this.reported];
  }

  /* records: [{id}] now on the server (the worker passes ids only): the
   * record changes() or all() reported is what went up, kept as the base
   * when the preferences still hold those values (else the change made
   * meanwhile stays pending). */
  async markSynced(records) {
    let r = this.reported;
    if (r && records.some(x => x && x.id == PREFS_ID) && JSON.stringify(this._record()) == JSON.stringify(r)) {
      await this._save(r);
    }
  }

  async reset() {
    await this._save(null);
  }

  async wipe() {
    await this._save(null);
  }

  async apply(records) {
    let refused = [];
    for (let r of records) {
      if (!r || r.id != PREFS_ID || r.deleted) {
        continue;
      }
      if (!r.value || typeof r.value != "object") {
        refused.push({ name: "", reason: "a prefs record without a value object" });
        continue;
      }
      for (let [name, v] of Object.entries(r.value)) {
        if (!prefAllowed(name)) {
          refused.push({ name, reason: "not a preference Firefox syncs (not on the allow-list): not applied" });
          continue;
        }
        let t = Services.prefs.getPrefType(name);
        if (v === null) {
          Services.prefs.clearUserPref(name);
        } else if (typeof v == "boolean" && (t == Ci.nsIPrefBranch.PREF_BOOL || t == Ci.nsIPrefBranch.PREF_INVALID)) {
          Services.prefs.setBoolPref(name, v);
        } else if (Number.isInteger(v) && (t == Ci.nsIPrefBranch.PREF_INT || t == Ci.nsIPrefBranch.PREF_INVALID)) {
          Services.prefs.setIntPref(name, v);
        } else if (typeof v == "string" && v.length <= 4096 &&
                   (t == Ci.nsIPrefBranch.PREF_STRING || t == Ci.nsIPrefBranch.PREF_INVALID)) {
          Services.prefs.setStringPref(name, v);
        } else {
          refused.push({ name, reason: "a value of another type than the local one: not applied" });
        }
      }
      await this._save(r);
    }
    if (refused.length) {
      Services.obs.notifyObservers(null, "picl:prefs:refused", JSON.stringify(refused));
    }
  }
}
