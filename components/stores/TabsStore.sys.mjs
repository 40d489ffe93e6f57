// SPDX-License-Identifier: MPL-2.0
/* TabsStore.sys.mjs -- PiCL's live tabs store: this browser's open tabs, from its session store, as the Firefox Sync tabs record of this device. */

/*
 * The store contract is PiCLStores.sys.mjs's.  One record, {id: this
 * device's id, clientName, tabs: [{title, urlHistory, icon, lastUsed}]}, the
 * same the C tabs store (components/stores/tabs.c, devices.h) makes from a
 * closed profile, by the same rules: only http(s) pages, the current page
 * first in urlHistory (at most URL_HISTORY_MAX), an icon only when it is an
 * http(s) URL, lastUsed in seconds, the most recently used tab first, as many
 * as fit in TABS_RECORD_MAX bytes of JSON.
 *
 * Where the tabs come from: with a browser window open, SessionStore's live
 * state (TabStateFlusher.flushWindow, then SessionStore.getBrowserState():
 * what it is about to write); without
 * one (xpcshell, a browser still starting), the session the browser last
 * wrote: the newer of sessionstore-backups/recovery.jsonlz4 and
 * sessionstore.jsonlz4, read with IOUtils (mozLz4).  A session file that
 * cannot be read is an error naming it: nothing is uploaded (fail closed).
 *
 * The device's id and name are the C library's, from <state>/devices.json
 * (devices.h; PiCLStores.stateDir); before the library made that file there
 * is no record yet.  Change tracking: the record is reported when it
 * differs from the one last uploaded (<profile>/picl/tabs-synced.json), or
 * when that is a week old (the server copy expires after 21 days).
 * Records of other devices are read from the server when listed
 * (PiCLService.getRemoteTabs); apply() changes nothing.
 */

const lazy = {};
ChromeUtils.defineESModuleGetters(lazy, {
  SessionStore: "resource:///modules/sessionstore/SessionStore.sys.mjs",
  TabStateFlusher: "resource:///modules/sessionstore/TabStateFlusher.sys.mjs",
});

/* devices.h: PICL_TABS_RECORD_MAX, PICL_URL_MAX, PICL_DEVICE_REFRESH_S */
export const TABS_RECORD_MAX = 180 * 1024;
const URL_MAX = 8192;
const URL_HISTORY_MAX = 25;
const REFRESH_MS = 7 * 86400 * 1000;
const SESSION_FILES = [["sessionstore.jsonlz4"], ["sessionstore-backups", "recovery.jsonlz4"]];

/* A session that cannot be read: PICL_ERROR_ENCODING (4), as in the C tabs store. */
function corrupt(message) {
  let e = new Error(message);
  e.result = 4;
  return e;
}

/* An http(s) URL of at most URL_MAX bytes without spaces or control characters. */
export function urlOk(url) {
  return typeof url == "string" && /^https?:\/\//i.test(url) && new TextEncoder().encode(url).length <= URL_MAX &&
         !/[\x00-\x20\x7f]/.test(url);
}

/* One session tab as a record tab, or null when its page is not http(s). */
function oneTab(tab) {
  let entries = tab && Array.isArray(tab.entries) ? tab.entries : [];
  if (!entries.length) {
    return null;
  }
  let index = Number.isInteger(tab.index) && tab.index >= 1 && tab.index <= entries.length ? tab.index
                                                                                          : entries.length;
  let cur = entries[index - 1] || {};
  if (!urlOk(cur.url)) {
    return null;
  }
  let urlHistory = [];
  for (let i = index - 1; i >= 0 && urlHistory.length < URL_HISTORY_MAX; i--) {
    let u = entries[i] && entries[i].url;
    if (urlOk(u)) {
      urlHistory.push(u);
    }
  }
  let icon = typeof tab.image == "string" && tab.image.length <= 2048 && tab.image.startsWith("http") ? tab.image
                                                                                                      : "";
  let last = Number(tab.lastAccessed);
  return { title: typeof cur.title == "string" ? cur.title : "", urlHistory, icon,
           lastUsed: last > 0 ? Math.floor(last / 1000) : 0 };
}

/* The open tabs of a session (SessionStore's state object): most recently
 * used first, trimmed so {id, clientName, tabs} stays within
 * TABS_RECORD_MAX.  Throws when it is not a session. */
export function tabsFromSession(session, id = "", clientName = "") {
  if (!session || typeof session != "object" || !Array.isArray(session.windows)) {
    throw new Error("not a session");
  }
  let tabs = [];
  for (let w of session.windows) {
    for (let t of (w && Array.isArray(w.tabs) ? w.tabs : [])) {
      let one = oneTab(t);
      if (one) {
        tabs.push(one);
      }
    }
  }
  tabs.sort((a, b) => b.lastUsed - a.lastUsed);
  let size = n => new TextEncoder().encode(JSON.stringify({ id, clientName, tabs: tabs.slice(0, n) })).length;
  let n = tabs.length;
  while (n > 0 && size(n) > TABS_RECORD_MAX) {
    n--;
  }
  return tabs.slice(0, n);
}

export class TabsStore {
  constructor(stores) {
    this.stores = stores;
    this.name = "tabs";
    this.reported = null;    /* the record changes() or all() last gave */
  }

  _syncedPath() {
    return PathUtils.join(PathUtils.profileDir, "picl", "tabs-synced.json");
  }

  /* {id, name} of this device from the library's device file, or null. */
  async _device() {
    let dir = this.stores.stateDir || PathUtils.join(PathUtils.profileDir, "picl", "state");
    let d;
    try {
      d = await IOUtils.readJSON(PathUtils.join(dir, "devices.json"));
    } catch (e) {
      return null;      /* not made yet: the first sync of clients makes it */
    }
    return d && typeof d.id == "string" && d.id ? { id: d.id, name: typeof d.name == "string" ? d.name : "" } : null;
  }

  /* The browser's session: live when a browser window is open, else the
   * newer session file (null when there is none). */
  async _session() {
    if (Services.wm.getMostRecentWindow("navigator:browser")) {
      /* the tabs' latest history first: SessionStore collects it from the
       * content processes after a while, a flush asks for it now */
      for (let win of Services.wm.getEnumerator("navigator:browser")) {
        await lazy.TabStateFlusher.flushWindow(win);
      }
      return JSON.parse(lazy.SessionStore.getBrowserState());
    }
    let newest = null;
    for (let parts of SESSION_FILES) {
      let path = PathUtils.join(PathUtils.profileDir, ...parts);
      let info = await IOUtils.stat(path).catch(() => null);
      if (info && info.type == "regular" && (!newest || info.lastModified > newest.at)) {
        newest = { path, at: info.lastModified };
      }
    }
    if (!newest) {
      return null;
    }
    try {
      return await IOUtils.readJSON(newest.path, { decompress: true });
    } catch (e) {
      throw corrupt("tabs: " + newest.path + " is corrupt (not a mozLz4 session store): no tabs uploaded");
    }
  }

  /* This device's tabs record, or null before the device file exists. */
  async _record() {
    let dev = await this._device();
    if (!dev) {
      return null;
    }
    let session = await this._session();
    let tabs = [];
    if (session) {
      try {
        tabs = tabsFromSession(session, dev.id, dev.name);
      } catch (e) {
        throw corrupt("tabs: the browser's session is not a session store (" + e.message + "): no tabs uploaded");
      }
    }
    return { id: dev.id, clientName: dev.name, tabs };
  }

  async _synced() {
    try {
      let s = await IOUtils.readJSON(this._syncedPath());
      return s && typeof s.text == "string" ? s : null;
    } catch (e) {
      return null;
    }
  }

  async changes() {
    let rec = await this._record();
    if (!rec) {
      return [];
    }
    this.reported = rec;
    let last = await this._synced();
    let fresh = last && last.text == JSON.stringify(rec) && Date.now() - last.at < REFRESH_MS;
    return fresh ? [] : [rec];
  }

  async all() {
    let rec = await this._record();
    this.reported = rec;
    return rec ? [rec] : [];
  }

  /* records: [{id}] now on the server; the one this device reported is
   * remembered as uploaded. */
  async markSynced(records) {
    let r = this.reported;
    if (r && records.some(x => x && x.id == r.id)) {
      await IOUtils.writeJSON(this._syncedPath(), { text: JSON.stringify(r), at: Date.now() },
                              { tmpPath: this._syncedPath() + ".tmp" });
    }
  }

  async reset() {
    await IOUtils.remove(this._syncedPath(), { ignoreAbsent: true });
  }

  async wipe() {
    await this.reset();
  }

  /* Other devices' tabs are not kept here. */
  async apply(records) {
    return records.length;
  }
}
