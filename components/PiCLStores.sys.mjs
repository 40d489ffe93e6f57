// SPDX-License-Identifier: MPL-2.0
/* PiCLStores.sys.mjs -- the live profile stores of PiCL inside Firefox: one store per collection (modules in stores/), their change observers and listeners. */

/*
 * Each store speaks Firefox Sync's record formats (docs/protocol.md)
 * and the semantics of components/stores/store.h, as async main-thread
 * functions (PiCLService.sys.mjs calls them around a sync that runs in its
 * ChromeWorker):
 *
 *   changes()            local changes since the last markSynced(): an array
 *                        of records and tombstones {id, deleted: true}, at
 *                        most one per id; remembers what it reported
 *   all()                every live record (no tombstones)
 *   apply(records)       writes incoming records and tombstones through the
 *                        browser's own APIs (PlacesUtils.bookmarks/history,
 *                        Services.logins), so Firefox keeps its invariants
 *                        (GUIDs, frecency, tags, login encryption); what it
 *                        writes is NOT reported as a local change.  Not one
 *                        transaction (the APIs do not offer one): on a
 *                        failure it throws after a partial write, and the
 *                        caller resets the sync state so the next sync
 *                        downloads everything again and converges.
 *   markSynced(records)  those records (as changes() reported them) are on
 *                        the server; a change made meanwhile stays pending
 *   reset()              forget sync state: the next changes() reports every
 *                        live record
 *   wipe()               delete every local record of the collection
 *
 * Each store lives in its own module under stores/ (BookmarksStore,
 * HistoryStore, PasswordsStore, FormsStore, PrefsStore, TabsStore; the
 * change tracker of history, passwords and forms in StoreTracker), which
 * says how it tracks changes.  This module makes one of each, starts and
 * stops their observers (Places events, passwordmgr-storage-changed,
 * satchel-storage-changed, sessionstore-state-write-complete) and tells
 * change listeners about local changes.  The tracker lives in
 * <profile>/picl/tracker.json.  stateDir: the C library's state directory
 * (PiCLService sets it; TabsStore reads this device's id there).
 *
 * Reading goes through Places' read-only connection
 * (PlacesUtils.promiseDBConnection: queries run off the main thread),
 * Services.logins, FormHistory and Services.prefs; writing only through
 * the public APIs.  Nothing here prints; errors are thrown as Error objects.
 */

import { BookmarksStore } from "./stores/BookmarksStore.sys.mjs";
import { FormsStore } from "./stores/FormsStore.sys.mjs";
import { HistoryStore } from "./stores/HistoryStore.sys.mjs";
import { PasswordsStore } from "./stores/PasswordsStore.sys.mjs";
import { PrefsStore } from "./stores/PrefsStore.sys.mjs";
import { Tracker } from "./stores/StoreTracker.sys.mjs";
import { TabsStore } from "./stores/TabsStore.sys.mjs";

export { guidToRecordId, recordIdToGuid } from "./stores/BookmarksStore.sys.mjs";

const lazy = {};
ChromeUtils.defineESModuleGetters(lazy, {
  PlacesUtils: "resource://gre/modules/PlacesUtils.sys.mjs",
});

export const COLLECTIONS = ["bookmarks", "history", "passwords"];
/* the other live stores (PiCLService.sync([]) syncs them too) */
export const EXTRA_COLLECTIONS = ["forms", "prefs", "tabs"];

class Stores {
  constructor() {
    this.tracker = new Tracker(["history", "passwords", "forms"]);
    this.bookmarks = new BookmarksStore(this);
    this.history = new HistoryStore(this);
    this.passwords = new PasswordsStore(this);
    this.forms = new FormsStore(this);
    this.prefs = new PrefsStore(this);
    this.tabs = new TabsStore(this);
    this.stateDir = null;
    this._ready = null;
    this._listeners = new Set();
    this._placesListener = null;
    this._loginObserver = null;
  }

  /* Loads the tracker and starts observing; idempotent.  Needs a profile. */
  init() {
    if (!this._ready) {
      this._ready = this._init();
    }
    return this._ready;
  }

  async _init() {
    await this.tracker.load();
    const PU = lazy.PlacesUtils;
    /* open Places now (its first use initialises the database on the main
     * thread), not in the middle of the first sync */
    await PU.promiseDBConnection();
    const SYNC = PU.bookmarks.SOURCES.SYNC;
    this._placesListener = events => {
      for (let e of events) {
        switch (e.type) {
          case "page-visited":
          case "page-title-changed":
            if (!this.history.applying.has(e.pageGuid)) {
              this.tracker.note("history", e.pageGuid, false);
              this._notify("history", e.pageGuid);
            }
            break;
          case "page-removed":
            if (e.isRemovedFromStore && !this.history.applying.has(e.pageGuid)) {
              this.tracker.note("history", e.pageGuid, true);
              this._notify("history", e.pageGuid);
            }
            break;
          case "bookmark-added":
          case "bookmark-removed":
          case "bookmark-moved":
          case "bookmark-title-changed":
          case "bookmark-url-changed":
          case "bookmark-tags-changed":
          case "bookmark-keyword-changed":
            /* Places counts the change itself (syncChangeCounter) */
            if (e.source != SYNC) {
              this._notify("bookmarks", e.guid);
            }
            break;
          default:
            break;
        }
      }
    };
    PU.observers.addListener(["page-visited", "page-title-changed", "page-removed",
                              "bookmark-added", "bookmark-removed", "bookmark-moved",
                              "bookmark-title-changed", "bookmark-url-changed",
                              "bookmark-tags-changed", "bookmark-keyword-changed"],
                             this._placesListener);
    this._loginObserver = {
      observe: (s, t, d) => {
        this.passwords.observe(s, t, d);
        if (!this.passwords.applying) {
          this._notify("passwords", "");
        }
      },
    };
    Services.obs.addObserver(this._loginObserver, "passwordmgr-storage-changed");
    this._formsObserver = {
      observe: (s, t, d) => {
        if (this.forms.observe(s, t, d)) {
          this._notify("forms", "");
        }
      },
    };
    Services.obs.addObserver(this._formsObserver, "satchel-storage-changed");
    /* SessionStore wrote the session: the open tabs may have changed */
    this._sessionObserver = { observe: () => this._notify("tabs", "") };
    Services.obs.addObserver(this._sessionObserver, "sessionstore-state-write-complete");
  }

  /* Stops observing and waits for the tracker file to be written. */
  async shutdown() {
    if (!this._ready) {
      return;
    }
    await this._ready;
    lazy.PlacesUtils.observers.removeListener(["page-visited", "page-title-changed", "page-removed",
                                               "bookmark-added", "bookmark-removed", "bookmark-moved",
                                               "bookmark-title-changed", "bookmark-url-changed",
                                               "bookmark-tags-changed", "bookmark-keyword-changed"],
                                              this._placesListener);
    Services.obs.removeObserver(this._loginObserver, "passwordmgr-storage-changed");
    Services.obs.removeObserver(this._formsObserver, "satchel-storage-changed");
    Services.obs.removeObserver(this._sessionObserver, "sessionstore-state-write-complete");
    await this.tracker._saving;
    this._ready = null;
  }

  /* The store of a collection, or null. */
  get(collection) {
    return COLLECTIONS.includes(collection) || EXTRA_COLLECTIONS.includes(collection) ? this[collection] : null;
  }

  /* fn(collection, id) is called after a local (not PiCL's own) change. */
  addChangeListener(fn) {
    this._listeners.add(fn);
  }
  removeChangeListener(fn) {
    this._listeners.delete(fn);
  }
  _notify(c, id) {
    for (let fn of this._listeners) {
      try {
        fn(c, id);
      } catch (e) {
        /* a listener's failure is its own */
      }
    }
  }
}

export const PiCLStores = new Stores();
