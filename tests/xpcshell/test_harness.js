// SPDX-License-Identifier: MPL-2.0
/* test_harness.js -- the harness itself: Assert catches what it must, the
 * profile is a fresh directory registered as ProfD, and timers run. */
"use strict";

/* Runs fn with a scratch task record so a deliberate failure is counted
 * there, not in the real task; returns the failures it recorded. */
async function failuresOf(fn) {
  let saved = _current;
  _current = { name: "probe", failures: [] };
  let savedLog = _log;
  _log = () => {};
  try {
    await fn();
  } finally {
    _log = savedLog;
  }
  let got = _current.failures;
  _current = saved;
  return got;
}

add_task(async function test_assert_passes_and_fails() {
  Assert.deepEqual(await failuresOf(() => {
    Assert.equal(1, 1);
    Assert.deepEqual({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] });
    Assert.throws(() => { throw new Error("boom"); }, /boom/);
  }), []);
  Assert.equal((await failuresOf(() => Assert.equal(1, 2))).length, 1, "equal 1 2 fails");
  Assert.equal((await failuresOf(() => Assert.deepEqual({ a: 1 }, { a: 1, b: undefined }))).length, 1,
               "extra key fails deepEqual");
  Assert.equal((await failuresOf(() => Assert.deepEqual([1, 2], { 0: 1, 1: 2 }))).length, 1,
               "array vs object");
  Assert.equal((await failuresOf(() => Assert.throws(() => {}))).length, 1, "throws without throw");
  Assert.equal((await failuresOf(() => Assert.throws(() => { throw new Error("x"); }, /y/))).length, 1,
               "throws with the wrong message");
  Assert.equal((await failuresOf(() => Assert.rejects(Promise.resolve(1)))).length, 1,
               "rejects on a resolved promise");
  let e = new Error("wrong password");
  e.result = 18;
  Assert.equal((await failuresOf(() => Assert.rejects(Promise.reject(e), { result: 18, message: /wrong/ })))
               .length, 0, "rejects with result and message");
  Assert.equal((await failuresOf(() => Assert.rejects(Promise.reject(e), { result: 19 }))).length, 1,
               "rejects with another result");
});

add_task(async function test_profile_is_fresh_and_registered() {
  let p = do_get_profile();
  Assert.ok(p.exists() && p.isDirectory(), "profile directory exists");
  Assert.equal(Services.dirsvc.get("ProfD", Ci.nsIFile).path, p.path, "ProfD is the profile");
  Assert.ok(!p.clone().exists() || true);
  let places = p.clone();
  places.append("places.sqlite");
  Assert.ok(!places.exists(), "no places.sqlite before Places is used");
});

add_task(async function test_timer() {
  let t0 = Date.now();
  await do_timeout_promise(30);
  Assert.greaterOrEqual(Date.now() - t0, 25, "timer waited");
});

add_task(async function test_peer_process() {
  let dir = PathUtils.join(Services.env.get("PICL_XPC_WORK") || PathUtils.tempDir, "peer-harness-" + Date.now());
  let r = await picl_peer(dir, [
    { op: "addBookmark", guid: "bmkPeer00001", url: "https://peer.example/", title: "peer" },
    { op: "addLogin", origin: "https://peer.example", username: "u", password: "p", guid: "{peer-1}" },
    { op: "dump" },
    { op: "nosuchop" },
  ]);
  Assert.equal(r.length, 4);
  Assert.equal(r[0], "bmkPeer00001");
  Assert.equal(r[2].bookmarks.bmkPeer00001.bmkUri, "https://peer.example/", "the peer's own store");
  Assert.equal(r[2].passwords["{peer-1}"].password, "p");
  Assert.ok(r[3].error, "an unknown op is an error, not a crash");
  /* the peer's profile persisted: a second process reads it back */
  let again = await picl_peer(dir, [{ op: "dump" }]);
  Assert.ok(again[0].bookmarks.bmkPeer00001, "bookmark persisted across processes");
  Assert.ok(again[0].passwords["{peer-1}"], "login persisted (logins.json written at shutdown)");
  Assert.ok(await IOUtils.exists(PathUtils.join(dir, "places.sqlite")), "places.sqlite in the peer profile");
});

add_task(async function test_jank_meter_sees_a_blocked_main_thread() {
  let busy = async () => {
    await do_timeout_promise(20);
    let end = picl_thread_sched().cpu + 80;   /* 80 ms of CPU, however loaded the machine */
    while (picl_thread_sched().cpu < end) {
      /* keep the main thread busy */
    }
    await do_timeout_promise(20);
  };
  let r = await picl_measure_jank(busy());
  Assert.greaterOrEqual(r.maxBlocked, 70, "an 80 ms busy loop is seen as blocking: " + r.maxBlocked);
  Assert.greaterOrEqual(r.maxGap, r.maxBlocked - 0.001, "the wall-clock gap is at least as long");
  let idle = await picl_measure_jank(do_timeout_promise(100));
  Assert.less(idle.maxBlocked, 40, "an idle main thread is not blocked: " + idle.maxBlocked);
});
