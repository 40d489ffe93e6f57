// SPDX-License-Identifier: MPL-2.0
/* PiCLService.sys.mjs -- nsIPiCLService in a release Firefox: libpicl through js-ctypes in a ChromeWorker, synced against the live profile stores. */

/*
 * PiCLService has exactly the shape of idl/nsIPiCLService.idl (checked by
 * tests/test_idl_consistency.py); members whose name starts with "_" are
 * private to PiCL (tests, the extension's status view) and not part of it.
 *
 * Threads.  The C calls that take long (password stretching: 20000+20000
 * PBKDF2 rounds and 64 MiB scrypt; SRP; HTTP; sync) run in a ChromeWorker
 * (PiCLWorker.js) that owns the picl_service object.  PlacesUtils and
 * Services.logins exist only on the main thread, so a sync goes:
 *
 *   1. main thread: each collection's local changes (and, for bookmarks and
 *      passwords, or when the engine asked for them, all its records) are
 *      gathered through the live APIs (PiCLStores.sys.mjs), as JSON in the
 *      record formats of shared/spec/records.md section 3;
 *   2. worker: picl_service_sync() runs with a picl_store_callbacks store per
 *      collection implemented over that snapshot: changes()/all()/get()
 *      answer from it, apply() collects the incoming records, mark_synced()
 *      collects the ids now on the server, reset()/wipe() are noted;
 *   3. main thread: the collected records are applied through the live
 *      APIs (so Firefox keeps GUIDs, frecency, tags, login encryption), then
 *      the marked ones are cleared from change tracking.  If a local apply
 *      fails, the service's local sync state is reset
 *      (picl_service_reset_local_state) so the next sync downloads again
 *      and converges; the promise rejects with PICL_ERROR_DATABASE.
 *   If the engine asked for all records of a collection that were not
 *   gathered (history, which can be large), the sync is run once more with
 *   them.  Calls are queued: one operation at a time.
 *
 * Attributes and getCollectionClass() answer from state the worker sends
 * back after every operation, so no method blocks the main thread.
 *
 * Library: $PICL_LIB, else the pref services.picl.libraryPath, else
 * libpicl.so beside this module; when it cannot be loaded, calls reject with
 * PICL_ERROR_UNSUPPORTED and a message naming the path tried, the setting
 * that chose it, and both settings.  Inside Firefox the library finds NSS
 * already initialised by the browser and uses it (never initialising or
 * shutting it down).  The service's state lives in <profile>/picl/state.
 *
 * Errors: every Promise rejects with an Error whose `result` is the
 * picl_status code (components/picl.h) and whose message says what went
 * wrong.
 */

import { PiCLStores, COLLECTIONS, EXTRA_COLLECTIONS } from "./PiCLStores.sys.mjs";
import { AsyncShutdown } from "resource://gre/modules/AsyncShutdown.sys.mjs";

/* picl_status codes (generated from components/status.def; numbers are ABI),
 * exported again for the callers of this module. */
import { PICL_STATUS } from "./PiCLStatus.sys.mjs";
export { PICL_STATUS };

const DEFAULT_CLASS = { bookmarks: "A", history: "A", passwords: "B", tabs: "A", forms: "A", prefs: "A",
                        clients: "A" };
const COLLECTION_RE = /^[a-z][a-z0-9_-]{0,31}$/;
/* collections whose full record set is always gathered (cheap) */
const GATHER_ALL = new Set(["bookmarks", "passwords"]);
/* sync([]) syncs these: every live store and this device's clients record */
const DEFAULT_SYNC = COLLECTIONS.concat(["clients"], EXTRA_COLLECTIONS);

function piclError(result, message) {
  let e = new Error(message);
  e.result = result;
  return e;
}

/* The library to load: PICL_LIB, the pref, or libpicl.so beside us. */
export function libraryPath() {
  return librarySource().path;
}

/* Where libraryPath() comes from: {path, from}, from saying which setting
 * chose it ("set by the environment variable PICL_LIB", ...). */
export function librarySource() {
  let p = Services.env.get("PICL_LIB");
  if (p) {
    return { path: p, from: "set by the environment variable PICL_LIB" };
  }
  p = Services.prefs.getStringPref("services.picl.libraryPath", "");
  if (p) {
    return { path: p, from: "set by the pref services.picl.libraryPath; PICL_LIB is not set" };
  }
  return { path: defaultLibraryPath(),
           from: "beside PiCLService.sys.mjs; neither PICL_LIB nor the pref services.picl.libraryPath is set" };
}

/* A failed load of libpicl as an error that says what was tried and how to
 * point PiCL at the library (PICL_ERROR_UNSUPPORTED). */
function libraryError(detail) {
  let { path, from } = librarySource();
  /* js-ctypes says "couldn't open library P: P: <dlerror>" */
  detail = detail.replace(/^couldn't open library .*?: /, "");
  if (detail.startsWith(path + ": ")) {
    detail = detail.slice(path.length + 2);
  }
  return piclError(PICL_STATUS.UNSUPPORTED,
                   "PiCL cannot load libpicl, its C library. Tried " + path + " (" + from + "): " + detail +
                   ". Set the pref services.picl.libraryPath (about:config) or the environment variable" +
                   " PICL_LIB (it wins over the pref) to the full path of libpicl.so.");
}

/* The worker's "cannot load libpicl from P: why" as libraryError(why). */
function loadFailure(e) {
  let m = e && e.result == PICL_STATUS.UNSUPPORTED && /^cannot load libpicl from .*?: (.*)$/s.exec(e.message);
  return m ? libraryError(m[1]) : e;
}

/* Last successful sync, ms since the epoch, as Firefox Sync keeps
 * services.sync.lastSync: a pref of the profile. */
const LAST_SYNC_PREF = "services.picl.lastSync";

function defaultLibraryPath() {
  let uri = Services.io.newURI(new URL("libpicl.so", import.meta.url).href);
  if (uri.schemeIs("resource")) {
    let res = Services.io.getProtocolHandler("resource").QueryInterface(Ci.nsIResProtocolHandler);
    uri = Services.io.newURI(res.resolveURI(uri));
  }
  if (uri.schemeIs("file")) {
    return uri.QueryInterface(Ci.nsIFileURL).file.path;
  }
  return "libpicl.so";   /* jar: (omni.ja): let the dynamic linker search */
}

class Service {
  constructor() {
    this._worker = null;
    this._nextId = 1;
    this._pending = new Map();
    this._queue = Promise.resolve();
    this._observers = new Set();
    this._state = { keyserverURL: "", email: "", verified: false, classes: {} };
    this._config = {};
    this._initPromise = null;
    this._blocker = null;
  }

  /* ---- nsIPiCLService ------------------------------------------------- */

  get keyserverURL() {
    return this._state.keyserverURL || this._config.keyserverURL || "";
  }

  set keyserverURL(url) {
    url = String(url);
    this._config.keyserverURL = url;
    this._state.keyserverURL = url;
    if (this._initPromise) {
      this._enqueue("setKeyserverURL", { url }).catch(() => {});
    }
  }

  get signedInEmail() {
    return this._state.email || "";
  }

  get verified() {
    return !!this._state.verified;
  }

  createAccount(email, password) {
    return this._account("createAccount", { email: String(email), password: String(password) },
                         "createAccount: email and password");
  }

  verifyEmail(code) {
    return this._account("verifyEmail", { code: String(code) }, "verifyEmail: code");
  }

  resendVerification() {
    return this._account("resendVerification", {}, "resendVerification");
  }

  signIn(email, password) {
    return this._account("signIn", { email: String(email), password: String(password) },
                         "signIn: email and password");
  }

  signOut() {
    return this._run(async () => {
      await this._call("signOut", {});
      Services.prefs.clearUserPref(LAST_SYNC_PREF);
    });
  }

  changePassword(oldPassword, newPassword) {
    return this._account("changePassword", { oldPassword: String(oldPassword), newPassword: String(newPassword) },
                         "changePassword: old and new password");
  }

  forgotPassword(email) {
    return this._account("forgotPassword", { email: String(email) }, "forgotPassword: email");
  }

  completePasswordReset(code, newPassword) {
    if (!code || !newPassword) {
      return Promise.reject(piclError(PICL_STATUS.INVALID_ARGUMENT, "completePasswordReset: code and new password are required"));
    }
    return this._run(() => this._withStores(COLLECTIONS, snaps =>
      ["completePasswordReset", { code: String(code), newPassword: String(newPassword), snaps }]));
  }

  destroyAccount(password) {
    return this._account("destroyAccount", { password: String(password) }, "destroyAccount: password").then(v => {
      Services.prefs.clearUserPref(LAST_SYNC_PREF);
      return v;
    });
  }

  /* Devices, security events and the recovery key (client.md 7). */
  getDevices() {
    return this._run(() => this._call("devicesJSON", {})).then(t => JSON.parse(t));
  }

  renameDevice(name) {
    return this._account("renameDevice", { name: String(name || "") }, "renameDevice: name");
  }

  signOutDevice(id) {
    return this._account("signOutDevice", { id: String(id || "") }, "signOutDevice: id");
  }

  getSecurityEvents() {
    return this._run(() => this._call("eventsJSON", {})).then(t => JSON.parse(t));
  }

  createRecoveryKey(password) {
    return this._account("createRecoveryKey", { password: String(password || "") }, "createRecoveryKey: password");
  }

  getRecoveryKeyExists() {
    return this._run(() => this._call("recoveryKeyExists", {}));
  }

  removeRecoveryKey() {
    return this._run(() => this._call("removeRecoveryKey", {}));
  }

  completePasswordResetWithRecoveryKey(code, newPassword, recoveryKey) {
    return this._account("completePasswordResetWithRecoveryKey",
                         { code: String(code || ""), newPassword: String(newPassword || ""),
                           recoveryKey: String(recoveryKey || "") },
                         "completePasswordResetWithRecoveryKey: code, new password and recovery key");
  }

  /* Other devices (the clients and tabs collections): send a tab, their
   * open tabs (read from the server), the tabs this device received. */
  sendTab(deviceId, url, title) {
    if (!deviceId || !url) {
      return Promise.reject(piclError(PICL_STATUS.INVALID_ARGUMENT, "sendTab: device and url are required"));
    }
    return this._run(() => this._call("sendTab", { device: String(deviceId), url: String(url),
                                                   title: String(title || "") }));
  }

  getRemoteTabs() {
    return this._run(() => this._call("remoteTabsJSON", {})).then(t => JSON.parse(t));
  }

  getReceivedTabs() {
    return this._run(() => this._call("receivedTabsJSON", {})).then(t => JSON.parse(t));
  }

  /* Tabs another device sent, received by the sync that just ran: told to
   * observers ("picl:tabs:received", data = JSON [{uri, title, from, ...}])
   * and opened in the most recent browser window when there is one. */
  _openReceived(summary) {
    let got;
    try {
      got = JSON.parse(summary).received;
    } catch (e) {
      return;
    }
    if (!Array.isArray(got) || !got.length) {
      return;
    }
    Services.obs.notifyObservers(null, "picl:tabs:received", JSON.stringify(got));
    let win = Services.wm.getMostRecentWindow("navigator:browser");
    for (let t of got) {
      if (win && win.gBrowser && /^https?:\/\//.test(t.uri)) {
        win.gBrowser.addTab(t.uri, { triggeringPrincipal: Services.scriptSecurityManager.createNullPrincipal({}) });
      }
    }
  }

  getCollectionClass(collection) {
    collection = String(collection);
    if (!COLLECTION_RE.test(collection)) {
      throw piclError(PICL_STATUS.INVALID_ARGUMENT, "getCollectionClass: bad collection name " +
                      JSON.stringify(collection));
    }
    return this._state.classes[collection] || DEFAULT_CLASS[collection] || "A";
  }

  setCollectionClass(collection, cls) {
    collection = String(collection);
    cls = String(cls);
    if (!COLLECTION_RE.test(collection)) {
      return Promise.reject(piclError(PICL_STATUS.INVALID_ARGUMENT,
                                      "setCollectionClass: bad collection name " + JSON.stringify(collection)));
    }
    if (cls != "A" && cls != "B") {
      return Promise.reject(piclError(PICL_STATUS.INVALID_ARGUMENT,
                                      "setCollectionClass: class must be \"A\" or \"B\", not " + JSON.stringify(cls)));
    }
    let live = COLLECTIONS.includes(collection) ? [collection] : [];
    return this._run(() => this._withStores(live, snaps =>
      ["setCollectionClass", { collection, cls, snaps }], { all: true }));
  }

  sync(collections) {
    if (!Array.isArray(collections) || collections.some(c => typeof c != "string" || !COLLECTION_RE.test(c))) {
      return Promise.reject(piclError(PICL_STATUS.INVALID_ARGUMENT,
                                      "sync: collections must be an array of collection names"));
    }
    let names = collections.length ? Array.from(new Set(collections)) : DEFAULT_SYNC.slice();
    let live = names.filter(c => COLLECTIONS.includes(c) || EXTRA_COLLECTIONS.includes(c));
    return this._run(async () => {
      this._notify("status", "", 0, -1, "sync started");
      let r;
      /* records refused by an integrity check, from the "integrity"
       * notifications of the run: told loudly (observer topic
       * "picl:sync:failed-records", data = JSON [{collection, id, reason}])
       * and on the error as e.failed */
      this._failedRecords = [];
      try {
        r = await this._withStores(live, snaps => ["sync", { csv: names.join(","), snaps }]);
      } catch (e) {
        let failed = this._failedRecords;
        this._failedRecords = null;
        if (failed.length) {
          e.failed = failed;
          Services.obs.notifyObservers(null, "picl:sync:failed-records", JSON.stringify(failed));
        }
        this._notify("status", "", 0, -1, "sync failed: " + e.message);
        throw e;
      }
      this._failedRecords = null;
      this._openReceived(r);
      Services.prefs.setStringPref(LAST_SYNC_PREF, String(Date.now()));
      this._notify("status", "", 1, 1, "sync finished");
      return r;
    });
  }

  /* Undo.  allowMassDelete: let the next syncs delete more than half of a
   * collection (else such a sync changes nothing for it, rejects with
   * PICL_STATUS.CONFLICT and notifies "picl:sync:mass-delete" with
   * [{collection, message}]). */
  get allowMassDelete() {
    return !!this._config.allowMassDelete;
  }

  set allowMassDelete(allow) {
    this._config.allowMassDelete = !!allow;
    this._enqueue("setAllowMassDelete", { allow: !!allow });
  }

  /* Brings a collection back to how it was at asOf (seconds since 1970,
   * UTC) on the storage server's history (picl_restore_days): resolves to
   * the plan JSON {collection, asOf, restore: [ids], delete: [ids],
   * unreadable, applied}; apply false previews, true restores and syncs. */
  restoreCollection(collection, asOf, apply) {
    collection = String(collection);
    asOf = Number(asOf);
    if (!COLLECTION_RE.test(collection)) {
      return Promise.reject(piclError(PICL_STATUS.INVALID_ARGUMENT,
                                      "restoreCollection: bad collection name " + JSON.stringify(collection)));
    }
    if (!Number.isFinite(asOf) || asOf < 0) {
      return Promise.reject(piclError(PICL_STATUS.INVALID_ARGUMENT, "restoreCollection: asOf must be seconds"));
    }
    let live = COLLECTIONS.includes(collection) ? [collection] : [];
    return this._run(() => this._withStores(live, snaps =>
      ["restoreCollection", { collection, asOf, apply: !!apply, snaps }]));
  }

  addObserver(observer) {
    if (!observer || (typeof observer != "function" && typeof observer.onProgress != "function")) {
      throw piclError(PICL_STATUS.INVALID_ARGUMENT, "addObserver: an nsIPiCLObserver is required");
    }
    this._observers.add(observer);
  }

  removeObserver(observer) {
    this._observers.delete(observer);
  }

  /* ---- private ---------------------------------------------------------- */

  /* Options (tests, the extension): storageURL, persistKeys, stateDir
   * (before the first call), stretching ({pbkdf2Rounds1, scryptN, scryptR,
   * scryptP, pbkdf2Rounds2}: what new passwords get and what a sign-in to an
   * account stretched more weakly upgrades it to, keeping kB; only values
   * from the spec's up to 4 times them are taken).  No stretching floor:
   * lowering it is a test switch of the C library's test build, never
   * reachable from here. */
  _configure(opts) {
    let { storageURL, persistKeys, stateDir, stretching } = opts || {};
    Object.assign(this._config, JSON.parse(JSON.stringify({ storageURL, persistKeys, stateDir })));
    let done = Promise.resolve();
    if (this._initPromise) {
      done = this._enqueue("init", { storageURL: this._config.storageURL, persistKeys: this._config.persistKeys });
    }
    if (stretching !== undefined) {
      let want = JSON.parse(JSON.stringify(stretching));
      done = done.then(() => this._enqueue("setStretching", want)).then(() => {
        this._config.stretching = want;
      });
    }
    return done;
  }

  /* Loads the library in the worker and creates the service object. */
  _init() {
    if (!this._initPromise) {
      this._initPromise = (async () => {
        await PiCLStores.init();
        let stateDir = this._config.stateDir || PathUtils.join(PathUtils.profileDir, "picl", "state");
        PiCLStores.stateDir = stateDir;
        let dir = PathUtils.parent(stateDir);
        await IOUtils.makeDirectory(dir, { permissions: 0o700 });
        this._worker = new ChromeWorker(new URL("PiCLWorker.js", import.meta.url).href);
        this._worker.onmessage = e => this._onMessage(e.data);
        this._worker.onerror = e => {
          e.preventDefault();
          this._failAll(piclError(PICL_STATUS.INTERNAL, "PiCL worker error: " + e.message));
        };
        if (!this._blocker) {
          /* at quit: let the running operation finish, save the tracker and
           * release the C object before the profile goes away */
          this._blocker = () => this._shutdown(true);
          AsyncShutdown.profileBeforeChange.addBlocker("PiCL: finish the running operation, release libpicl",
                                                       this._blocker);
        }
        let { keyserverURL, storageURL, persistKeys } = this._config;
        let deviceName = ("Firefox " + PathUtils.filename(PathUtils.profileDir)).slice(0, 64);
        await this._post("init", { libPath: libraryPath(), stateDir, keyserverURL, storageURL, persistKeys,
                                   deviceName })
          .catch(e => {
            throw loadFailure(e);
          });
        if (this._config.stretching) {
          await this._post("setStretching", this._config.stretching);
        }
      })();
      this._initPromise.catch(() => {
        /* a failed start can be retried (e.g. the library appears later) */
        this._initPromise = null;
        if (this._worker) {
          this._worker.terminate();
          this._worker = null;
        }
      });
    }
    return this._initPromise;
  }

  /* Stops the worker and releases the C object (tests, shutdown). */
  async _shutdown(fromBlocker = false) {
    if (this._blocker && !fromBlocker) {
      AsyncShutdown.profileBeforeChange.removeBlocker(this._blocker);
    }
    this._blocker = null;
    await this._queue.catch(() => {});
    if (this._worker) {
      try {
        await this._post("shutdown", {});
      } catch (e) {
        /* terminate anyway */
      }
      this._worker.terminate();
      this._worker = null;
    }
    this._initPromise = null;
    await PiCLStores.shutdown();
  }

  /* Loads libpicl in a worker of its own and reports, without creating a
   * service: {strerror: {code: text}, missing: [picl_service_* symbols]}. */
  async _probe(codes = [0, 18]) {
    let w = new ChromeWorker(new URL("PiCLWorker.js", import.meta.url).href);
    try {
      let reply = await new Promise((resolve, reject) => {
        w.onmessage = e => resolve(e.data);
        w.onerror = e => {
          e.preventDefault();
          reject(piclError(PICL_STATUS.INTERNAL, "PiCL worker error: " + e.message));
        };
        w.postMessage({ id: 0, op: "probe", args: { libPath: libraryPath(), codes } });
      });
      if (!reply.ok) {
        throw loadFailure(piclError(reply.result, reply.message));
      }
      return reply.value;
    } finally {
      w.terminate();
    }
  }

  /* When the last sync of this profile's account succeeded (ms since the
   * epoch, 0 never; cleared at sign-out), for the extension's status view. */
  get _lastSyncTime() {
    let t = Number(Services.prefs.getStringPref(LAST_SYNC_PREF, "0"));
    return Number.isFinite(t) && t > 0 ? t : 0;
  }

  /* The service's status JSON (signed-in account, fingerprints, endpoints). */
  _status() {
    return this._run(() => this._call("statusJSON", {}));
  }

  _collections() {
    return this._run(() => this._call("collectionsJSON", {}));
  }

  _account(op, args, what) {
    for (let v of Object.values(args)) {
      if (!v) {
        return Promise.reject(piclError(PICL_STATUS.INVALID_ARGUMENT, what + " are required"));
      }
    }
    return this._run(() => this._call(op, args));
  }

  /* Runs fn after every earlier operation (one at a time). */
  _run(fn) {
    let p = this._queue.then(async () => {
      await this._init();
      return fn();
    });
    this._queue = p.catch(() => {});
    return p;
  }

  /* An operation queued behind the others, without init (attribute setters). */
  _enqueue(op, args) {
    return this._run(() => this._post(op, args).then(r => r.value));
  }

  async _call(op, args) {
    let r = await this._post(op, args);
    return r.value;
  }

  _post(op, args) {
    return new Promise((resolve, reject) => {
      if (!this._worker) {
        reject(piclError(PICL_STATUS.STATE, "the PiCL worker is not running"));
        return;
      }
      let id = this._nextId++;
      this._pending.set(id, { resolve, reject });
      this._worker.postMessage({ id, op, args });
    });
  }

  _onMessage(msg) {
    if (msg.type == "progress") {
      if (msg.phase == "integrity" && this._failedRecords) {
        /* "<id>: <reason> (not applied)" */
        let text = String(msg.message).replace(/ \(not applied\)$/, "");
        let at = text.lastIndexOf(": ");
        let f = { collection: msg.collection, id: text.slice(0, at), reason: text.slice(at + 2) };
        if (!this._failedRecords.some(x => x.collection == f.collection && x.id == f.id)) {
          this._failedRecords.push(f);
        }
      }
      if (msg.phase == "mass-delete" && /nothing was changed/.test(String(msg.message))) {
        Services.obs.notifyObservers(null, "picl:sync:mass-delete",
                                     JSON.stringify([{ collection: msg.collection, message: msg.message }]));
      }
      this._notify(msg.phase, msg.collection, msg.done, msg.total, msg.message);
      return;
    }
    let p = this._pending.get(msg.id);
    if (!p) {
      return;
    }
    this._pending.delete(msg.id);
    if (msg.state) {
      this._state = msg.state;
      this._state.classes = this._state.classes || {};
    }
    if (msg.ok) {
      p.resolve(msg);
    } else {
      let e = piclError(msg.result, msg.message);
      e.stores = msg.stores;
      p.reject(e);
    }
  }

  _failAll(err) {
    for (let p of this._pending.values()) {
      p.reject(err);
    }
    this._pending.clear();
  }

  _notify(phase, collection, done, total, message) {
    for (let o of Array.from(this._observers)) {
      try {
        if (typeof o == "function") {
          o(phase, collection, done, total, message);
        } else {
          o.onProgress(phase, collection, done, total, message);
        }
      } catch (e) {
        /* an observer that throws is ignored (nsIPiCLObserver) */
      }
    }
  }

  /* Gathers snapshots of the live collections, runs the worker operation
   * op(snaps) returns ([name, args]), then writes back what the engine collected (see the top of
   * this file).  opts.all gathers every record of every collection. */
  async _withStores(live, op, opts = {}) {
    let wantAll = new Set(live.filter(c => opts.all || GATHER_ALL.has(c)));
    for (let attempt = 0; ; attempt++) {
      let snaps = {};
      for (let c of live) {
        let store = PiCLStores.get(c);
        if (wantAll.has(c)) {
          /* all records once, the changes as ids: the worker rebuilds the
           * changes' JSON, so the main thread serialises each record once */
          let both = store.changesAndAll ? await store.changesAndAll()
                                         : { changes: await store.changes(), all: await store.all() };
          let allIds = new Set(both.all.map(r => r.id));
          let changedIds = [];
          let extra = [];
          for (let r of both.changes) {
            if (allIds.has(r.id)) {
              changedIds.push(r.id);
            } else {
              extra.push(r);     /* tombstones */
            }
          }
          snaps[c] = { all: JSON.stringify(both.all), changedIds, changes: JSON.stringify(extra) };
        } else {
          snaps[c] = { changes: JSON.stringify(await store.changes()), all: null };
        }
        await new Promise(resolve => Services.tm.dispatchToMainThread(resolve));
      }
      let value;
      let stores;
      let failure = null;
      try {
        let r = await this._post(...op(snaps));
        value = r.value;
        stores = r.stores || {};
      } catch (e) {
        failure = e;
        stores = e.stores || {};
      }
      let needAll = live.filter(c => stores[c] && stores[c].needAll && !wantAll.has(c));
      let applyError = await this._writeBack(live, stores);
      if (failure && needAll.length && attempt == 0) {
        for (let c of needAll) {
          wantAll.add(c);
        }
        continue;
      }
      if (failure) {
        throw failure;
      }
      if (applyError) {
        throw applyError;
      }
      return value;
    }
  }

  /* Applies and marks what the worker collected; resets the C side's local
   * sync state when a local apply failed. */
  async _writeBack(live, stores) {
    let failed = [];
    for (let c of live) {
      let s = stores[c];
      if (!s) {
        continue;
      }
      let store = PiCLStores.get(c);
      try {
        if (s.wipe) {
          await store.wipe();
        }
        if (s.reset) {
          await store.reset();
        }
        if (s.applied && s.applied.length) {
          this._notify("apply", c, 0, s.applied.length, "");
          await store.apply(s.applied);
          this._notify("apply", c, s.applied.length, s.applied.length, "");
        }
      } catch (e) {
        failed.push(c + ": " + (e && e.message || e));
        continue;
      }
      if (s.marked && s.marked.length) {
        await store.markSynced(s.marked);
      }
    }
    if (!failed.length) {
      return null;
    }
    try {
      await this._post("resetLocalState", {});
    } catch (e) {
      failed.push("and resetting the sync state failed: " + e.message);
    }
    return piclError(PICL_STATUS.DATABASE, "applying incoming records failed (" + failed.join("; ") +
                     "); the next sync downloads them again");
  }
}

export const PiCLService = new Service();
