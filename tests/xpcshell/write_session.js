// SPDX-License-Identifier: MPL-2.0
/* write_session.js -- writes a profile's session store the way Firefox's
 * SessionWriter does (IOUtils.writeJSON with compress: true, i.e. mozLz4),
 * with one window holding the given tabs.
 * Run: firefox-esr --xpcshell -g GRE -a GRE/browser write_session.js DIR FILE URL|TITLE ...
 * FILE is "sessionstore.jsonlz4" or "sessionstore-backups/recovery.jsonlz4".
 * Each tab's lastAccessed is a fixed time plus its position (the last tab
 * given is the most recently used).  Exit 0 on success. */
"use strict";

const [dir, file, ...specs] = arguments;
const T0 = Date.UTC(2024, 0, 15, 12, 0, 0);
let done = false, rc = 1;

(async function main() {
  let tabs = specs.map((spec, i) => {
    let [url, title] = spec.split("|");
    return {
      entries: [{ url: "https://start.example/" + i, title: "before " + i },
                { url, title: title || url }],
      index: 2,
      lastAccessed: T0 + i * 1000,
      image: "",
    };
  });
  let session = {
    version: ["sessionrestore", 1],
    windows: [{ tabs, selected: tabs.length }],
    selectedWindow: 1,
    _closedWindows: [],
    session: { lastUpdate: T0, startTime: T0, recentCrashes: 0 },
    global: {},
  };
  let path = PathUtils.join(dir, ...file.split("/"));
  await IOUtils.makeDirectory(PathUtils.parent(path), { ignoreExisting: true });
  await IOUtils.writeJSON(path, session, { compress: true });
  rc = 0;
})().catch(e => dump("write_session.js: " + e + "\n")).finally(() => { done = true; });

Services.tm.spinEventLoopUntil("write_session.js", () => done);
quit(rc);
