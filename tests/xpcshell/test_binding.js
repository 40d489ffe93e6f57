// SPDX-License-Identifier: MPL-2.0
/* test_binding.js -- PiCLService.sys.mjs without servers: the IDL's shape,
 * the library found and loaded through js-ctypes in the ChromeWorker,
 * argument checks that reject before any C call. */
"use strict";

do_get_profile();
const { PiCLService, libraryPath, PICL_STATUS } = picl_import("PiCLService.sys.mjs");

/* The members of idl/nsIPiCLService.idl: name -> {kind, arity}. */
async function idlMembers() {
  let text = await IOUtils.readUTF8(PathUtils.join(picl_srcdir(), "idl", "nsIPiCLService.idl"));
  let body = text.slice(text.indexOf("interface nsIPiCLService"));
  body = body.replace(/\/\*[\s\S]*?\*\//g, "").replace(/\/\/.*$/gm, "");
  let members = {};
  for (let m of body.matchAll(/(readonly\s+)?attribute\s+\w+\s+(\w+)\s*;/g)) {
    members[m[2]] = { kind: m[1] ? "readonly" : "attribute" };
  }
  for (let m of body.matchAll(/\b(\w+)\s+(\w+)\s*\(([^)]*)\)\s*;/g)) {
    let args = m[3].trim() ? m[3].split(",").length : 0;
    members[m[2]] = { kind: "method", arity: args };
  }
  return members;
}

add_task(async function test_shape_matches_idl() {
  let idl = await idlMembers();
  /* the IDL grows (devices, recovery key, undo ...): every member is checked below */
  Assert.ok(Object.keys(idl).length >= 16, Object.keys(idl).length + " IDL members, at least the first 16");
  let proto = Object.getPrototypeOf(PiCLService);
  for (let [name, m] of Object.entries(idl)) {
    let d = Object.getOwnPropertyDescriptor(proto, name);
    Assert.ok(d, name + " is implemented");
    if (!d) {
      continue;
    }
    if (m.kind == "method") {
      Assert.equal(typeof d.value, "function", name + " is a method");
      Assert.equal(d.value.length, m.arity, name + " arity");
    } else {
      Assert.equal(typeof d.get, "function", name + " has a getter");
      Assert.equal(typeof d.set, m.kind == "attribute" ? "function" : "undefined", name + " setter");
    }
  }
  let extra = Object.getOwnPropertyNames(proto).filter(n => n != "constructor" && !n.startsWith("_") && !idl[n]);
  Assert.deepEqual(extra, [], "nothing public beyond the IDL");
});

add_task(async function test_library_path() {
  let saved = Services.env.get("PICL_LIB");
  Assert.ok(saved, "PICL_LIB is set by run.sh");
  Services.env.set("PICL_LIB", "/from/env/libpicl.so");
  Services.prefs.setStringPref("services.picl.libraryPath", "/x/libpicl.so");
  Assert.equal(libraryPath(), "/from/env/libpicl.so", "PICL_LIB wins over the pref");
  Services.env.set("PICL_LIB", "");
  Assert.equal(libraryPath(), "/x/libpicl.so", "then the pref");
  Services.prefs.clearUserPref("services.picl.libraryPath");
  Assert.equal(libraryPath(), PathUtils.join(picl_srcdir(), "components", "libpicl.so"), "then beside the module");
  Services.env.set("PICL_LIB", saved);
});

add_task(async function test_library_loads_in_worker() {
  Assert.ok(Services.env.get("PICL_LIB"), "PICL_LIB is set by run.sh");
  let r = await PiCLService._probe([0, 18, 19]);
  Assert.ok(typeof r.strerror[18] == "string" && r.strerror[18].length > 0, "picl_strerror(18) through ctypes");
  Assert.notEqual(r.strerror[18], r.strerror[19], "distinct messages");
  info("libpicl is missing: " + JSON.stringify(r.missing));
  let saved = Services.env.get("PICL_LIB");
  Services.env.set("PICL_LIB", "/nonexistent/libpicl.so");
  try {
    await Assert.rejects(PiCLService._probe(), { result: PICL_STATUS.UNSUPPORTED, message: /cannot load libpicl/ });
  } finally {
    Services.env.set("PICL_LIB", saved);
  }
});

add_task(async function test_rejections_before_c() {
  const BAD = { result: PICL_STATUS.INVALID_ARGUMENT };
  await Assert.rejects(PiCLService.setCollectionClass("passwords", "C"), BAD, "class must be A or B");
  await Assert.rejects(PiCLService.setCollectionClass("Bad Name", "A"), BAD, "bad collection name");
  await Assert.rejects(PiCLService.sync("bookmarks"), BAD, "sync needs an array");
  await Assert.rejects(PiCLService.sync(["bookmarks", 3]), BAD, "of names");
  await Assert.rejects(PiCLService.signIn("", "pw"), BAD, "empty email");
  await Assert.rejects(PiCLService.createAccount("a@b.c", ""), BAD, "empty password");
  await Assert.rejects(PiCLService.verifyEmail(""), BAD, "empty code");
  await Assert.rejects(PiCLService.completePasswordReset("", "x"), BAD, "empty code");
  Assert.throws(() => PiCLService.getCollectionClass("no such!"), BAD, "bad name throws");
  Assert.throws(() => PiCLService.addObserver(null), BAD, "observer required");
});

add_task(async function test_defaults_without_an_account() {
  Assert.equal(PiCLService.signedInEmail, "", "signed out");
  Assert.equal(PiCLService.verified, false);
  Assert.equal(PiCLService.getCollectionClass("passwords"), "B", "passwords default to class B");
  Assert.equal(PiCLService.getCollectionClass("bookmarks"), "A");
  Assert.equal(PiCLService.getCollectionClass("history"), "A");
  PiCLService.keyserverURL = "http://127.0.0.1:1";
  Assert.equal(PiCLService.keyserverURL, "http://127.0.0.1:1", "keyserverURL round-trips");
  let calls = [];
  let obs = { onProgress: (...a) => calls.push(a) };
  PiCLService.addObserver(obs);
  PiCLService._notify("status", "", 0, -1, "hello");
  PiCLService.removeObserver(obs);
  PiCLService._notify("status", "", 0, -1, "gone");
  Assert.deepEqual(calls, [["status", "", 0, -1, "hello"]], "observer called until removed");
});

add_task(async function test_service_starts_and_is_released_at_shutdown() {
  /* no _shutdown() here: the AsyncShutdown blocker must release the worker
   * and libpicl at profile-before-change, or this process does not exit 0 */
  let st = JSON.parse(await PiCLService._status());
  Assert.ok(st && typeof st == "object", "status JSON from libpicl: " + JSON.stringify(st));
  Assert.ok(!st.email, "signed out");
  Assert.equal(PiCLService.signedInEmail, "");
  Assert.ok(await IOUtils.exists(PathUtils.join(PathUtils.profileDir, "picl", "state")),
            "the service's state lives in <profile>/picl/state");
  let started = picl_now();
  Assert.equal(PiCLService.getCollectionClass("passwords"), "B", "answered from the cache");
  Assert.less(picl_now() - started, 5, "without blocking");
});
