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
 * See /work/shared/notes/firefox-profile.md for why things are done this way. */
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
