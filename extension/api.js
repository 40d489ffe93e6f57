/* api.js -- the parent side of the browser.picl Experiment: browser.picl.* on top of PiCLService.sys.mjs. */
/* global ExtensionAPI, ExtensionCommon, ExtensionUtils, Services, ChromeUtils, IOUtils */
"use strict";

/* The modules ship inside the extension (modules/, see build-xpi.py) and
 * are reached through resource://picl/ so PiCLService can start its
 * ChromeWorker from a system-module URL. */
function loadService(extension) {
  let res = Services.io.getProtocolHandler("resource").QueryInterface(Ci.nsIResProtocolHandler);
  if (!res.hasSubstitution("picl")) {
    res.setSubstitution("picl", Services.io.newURI("modules/", null, extension.rootURI));
  }
  return ChromeUtils.importESModule("resource://picl/PiCLService.sys.mjs");
}

function wrap(e) {
  let code = e && Number.isInteger(e.result) ? e.result : 34;
  return new ExtensionUtils.ExtensionError(String(e && e.message || e) + " (picl " + code + ")");
}

this.picl = class extends ExtensionAPI {
  getAPI(context) {
    const { PiCLService, libraryPath } = loadService(context.extension);
    const call = async f => {
      try {
        return await f();
      } catch (e) {
        throw wrap(e);
      }
    };
    return {
      picl: {
        getState: () => call(async () => ({
          signedInEmail: PiCLService.signedInEmail,
          verified: PiCLService.verified,
          keyserverURL: PiCLService.keyserverURL,
          classes: {
            bookmarks: PiCLService.getCollectionClass("bookmarks"),
            history: PiCLService.getCollectionClass("history"),
            passwords: PiCLService.getCollectionClass("passwords"),
          },
        })),
        setKeyserverURL: url => call(async () => {
          PiCLService.keyserverURL = url;
        }),
        createAccount: (email, password) => call(() => PiCLService.createAccount(email, password)),
        verifyEmail: code => call(() => PiCLService.verifyEmail(code)),
        signIn: (email, password) => call(() => PiCLService.signIn(email, password)),
        signOut: () => call(() => PiCLService.signOut()),
        changePassword: (o, n) => call(() => PiCLService.changePassword(o, n)),
        forgotPassword: email => call(() => PiCLService.forgotPassword(email)),
        completePasswordReset: (code, pw) => call(() => PiCLService.completePasswordReset(code, pw)),
        destroyAccount: pw => call(() => PiCLService.destroyAccount(pw)),
        getCollectionClass: c => call(async () => PiCLService.getCollectionClass(c)),
        setCollectionClass: (c, cls) => call(() => PiCLService.setCollectionClass(c, cls)),
        sync: collections => call(async () => JSON.parse(await PiCLService.sync(collections))),
        libraryInfo: () => call(async () => Object.assign({ path: libraryPath() }, await PiCLService._probe([0, 18, 21]))),
        testConfig: () => call(async () => {
          let t = Services.env.get("PICL_EXT_TEST");
          return t ? JSON.parse(t) : null;
        }),
        testReport: report => call(async () => {
          let path = Services.env.get("PICL_EXT_REPORT");
          if (!path) {
            throw new Error("testReport: PICL_EXT_REPORT is not set");
          }
          await IOUtils.writeUTF8(path, report, { tmpPath: path + ".tmp" });
          Services.tm.dispatchToMainThread(() => Services.startup.quit(Ci.nsIAppStartup.eAttemptQuit));
        }),
        onProgress: new ExtensionCommon.EventManager({
          context,
          name: "picl.onProgress",
          register: fire => {
            let observer = {
              onProgress: (phase, collection, done, total, message) =>
                fire.async(phase, collection, done, total, message),
            };
            PiCLService.addObserver(observer);
            return () => PiCLService.removeObserver(observer);
          },
        }).api(),
      },
    };
  }
};
