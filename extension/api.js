// SPDX-License-Identifier: MPL-2.0
/* api.js -- the parent side of the browser.picl Experiment: browser.picl.* on top of PiCLService.sys.mjs. */
/* global ExtensionAPI, ExtensionCommon, ExtensionUtils, Services, ChromeUtils */
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
  /* resource://picl/ is mapped by loadService before any call can fail */
  const { PICL_STATUS } = ChromeUtils.importESModule("resource://picl/PiCLStatus.sys.mjs");
  let code = e && Number.isInteger(e.result) ? e.result : PICL_STATUS.INTERNAL;
  return new ExtensionUtils.ExtensionError(String(e && e.message || e) + " (picl " + code + ")");
}

this.picl = class extends ExtensionAPI {
  getAPI(context) {
    const { PiCLService, librarySource } = loadService(context.extension);
    const call = async f => {
      try {
        return await f();
      } catch (e) {
        throw wrap(e);
      }
    };
    return {
      picl: {
        /* loads libpicl first (the attributes answer from the state the
         * service read), so a library that cannot load is an error that
         * names services.picl.libraryPath and PICL_LIB, never "signed out" */
        getState: () => call(async () => {
          await PiCLService._init();
          return {
            signedInEmail: PiCLService.signedInEmail,
            verified: PiCLService.verified,
            keyserverURL: PiCLService.keyserverURL,
            classes: {
              bookmarks: PiCLService.getCollectionClass("bookmarks"),
              history: PiCLService.getCollectionClass("history"),
              passwords: PiCLService.getCollectionClass("passwords"),
            },
            classesKnown: !!PiCLService._state.classesKnown,
            hasKeys: !!PiCLService._state.hasKeys,
            lastSyncTime: PiCLService._lastSyncTime,
          };
        }),
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
        getDevices: () => call(() => PiCLService.getDevices()),
        renameDevice: name => call(() => PiCLService.renameDevice(name)),
        signOutDevice: id => call(() => PiCLService.signOutDevice(id)),
        getSecurityEvents: () => call(() => PiCLService.getSecurityEvents()),
        getRemoteTabs: () => call(() => PiCLService.getRemoteTabs()),
        createRecoveryKey: pw => call(() => PiCLService.createRecoveryKey(pw)),
        getRecoveryKeyExists: () => call(() => PiCLService.getRecoveryKeyExists()),
        removeRecoveryKey: () => call(() => PiCLService.removeRecoveryKey()),
        completePasswordResetWithRecoveryKey: (code, pw, key) =>
          call(() => PiCLService.completePasswordResetWithRecoveryKey(code, pw, key)),
        getCollectionClass: c => call(async () => PiCLService.getCollectionClass(c)),
        setCollectionClass: (c, cls) => call(() => PiCLService.setCollectionClass(c, cls)),
        sync: collections => call(async () => JSON.parse(await PiCLService.sync(collections))),
        libraryInfo: () => call(async () => Object.assign(librarySource(), await PiCLService._probe([0, 18, 21]))),
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
