// SPDX-License-Identifier: MPL-2.0
/* background.js -- PiCL's background script: shows sync progress on the toolbar button (badge and tooltip). */
"use strict";

browser.picl.onProgress.addListener((phase, collection, done, total, message) => {
  if (phase == "status") {
    browser.browserAction.setBadgeText({ text: /started/.test(message) ? "…" : "" });
    browser.browserAction.setTitle({ title: "PiCL: " + message });
  }
});
