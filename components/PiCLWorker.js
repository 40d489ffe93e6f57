// SPDX-License-Identifier: MPL-2.0
/* PiCLWorker.js -- the ChromeWorker of PiCLService.sys.mjs: owns the libpicl service object and makes every long C call (stretching, SRP, network, sync) off the main thread. */
/* eslint-env worker */
/* global ctypes */
"use strict";

/*
 * Protocol (structured-clone messages):
 *   main -> worker  {id, op, args}
 *   worker -> main  {id, ok: true, value, state}
 *                   {id, ok: false, result: <picl_status>, message, state}
 *                   {type: "progress", phase, collection, done, total, message}
 * `state` is what the main thread caches so its attribute getters never
 * block: {keyserverURL, email, verified, classes: {collection: "A"|"B"},
 * classesKnown (the classes come from the account's class map, not defaults),
 * hasKeys (kA and kB are on this device)}.
 *
 * The service object is used by this thread only (picl.h).  During a sync
 * the C engine calls the store callbacks below synchronously; they answer
 * from the snapshot the main thread gathered (changes, and all records when
 * provided) and collect what the engine wants applied and marked, which the
 * main thread then writes through the live APIs (PiCLStores.sys.mjs).
 */

/* PICL_STATUS: the picl_status codes, generated from components/status.def */
importScripts(new URL("PiCLStatus.js", self.location.href).href); /* beside this file (a bare name is refused) */
/* global PICL_STATUS */
const PICL_OK = PICL_STATUS.OK;
const PICL_ERROR_INVALID_ARGUMENT = PICL_STATUS.INVALID_ARGUMENT;
const PICL_ERROR_UNSUPPORTED = PICL_STATUS.UNSUPPORTED;
const PICL_ERROR_STATE = PICL_STATUS.STATE;
const PICL_ERROR_INTERNAL = PICL_STATUS.INTERNAL;

let lib = null;
let fn = {};
let svc = null;
let T = null;                 /* ctypes types */
let keepAlive = [];           /* callbacks and structs the C side points at, for the service's life */
let temps = [];               /* argument buffers, for the current call */
let snapshots = {};           /* collection -> snapshot state during one call */

function fail(result, message) {
  let e = new Error(message);
  e.result = result;
  return e;
}

/* JS string -> NUL-terminated UTF-8 char* (the buffer must outlive the call). */
const encoder = new TextEncoder();
function cstr(s) {
  let bytes = encoder.encode(String(s));
  let buf = ctypes.uint8_t.array(bytes.length + 1)();
  for (let i = 0; i < bytes.length; i++) {
    buf[i] = bytes[i];
  }
  buf[bytes.length] = 0;
  temps.push(buf);
  return ctypes.cast(buf.address(), ctypes.char.ptr);
}

function readStr(p) {
  if (p.isNull()) {
    return "";
  }
  return p.readStringReplaceMalformed ? p.readStringReplaceMalformed() : p.readString();
}

function declare(name, ret, ...args) {
  fn[name] = lib.declare(name, ctypes.default_abi, ret, ...args);
}

function open(path) {
  lib = ctypes.open(path);
  const st = ctypes.int;             /* picl_status: an enum, int-sized */
  const svcp = ctypes.voidptr_t;     /* picl_service* (opaque here) */
  const cp = ctypes.char.ptr;
  const cpp = ctypes.char.ptr.ptr;
  T = { st, svcp, cp, cpp };
  T.observer = ctypes.FunctionType(ctypes.default_abi, ctypes.void_t,
                                    [ctypes.voidptr_t, cp, cp, ctypes.int64_t, ctypes.int64_t, cp]);
  T.cbOut = ctypes.FunctionType(ctypes.default_abi, st, [ctypes.voidptr_t, cpp]);
  T.cbGet = ctypes.FunctionType(ctypes.default_abi, st, [ctypes.voidptr_t, cp, cpp]);
  T.cbIn = ctypes.FunctionType(ctypes.default_abi, st, [ctypes.voidptr_t, cp]);
  T.cbVoid = ctypes.FunctionType(ctypes.default_abi, st, [ctypes.voidptr_t]);
  T.callbacks = new ctypes.StructType("picl_store_callbacks", [
    { changes: T.cbOut.ptr }, { all: T.cbOut.ptr }, { get: T.cbGet.ptr },
    { apply: T.cbIn.ptr }, { mark_synced: T.cbIn.ptr }, { reset: T.cbVoid.ptr }, { wipe: T.cbVoid.ptr },
  ]);

  declare("picl_strerror", ctypes.char.ptr, st);
  declare("picl_free", ctypes.void_t, ctypes.voidptr_t);
  declare("picl_alloc_string", ctypes.char.ptr, cp);
  declare("picl_service_create", st, cp, svcp.ptr);
  declare("picl_service_release", ctypes.uint32_t, svcp);
  declare("picl_service_last_error", cp, svcp);
  declare("picl_service_set_keyserver_url", st, svcp, cp);
  declare("picl_service_get_keyserver_url", st, svcp, cpp);
  declare("picl_service_set_storage_url", st, svcp, cp);
  declare("picl_service_set_persist_keys", st, svcp, ctypes.int);
  declare("picl_service_create_account", st, svcp, cp, cp);
  declare("picl_service_verify_email", st, svcp, cp);
  declare("picl_service_resend_verification", st, svcp);
  declare("picl_service_sign_in", st, svcp, cp, cp);
  declare("picl_service_sign_out", st, svcp);
  declare("picl_service_change_password", st, svcp, cp, cp);
  declare("picl_service_forgot_password", st, svcp, cp);
  declare("picl_service_complete_password_reset", st, svcp, cp, cp);
  declare("picl_service_destroy_account", st, svcp, cp);
  declare("picl_service_get_signed_in_email", st, svcp, cpp);
  declare("picl_service_get_verified", st, svcp, ctypes.int.ptr);
  declare("picl_service_get_status_json", st, svcp, cpp);
  declare("picl_service_get_collection_class", st, svcp, cp, cpp);
  declare("picl_service_set_collection_class", st, svcp, cp, cp);
  declare("picl_service_get_collections_json", st, svcp, cpp);
  declare("picl_service_set_store", st, svcp, cp, T.callbacks.ptr, ctypes.voidptr_t);
  declare("picl_service_sync", st, svcp, cp, cpp);
  declare("picl_service_wipe_server", st, svcp, cp);
  declare("picl_service_reset_local_state", st, svcp);
  declare("picl_service_add_observer", st, svcp, T.observer.ptr, ctypes.voidptr_t);
  /* devices, security events, recovery key (optional, like undo) */
  try {
    declare("picl_service_set_device", st, svcp, cp, cp);
    declare("picl_service_get_devices_json", st, svcp, cpp);
    declare("picl_service_rename_device", st, svcp, cp);
    declare("picl_service_sign_out_device", st, svcp, cp);
    declare("picl_service_get_security_events_json", st, svcp, cpp);
    declare("picl_service_create_recovery_key", st, svcp, cp, cpp);
    declare("picl_service_get_recovery_key_exists", st, svcp, ctypes.int.ptr);
    declare("picl_service_remove_recovery_key", st, svcp);
    declare("picl_service_complete_password_reset_with_recovery_key", st, svcp, cp, cp, cp);
  } catch (e) { /* older libpicl */ }
  /* other devices: send tab, their open tabs (optional, like undo) */
  try {
    declare("picl_service_send_tab", st, svcp, cp, cp, cp);
    declare("picl_service_get_remote_tabs_json", st, svcp, cpp);
    declare("picl_service_get_received_tabs_json", st, svcp, cpp);
  } catch (e) { /* older libpicl */ }
  /* the stretching new passwords get and sign-ins upgrade to (optional) */
  try {
    declare("picl_service_set_stretching", st, svcp, ctypes.uint32_t, ctypes.uint64_t, ctypes.uint32_t,
            ctypes.uint32_t, ctypes.uint32_t);
  } catch (e) { /* older libpicl */ }
  /* undo (optional: a library without them still loads) */
  try {
    declare("picl_service_set_allow_mass_delete", st, svcp, ctypes.int);
    declare("picl_service_restore_collection", st, svcp, cp, ctypes.double, ctypes.int, cpp);
  } catch (e) { /* older libpicl */ }
}

/* Calls a picl_service_* function; throws {result, message} on failure. */
function call(name, ...args) {
  let rc;
  try {
    rc = fn[name](svc, ...args);
  } finally {
    temps = [];
  }
  if (rc != PICL_OK) {
    let msg = svc ? readStr(fn.picl_service_last_error(svc)) : "";
    if (!msg) {
      msg = readStr(fn.picl_strerror(rc));
    }
    throw fail(rc, msg);
  }
}

/* Calls a getter that returns a malloc()ed string through char**. */
function callOut(name, ...args) {
  let out = new T.cp();
  call(name, ...args, out.address());
  let s = readStr(out);
  fn.picl_free(out);
  return s;
}

function permanent(x) {
  keepAlive.push(x);
  return x;
}

/* ---- store callbacks over the snapshot ---------------------------------- */

function giveString(outp, s) {
  let p = fn.picl_alloc_string(cstr(s));
  if (p.isNull()) {
    return PICL_STATUS.NO_MEMORY;
  }
  outp.contents = p;
  return PICL_OK;
}

function makeStore(collection) {
  let snap = () => snapshots[collection] || null;
  let guard = f => (...a) => {
    try {
      return f(...a);
    } catch (e) {
      let s = snap();
      if (s) {
        s.errors.push(String(e && e.message || e));
      }
      return PICL_ERROR_INTERNAL;
    }
  };
  let cb = new T.callbacks();
  let changes = T.cbOut.ptr(guard((ctx, out) => {
    let s = snap();
    if (!s) {
      return PICL_ERROR_STATE;
    }
    return giveString(out, s.changes);
  }));
  let all = T.cbOut.ptr(guard((ctx, out) => {
    let s = snap();
    if (!s) {
      return PICL_ERROR_STATE;
    }
    if (s.all === null) {
      s.needAll = true;   /* the main thread gathers all records and retries */
      return PICL_ERROR_STATE;
    }
    return giveString(out, s.all);
  }));
  let get = T.cbGet.ptr(guard((ctx, id, out) => {
    let s = snap();
    if (!s) {
      return PICL_ERROR_STATE;
    }
    if (!s.byId) {
      s.byId = new Map();
      for (let text of [s.all, s.changes]) {
        if (text) {
          for (let r of JSON.parse(text)) {
            s.byId.set(r.id, r);
          }
        }
      }
    }
    let r = s.byId.get(readStr(id));
    return giveString(out, r ? JSON.stringify(r) : "null");
  }));
  let apply = T.cbIn.ptr(guard((ctx, json) => {
    let s = snap();
    if (!s) {
      return PICL_ERROR_STATE;
    }
    let recs = JSON.parse(readStr(json));
    if (!Array.isArray(recs)) {
      return PICL_ERROR_INVALID_ARGUMENT;
    }
    for (let r of recs) {
      s.applied.set(r.id, r);   /* a later page wins for the same id */
    }
    return PICL_OK;
  }));
  let mark = T.cbIn.ptr(guard((ctx, json) => {
    let s = snap();
    if (!s) {
      return PICL_ERROR_STATE;
    }
    let recs = JSON.parse(readStr(json));
    if (!Array.isArray(recs)) {
      return PICL_ERROR_INVALID_ARGUMENT;
    }
    for (let r of recs) {
      s.marked.push({ id: r.id });
    }
    return PICL_OK;
  }));
  let reset = T.cbVoid.ptr(guard(() => {
    let s = snap();
    if (!s) {
      return PICL_ERROR_STATE;
    }
    s.reset = true;
    return PICL_OK;
  }));
  let wipe = T.cbVoid.ptr(guard(() => {
    let s = snap();
    if (!s) {
      return PICL_ERROR_STATE;
    }
    s.wipe = true;
    s.applied.clear();
    return PICL_OK;
  }));
  cb.changes = changes;
  cb.all = all;
  cb.get = get;
  cb.apply = apply;
  cb.mark_synced = mark;
  cb.reset = reset;
  cb.wipe = wipe;
  permanent([changes, all, get, apply, mark, reset, wipe]);
  permanent(cb);
  let ctx = permanent(ctypes.uint8_t.array(1)());
  call("picl_service_set_store", cstr(collection), cb.address(), ctx.address());
}

/* ---- state the main thread caches --------------------------------------- */

const KNOWN = ["bookmarks", "history", "passwords"];
/* the other live stores (PiCLStores EXTRA_COLLECTIONS; synced by default too) */
const EXTRA_LIVE = ["forms", "prefs", "tabs"];

function state() {
  if (!svc) {
    return null;
  }
  let st = { keyserverURL: "", email: "", verified: false, classes: {}, classesKnown: false, hasKeys: false };
  try {
    st.keyserverURL = callOut("picl_service_get_keyserver_url");
  } catch (e) { /* keep "" */ }
  try {
    st.email = callOut("picl_service_get_signed_in_email");
  } catch (e) { /* keep "" */ }
  try {
    let v = ctypes.int(0);
    call("picl_service_get_verified", v.address());
    st.verified = !!v.value;
  } catch (e) { /* keep false */ }
  try {
    st.hasKeys = JSON.parse(callOut("picl_service_get_status_json")).hasKeys === true;
  } catch (e) { /* keep false */ }
  try {
    for (let c of JSON.parse(callOut("picl_service_get_collections_json"))) {
      if (c && c.name && (c.class == "A" || c.class == "B")) {
        st.classes[c.name] = c.class;
        st.classesKnown = true;
      }
    }
  } catch (e) { /* fall back below */ }
  for (let c of KNOWN) {
    if (!st.classes[c]) {
      try {
        st.classes[c] = callOut("picl_service_get_collection_class", cstr(c));
      } catch (e) { /* the main thread uses its defaults */ }
    }
  }
  return st;
}

/* ---- operations ---------------------------------------------------------- */

function withSnapshots(snaps, f) {
  snapshots = {};
  for (let c of Object.keys(snaps || {})) {
    let changes = snaps[c].changes || "[]";
    if (Array.isArray(snaps[c].changedIds) && snaps[c].all) {
      /* changes = the changed ids' records from all, plus the tombstones */
      let ids = new Set(snaps[c].changedIds);
      let list = JSON.parse(snaps[c].all).filter(r => ids.has(r.id)).concat(JSON.parse(changes));
      changes = JSON.stringify(list);
    }
    snapshots[c] = { changes, all: snaps[c].all ?? null, byId: null,
                     applied: new Map(), marked: [], reset: false, wipe: false, needAll: false,
                     errors: [] };
  }
  let out = { value: undefined, stores: {} };
  let err = null;
  try {
    out.value = f();
  } catch (e) {
    err = e;
  }
  for (let c of Object.keys(snapshots)) {
    let s = snapshots[c];
    out.stores[c] = { applied: Array.from(s.applied.values()), marked: s.marked, reset: s.reset,
                      wipe: s.wipe, needAll: s.needAll, errors: s.errors };
  }
  snapshots = {};
  if (err) {
    err.stores = out.stores;
    throw err;
  }
  return out;
}

/* The service functions a complete libpicl exports. */
const SERVICE_SYMBOLS = [
  "picl_service_create", "picl_service_release", "picl_service_last_error", "picl_service_sign_in",
  "picl_service_sync", "picl_service_set_store", "picl_service_add_observer", "picl_alloc_string",
];

const ops = {
  /* Opens the library on its own and reports what it offers, without
   * creating a service: {strerror: {code: text}, missing: [symbols]}. */
  probe({ libPath, codes }) {
    let l;
    try {
      l = ctypes.open(libPath);
    } catch (e) {
      throw fail(PICL_ERROR_UNSUPPORTED, "cannot load libpicl from " + libPath + ": " + e.message);
    }
    try {
      let strerror = l.declare("picl_strerror", ctypes.default_abi, ctypes.char.ptr, ctypes.int);
      let texts = {};
      for (let c of codes || []) {
        texts[c] = readStr(strerror(c));
      }
      let missing = [];
      for (let name of SERVICE_SYMBOLS) {
        try {
          l.declare(name, ctypes.default_abi, ctypes.void_t);
        } catch (e) {
          missing.push(name);
        }
      }
      return { value: { strerror: texts, missing } };
    } finally {
      l.close();
    }
  },
  init({ libPath, stateDir, keyserverURL, storageURL, persistKeys, deviceName }) {
    if (!svc) {
      try {
        open(libPath);
      } catch (e) {
        throw fail(PICL_ERROR_UNSUPPORTED, "cannot load libpicl from " + libPath + ": " + e.message);
      }
      let out = T.svcp();
      let rc = fn.picl_service_create(cstr(stateDir), out.address());
      temps = [];
      if (rc != PICL_OK) {
        throw fail(rc, "cannot create the PiCL service in " + stateDir + ": " + readStr(fn.picl_strerror(rc)));
      }
      svc = out;
      let observer = permanent(T.observer.ptr((ctx, phase, collection, done, total, message) => {
        try {
          postMessage({ type: "progress", phase: readStr(phase), collection: readStr(collection),
                        done: Number(done.toString()), total: Number(total.toString()),
                        message: readStr(message) });
        } catch (e) {
          /* never throw into C */
        }
      }));
      call("picl_service_add_observer", observer, ctypes.voidptr_t(0));
      /* this device on the account: a browser, named after its profile */
      if (fn.picl_service_set_device) {
        try {
          call("picl_service_set_device", cstr(deviceName || ""), cstr("browser"));
        } catch (e) { /* a name it refuses: the host name */ }
      }
      /* this device's id, made now (STATE/devices.json): the tabs store reads it */
      if (fn.picl_service_get_received_tabs_json) {
        try {
          callOut("picl_service_get_received_tabs_json");
        } catch (e) { /* the clients store makes it at the first sync */ }
      }
      for (let c of KNOWN.concat(EXTRA_LIVE)) {
        makeStore(c);
      }
    }
    if (keyserverURL) {
      call("picl_service_set_keyserver_url", cstr(keyserverURL));
    }
    if (typeof storageURL == "string") {
      call("picl_service_set_storage_url", cstr(storageURL));
    }
    if (typeof persistKeys == "boolean") {
      call("picl_service_set_persist_keys", persistKeys ? 1 : 0);
    }
    return { value: true };
  },
  setKeyserverURL({ url }) {
    call("picl_service_set_keyserver_url", cstr(url));
    return { value: undefined };
  },
  createAccount({ email, password }) {
    call("picl_service_create_account", cstr(email), cstr(password));
    return { value: undefined };
  },
  verifyEmail({ code }) {
    call("picl_service_verify_email", cstr(code));
    return { value: undefined };
  },
  devicesJSON() {
    return { value: callOut("picl_service_get_devices_json") };
  },
  renameDevice({ name }) {
    call("picl_service_rename_device", cstr(name));
    return { value: undefined };
  },
  signOutDevice({ id }) {
    call("picl_service_sign_out_device", cstr(id));
    return { value: undefined };
  },
  eventsJSON() {
    return { value: callOut("picl_service_get_security_events_json") };
  },
  createRecoveryKey({ password }) {
    return { value: callOut("picl_service_create_recovery_key", cstr(password)) };
  },
  recoveryKeyExists() {
    let v = ctypes.int(0);
    call("picl_service_get_recovery_key_exists", v.address());
    return { value: !!v.value };
  },
  removeRecoveryKey() {
    call("picl_service_remove_recovery_key");
    return { value: undefined };
  },
  completePasswordResetWithRecoveryKey({ code, newPassword, recoveryKey }) {
    call("picl_service_complete_password_reset_with_recovery_key", cstr(code), cstr(newPassword), cstr(recoveryKey));
    return { value: undefined };
  },
  resendVerification() {
    call("picl_service_resend_verification");
    return { value: undefined };
  },
  signIn({ email, password }) {
    call("picl_service_sign_in", cstr(email), cstr(password));
    return { value: undefined };
  },
  signOut() {
    call("picl_service_sign_out");
    return { value: undefined };
  },
  changePassword({ oldPassword, newPassword }) {
    call("picl_service_change_password", cstr(oldPassword), cstr(newPassword));
    return { value: undefined };
  },
  forgotPassword({ email }) {
    call("picl_service_forgot_password", cstr(email));
    return { value: undefined };
  },
  completePasswordReset({ code, newPassword, snaps }) {
    return withSnapshots(snaps, () =>
      call("picl_service_complete_password_reset", cstr(code), cstr(newPassword)));
  },
  destroyAccount({ password }) {
    call("picl_service_destroy_account", cstr(password));
    return { value: undefined };
  },
  setCollectionClass({ collection, cls, snaps }) {
    return withSnapshots(snaps, () =>
      call("picl_service_set_collection_class", cstr(collection), cstr(cls)));
  },
  sync({ csv, snaps }) {
    return withSnapshots(snaps, () => callOut("picl_service_sync", cstr(csv)));
  },
  statusJSON() {
    return { value: callOut("picl_service_get_status_json") };
  },
  collectionsJSON() {
    return { value: callOut("picl_service_get_collections_json") };
  },
  sendTab({ device, url, title }) {
    call("picl_service_send_tab", cstr(device), cstr(url), cstr(title));
    return { value: undefined };
  },
  remoteTabsJSON() {
    return { value: callOut("picl_service_get_remote_tabs_json") };
  },
  receivedTabsJSON() {
    return { value: callOut("picl_service_get_received_tabs_json") };
  },
  wipeServer({ collection }) {
    call("picl_service_wipe_server", cstr(collection));
    return { value: undefined };
  },
  setAllowMassDelete({ allow }) {
    call("picl_service_set_allow_mass_delete", allow ? 1 : 0);
    return { value: undefined };
  },
  restoreCollection({ collection, asOf, apply, snaps }) {
    return withSnapshots(snaps, () =>
      callOut("picl_service_restore_collection", cstr(collection), asOf, apply ? 1 : 0));
  },
  /* picl_service_set_stretching: the C library refuses values below the
   * spec's (the floor) or above 4 times them (WEAK_PARAMS, UNSUPPORTED). */
  setStretching({ pbkdf2Rounds1, scryptN, scryptR, scryptP, pbkdf2Rounds2 }) {
    if (!fn.picl_service_set_stretching) {
      throw fail(PICL_ERROR_UNSUPPORTED, "this libpicl cannot configure the password stretching");
    }
    let v = [pbkdf2Rounds1, scryptN, scryptR, scryptP, pbkdf2Rounds2];
    if (!v.every(x => Number.isSafeInteger(x) && x > 0 && x <= 0xffffffff)) {
      throw fail(PICL_ERROR_INVALID_ARGUMENT, "stretching: five positive integers are needed");
    }
    call("picl_service_set_stretching", pbkdf2Rounds1, ctypes.uint64_t(scryptN), scryptR, scryptP, pbkdf2Rounds2);
    return { value: undefined };
  },
  resetLocalState() {
    call("picl_service_reset_local_state");
    return { value: undefined };
  },
  state() {
    return { value: state() };
  },
  shutdown() {
    if (svc) {
      fn.picl_service_release(svc);
      svc = null;
    }
    if (lib) {
      lib.close();
      lib = null;
    }
    return { value: undefined };
  },
};

onmessage = function (event) {
  let { id, op, args } = event.data;
  let reply;
  try {
    if (!ops[op]) {
      throw fail(PICL_ERROR_INVALID_ARGUMENT, "unknown operation " + op);
    }
    if (op != "init" && op != "shutdown" && op != "probe" && !svc) {
      throw fail(PICL_ERROR_STATE, "the PiCL service is not initialised");
    }
    let r = ops[op](args || {});
    reply = { id, ok: true, value: r.value, stores: r.stores, state: op == "shutdown" ? null : state() };
  } catch (e) {
    reply = { id, ok: false, result: Number.isInteger(e.result) ? e.result : PICL_ERROR_INTERNAL,
              message: String(e && e.message || e), stores: e.stores, state: state() };
  }
  postMessage(reply);
};
