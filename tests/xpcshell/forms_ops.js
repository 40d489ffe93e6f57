// SPDX-License-Identifier: MPL-2.0
/* forms_ops.js -- picl_ops for form history (FormHistory) and preferences, loaded by
 * test_forms.js, test_prefs.js and their peers. */
"use strict";

picl_ops.formsAdd = async function ({ entries }) {
  const { FormHistory } = ChromeUtils.importESModule("resource://gre/modules/FormHistory.sys.mjs");
  await FormHistory.update(entries.map(([fieldname, value]) => ({ op: "bump", fieldname, value })));
  return true;
};

picl_ops.formsRemove = async function ({ fieldname, value }) {
  const { FormHistory } = ChromeUtils.importESModule("resource://gre/modules/FormHistory.sys.mjs");
  await FormHistory.update({ op: "remove", fieldname, value });
  return true;
};

/* {entries: ["field=value", ...] sorted, guids: {field=value: guid}} */
picl_ops.formsDump = async function () {
  const { FormHistory } = ChromeUtils.importESModule("resource://gre/modules/FormHistory.sys.mjs");
  let rows = await FormHistory.search(["fieldname", "value", "guid"], {});
  let guids = {};
  for (let r of rows) {
    guids[r.fieldname + "=" + r.value] = r.guid;
  }
  return { entries: Object.keys(guids).sort(), guids };
};

/* preferences: set (user values) and read back */
picl_ops.prefsSet = async function ({ values }) {
  for (let [name, v] of Object.entries(values)) {
    if (typeof v == "boolean") {
      Services.prefs.setBoolPref(name, v);
    } else if (typeof v == "number") {
      Services.prefs.setIntPref(name, v);
    } else {
      Services.prefs.setStringPref(name, v);
    }
  }
  return true;
};

picl_ops.prefsGet = async function ({ names }) {
  let out = {};
  for (let name of names) {
    let t = Services.prefs.getPrefType(name);
    out[name] = !Services.prefs.prefHasUserValue(name) ? null
      : t == Ci.nsIPrefBranch.PREF_BOOL ? Services.prefs.getBoolPref(name)
      : t == Ci.nsIPrefBranch.PREF_INT ? Services.prefs.getIntPref(name)
      : Services.prefs.getStringPref(name);
  }
  return out;
};
