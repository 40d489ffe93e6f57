// SPDX-License-Identifier: MPL-2.0
/* BookmarksStore.sys.mjs -- PiCL's live bookmarks store: Places bookmarks as Firefox Sync bookmark records, read from Places' read-only connection and written through PlacesUtils.bookmarks. */

/*
 * The store contract is PiCLStores.sys.mjs's.  Change tracking is Places'
 * own: the per-item syncChangeCounter and the moz_bookmarks_deleted
 * tombstones (read as PlacesSyncUtils.bookmarks.pullChanges would, cleared
 * with PlacesSyncUtils.bookmarks.pushChanges), so an edit made while PiCL
 * was not loaded is still seen; incoming records are written with
 * SOURCES.SYNC, which does not count.  Root GUIDs map to the Sync record
 * ids menu, toolbar, unfiled, mobile and places.
 */

const lazy = {};
ChromeUtils.defineESModuleGetters(lazy, {
  PlacesUtils: "resource://gre/modules/PlacesUtils.sys.mjs",
  PlacesSyncUtils: "resource://gre/modules/PlacesSyncUtils.sys.mjs",
});

/* Places root GUIDs <-> Sync record ids. */
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

export function guidToRecordId(guid) {
  return ROOT_GUID_TO_ID[guid] || guid;
}
export function recordIdToGuid(id) {
  return ROOT_ID_TO_GUID[id] || id;
}

/* New bookmarks are inserted this many at a time (one insertTree each). */
const APPLY_SLICE = 200;


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

export class BookmarksStore {
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
   * write (_plan builds every insertTree node first). */
  async apply(records) {
    let { live, tombstones } = this._incoming(records);
    let local = await this._readTree();
    let parentOf = this._parentResolver(local, live);
    let { nodes, updates } = this._plan(live, local);
    await this._insertNew(this._levels(nodes, live, parentOf), nodes, live);
    await this._updateChanged(updates, local, parentOf);
    await this._applyTagsAndKeywords(live, local);
    await this._applyFolderOrder(live);
    if (tombstones.length) {
      await lazy.PlacesSyncUtils.bookmarks.remove(tombstones.filter(id => !(id in ROOT_ID_TO_GUID)));
    }
    return records.length;
  }

  /* The incoming records as {live: Map id -> record, tombstones: [id]}
   * (the "places" root is never applied); a record without an id throws. */
  _incoming(records) {
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
    return { live, tombstones };
  }

  /* parentOf(record): its parent's record id; an item whose parent is
   * nowhere (neither local nor incoming) goes to unfiled (client.md 3). */
  _parentResolver(local, live) {
    let exists = id => local.has(id) || id in ROOT_ID_TO_GUID;
    return r => {
      let p = r.parentid;
      if (p && p != "places" && p != r.id && (exists(p) || live.has(p))) {
        return p;
      }
      return "unfiled";
    };
  }

  /* {nodes: Map id -> insertTree node of each new item, updates: [records
   * of items we have]}; throws on a record that cannot be a Places item. */
  _plan(live, local) {
    let nodes = new Map();
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
    return { nodes, updates };
  }

  /* The new items by depth below an existing parent: levels[d] = [ids];
   * this._parentFor maps each to the parent it is inserted under (a cycle
   * among new folders is broken by sending its members to unfiled). */
  _levels(nodes, live, parentOf) {
    this._parentFor = new Map();
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
    let levels = [];
    for (let id of nodes.keys()) {
      let d = depthOf(id);
      (levels[d] = levels[d] || []).push(id);
    }
    return levels;
  }

  /* Inserts the new items level by level, grouped by parent, in the order
   * of the parent's incoming children list (so the reorder pass has nothing
   * to move), APPLY_SLICE per insertTree. */
  async _insertNew(levels, nodes, live) {
    const PU = lazy.PlacesUtils;
    for (let level of levels) {
      if (!level) {
        continue;
      }
      let byParent = new Map();
      for (let id of level) {
        let p = this._parentFor.get(id);
        if (!byParent.has(p)) {
          byParent.set(p, []);
        }
        byParent.get(p).push(nodes.get(id));
      }
      for (let [p, children] of byParent) {
        let order = live.has(p) && Array.isArray(live.get(p).children) ? live.get(p).children : null;
        if (order) {
          let pos = new Map(order.map((c, i) => [recordIdToGuid(c), i]));
          let rank = n => (pos.has(n.guid) ? pos.get(n.guid) : order.length);
          children.sort((x, y) => rank(x) - rank(y));
        }
        for (let i = 0; i < children.length; i += APPLY_SLICE) {
          await PU.bookmarks.insertTree({ guid: recordIdToGuid(p), children: children.slice(i, i + APPLY_SLICE),
                                          source: PU.bookmarks.SOURCES.SYNC }, { fixupOrNoteInvalidItems: false });
        }
      }
    }
  }

  /* Items we have: title, URL and parent, only where they differ. */
  async _updateChanged(updates, local, parentOf) {
    const PU = lazy.PlacesUtils;
    for (let r of updates) {
      let cur = local.get(r.id);
      let info = { guid: recordIdToGuid(r.id), source: PU.bookmarks.SOURCES.SYNC };
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
  }

  /* Tags and keywords (per URL in Places); only where they differ. */
  async _applyTagsAndKeywords(live, local) {
    const PU = lazy.PlacesUtils;
    const SYNC = PU.bookmarks.SOURCES.SYNC;
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
      await this._applyKeyword(r, kw, sameUrl ? cur.keyword || "" : null, !!cur);
    }
  }

  /* Sets record r's keyword kw on its URL; curKw the local one when known
   * (null: look it up when kw is set or the item existed). */
  async _applyKeyword(r, kw, curKw, existed) {
    const PU = lazy.PlacesUtils;
    const SYNC = PU.bookmarks.SOURCES.SYNC;
    if (curKw === null) {
      curKw = "";
      if (kw || existed) {
        let entry = await PU.keywords.fetch({ url: r.bmkUri });
        curKw = entry ? entry.keyword : "";
      }
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

  /* Folder order: the incoming children list, ids we have first, then the
   * local children it does not name. */
  async _applyFolderOrder(live) {
    let folders = Array.from(live.values()).filter(r => r.type == "folder" && Array.isArray(r.children));
    if (!folders.length) {
      return;
    }
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
        await lazy.PlacesUtils.bookmarks.reorder(recordIdToGuid(r.id), want.map(recordIdToGuid),
                                                 { source: lazy.PlacesUtils.bookmarks.SOURCES.SYNC });
      }
    }
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
