// SPDX-License-Identifier: MPL-2.0
/* head.js -- our own xpcshell harness (release Firefox ships no Assert.sys.mjs
 * and no testing-common): add_task, registerCleanupFunction, Assert,
 * do_get_profile, a clean shutdown, and a "P passed, F failed" line.
 *
 * Run by tests/xpcshell/run.sh as
 *   firefox-esr --xpcshell -g GRE -a GRE/browser -f head.js -f test_x.js -e run_tasks()
 * Each add_task is one test: it passes when it resolves, and fails when it
 * throws or any Assert inside it fails.  Environment (set by run.sh):
 *   PICL_XPC_PROFILE  the fresh profile directory of this test file
 *   PICL_SRCDIR       the source tree; PICL_LIB the libpicl.so to load
 *   PICL_KEYSERVER / PICL_STORAGE  server URLs when the servers run
 * See tests/xpcshell/README for why things are done this way. */
"use strict";

const _tasks = [];
const _cleanups = [];
let _current = null;     /* { name, failures } of the running task */
const _totals = { passed: 0, failed: 0, asserts: 0 };
let _testName = "xpcshell";

function _log(s) {
  dump(s + "\n");
}

/* Registers an async function as one test. */
function add_task(fn) {
  _tasks.push(fn);
  return fn;
}

/* fn runs after all tasks (last registered first), awaited. */
function registerCleanupFunction(fn) {
  _cleanups.push(fn);
}

function info(msg) {
  _log("INFO | " + _testName + " | " + msg);
}

function _fail(msg, stack) {
  if (_current) {
    _current.failures.push(msg);
  }
  _log("TEST-UNEXPECTED-FAIL | " + _testName + " | " + (_current ? _current.name : "-") +
       " | " + msg + (stack ? "\n" + stack : ""));
}

/* Equality for deepEqual: same type, same own enumerable keys, same values. */
function _deepEqual(a, b) {
  if (a === b) {
    return true;
  }
  if (typeof a == "number" && typeof b == "number") {
    return Number.isNaN(a) && Number.isNaN(b);
  }
  if (a === null || b === null || typeof a != "object" || typeof b != "object") {
    return false;
  }
  if (Array.isArray(a) != Array.isArray(b)) {
    return false;
  }
  let ka = Object.keys(a).sort();
  let kb = Object.keys(b).sort();
  if (ka.length != kb.length) {
    return false;
  }
  for (let i = 0; i < ka.length; i++) {
    if (ka[i] != kb[i] || !_deepEqual(a[ka[i]], b[ka[i]])) {
      return false;
    }
  }
  return true;
}

function _show(v) {
  try {
    let s = JSON.stringify(v);
    if (s === undefined) {
      s = String(v);
    }
    return s.length > 300 ? s.slice(0, 300) + "..." : s;
  } catch (e) {
    return String(v);
  }
}

/* Does error e match expected (undefined, a RegExp on the message, an
 * object whose fields must all be equal, or a predicate)? */
function _errorMatches(e, expected) {
  if (expected === undefined) {
    return true;
  }
  if (expected instanceof RegExp) {
    return expected.test(String(e && e.message !== undefined ? e.message : e));
  }
  if (typeof expected == "function") {
    return !!expected(e);
  }
  if (typeof expected == "object" && expected) {
    for (let k of Object.keys(expected)) {
      let want = expected[k];
      let got = e ? e[k] : undefined;
      if (want instanceof RegExp ? !want.test(String(got)) : !_deepEqual(got, want)) {
        return false;
      }
    }
    return true;
  }
  return false;
}

const Assert = {
  _check(ok, msg, detail) {
    _totals.asserts++;
    if (!ok) {
      _fail((msg || "assertion failed") + (detail ? " -- " + detail : ""),
            new Error().stack.split("\n").slice(2, 5).join("\n"));
    }
    return ok;
  },
  ok(v, msg) {
    return this._check(!!v, msg, "got " + _show(v));
  },
  equal(got, want, msg) {
    return this._check(got == want, msg, "got " + _show(got) + ", want " + _show(want));
  },
  strictEqual(got, want, msg) {
    return this._check(got === want, msg, "got " + _show(got) + ", want " + _show(want));
  },
  notEqual(got, want, msg) {
    return this._check(got != want, msg, "both " + _show(got));
  },
  deepEqual(got, want, msg) {
    return this._check(_deepEqual(got, want), msg, "got " + _show(got) + ", want " + _show(want));
  },
  greater(a, b, msg) {
    return this._check(a > b, msg, _show(a) + " > " + _show(b));
  },
  greaterOrEqual(a, b, msg) {
    return this._check(a >= b, msg, _show(a) + " >= " + _show(b));
  },
  less(a, b, msg) {
    return this._check(a < b, msg, _show(a) + " < " + _show(b));
  },
  lessOrEqual(a, b, msg) {
    return this._check(a <= b, msg, _show(a) + " <= " + _show(b));
  },
  /* fn() must throw an error matching expected (see _errorMatches). */
  throws(fn, expected, msg) {
    try {
      fn();
    } catch (e) {
      return this._check(_errorMatches(e, expected), msg, "threw " + _show(String(e)) +
                         " result=" + (e && e.result));
    }
    return this._check(false, msg, "did not throw");
  },
  /* promise must reject with an error matching expected. */
  async rejects(promise, expected, msg) {
    try {
      let v = await promise;
      return this._check(false, msg, "resolved to " + _show(v));
    } catch (e) {
      return this._check(_errorMatches(e, expected), msg, "rejected with " +
                         _show(String(e && e.message)) + " result=" + (e && e.result));
    }
  },
};

/* Resolves after ms milliseconds (a timer keeps the event loop running). */
const _timers = [];
function do_timeout_promise(ms) {
  return new Promise(resolve => {
    let t = Cc["@mozilla.org/timer;1"].createInstance(Ci.nsITimer);
    t.initWithCallback(() => resolve(), ms, Ci.nsITimer.TYPE_ONE_SHOT);
    _timers.push(t);
  });
}

/* Registers the test file's fresh profile directory (PICL_XPC_PROFILE, else
 * a new temporary one) as ProfD/ProfLD/TmpD and announces it, once. */
let _profile = null;
function do_get_profile() {
  if (_profile) {
    return _profile.clone();
  }
  let path = Services.env.get("PICL_XPC_PROFILE");
  let profd;
  if (path) {
    profd = Cc["@mozilla.org/file/local;1"].createInstance(Ci.nsIFile);
    profd.initWithPath(path);
    if (!profd.exists()) {
      profd.create(Ci.nsIFile.DIRECTORY_TYPE, 0o700);
    }
  } else {
    profd = Services.dirsvc.get("TmpD", Ci.nsIFile);
    profd.append("picl-xpcshell-profile");
    profd.createUnique(Ci.nsIFile.DIRECTORY_TYPE, 0o700);
  }
  let tmpd = profd.clone();
  tmpd.append("tmp");
  let provider = {
    getFile(prop, persistent) {
      persistent.value = true;
      if (prop == "ProfD" || prop == "ProfLD" || prop == "ProfDS" || prop == "ProfLDS") {
        return profd.clone();
      }
      if (prop == "TmpD") {
        if (!tmpd.exists()) {
          tmpd.create(Ci.nsIFile.DIRECTORY_TYPE, 0o700);
        }
        return tmpd.clone();
      }
      throw Components.Exception("", Cr.NS_ERROR_FAILURE);
    },
    QueryInterface: ChromeUtils.generateQI(["nsIDirectoryServiceProvider"]),
  };
  Services.dirsvc.QueryInterface(Ci.nsIDirectoryService).registerProvider(provider);
  Services.obs.notifyObservers(null, "profile-do-change", "xpcshell-do-get-profile");
  Services.obs.notifyObservers(null, "profile-after-change", "xpcshell-do-get-profile");
  /* PSM opens (and creates) key4.db in ProfD on first use */
  Cc["@mozilla.org/psm;1"].getService(Ci.nsISupports);
  _profile = profd;
  return profd.clone();
}

/* The source tree and a path inside it. */
function picl_srcdir() {
  let s = Services.env.get("PICL_SRCDIR");
  if (!s) {
    let f = __LOCATION__.parent.parent.parent;   /* tests/xpcshell/head.js -> tree */
    s = f.path;
  }
  return s;
}

/* Maps resource://picl/ to components/ and imports a module from there.
 * (System modules and their ChromeWorkers must come from resource: URLs.) */
function picl_import(name) {
  let res = Services.io.getProtocolHandler("resource").QueryInterface(Ci.nsIResProtocolHandler);
  if (!res.hasSubstitution("picl")) {
    let dir = Cc["@mozilla.org/file/local;1"].createInstance(Ci.nsIFile);
    dir.initWithPath(picl_srcdir());
    dir.append("components");
    res.setSubstitution("picl", Services.io.newFileURI(dir));
  }
  return ChromeUtils.importESModule("resource://picl/" + name);
}

/* Walks the shutdown phases in order so Places closes, logins.json is saved
 * and the Rust login store lets go before xpcom-shutdown. */
function _shutdown() {
  for (let phase = 1; phase <= 7; phase++) {
    try {
      Services.startup.advanceShutdownPhase(phase);
    } catch (e) {
      _log("INFO | shutdown phase " + phase + ": " + e);
    }
  }
}

async function _runAll() {
  for (let fn of _tasks) {
    let name = fn.name || "anonymous";
    _current = { name, failures: [] };
    let t0 = Date.now();
    try {
      await fn();
    } catch (e) {
      _fail("threw " + e + (e && e.result !== undefined ? " (result " + e.result + ")" : ""),
            e && e.stack);
    }
    let ms = Date.now() - t0;
    if (_current.failures.length) {
      _totals.failed++;
      _log("TEST-FAIL | " + _testName + " | " + name + " | " + ms + " ms");
    } else {
      _totals.passed++;
      _log("TEST-PASS | " + _testName + " | " + name + " | " + ms + " ms");
    }
    _current = null;
  }
  _current = { name: "cleanup", failures: [] };
  while (_cleanups.length) {
    let fn = _cleanups.pop();
    try {
      await fn();
    } catch (e) {
      _fail("cleanup threw " + e, e && e.stack);
    }
  }
  if (_current.failures.length) {
    _totals.failed++;
  }
  _current = null;
}

/* Runs every task, then shuts down; prints "<name>: P passed, F failed" and
 * quits with 0 only when nothing failed.  seconds bounds the whole run. */
function run_tasks(seconds) {
  _testName = Services.env.get("PICL_XPC_TEST") || "xpcshell";
  let done = false;
  _runAll().then(
    () => { done = true; },
    e => { _fail("harness: " + e, e && e.stack); _totals.failed++; done = true; }
  );
  let deadline = Date.now() + (seconds || 120) * 1000;
  Services.tm.spinEventLoopUntil("picl-xpcshell", () => done || Date.now() > deadline);
  if (!done) {
    _log("TEST-UNEXPECTED-FAIL | " + _testName + " | timed out");
    _totals.failed++;
  }
  if (_tasks.length == 0) {
    _log("TEST-UNEXPECTED-FAIL | " + _testName + " | no tasks");
    _totals.failed++;
  }
  _shutdown();
  _log("RESULT | " + _testName + ": " + _totals.passed + " passed, " + _totals.failed + " failed (" +
       _totals.asserts + " assertions)");
  quit(_totals.failed ? 1 : 0);
}

/* ======================================================================
 * PiCL helpers shared by the tests and their peer processes (peer.js).
 * ==================================================================== */

/* The servers run.sh started; a test that needs them fails without them. */
function picl_servers() {
  let keyserver = Services.env.get("PICL_KEYSERVER");
  let data = Services.env.get("PICL_KEYSERVER_DATA");
  if (!keyserver || !data) {
    throw new Error("PICL_KEYSERVER / PICL_KEYSERVER_DATA not set: run.sh could not start " +
                    "build/picl-keyserver and build/picl-storage");
  }
  return { keyserver, data };
}

/* A fresh address for this run. */
function picl_email(tag) {
  return tag + "-" + Date.now().toString(36) + Math.floor(Math.random() * 1e6).toString(36) + "@example.com";
}

/* The newest code (X-Verify-Code or X-Recovery-Code) the keyserver mailed
 * to email, from its Maildir (<data>/mail/new). */
async function picl_mail_code(email, header) {
  let dir = PathUtils.join(picl_servers().data, "mail", "new");
  for (let tries = 0; tries < 50; tries++) {
    let best = null;
    for (let f of await IOUtils.getChildren(dir)) {
      let text = await IOUtils.readUTF8(f);
      let hdr = text.split(/\r?\n\r?\n/)[0];
      let to = /^To:\s*(.*)$/mi.exec(hdr);
      let code = new RegExp("^" + header + ":\\s*(\\S+)", "mi").exec(hdr);
      if (to && code && to[1].includes(email)) {
        let st = await IOUtils.stat(f);
        if (!best || st.lastModified >= best.t) {
          best = { t: st.lastModified, code: code[1] };
        }
      }
    }
    if (best) {
      return best.code;
    }
    await do_timeout_promise(100);
  }
  throw new Error("no " + header + " mail for " + email);
}

/* A monotonic clock in milliseconds. */
function picl_now() {
  return typeof ChromeUtils.now == "function" ? ChromeUtils.now() : Date.now();
}

/* This thread's scheduler counters from /proc/thread-self/schedstat (read
 * with libc through js-ctypes, synchronously): {cpu, wait} in ms, wait
 * being the time it was runnable but waiting for a CPU. */
let _sched = null;
function picl_thread_sched() {
  if (!_sched) {
    const { ctypes } = ChromeUtils.importESModule("resource://gre/modules/ctypes.sys.mjs");
    let libc = ctypes.open("libc.so.6");
    _sched = {
      ctypes,
      open: libc.declare("open", ctypes.default_abi, ctypes.int, ctypes.char.ptr, ctypes.int),
      read: libc.declare("read", ctypes.default_abi, ctypes.ssize_t, ctypes.int, ctypes.voidptr_t, ctypes.size_t),
      close: libc.declare("close", ctypes.default_abi, ctypes.int, ctypes.int),
      buf: ctypes.char.array(128)(),
    };
  }
  let fd = _sched.open("/proc/thread-self/schedstat", 0);
  if (fd < 0) {
    return { cpu: 0, wait: 0 };
  }
  let n = _sched.read(fd, _sched.buf.address(), 127);
  _sched.close(fd);
  let text = _sched.buf.readString().slice(0, Math.max(0, Number(n)));
  let [cpu, wait] = text.trim().split(/\s+/).map(Number);
  return { cpu: cpu / 1e6, wait: wait / 1e6 };
}

/* Measures, while promise runs, the gaps between 5 ms timer ticks on the
 * main thread: maxGap (wall clock) and maxBlocked, the gap minus the time
 * the thread was runnable but waiting for a CPU (other processes on a
 * loaded machine), i.e. how long the main thread was busy or blocked.
 * Resolves to {value, maxGap, maxBlocked}. */
async function picl_measure_jank(promise) {
  let maxGap = 0;
  let maxBlocked = 0;
  let last = picl_now();
  let lastSched = picl_thread_sched();
  let tick = () => {
    let now = picl_now();
    let sched = picl_thread_sched();
    let gap = now - last;
    maxGap = Math.max(maxGap, gap);
    maxBlocked = Math.max(maxBlocked, gap - (sched.wait - lastSched.wait));
    last = now;
    lastSched = sched;
  };
  let timer = Cc["@mozilla.org/timer;1"].createInstance(Ci.nsITimer);
  timer.initWithCallback(tick, 5, Ci.nsITimer.TYPE_REPEATING_SLACK);
  try {
    let value = await promise;
    tick();
    return { value, maxGap, maxBlocked };
  } finally {
    timer.cancel();
  }
}

/* Runs ops in another xpcshell process on profile dir (a second device):
 * head.js, extraFiles (more picl_ops) and tests/xpcshell/peer.js are loaded;
 * peer.js executes the ops and prints one PEER-RESULT line.
 * Resolves to the array of results; a failed op is {error, result}. */
async function picl_peer(profileDir, ops, seconds = 60, extraFiles = []) {
  const { Subprocess } = ChromeUtils.importESModule("resource://gre/modules/Subprocess.sys.mjs");
  let here = PathUtils.join(picl_srcdir(), "tests", "xpcshell");
  let ff = Services.env.get("PICL_FIREFOX") || "firefox-esr";
  let gre = Services.env.get("PICL_GRE") || "/usr/lib/firefox-esr";
  let command = ff.includes("/") ? ff : await Subprocess.pathSearch(ff);
  let proc = await Subprocess.call({
    command,
    arguments: ["--xpcshell", "-g", gre, "-a", gre + "/browser",
                "-f", PathUtils.join(here, "head.js"),
                ...extraFiles.flatMap(f => ["-f", f]),
                "-f", PathUtils.join(here, "peer.js"),
                "-e", "peer_main(" + seconds + ")"],
    environment: { PICL_XPC_PROFILE: profileDir, PICL_PEER_OPS: JSON.stringify(ops),
                   PICL_XPC_TEST: "peer" },
    environmentAppend: true,
    stderr: "stdout",
  });
  let out = "";
  let chunk;
  while ((chunk = await proc.stdout.readString())) {
    out += chunk;
  }
  let { exitCode } = await proc.wait();
  let m = /^PEER-RESULT (.*)$/m.exec(out);
  if (!m) {
    throw new Error("peer on " + profileDir + " gave no result (exit " + exitCode + "):\n" + out.slice(-2000));
  }
  return JSON.parse(m[1]);
}

/* Operations a test or its peer runs on its own profile. */
const picl_ops = {
  _svc() {
    return picl_import("PiCLService.sys.mjs").PiCLService;
  },
  _stores() {
    return picl_import("PiCLStores.sys.mjs").PiCLStores;
  },
  async configure() {
    this._svc().keyserverURL = picl_servers().keyserver;
    return this._svc().keyserverURL;
  },
  /* any nsIPiCLService method: {method, args} */
  async call({ method, args }) {
    return this._svc()[method](...(args || []));
  },
  async state() {
    let s = this._svc();
    return { email: s.signedInEmail, verified: s.verified,
             classes: ["bookmarks", "history", "passwords"].map(c => s.getCollectionClass(c)) };
  },
  async sync({ collections }) {
    return JSON.parse(await this._svc().sync(collections || []));
  },
  async syncMeasured({ collections }) {
    let r = await picl_measure_jank(this._svc().sync(collections || []));
    return { summary: JSON.parse(r.value), maxGap: r.maxGap, maxBlocked: r.maxBlocked };
  },
  async addBookmark({ guid, url, title, parentGuid }) {
    const { PlacesUtils } = ChromeUtils.importESModule("resource://gre/modules/PlacesUtils.sys.mjs");
    await PlacesUtils.bookmarks.insert({ guid, url, title, parentGuid: parentGuid || PlacesUtils.bookmarks.menuGuid });
    return guid;
  },
  async addBookmarks({ n, folderGuid, prefix }) {
    const { PlacesUtils } = ChromeUtils.importESModule("resource://gre/modules/PlacesUtils.sys.mjs");
    let children = [];
    for (let i = 0; i < n; i++) {
      children.push({ url: "https://" + prefix + ".example/" + i, title: prefix + " " + i });
    }
    await PlacesUtils.bookmarks.insertTree({ guid: PlacesUtils.bookmarks.menuGuid, children: [
      { guid: folderGuid, type: PlacesUtils.bookmarks.TYPE_FOLDER, title: prefix, children }] });
    return n;
  },
  async addVisit({ url, title, date }) {
    const { PlacesUtils } = ChromeUtils.importESModule("resource://gre/modules/PlacesUtils.sys.mjs");
    await PlacesUtils.history.insert({ url, title, visits: [{ date: new Date(date), transition: 1 }] });
    return url;
  },
  async addLogin({ origin, username, password, guid }) {
    await Services.logins.initializationPromise;
    let l = Cc["@mozilla.org/login-manager/loginInfo;1"].createInstance(Ci.nsILoginInfo);
    l.init(origin, origin, null, username, password, "user", "pass");
    l.QueryInterface(Ci.nsILoginMetaInfo).guid = guid;
    await Services.logins.addLoginAsync(l);
    return guid;
  },
  /* what the live stores hold: {bookmarks: {id: record}, history, passwords} */
  async dump() {
    let stores = this._stores();
    await stores.init();
    let out = {};
    for (let c of ["bookmarks", "history", "passwords"]) {
      out[c] = {};
      for (let r of await stores.get(c).all()) {
        out[c][r.id] = r;
      }
    }
    return out;
  },
  async mailCode({ email, header }) {
    return picl_mail_code(email, header);
  },
};

/* Runs one op; a failure becomes {error, result}. */
async function picl_op(o) {
  try {
    return await picl_ops[o.op](o);
  } catch (e) {
    return { error: String(e && e.message || e), result: e && e.result };
  }
}

/* forgotPassword + the mailed code + completePasswordReset, on this device. */
picl_ops.resetWithMail = async function ({ email, newPassword }) {
  let svc = this._svc();
  await svc.forgotPassword(email);
  let code = await picl_mail_code(email, "X-Recovery-Code");
  await svc.completePasswordReset(code, newPassword);
  return svc.signedInEmail;
};
