// SPDX-License-Identifier: MPL-2.0
/* read_session.js -- prints the open tabs of a session store file as Firefox
 * reads it (IOUtils.readJSON with decompress: true, the browser's own mozLz4
 * reader): one "URL|TITLE" line per tab, of its current history entry.
 * Run: firefox-esr --xpcshell -g GRE -a GRE/browser read_session.js FILE
 * Exit 0 when the file was read, 1 when it is missing or not a session. */
"use strict";

const [file] = arguments;
let done = false, rc = 1;

(async function main() {
  let session = await IOUtils.readJSON(file, { decompress: true });
  for (let w of session.windows || []) {
    for (let t of w.tabs || []) {
      let entries = t.entries || [];
      let e = entries[(t.index || entries.length) - 1] || {};
      dump((e.url || "") + "|" + (e.title || "") + "\n");
    }
  }
  rc = 0;
})().catch(e => dump("read_session.js: " + e + "\n")).finally(() => { done = true; });

Services.tm.spinEventLoopUntil("read_session.js", () => done);
quit(rc);
