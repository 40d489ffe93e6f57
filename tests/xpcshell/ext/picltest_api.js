// SPDX-License-Identifier: MPL-2.0
/* picltest_api.js -- test-only Experiment of the headless extension test: config and report through files, prefs, mailed codes, the toolbar button's placement and icon. */
/* global ExtensionAPI, ExtensionCommon, Services, ChromeUtils, IOUtils, PathUtils */
"use strict";

this.picltest = class extends ExtensionAPI {
  getAPI(context) {
    const extension = context.extension;
    const config = () => {
      let t = Services.env.get("PICL_EXT_TEST");
      return t ? JSON.parse(t) : null;
    };
    /* The peer device of peerTabs/peerList: its directory, store directory
     * and picl(args) -> stdout (throws on a non-zero exit). */
    const peer = extraEnv => {
      const { Subprocess } = ChromeUtils.importESModule("resource://gre/modules/Subprocess.sys.mjs");
      let cfg = config();
      let dir = PathUtils.join(cfg.work, "ext-peer");
      let env = Object.assign(Subprocess.getEnvironment(), extraEnv);
      let picl = async args => {
        let proc = await Subprocess.call({ command: cfg.picl, arguments: ["--state", PathUtils.join(dir, "state"),
                                                                          "-q"].concat(args),
                                           environment: env, stderr: "pipe" });
        let out = "", chunk;
        while ((chunk = await proc.stdout.readString())) {
          out += chunk;
        }
        let err = await proc.stderr.readString();
        let { exitCode } = await proc.wait();
        if (exitCode != 0) {
          throw new Error("picl " + args.join(" ") + ": exit " + exitCode + ": " + out + err);
        }
        return out;
      };
      return { dir, store: PathUtils.join(dir, "store"), picl };
    };
    return {
      picltest: {
        config: async () => config(),
        report: async report => {
          let path = Services.env.get("PICL_EXT_REPORT");
          if (!path) {
            throw new Error("report: PICL_EXT_REPORT is not set");
          }
          await IOUtils.writeUTF8(path, report, { tmpPath: path + ".tmp" });
          Services.tm.dispatchToMainThread(() => Services.startup.quit(Ci.nsIAppStartup.eAttemptQuit));
        },
        setPref: async (name, value) => {
          if (!name.startsWith("services.picl.")) {
            throw new Error("setPref: only services.picl.* prefs");
          }
          if (value) {
            Services.prefs.setStringPref(name, value);
          } else {
            Services.prefs.clearUserPref(name);
          }
        },
        mailCode: async (email, header) => {
          let dir = PathUtils.join(config().keyserverData, "mail", "new");
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
          return best ? best.code : null;
        },
        /* Another device of the account: the picl command (config().picl) on a
         * store directory signs in as email, syncs its clients record, then a
         * tabs record holding tabs ([{title, url}]) under its device id.
         * Resolves to that id. */
        peerTabs: async (email, password, name, tabs) => {
          let { dir, store, picl } = peer({ PICL_PASSWORD: password, PICL_DEVICE_NAME: name });
          await IOUtils.makeDirectory(store, { ignoreExisting: true });
          await picl(["login", "--server", config().keyserver, "--email", email]);
          await picl(["sync", "--store-dir", store, "--collections", "clients"]);
          let id = (await IOUtils.readJSON(PathUtils.join(dir, "state", "devices.json"))).id;
          let record = { id, clientName: name, tabs: tabs.map((tab, i) => ({ title: tab.title, urlHistory: [tab.url],
                                                                             icon: "", lastUsed: 1700000000 - i })) };
          await IOUtils.writeJSON(PathUtils.join(store, "tabs.json"), [record]);
          await picl(["sync", "--store-dir", store, "--collections", "tabs"]);
          return id;
        },
        /* What that device's `picl tabs --json` lists (the other devices' open tabs). */
        peerList: async () => JSON.parse(await peer({}).picl(["tabs", "--json"])),
        toolbarButton: async () => {
          const { CustomizableUI } = ChromeUtils.importESModule(
            "moz-src:///browser/components/customizableui/CustomizableUI.sys.mjs");
          let id = ExtensionCommon.makeWidgetId(extension.id) + "-browser-action";
          let placement = CustomizableUI.getPlacementOfWidget(id);
          let win = Services.wm.getMostRecentWindow("navigator:browser");
          let widget = CustomizableUI.getWidget(id);
          let node = win && widget && widget.forWindow(win).node;
          let button = node && node.querySelector(".unified-extensions-item-action-button");
          let style = button ? button.getAttribute("style") || "" : "";
          let m = /--webextension-toolbar-image:\s*([^;]*);/.exec(style);
          return {
            id,
            area: placement ? placement.area : null,
            inNavBar: !!(node && node.closest("#nav-bar")),
            toolbarImage: m ? m[1] : null,
          };
        },
      },
    };
  }
};
