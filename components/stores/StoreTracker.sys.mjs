// SPDX-License-Identifier: MPL-2.0
/* StoreTracker.sys.mjs -- the change tracker of PiCL's live stores: changed record ids per collection, kept in <profile>/picl/tracker.json. */

/*
 * Each changed id carries a sequence number, so markSynced() clears only
 * what was reported (a later change has a larger number), plus a "reset"
 * flag per collection.  A collection the tracker has never seen (no file,
 * an unreadable file, or a collection new to it) starts reset: everything
 * is a change, so a first sync uploads the whole local store.
 *
 * Owned by PiCLStores (one tracker for the stores that use one: history,
 * passwords, forms); main thread only.  Writes are atomic and serialised
 * (save() returns the promise of the pending write); nothing here prints.
 */

export class Tracker {
  /* collections: the names it tracks (the others have their own bookkeeping) */
  constructor(collections) {
    this.collections = collections;
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
    for (let c of this.collections) {
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
