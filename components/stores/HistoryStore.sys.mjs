// SPDX-License-Identifier: MPL-2.0
/* HistoryStore.sys.mjs -- PiCL's live history store: Places pages and visits as Firefox Sync history records, written through PlacesUtils.history. */

/*
 * The store contract is PiCLStores.sys.mjs's.  Change tracking: the
 * PlacesUtils.observers events page-visited, page-title-changed and
 * page-removed (PiCLStores listens) feed the tracker with page GUIDs;
 * pages apply() is writing are in this.applying and not noted.  all() is
 * the HISTORY_ALL_MAX most recently visited pages; a record holds at most
 * HISTORY_VISITS_MAX visits, newest first.
 */

const lazy = {};
ChromeUtils.defineESModuleGetters(lazy, {
  PlacesUtils: "resource://gre/modules/PlacesUtils.sys.mjs",
  PlacesSyncUtils: "resource://gre/modules/PlacesSyncUtils.sys.mjs",
});

/* At most this many pages in all() (the most recently visited), and at
 * most this many visits per history record (Firefox Sync's 20). */
const HISTORY_ALL_MAX = 5000;
const HISTORY_VISITS_MAX = 20;
/* Valid Places transition types (nsINavHistoryService.TRANSITION_*). */
const TRANSITIONS = new Set([1, 2, 3, 4, 5, 6, 7, 8, 9]);

function sqlPlaceholders(n) {
  return new Array(n).fill("?").join(",");
}

/* Runs fn over ids in chunks small enough for SQLite's variable limit. */
async function inChunks(ids, fn, size = 500) {
  let out = [];
  for (let i = 0; i < ids.length; i += size) {
    let part = await fn(ids.slice(i, i + size));
    if (part) {
      out.push(...part);
    }
  }
  return out;
}


export class HistoryStore {
  constructor(stores) {
    this.stores = stores;
    this.name = "history";
    this.snap = null;
    this.applying = new Set();   /* page GUIDs being written by apply() */
  }

  /* records for the given page GUIDs (those that still have visits) */
  async _read(guids) {
    let db = await lazy.PlacesUtils.promiseDBConnection();
    let out = await inChunks(guids, async part => {
      let rows = await db.execute(
        `SELECT h.guid, h.url, h.title, v.visit_date, v.visit_type
           FROM moz_places h JOIN moz_historyvisits v ON v.place_id = h.id
          WHERE h.guid IN (${sqlPlaceholders(part.length)})
          ORDER BY h.id, v.visit_date DESC`, part);
      return rows;
    });
    return this._rowsToRecords(out);
  }

  _rowsToRecords(rows) {
    let byGuid = new Map();
    for (let r of rows) {
      let guid = r.getResultByName("guid");
      let rec = byGuid.get(guid);
      if (!rec) {
        rec = { id: guid, histUri: r.getResultByName("url"),
                title: r.getResultByName("title") || "", visits: [] };
        byGuid.set(guid, rec);
      }
      if (rec.visits.length < HISTORY_VISITS_MAX) {
        rec.visits.push({ date: r.getResultByName("visit_date"), type: r.getResultByName("visit_type") });
      }
    }
    return byGuid;
  }

  async changes() {
    let snap = this.stores.tracker.snapshot("history");
    let out = [];
    let live;
    if (snap.reset) {
      live = await this._allMap();
      for (let id of Object.keys(snap.changed)) {
        if (!live.has(id) && !snap.changed[id].deleted) {
          delete snap.changed[id];
        }
      }
    } else {
      live = await this._read(Object.keys(snap.changed));
    }
    let ids = new Set(live.keys());
    for (let id of Object.keys(snap.changed)) {
      ids.add(id);
    }
    for (let id of ids) {
      if (live.has(id)) {
        out.push(live.get(id));
      } else {
        out.push({ id, deleted: true });
      }
    }
    this.snap = snap;
    return out;
  }

  async _allMap() {
    let db = await lazy.PlacesUtils.promiseDBConnection();
    let rows = await db.execute(
      `WITH recent AS (SELECT id FROM moz_places WHERE last_visit_date NOT NULL AND hidden = 0
                        ORDER BY last_visit_date DESC LIMIT ${HISTORY_ALL_MAX})
       SELECT h.guid, h.url, h.title, v.visit_date, v.visit_type
         FROM recent r JOIN moz_places h ON h.id = r.id
         JOIN moz_historyvisits v ON v.place_id = h.id
        ORDER BY h.id, v.visit_date DESC`);
    return this._rowsToRecords(rows);
  }

  async all() {
    return Array.from((await this._allMap()).values());
  }

  async markSynced(records) {
    if (!this.snap) {
      return;
    }
    await this.stores.tracker.clear("history", this.snap, records.map(r => r.id));
  }

  async reset() {
    this.snap = null;
    await this.stores.tracker.reset("history");
  }

  async wipe() {
    this.snap = null;
    await lazy.PlacesUtils.history.clear();
    await this.stores.tracker.reset("history");
  }

  /* Adds the visits we do not have (same date to the millisecond and type),
   * keeps the incoming GUID for a URL, removes tombstoned pages. */
  async apply(records) {
    const PU = lazy.PlacesUtils;
    let removals = [];
    let pages = [];
    for (let r of records) {
      if (!r || typeof r.id != "string" || !r.id) {
        throw new Error("history: a record without an id");
      }
      if (r.deleted) {
        removals.push(r.id);
        continue;
      }
      if (typeof r.histUri != "string" || !Array.isArray(r.visits)) {
        throw new Error("history: record " + r.id + " has no histUri or visits");
      }
      pages.push(r);
    }
    let db = await PU.promiseDBConnection();
    let errors = [];
    let infos = [];
    for (let r of pages) {
      let url;
      try {
        url = new URL(r.histUri);
      } catch (e) {
        errors.push(r.id + ": bad URL");
        continue;
      }
      this.applying.add(r.id);
      let rows = await db.execute(
        `SELECT h.guid, v.visit_date, v.visit_type FROM moz_places h
           LEFT JOIN moz_historyvisits v ON v.place_id = h.id
          WHERE h.url_hash = hash(:url) AND h.url = :url`, { url: url.href });
      let have = new Set();
      let localGuid = null;
      for (let row of rows) {
        localGuid = row.getResultByName("guid");
        let d = row.getResultByName("visit_date");
        if (d !== null) {
          have.add(Math.floor(d / 1000) + ":" + row.getResultByName("visit_type"));
        }
      }
      if (localGuid && localGuid != r.id) {
        this.applying.add(localGuid);
        await lazy.PlacesSyncUtils.history.changeGuid(url, r.id);
      }
      let visits = [];
      for (let v of r.visits) {
        if (!v || !Number.isFinite(v.date) || !TRANSITIONS.has(v.type)) {
          continue;
        }
        let key = Math.floor(v.date / 1000) + ":" + v.type;
        if (have.has(key)) {
          continue;
        }
        have.add(key);
        visits.push({ date: lazy.PlacesSyncUtils.history.clampVisitDate(new Date(Math.floor(v.date / 1000))),
                      transition: v.type });
      }
      if (visits.length) {
        let info = { guid: r.id, url, visits };
        if (typeof r.title == "string" && r.title) {
          info.title = r.title;
        }
        infos.push(info);
      }
    }
    try {
      if (infos.length) {
        await PU.history.insertMany(infos, null, res => errors.push(res.guid + ": " + res.url));
      }
      for (let id of removals) {
        this.applying.add(id);
      }
      if (removals.length) {
        let present = await this._read(removals);
        if (present.size) {
          await PU.history.remove(Array.from(present.keys()));
        }
      }
    } finally {
      /* observer notifications of these writes arrive on later ticks */
      let done = new Set(this.applying);
      Services.tm.dispatchToMainThread(() => {
        for (let id of done) {
          this.applying.delete(id);
        }
      });
    }
    if (errors.length) {
      throw new Error("history: could not apply " + errors.length + " record(s): " + errors.slice(0, 3).join(", "));
    }
    return records.length;
  }
}
