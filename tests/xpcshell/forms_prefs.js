// SPDX-License-Identifier: MPL-2.0
/* forms_prefs.js -- form history and preferences of a profile through the
 * browser's own code: FormHistory (formhistory.sqlite) and the preference
 * service (prefs.js).
 * Run: firefox-esr --xpcshell -g GRE -a GRE/browser forms_prefs.js DIR ACTION ARGS...
 *   forms-add NAME VALUE [NAME VALUE ...]   the user fills in forms (VALUE
 *                                           %-encoded: argv is not UTF-8 here)
 *   forms-remove NAME VALUE                 the user deletes one entry
 *   forms-dump OUT.json                     [{fieldname, value, guid}] sorted
 *   prefs-set NAME TYPE VALUE [...]         TYPE: bool, int or string; Firefox
 *                                           writes prefs.js
 *   prefs-dump OUT.json NAME [NAME ...]     {name: value or null} as Firefox
 *                                           reads prefs.js
 * Exit 0 on success. */
"use strict";
{
  let env = __LOCATION__.parent;
  env.append("profile_env.js");
  load(env.path);
}

const [dir, action, ...args] = arguments;

async function formsSearch() {
  const { FormHistory } = ChromeUtils.importESModule("resource://gre/modules/FormHistory.sys.mjs");
  let rows = await FormHistory.search(["fieldname", "value", "guid"], {});
  rows.sort((a, b) => (a.fieldname + "\0" + a.value).localeCompare(b.fieldname + "\0" + b.value));
  return rows.map(r => ({ fieldname: r.fieldname, value: r.value, guid: r.guid }));
}

function prefsFile() {
  let f = Cc["@mozilla.org/file/local;1"].createInstance(Ci.nsIFile);
  f.initWithPath(PathUtils.join(dir, "prefs.js"));
  return f;
}

let rc = pe_main(async () => {
  pe_useProfile(dir);
  if (action == "forms-add" || action == "forms-remove") {
    const { FormHistory } = ChromeUtils.importESModule("resource://gre/modules/FormHistory.sys.mjs");
    let changes = [];
    for (let i = 0; i + 1 < args.length; i += 2) {
      changes.push(action == "forms-add"
        ? { op: "bump", fieldname: args[i], value: decodeURIComponent(args[i + 1]) }
        : { op: "remove", fieldname: args[i], value: decodeURIComponent(args[i + 1]) });
    }
    await FormHistory.update(changes);
  } else if (action == "forms-dump") {
    await IOUtils.writeJSON(args[0], await formsSearch());
  } else if (action == "prefs-set") {
    if (await IOUtils.exists(PathUtils.join(dir, "prefs.js"))) {
      Services.prefs.readUserPrefsFromFile(prefsFile());
    }
    for (let i = 0; i + 2 < args.length; i += 3) {
      let [name, type, value] = args.slice(i, i + 3);
      if (type == "bool") Services.prefs.setBoolPref(name, value == "true");
      else if (type == "int") Services.prefs.setIntPref(name, parseInt(value, 10));
      else Services.prefs.setStringPref(name, value);
    }
    Services.prefs.savePrefFile(prefsFile());
  } else if (action == "prefs-dump") {
    Services.prefs.readUserPrefsFromFile(prefsFile());
    let out = {};
    for (let name of args.slice(1)) {
      let t = Services.prefs.getPrefType(name);
      out[name] = !Services.prefs.prefHasUserValue(name) ? null
        : t == Ci.nsIPrefBranch.PREF_BOOL ? Services.prefs.getBoolPref(name)
        : t == Ci.nsIPrefBranch.PREF_INT ? Services.prefs.getIntPref(name)
        : Services.prefs.getStringPref(name);
    }
    await IOUtils.writeJSON(args[0], out);
  } else {
    throw new Error("unknown action " + action);
  }
}, 60);
quit(rc);
