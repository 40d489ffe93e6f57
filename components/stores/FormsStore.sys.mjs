// SPDX-License-Identifier: MPL-2.0
/* FormsStore.sys.mjs -- PiCL's live form history store: FormHistory entries (formhistory.sqlite) as Firefox Sync forms records {id: guid, name: fieldname, value}. */

/*
 * The store contract is PiCLStores.sys.mjs's.  Change tracking: the
 * "satchel-storage-changed" notifications of FormHistory
 * (formhistory-add/-update/-remove, by entry GUID; PiCLStores passes them
 * to observe()) feed the tracker; incoming records are written with
 * FormHistory.update and keep their GUID.
 */

const lazy = {};
ChromeUtils.defineESModuleGetters(lazy, {
  FormHistory: "resource://gre/modules/FormHistory.sys.mjs",
});

export class FormsStore {
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
