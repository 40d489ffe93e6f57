/* PiCLStores.sys.mjs -- the live profile stores of PiCL inside Firefox: bookmarks and history through PlacesUtils, passwords through Services.logins. */

/*
 * Each store speaks the record formats of shared/spec/records.md section 3
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
 * Change tracking:
 *   bookmarks  Places' own per-item syncChangeCounter and tombstone table
 *              (read as PlacesSyncUtils.bookmarks.pullChanges would, cleared
 *              with PlacesSyncUtils.bookmarks.pushChanges), so an
 *              edit made while PiCL was not loaded is still seen; incoming
 *              records are written with SOURCES.SYNC, which does not count.
 *   history    PlacesUtils.observers (page-visited, page-title-changed,
 *              page-removed) feed a tracker of changed page GUIDs.
 *   passwords  the "passwordmgr-storage-changed" notifications feed the same
 *              tracker (logins by GUID; a removal becomes a tombstone), and
 *              Firefox's own sync bookkeeping in logins.json is read and kept
 *              as its sync engine does (LoginManagerStorage): a deleted login
 *              that was ever synced stays as a tombstone entry with
 *              syncCounter > 0 until uploaded, also when deleted while PiCL
 *              was not loaded; markSynced() resets the counters; incoming
 *              records are written fromSync (deletions become tombstones
 *              with nothing to upload).
 *   forms      the "satchel-storage-changed" notifications of FormHistory
 *              (formhistory-add/-update/-remove, by entry GUID) feed the
 *              tracker; records {id: guid, name: fieldname, value}; incoming
 *              ones are written with FormHistory.update.  A live collection
 *              when named (EXTRA_COLLECTIONS), not synced by default.
 *   prefs      one record {id, value: {name: value or null}} of the
 *              preferences whose services.sync.prefs.sync.<name> control pref
 *              is true (Firefox's own allow-list), never one naming a path,
 *              server, URL, password or a control pref; what was last synced
 *              is kept in <profile>/picl/prefs-synced.json.  Names off the
 *              list or values of another type are refused (observer topic
 *              "picl:prefs:refused", data = JSON [{name, reason}]).
 *   The tracker lives in <profile>/picl/tracker.json.  A collection the
 *   tracker has never seen starts "reset" (everything is a change), so a
 *   first sync uploads the whole local store.
 *
 * Reading goes through Places' read-only connection
 * (PlacesUtils.promiseDBConnection: queries run off the main thread) and
 * Services.logins; writing only through the public APIs.
 * Nothing here prints; errors are thrown as Error objects.
 */

const lazy = {};
ChromeUtils.defineESModuleGetters(lazy, {
  PlacesUtils: "resource://gre/modules/PlacesUtils.sys.mjs",
  PlacesSyncUtils: "resource://gre/modules/PlacesSyncUtils.sys.mjs",
  FormHistory: "resource://gre/modules/FormHistory.sys.mjs",
});

export const COLLECTIONS = ["bookmarks", "history", "passwords"];
/* live stores synced only when named */
export const EXTRA_COLLECTIONS = ["forms", "prefs"];

/* Places root GUIDs <-> Sync record ids (records.md section 3). */
const ROOT_GUID_TO_ID = {
  "menu________": "menu",
  "toolbar_____": "toolbar",
  "unfiled_____": "unfiled",
  "mobile______": "mobile",
  "root________": "places",
};
const ROOT_ID_TO_GUID = {};
for (let [g, i] of Object.entries(ROOT_GUID_TO_ID)) {
  ROOT_ID_TO_GUID[i] = g;
}
const SYNCED_ROOTS = ["menu________", "toolbar_____", "unfiled_____", "mobile______"];

export function guidToRecordId(guid) {
  return ROOT_GUID_TO_ID[guid] || guid;
}
export function recordIdToGuid(id) {
  return ROOT_ID_TO_GUID[id] || id;
}

/* At most this many pages in history's all() (the most recently visited),
 * and at most this many visits per history record (records.md: 20). */
const HISTORY_ALL_MAX = 5000;
const HISTORY_VISITS_MAX = 20;
/* New bookmarks are inserted this many at a time (one insertTree each). */
const APPLY_SLICE = 200;
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

/* ------------------------------------------------------------------------
 * The tracker: changed ids per collection with a sequence number each, so
 * markSynced() clears only what was reported (a later change has a larger
 * number), plus a "reset" flag per collection.
 * ---------------------------------------------------------------------- */
class Tracker {
  constructor() {
    this.seq = 0;
    this.data = {};          /* collection -> { reset: bool, changed: {id: {seq, deleted}} } */
    this.path = null;
    this._saving = Promise.resolve();
  }

  async load() {
    let dir = PathUtils.join(PathUtils.profileDir, "picl");
    await IOUtils.makeDirectory(dir, { permissions: 0o700 });
    this.path = PathUtils.join(dir, "tracker.json");
    let saved = null;
    try {
      saved = await IOUtils.readJSON(this.path);
    } catch (e) {
      saved = null;    /* missing or unreadable: every collection starts reset */
    }
    this.data = {};
    this.seq = (saved && Number.isInteger(saved.seq)) ? saved.seq : 0;
    for (let c of ["history", "passwords", "forms"]) {
      let d = saved && saved.collections && saved.collections[c];
      if (d && typeof d.changed == "object" && d.changed) {
        this.data[c] = { reset: !!d.reset, changed: d.changed };
      } else {
        this.data[c] = { reset: true, changed: {} };
      }
    }
  }

  /* Writes the tracker atomically; writes are serialised. */
  save() {
    let text = JSON.stringify({ seq: this.seq, collections: this.data });
    let path = this.path;
    this._saving = this._saving.then(() => path &&
      IOUtils.writeUTF8(path, text, { tmpPath: path + ".tmp" })).catch(() => {});
    return this._saving;
  }

  note(collection, id, deleted) {
    let d = this.data[collection];
    if (!d || !id) {
      return;
    }
    d.changed[id] = { seq: ++this.seq, deleted: !!deleted };
    this.save();
  }

  /* What changes() reports: { reset, ids: {id: {seq, deleted}}, seq } (a copy). */
  snapshot(collection) {
    let d = this.data[collection];
    return { reset: d.reset, changed: Object.assign({}, d.changed), seq: this.seq };
  }

  /* Clears the ids of records that were reported in snap and not changed since. */
  clear(collection, snap, ids) {
    let d = this.data[collection];
    for (let id of ids) {
      let was = snap.changed[id];
      let now = d.changed[id];
      if (now && (!was || now.seq <= was.seq) && now.seq <= snap.seq) {
        delete d.changed[id];
      }
    }
    if (snap.reset) {
      d.reset = false;
    }
    return this.save();
  }

  reset(collection) {
    let d = this.data[collection];
    d.reset = true;
    /* keep pending tombstones: a deletion must still reach the server */
    for (let id of Object.keys(d.changed)) {
      if (!d.changed[id].deleted) {
        delete d.changed[id];
      }
    }
    return this.save();
  }
}

/* ------------------------------------------------------------------------
 * Bookmarks
 * ---------------------------------------------------------------------- */

const BOOKMARKS_SQL = `
  WITH RECURSIVE synced(id) AS (
    SELECT b.id FROM moz_bookmarks b
     WHERE b.guid IN ('menu________', 'toolbar_____', 'unfiled_____', 'mobile______')
    UNION ALL
    SELECT b.id FROM moz_bookmarks b JOIN synced s ON b.parent = s.id
  )
  SELECT b.guid, b.type, b.fk, b.title, b.dateAdded, b.position,
         p.guid AS parentGuid, p.title AS parentTitle, h.url, k.keyword, b.syncChangeCounter
    FROM synced s
    JOIN moz_bookmarks b ON b.id = s.id
    JOIN moz_bookmarks p ON p.id = b.parent
    LEFT JOIN moz_places h ON h.id = b.fk
    LEFT JOIN moz_keywords k ON k.place_id = b.fk
   ORDER BY b.parent, b.position`;

/* Places' bookmark tombstones (kept until pushChanges clears them). */
const TOMBSTONES_SQL = `SELECT guid FROM moz_bookmarks_deleted`;

const TAGS_SQL = `
  SELECT b.fk, t.title AS tag
    FROM moz_bookmarks b
    JOIN moz_bookmarks t ON t.id = b.parent
   WHERE t.parent = (SELECT id FROM moz_bookmarks WHERE guid = 'tags________')
   ORDER BY t.title`;

class BookmarksStore {
  constructor(stores) {
    this.stores = stores;
    this.name = "bookmarks";
    this.lastChanges = null;  /* recordId -> change record of pullChanges() */
    this._parentFor = new Map();
  }

  /* Every synced bookmark as a records.md record, keyed by record id.
   * Rows are handled as Places delivers them (onRow), so a big tree is
   * read in many short main-thread slices. */
  async _readTree() {
    const PU = lazy.PlacesUtils;
    const FOLDER = PU.bookmarks.TYPE_FOLDER;
    const SEPARATOR = PU.bookmarks.TYPE_SEPARATOR;
    let db = await PU.promiseDBConnection();
    let tagsByFk = new Map();
    await db.execute(TAGS_SQL, null, r => {
      let fk = r.getResultByIndex(0);
      if (!tagsByFk.has(fk)) {
        tagsByFk.set(fk, []);
      }
      tagsByFk.get(fk).push(r.getResultByIndex(1));
    });
    let records = new Map();
    let childrenOf = new Map();
    let counters = new Map();
    /* columns: guid, type, fk, title, dateAdded, position, parentGuid,
     * parentTitle, url, keyword, syncChangeCounter */
    await db.execute(BOOKMARKS_SQL, null, r => {
      let counter = r.getResultByIndex(10);
      let type = r.getResultByIndex(1);
      let id = guidToRecordId(r.getResultByIndex(0));
      let rec = {
        id,
        type: "bookmark",
        parentid: guidToRecordId(r.getResultByIndex(6)),
        parentName: r.getResultByIndex(7) || "",
        dateAdded: Math.floor(r.getResultByIndex(4) / 1000),
      };
      let title = r.getResultByIndex(3) || "";
      if (type == FOLDER) {
        rec.type = "folder";
        rec.title = title;
        rec.children = [];
        childrenOf.set(id, rec.children);
      } else if (type == SEPARATOR) {
        rec.type = "separator";
        rec.pos = r.getResultByIndex(5);
      } else {
        let url = r.getResultByIndex(8) || "";
        rec.type = url.startsWith("place:") ? "query" : "bookmark";
        rec.title = title;
        rec.bmkUri = url;
        rec.tags = tagsByFk.get(r.getResultByIndex(2)) || [];
        let kw = r.getResultByIndex(9);
        if (kw) {
          rec.keyword = kw;
        }
      }
      records.set(id, rec);
      if (counter >= 1) {
        counters.set(id, counter);
      }
    });
    let tombstones = [];
    await db.execute(TOMBSTONES_SQL, null, r => {
      tombstones.push(guidToRecordId(r.getResultByIndex(0)));
    });
    this._lastRead = { counters, tombstones };
    /* rows come ordered by (parent, position): children in order */
    for (let rec of records.values()) {
      let list = childrenOf.get(rec.parentid);
      if (list) {
        list.push(rec.id);
      }
    }
    return records;
  }

  /* changes() and all() from one read of the tree: {changes, all}. */
  async changesAndAll() {
    let tree = await this._readTree();
    return { changes: await this.changes(tree), all: Array.from(tree.values()) };
  }

  /* Items whose Places syncChangeCounter is >= 1 and Places' tombstones
   * (what PlacesSyncUtils.bookmarks.pullChanges reports, read in the same
   * query as the tree); the change records are kept for markSynced(). */
  async changes(tree = null) {
    tree = tree || await this._readTree();
    let { counters, tombstones } = this._lastRead;
    let changes = {};
    let out = [];
    for (let [id, counter] of counters) {
      if (id != "places" && tree.has(id)) {
        changes[id] = { tombstone: false, counter, synced: false };
        out.push(tree.get(id));
      }
    }
    for (let id of tombstones) {
      if (!tree.has(id)) {
        changes[id] = { tombstone: true, counter: 1, synced: false };
        out.push({ id, deleted: true });
      }
    }
    this.lastChanges = changes;
    return out;
  }

  async all() {
    return Array.from((await this._readTree()).values());
  }

  async markSynced(records) {
    if (!this.lastChanges) {
      return;
    }
    /* in slices: pushChanges binds all its rows in one main-thread call */
    let push = {};
    let n = 0;
    for (let r of records) {
      let ch = this.lastChanges[r.id];
      if (ch) {
        ch.synced = true;
        push[r.id] = ch;
        if (++n == APPLY_SLICE) {
          await lazy.PlacesSyncUtils.bookmarks.pushChanges(push);
          push = {};
          n = 0;
        }
      }
    }
    if (n) {
      await lazy.PlacesSyncUtils.bookmarks.pushChanges(push);
    }
  }

  async reset() {
    this.lastChanges = null;
    await lazy.PlacesSyncUtils.bookmarks.reset();
  }

  async wipe() {
    this.lastChanges = null;
    await lazy.PlacesSyncUtils.bookmarks.wipe();
  }

  /* Applies records in this order: new items level by level (parents
   * first, in slices of APPLY_SLICE through insertTree, so no main-thread
   * task grows with the batch), changed items, tags and keywords, folder
   * child order, then tombstones (PlacesSyncUtils keeps a folder that
   * gained local children).  Everything is validated before the first
   * write. */
  async apply(records) {
    const PU = lazy.PlacesUtils;
    const SYNC = PU.bookmarks.SOURCES.SYNC;
    let live = new Map();
    let tombstones = [];
    for (let r of records) {
      if (!r || typeof r.id != "string" || !r.id) {
        throw new Error("bookmarks: a record without an id");
      }
      if (r.id == "places") {
        continue;
      }
      if (r.deleted) {
        tombstones.push(r.id);
      } else {
        live.set(r.id, r);
      }
    }
    let local = await this._readTree();
    let exists = id => local.has(id) || id in ROOT_ID_TO_GUID;
    /* an item whose parent is nowhere goes to unfiled (client.md 3) */
    let parentOf = r => {
      let p = r.parentid;
      if (p && p != "places" && p != r.id && (exists(p) || live.has(p))) {
        return p;
      }
      return "unfiled";
    };
    let nodes = new Map();      /* new items: record id -> insertTree node */
    let updates = [];
    for (let r of live.values()) {
      if (r.id in ROOT_ID_TO_GUID) {
        continue;               /* roots exist everywhere; only their order is applied */
      }
      if (local.has(r.id)) {
        updates.push(r);
      } else {
        nodes.set(r.id, this._toPlaces(r));
      }
    }
    /* new items by depth below an existing parent; a cycle among new
     * folders is broken by sending its members to unfiled */
    let depth = new Map();
    let depthOf = id => {
      if (depth.has(id)) {
        return depth.get(id);
      }
      let chain = [];
      let cur = id;
      let base = 0;
      let parentFor = new Map();
      while (true) {
        let p = parentOf(live.get(cur));
        if (!nodes.has(p)) {
          parentFor.set(cur, p);
          base = 0;
          break;
        }
        if (depth.has(p)) {
          parentFor.set(cur, p);
          base = depth.get(p) + 1;
          break;
        }
        if (chain.includes(p) || p == cur) {
          parentFor.set(cur, "unfiled");   /* cycle */
          base = 0;
          break;
        }
        chain.push(cur);
        parentFor.set(cur, p);
        cur = p;
      }
      depth.set(cur, base);
      this._parentFor.set(cur, parentFor.get(cur));
      for (let i = chain.length - 1; i >= 0; i--) {
        depth.set(chain[i], depth.get(parentFor.get(chain[i])) + 1);
        this._parentFor.set(chain[i], parentFor.get(chain[i]));
      }
      return depth.get(id);
    };
    this._parentFor = new Map();
    let levels = [];
    for (let id of nodes.keys()) {
      let d = depthOf(id);
      (levels[d] = levels[d] || []).push(id);
    }
    for (let level of levels) {
      if (!level) {
        continue;
      }
      /* group by parent, keep the incoming order, insert in slices */
      let byParent = new Map();
      for (let id of level) {
        let p = this._parentFor.get(id);
        if (!byParent.has(p)) {
          byParent.set(p, []);
        }
        byParent.get(p).push(nodes.get(id));
      }
      for (let [p, children] of byParent) {
        /* in the order of the parent's record when we have it, so the
         * reorder pass below has nothing to move */
        let order = live.has(p) && Array.isArray(live.get(p).children) ? live.get(p).children : null;
        if (order) {
          let pos = new Map(order.map((c, i) => [recordIdToGuid(c), i]));
          let rank = n => (pos.has(n.guid) ? pos.get(n.guid) : order.length);
          children.sort((x, y) => rank(x) - rank(y));
        }
        for (let i = 0; i < children.length; i += APPLY_SLICE) {
          await PU.bookmarks.insertTree({ guid: recordIdToGuid(p), children: children.slice(i, i + APPLY_SLICE),
                                          source: SYNC }, { fixupOrNoteInvalidItems: false });
        }
      }
    }
    /* changed items */
    for (let r of updates) {
      let cur = local.get(r.id);
      let info = { guid: recordIdToGuid(r.id), source: SYNC };
      let changed = false;
      if (cur.type != "separator" && typeof r.title == "string" && r.title != cur.title) {
        info.title = r.title;
        changed = true;
      }
      if ((cur.type == "bookmark" || cur.type == "query") && r.bmkUri && r.bmkUri != cur.bmkUri) {
        info.url = r.bmkUri;
        changed = true;
      }
      let p = parentOf(r);
      if (p != cur.parentid) {
        info.parentGuid = recordIdToGuid(p);
        info.index = PU.bookmarks.DEFAULT_INDEX;
        changed = true;
      }
      if (changed) {
        await PU.bookmarks.update(info);
      }
    }
    /* tags and keywords (per URL in Places); only where they differ */
    for (let r of live.values()) {
      if (r.type != "bookmark" && r.type != "query") {
        continue;
      }
      let cur = local.get(r.id);
      let sameUrl = cur && cur.bmkUri == r.bmkUri;
      let want = Array.isArray(r.tags) ? r.tags.filter(t => typeof t == "string" && t) : [];
      let kw = typeof r.keyword == "string" ? r.keyword : "";
      if (!cur && !want.length && !kw) {
        continue;
      }
      let uri;
      try {
        uri = Services.io.newURI(r.bmkUri);
      } catch (e) {
        continue;
      }
      let have = sameUrl ? cur.tags || [] : (cur ? PU.tagging.getTagsForURI(uri) : []);
      let add = want.filter(t => !have.includes(t));
      let drop = have.filter(t => !want.includes(t));
      if (add.length) {
        PU.tagging.tagURI(uri, add, SYNC);
      }
      if (drop.length) {
        PU.tagging.untagURI(uri, drop, SYNC);
      }
      let curKw = sameUrl ? cur.keyword || "" : "";
      if (!sameUrl && (kw || cur)) {
        let entry = await PU.keywords.fetch({ url: r.bmkUri });
        curKw = entry ? entry.keyword : "";
      }
      if (kw != curKw) {
        if (curKw) {
          await PU.keywords.remove({ keyword: curKw, source: SYNC });
        }
        if (kw) {
          await PU.keywords.insert({ keyword: kw, url: r.bmkUri, source: SYNC });
        }
      }
    }
    /* folder order: the incoming children list, ids we have first */
    let folders = Array.from(live.values()).filter(r => r.type == "folder" && Array.isArray(r.children));
    if (folders.length) {
      let now = await this._readTree();
      for (let r of folders) {
        if (!now.has(r.id)) {
          continue;
        }
        let have = now.get(r.id).children || [];
        let haveSet = new Set(have);
        let order = r.children.filter(c => haveSet.has(c));
        let orderSet = new Set(order);
        let want = order.concat(have.filter(c => !orderSet.has(c)));
        if (want.some((c, i) => c != have[i])) {
          await PU.bookmarks.reorder(recordIdToGuid(r.id), want.map(recordIdToGuid), { source: SYNC });
        }
      }
    }
    if (tombstones.length) {
      await lazy.PlacesSyncUtils.bookmarks.remove(tombstones.filter(id => !(id in ROOT_ID_TO_GUID)));
    }
    return records.length;
  }

  /* A records.md bookmark record as a PlacesUtils.bookmarks.insertTree node. */
  _toPlaces(r) {
    const PU = lazy.PlacesUtils;
    let node = { guid: recordIdToGuid(r.id) };
    if (Number.isFinite(r.dateAdded) && r.dateAdded > 0) {
      node.dateAdded = new Date(r.dateAdded);
    }
    switch (r.type) {
      case "folder":
      case "livemark":
        node.type = PU.bookmarks.TYPE_FOLDER;
        node.title = typeof r.title == "string" ? r.title : "";
        break;
      case "separator":
        node.type = PU.bookmarks.TYPE_SEPARATOR;
        break;
      case "bookmark":
      case "query":
        if (typeof r.bmkUri != "string" || !r.bmkUri) {
          throw new Error("bookmarks: record " + r.id + " has no bmkUri");
        }
        node.type = PU.bookmarks.TYPE_BOOKMARK;
        node.url = r.bmkUri;
        node.title = typeof r.title == "string" ? r.title : "";
        break;
      default:
        throw new Error("bookmarks: record " + r.id + " has unknown type " + r.type);
    }
    return node;
  }
}

/* ------------------------------------------------------------------------
 * History
 * ---------------------------------------------------------------------- */

class HistoryStore {
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

/* ------------------------------------------------------------------------
 * Passwords
 * ---------------------------------------------------------------------- */

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

class PasswordsStore {
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

/* ------------------------------------------------------------------------
 * The set of stores and their observers
 * ---------------------------------------------------------------------- */

/* ------------------------------------------------------------------------
 * Form history (FormHistory, formhistory.sqlite)
 * ---------------------------------------------------------------------- */
class FormsStore {
  constructor(stores) {
    this.stores = stores;
    this.applying = 0;
    this.snap = null;
  }

  async _map() {
    let rows = await lazy.FormHistory.search(["fieldname", "value", "guid"], {});
    let m = new Map();
    for (let r of rows) {
      if (r.guid) {
        m.set(r.guid, { id: r.guid, name: r.fieldname, value: r.value });
      }
    }
    return m;
  }

  async changes() {
    let snap = this.stores.tracker.snapshot("forms");
    let live = await this._map();
    let ids = snap.reset ? new Set(live.keys()) : new Set();
    for (let id of Object.keys(snap.changed)) {
      ids.add(id);
    }
    let out = [];
    for (let id of ids) {
      out.push(live.has(id) ? live.get(id) : { id, deleted: true });
    }
    this.snap = snap;
    return out;
  }

  async all() {
    return Array.from((await this._map()).values());
  }

  async markSynced(records) {
    if (this.snap) {
      await this.stores.tracker.clear("forms", this.snap, records.map(r => r.id));
    }
  }

  /* A reset asked by the engine after changes() reported everything (a
   * first sync) is settled by markSynced(); otherwise the next changes()
   * reports everything. */
  async reset() {
    if (!(this.snap && this.snap.reset)) {
      this.snap = null;
    }
    await this.stores.tracker.reset("forms");
  }

  async wipe() {
    this.snap = null;
    this.applying++;
    try {
      await lazy.FormHistory.update({ op: "remove" });
    } finally {
      this.applying--;
    }
    await this.stores.tracker.reset("forms");
  }

  /* Tombstones remove the entry; an entry equal to a local one under
   * another GUID replaces it (one entry per field and value, the incoming
   * GUID); malformed records are skipped, never written. */
  async apply(records) {
    let have = await this._map();
    let changes = [];
    let adds = [];
    for (let r of records) {
      if (!r || typeof r.id != "string" || !r.id) {
        throw new Error("forms: a record without an id");
      }
      if (r.deleted) {
        if (have.has(r.id)) {
          changes.push({ op: "remove", guid: r.id });
        }
        continue;
      }
      if (typeof r.name != "string" || !r.name || r.name.length > 200 || typeof r.value != "string" ||
          r.value.length > 4096) {
        continue;
      }
      let cur = have.get(r.id);
      if (cur) {
        if (cur.name != r.name || cur.value != r.value) {
          changes.push({ op: "update", guid: r.id, fieldname: r.name, value: r.value });
        }
        continue;
      }
      for (let [guid, e] of have) {
        if (e.name == r.name && e.value == r.value) {
          changes.push({ op: "remove", guid });
        }
      }
      changes.push({ op: "add", fieldname: r.name, value: r.value });
      adds.push(r);
    }
    this.applying++;
    try {
      if (changes.length) {
        await lazy.FormHistory.update(changes);
      }
      /* FormHistory gives an added entry a GUID of its own: it takes the
       * incoming one with an update's newGuid */
      let renames = [];
      for (let r of adds) {
        let rows = await lazy.FormHistory.search(["guid"], { fieldname: r.name, value: r.value });
        if (rows.length == 1 && rows[0].guid != r.id) {
          renames.push({ op: "update", guid: rows[0].guid, newGuid: r.id });
        }
      }
      if (renames.length) {
        await lazy.FormHistory.update(renames);
      }
    } finally {
      this.applying--;
    }
  }

  observe(subject, topic, data) {
    if (this.applying || !/^formhistory-(add|update|remove)$/.test(data)) {
      return false;
    }
    let guid = subject && subject.QueryInterface ? subject.QueryInterface(Ci.nsISupportsString).data : "";
    this.stores.tracker.note("forms", guid, data == "formhistory-remove");
    return true;
  }
}

/* ------------------------------------------------------------------------
 * Preferences (Services.prefs)
 * ---------------------------------------------------------------------- */
const PREFS_ID = "ZWM4MDMwZjctYzIwYS00NjRmLTliMGUtMTNhM2E5ZTk3Mzg0";
const PREF_CONTROL = "services.sync.prefs.sync.";
const PREF_DENIED = /path|dir|server|url|uri|password|proxy|homepage|endpoint|token|cert|pinned|^services\.sync\./i;

function prefAllowed(name) {
  let bare = name.startsWith("browser.urlbar.") ? name.slice(15) : name;
  if (PREF_DENIED.test(bare)) {
    return false;
  }
  return Services.prefs.getBoolPref(PREF_CONTROL + name, false);
}

class PrefsStore {
  constructor(stores) {
    this.stores = stores;
    this.synced = null;
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
    return JSON.stringify(rec) == (await this._base()) ? [] : [rec];
  }

  async all() {
    return [this._record()];
  }

  async markSynced(records) {
    let r = records.find(x => x && x.id == PREFS_ID);
    if (r && JSON.stringify(this._record()) == JSON.stringify(r)) {
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

class Stores {
  constructor() {
    this.tracker = new Tracker();
    this.bookmarks = new BookmarksStore(this);
    this.history = new HistoryStore(this);
    this.passwords = new PasswordsStore(this);
    this.forms = new FormsStore(this);
    this.prefs = new PrefsStore(this);
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
