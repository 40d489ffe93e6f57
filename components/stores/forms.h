/* SPDX-License-Identifier: MPL-2.0 */
/* forms.h -- the form history and preferences of a Firefox profile as
 * Firefox Sync's forms and prefs collections. */
#ifndef PICL_STORES_FORMS_H
#define PICL_STORES_FORMS_H

#include <stddef.h>
#include <jansson.h>
#include "picl.h"
#include "stores/store.h"

/* The longest form value synced (Firefox's own limit is 200 for names). */
#define PICL_FORMS_VALUE_MAX 4096

/*
 * forms: formhistory.sqlite's moz_formhistory (fieldname, value, guid, ...)
 * as {id: guid, name: fieldname, value}; a deletion is a tombstone.  What
 * was last synced is remembered in STATE_DIR/forms-synced.json (guid ->
 * [name, value]), so an entry added, changed or deleted in the browser
 * since is a local change.  apply() writes in one transaction; an incoming
 * entry equal to a local one under another guid takes the incoming guid.
 * The profile is locked while the store is open (picl__profile_open: refused
 * while Firefox runs); a missing formhistory.sqlite is PICL_ERROR_NOT_FOUND.
 * Records that are not {id, name, value} strings are never written.
 */
picl_status picl__forms_open(picl_store **out, const char *profile_dir, const char *state_dir, char *err,
                             size_t errlen);

/*
 * prefs: ONE record {id: PICL_PREFS_ID, value: {name: value or null}} of
 * the preferences Firefox syncs by default (picl__prefs_allowed()), read
 * from prefs.js (user_pref("name", value); lines; null = not set by the
 * user).  apply() writes only allowed names, with the value's type checked
 * (bool, int, string), into prefs.js (rewritten atomically, the other lines
 * kept as they were); every refused name is reported in the store's
 * picl__prefs_refused() list and not written.  Changes are tracked by
 * STATE_DIR/prefs-synced.json (the record as last synced).  The profile is
 * locked while the store is open.
 */
#define PICL_PREFS_ID "ZWM4MDMwZjctYzIwYS00NjRmLTliMGUtMTNhM2E5ZTk3Mzg0"
picl_status picl__prefs_open(picl_store **out, const char *profile_dir, const char *state_dir, char *err,
                             size_t errlen);

/* 1 when Firefox syncs the preference by default and it names no path,
 * server, URL or password (so it may be applied from another device). */
int picl__prefs_allowed(const char *name);

/* For a prefs store: [{name, reason}] refused by apply() since it was
 * opened (new reference); NULL for any other store. */
json_t *picl__prefs_refused(picl_store *s);

/* Parses prefs.js text into {name: value} (user_pref lines only; strings
 * unescaped).  PICL_ERROR_ENCODING for a line that starts a user_pref but
 * does not parse. */
picl_status picl__prefs_parse(const char *text, json_t **out);

#endif
