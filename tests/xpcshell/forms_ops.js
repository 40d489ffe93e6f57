/* forms_ops.js -- picl_ops for form history (FormHistory), loaded by
 * test_forms.js and by its peer. */
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
